"""``query -f csv|tsv|json`` write values as bcftools query prints them: lists comma-joined,
FLOAT with its own shortest digits (expected values: bcftools query on sample.vcf.gz)."""

from __future__ import annotations

import csv
import io
import json
import subprocess

import pytest
from corpus import CORPUS

from vcfzarr_sql.cli import main
from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import vcf_lines

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


def _bcftools_query(fmt: str) -> list[list[str]]:
    out = subprocess.run(["bcftools", "query", "-f", fmt, str(SAMPLE)], check=True, capture_output=True,
                         text=True).stdout
    return [line.split("\t") for line in out.splitlines()]


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_text_formats_join_lists_as_bcftools(fmt, convert_once, capfd):
    store = convert_once(SAMPLE)
    sql = f"SELECT pos, alt, info_AF, fmt_GQ FROM vcf_zarr('{store}') ORDER BY contig, pos"
    assert main(["query", "-f", fmt, sql]) == 0
    rows = list(csv.reader(io.StringIO(capfd.readouterr().out), delimiter="," if fmt == "csv" else "\t"))
    expected = _bcftools_query("%POS\t%ALT\t%AF\t[%GQ ]\n")
    assert [[pos, alt, af or "."] for pos, alt, af, _ in rows[1:]] == [e[:3] for e in expected]
    # a list of one value per sample (Number=1 FORMAT): the innermost level, comma-joined
    assert [gq.split(",") for *_, gq in rows[1:]] == [e[3].split() for e in expected]


def test_json_writes_float_as_its_shortest_digits(convert_once, capfd):
    store = convert_once(SAMPLE)
    sql = f"SELECT qual, info_AF FROM vcf_zarr('{store}') ORDER BY contig, pos"
    assert main(["query", "-f", "json", sql]) == 0
    rows = [json.loads(line) for line in capfd.readouterr().out.splitlines()]
    expected = _bcftools_query("%QUAL\t%AF\n")
    assert [row["qual"] for row in rows] == [None if q == "." else float(q) for q, _ in expected]
    assert [row["info_AF"] for row in rows] == [
        None if af == "." else [float(a) for a in af.split(",")] for _, af in expected]


def test_format_vcf_says_which_named_columns_it_cannot_place(convert_once, capfd):
    store = convert_once(SAMPLE)
    assert main(["query", "-f", "vcf", f"SELECT contig, pos, ref, gt_AF, info_DP FROM vcf_zarr('{store}')"]) == 0
    out, err = capfd.readouterr()
    assert "--format vcf does not write gt_AF" in err and "info_DP" not in err
    assert sum(not line.startswith("#") for line in out.splitlines()) == len(_bcftools_query("%POS\n"))
    assert main(["query", "-f", "vcf", f"SELECT * FROM vcf_zarr('{store}')"]) == 0
    assert "warning" not in capfd.readouterr().err  # (gt_*, end: not named)


