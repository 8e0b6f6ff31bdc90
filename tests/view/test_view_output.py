"""What ``view`` and ``query -f vcf`` write: the format an output name or ``-O`` asks for (as
bcftools chooses it), ``-h``/``-H``/``-G``, each compared with what bcftools writes."""

from __future__ import annotations

import gzip
import subprocess

import pytest
from corpus import CORPUS
from test_view import _bcftools_view, _normalised

from vcfzarr_sql.cli import main

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


def _kind(path) -> str:
    """``bgzf-vcf``, ``bcf`` (compressed), ``raw-bcf`` or ``vcf``, from the file's bytes."""
    data = path.read_bytes()
    if data[:4] == b"BCF\x02":
        return "raw-bcf"
    if data[:2] == b"\x1f\x8b":
        assert data[12:14] == b"BC", "gzip but not BGZF"
        return "bcf" if gzip.decompress(data)[:3] == b"BCF" else "bgzf-vcf"
    return "vcf"


@pytest.mark.parametrize(
    ("name", "letter"),
    [("x.vcf.gz", None), ("x.bcf", None), ("x.vcf", None), ("x.VCF.BGZ", None), ("x.gz", None),
     ("x.txt", "z"), ("x.out", "b"), ("x.out", "u"), ("x.vcf.gz", "v"), ("x.vcf", "b"), ("x.bcf", "u")],
)
def test_output_named_and_typed_as_bcftools(name, letter, convert_once, tmp_path):
    store = convert_once(SAMPLE)
    typed = [] if letter is None else ["-O", letter]
    (tmp_path / "b").mkdir()
    (tmp_path / "o").mkdir()
    theirs, ours = tmp_path / "b" / name, tmp_path / "o" / name
    subprocess.run(["bcftools", "view", *typed, "-o", str(theirs), str(SAMPLE)], check=True)
    assert main(["view", str(store), *typed, "-o", str(ours)]) == 0
    assert _kind(ours) == _kind(theirs)
    assert _normalised(_bcftools_view(ours)) == _normalised(_bcftools_view(SAMPLE))


def test_tabix_indexes_the_vcf_gz_output(convert_once, tmp_path):
    store = convert_once(SAMPLE)
    out = tmp_path / "out.vcf.gz"
    assert main(["view", str(store), "-o", str(out)]) == 0
    subprocess.run(["tabix", "-p", "vcf", str(out)], check=True, capture_output=True)
    region = subprocess.run(["tabix", str(out), "20:1000000-1300000"], check=True,
                            capture_output=True, text=True).stdout
    expected = _bcftools_view(SAMPLE, "-H", "-r", "20:1000000-1300000")
    assert _normalised(region) == _normalised(expected)
    assert len(region.splitlines()) == 4


@pytest.mark.parametrize("name", ["q.vcf.gz", "q.bcf", "q.vcf"])
@pytest.mark.parametrize("fmt", [["-f", "vcf"], []])
def test_query_vcf_output_named_as_bcftools(name, fmt, convert_once, tmp_path):
    store = convert_once(SAMPLE)
    out = tmp_path / name
    (tmp_path / "b").mkdir()
    theirs = tmp_path / "b" / name
    subprocess.run(["bcftools", "view", "-G", "-o", str(theirs), str(SAMPLE)], check=True)
    sql = f"SELECT contig, pos, id, ref, alt, qual, filters FROM vcf_zarr('{store}')"
    assert main(["query", *fmt, "-o", str(out), sql]) == 0
    assert _kind(out) == _kind(theirs)
    records = [line.split("\t")[:7] for line in _bcftools_view(out, "-H").splitlines()]
    assert records == [line.split("\t")[:7] for line in _bcftools_view(SAMPLE, "-H").splitlines()]


def test_query_does_not_write_a_table_into_a_vcf_name(convert_once, tmp_path, capfd):
    store = convert_once(SAMPLE)
    out = tmp_path / "x.vcf.gz"
    assert main(["query", "-f", "csv", "-o", str(out), f"SELECT pos FROM vcf_zarr('{store}')"]) == 1
    assert "x.vcf.gz: a VCF/BCF name; --format csv" in capfd.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [["-h"], ["-H"], ["-G"], ["-h", "-H"], ["-G", "-h"], ["-G", "-H"], ["-G", "-s", "NA00002"],
     ["-h", "-s", "NA00003,NA00001"], ["-H", "-s", "^NA00001", "-r", "20"], ["-G", "-s", "NA00001", "-I"]],
    ids=" ".join,
)
def test_header_and_genotype_options_equal_bcftools(args, convert_once, capfd):
    store = convert_once(SAMPLE)
    assert main(["view", str(store), *args]) == 0
    assert _normalised(capfd.readouterr().out) == _normalised(_bcftools_view(SAMPLE, *args))


def test_help_is_long_only(convert_once, capfd):
    assert main(["view", "--help"]) == 0
    assert "--header-only" in capfd.readouterr().out


def test_no_header_cannot_write_bcf(convert_once, tmp_path, capfd):
    store = convert_once(SAMPLE)
    assert main(["view", str(store), "-H", "-o", str(tmp_path / "x.bcf")]) == 1
    assert "-H (no header) cannot write BCF" in capfd.readouterr().err
    assert not (tmp_path / "x.bcf").exists()


def test_a_refused_expression_writes_nothing(convert_once, tmp_path, capfd):
    """bcftools checks the whole command first: `| bgzip > x.vcf.gz` must not get a header."""
    store = convert_once(SAMPLE)
    assert main(["view", str(store), "-i", "INFO/NOPE>1"]) == 1
    captured = capfd.readouterr()
    assert captured.out == ""
    assert "no field INFO/NOPE" in captured.err
    assert main(["view", str(store), "-i", "INFO/NOPE>1", "-o", str(tmp_path / "x.vcf.gz")]) == 1
    assert not (tmp_path / "x.vcf.gz").exists()
