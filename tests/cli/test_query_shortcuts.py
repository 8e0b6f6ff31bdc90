"""``query -r/-s`` (applied to every scan call), ``--file``, and TSV output, against bcftools."""

from __future__ import annotations

import io
import subprocess

import pytest
from corpus import CORPUS

from vcfzarr_sql.cli import main

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


def _bcftools_query(*args: str) -> list[str]:
    return subprocess.run(["bcftools", "query", *args, str(SAMPLE)], check=True, capture_output=True,
                          text=True).stdout.splitlines()


@pytest.mark.parametrize("region", ["20:1-1200000", "19,X", "20:1234567"])
def test_region_and_samples_apply_to_every_call(region, convert_once, capfd):
    store = convert_once(SAMPLE)
    sql = (f"SELECT v.contig, v.pos, c.sample_id, coalesce(CAST(c.fmt_GQ AS VARCHAR), '.') AS gq FROM vcf_zarr('{store}') v "
           f"JOIN vcf_zarr_calls('{store}') c USING (contig, pos) ORDER BY v.contig, v.pos, c.sample_id")
    assert main(["query", "-r", region, "-s", "NA00003,NA00001", "-f", "tsv", sql]) == 0
    lines = capfd.readouterr().out.splitlines()
    assert lines[0] == "contig\tpos\tsample_id\tgq"
    ours = sorted(lines[1:])
    theirs = sorted(_bcftools_query("-r", region, "-s", "NA00003,NA00001", "-f", "[%CHROM\t%POS\t%SAMPLE\t%GQ\n]"))
    assert ours == theirs


def test_a_call_keeps_its_own_region(convert_once, capfd):
    store = convert_once(SAMPLE)
    sql = f"SELECT count(*) AS n FROM vcf_zarr('{store}', region := 'X')"
    assert main(["query", "-r", "20", "-f", "tsv", sql]) == 0
    assert capfd.readouterr().out.splitlines() == ["n", str(len(_bcftools_query("-r", "X", "-f", "%POS\n")))]


def test_sql_from_a_file_and_from_standard_input(convert_once, tmp_path, capfd, monkeypatch):
    store = convert_once(SAMPLE)
    query = tmp_path / "q.sql"
    query.write_text(f"SELECT pos FROM vcf_zarr('{store}')\nWHERE qual > 20 ORDER BY pos -- a comment\n")
    assert main(["query", "--file", str(query), "-r", "20", "-f", "tsv"]) == 0
    from_file = capfd.readouterr().out.splitlines()
    monkeypatch.setattr("sys.stdin", io.StringIO(query.read_text()))
    assert main(["query", "-F", "-", "-r", "20", "-f", "tsv"]) == 0
    assert capfd.readouterr().out.splitlines() == from_file
    assert from_file[1:] == _bcftools_query("-r", "20", "-i", "QUAL>20", "-f", "%POS\n")


def test_sql_twice_is_a_usage_error(tmp_path):
    query = tmp_path / "q.sql"
    query.write_text("SELECT 1")
    assert main(["query", "--file", str(query), "SELECT 2"]) == 2


# bcftools -R: BED is 0-based half-open (by the file's name); other files are 1-based CHROM POS
# [END], the first line deciding whether END is read; records match by overlap (X:10 spans 10-11).
REGION_FILES = {
    "r.bed": "# comment\n20\t1230236\t1234567\nX\t10\t11\n",
    "r.bed.gz": "19\t110\t111\n",
    "r.tsv": "19\t112\t112\nX\t11\t20\n",
    "pos.tsv": "20\t14370\n19\t111\t999\n",  # no END on line 1: END is never read
}


@pytest.mark.parametrize("name", sorted(REGION_FILES))
def test_regions_file_as_bcftools_reads_it(name, convert_once, tmp_path, capfd):
    import gzip

    store = convert_once(SAMPLE)
    path = tmp_path / name
    text = REGION_FILES[name].encode()
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    sql = f"SELECT contig, pos FROM vcf_zarr('{store}')"
    assert main(["query", "-R", str(path), "-f", "tsv", sql]) == 0
    ours = sorted(capfd.readouterr().out.splitlines()[1:])
    assert ours == sorted(_bcftools_query("-R", str(path), "-f", "%CHROM\t%POS\n"))
    assert ours  # (every file names some record)


@pytest.mark.parametrize("listed", ["NA00003\nNA00001\n", "NA00002\r\n\n"])
@pytest.mark.parametrize("exclude", [False, True])
def test_samples_file_and_exclusion_as_bcftools(listed, exclude, convert_once, tmp_path, capfd):
    store = convert_once(SAMPLE)
    path = tmp_path / "s.txt"
    path.write_text(listed)
    given = ("^" if exclude else "") + str(path)
    sql = (f"SELECT contig, pos, sample_id, coalesce(CAST(fmt_GQ AS VARCHAR), '.') FROM "
           f"vcf_zarr_calls('{store}')")
    assert main(["query", "-S", given, "-f", "tsv", sql]) == 0
    ours = sorted(capfd.readouterr().out.splitlines()[1:])
    assert ours == sorted(_bcftools_query("-S", given, "-f", "[%CHROM\t%POS\t%SAMPLE\t%GQ\n]"))
    names = ",".join(n.strip() for n in listed.splitlines() if n.strip())
    assert main(["query", "-s", ("^" if exclude else "") + names, "-f", "tsv", sql]) == 0
    assert sorted(capfd.readouterr().out.splitlines()[1:]) == ours


def test_region_and_regions_file_together_is_a_usage_error(tmp_path):
    (tmp_path / "r.bed").write_text("20\t0\t10\n")
    assert main(["query", "-r", "20", "-R", str(tmp_path / "r.bed"), "SELECT 1"]) == 2
    assert main(["query", "-s", "A", "-S", str(tmp_path / "r.bed"), "SELECT 1"]) == 2


def test_a_malformed_regions_file_names_its_line(tmp_path, capfd):
    (tmp_path / "r.tsv").write_text("20\t100\t200\n20 300 400\n")
    assert main(["query", "-R", str(tmp_path / "r.tsv"), "SELECT 1"]) == 1
    assert "r.tsv line 2" in capfd.readouterr().err
