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