def test_table_fits_the_width_as_duckdbs_cli_does(convert_once, capfd, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # (standard output is not a terminal here)
    store = convert_once(SAMPLE)
    for sql in ["SELECT range(100000) AS wide, 32.9::FLOAT AS qual", f"SELECT * FROM vcf_zarr('{store}') LIMIT 3"]:
        assert main(["query", sql]) == 0
        out = capfd.readouterr().out
        assert max(map(len, out.splitlines())) <= 120 and len(out) < 20_000
    assert main(["query", "SELECT 32.9::FLOAT AS qual"]) == 0
    assert "  32.9 │" in capfd.readouterr().out  # (FLOAT with its own digits)


def test_shell_help_lists_every_registered_table_function(capsys, monkeypatch):
    from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS

    monkeypatch.setattr("sys.stdin", io.StringIO(".help\n"))
    assert main(["shell"]) == 0
    out = capsys.readouterr().out
    assert "vcf_zarr_sample_stats(" in out
    assert all(f"{name}(path" in out for name in TABLE_FUNCTIONS)


def test_a_dot_command_inside_a_statement_runs_and_the_statement_carries_on(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("SELECT 41 + 1\n.mode csv\nAS n;\n.5 AS x;\n"))
    code = main(["shell"])
    out, err = capsys.readouterr()
    assert out.splitlines()[:2] == ["n", "42"]  # csv: the mode changed before the statement ran
    assert code == 1 and "unknown command .5" in err  # (between statements, a '.' line is a command)


FLOATS_VCF = """##fileformat=VCFv4.2
##contig=<ID=1,length=1000>
##INFO=<ID=S,Number=1,Type=Float,Description="s">
##INFO=<ID=A,Number=A,Type=Float,Description="a">
##INFO=<ID=R,Number=R,Type=Float,Description="r">
##INFO=<ID=D,Number=.,Type=Float,Description="d">
##INFO=<ID=T,Number=2,Type=Float,Description="t">
##FORMAT=<ID=GT,Number=1,Type=String,Description="g">
##FORMAT=<ID=F,Number=1,Type=Float,Description="f">
##FORMAT=<ID=FR,Number=R,Type=Float,Description="fr">
#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tX\tY
1\t1\t.\tA\tC,G\t2\tPASS\tS=2;A=2,-0;R=1e20,1e-20,123456.7;D=0.1,1234567,3.14159265;T=nan,inf\tGT:F:FR\t0/1:2:2,-0,1e20\t1/1:-0:1e-20,.,117756.5
1\t2\t.\tA\tC\t-0\tPASS\tS=-0;A=1e20;R=1e-20,0.000123;D=1e-5,12345678,99999.99;T=-inf,1.5\tGT:F:FR\t0/1:1e20:100000,1e6\t1/1:1e-20:.,1e-8
1\t3\t.\tA\tC\t117756.5\tPASS\tS=1e-45;A=0.000001;R=16777217,0.3;D=-2,-2.5,2.5;T=1e-38,999999.5\tGT:F:FR\t0/1:nan:inf,-inf\t1/1:3:-1e-3,1e5
"""


@pytest.fixture(scope="module")
def floats_vcf(tmp_path_factory):
    vcf = tmp_path_factory.mktemp("floats") / "floats.vcf"
    vcf.write_text(FLOATS_VCF)
    return vcf


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_text_formats_write_floats_as_bcftools(fmt, convert_once, floats_vcf, capfd):
    """FLOAT scalars and list elements (Number=1/A/R/./2, INFO and FORMAT) as htslib prints them:
    ``2`` not ``2.0``, six significant digits, ``1e+20``, ``-0``, ``nan``, ties rounded up."""
    vcf = floats_vcf
    store = convert_once(vcf)
    sql = (f"SELECT qual, info_S, info_A, info_R, info_D, info_T, fmt_F, fmt_FR FROM vcf_zarr('{store}') "
           "ORDER BY pos")
    assert main(["query", "-f", fmt, sql]) == 0
    rows = list(csv.reader(io.StringIO(capfd.readouterr().out), delimiter="," if fmt == "csv" else "\t"))
    out = subprocess.run(["bcftools", "query", "-f", "%QUAL\t%S\t%A\t%R\t%D\t%T\t[%F,]\t[%FR ]\n", str(vcf)],
                         check=True, capture_output=True, text=True).stdout
    expected = [[*cols[:6], cols[6].rstrip(","), cols[7].rstrip(" ")] for cols in
                (line.split("\t") for line in out.splitlines())]
    assert rows[1:] == expected
    assert expected[0][:3] == ["2", "2", "2,-0"] and expected[2][0] == "117757"  # (what is tested)
    # -0 (a float's negative zero) as htslib's kputd prints it, in QUAL, INFO and FORMAT
    assert (expected[1][:2], expected[0][6], expected[0][7]) == (["-0", "-0"], "2,-0", "2,-0,1e+20 1e-20,.,117757")
    # view writes the same values (nan, inf, -0 included) as bcftools view
    theirs = subprocess.run(["bcftools", "view", "-H", str(vcf)], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    assert [line.rstrip("\n") for line in vcf_lines(open_store(store))][1:] == theirs
