"""``vcf_zarr_stats(store, section := ...)``: a bcftools stats section as rows, equal to the
section's lines of ``bcftools stats -s`` (Debian bcftools) on a simulated call set."""

from __future__ import annotations

import subprocess

import pytest
from fill_tags import BCFTOOLS, bcftools
from qc_simulate import qc_vcf

import vcfzarr_sql
from vcfzarr_sql.errors import QueryError

pytestmark = pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools")


@pytest.fixture(scope="module")
def files(tmp_path_factory, convert_once):
    root = tmp_path_factory.mktemp("qc_sql")
    vcf = qc_vcf(root / "qc.vcf", seed=5, records=80, samples=6)
    subprocess.run(bcftools("view", "-Oz", "-o", f"{vcf}.gz", str(vcf)), check=True)
    subprocess.run(bcftools("index", "-f", "-t", f"{vcf}.gz"), check=True)
    return f"{vcf}.gz", convert_once(vcf, variants_chunk_size=30)


def _text(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


@pytest.mark.parametrize(("section", "samples", "region"), [
    ("SN", None, None), ("TSTV", None, "1"), ("PSC", ["s4", "s1"], "2"), ("IDD", None, None),
    ("QUAL", None, None), ("HWE", None, None),
])
def test_rows_equal_bcftools_lines(files, section, samples, region):
    vcf, store = files
    args = f"'{store}', section := '{section}'"
    args += "" if samples is None else f", samples := {samples!r}"
    args += "" if region is None else f", region := '{region}'"
    with vcfzarr_sql.connect() as con:
        table = con.sql(f"SELECT * FROM vcf_zarr_stats({args})").to_arrow_table()
    options = ["-s", "-" if samples is None else ",".join(samples)] + (["-r", region] if region else [])
    out = subprocess.run([*bcftools("stats", *options), str(vcf)], capture_output=True, check=True).stdout
    expected = [line.split("\t")[2:] for line in out.decode().splitlines() if line.startswith(section + "\t")]
    got = [[_text(v) for v in row.values()] for row in table.to_pylist()]
    if section in ("PSC", "HWE"):  # (floats of other precisions: compared as numbers)
        expected = [[f"{float(v):.2f}" if "." in v else v for v in row] for row in expected]
    assert got == expected


def test_unknown_section(files):
    with vcfzarr_sql.connect() as con, pytest.raises(QueryError, match="unknown section 'XX'"):
        con.sql(f"SELECT * FROM vcf_zarr_stats('{files[1]}', section := 'XX')")



@pytest.mark.parametrize("vcf", ["simulated", "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"])
def test_every_section_has_its_types_whatever_the_store(files, convert_once, vcf):
    """A column's type is the section's, not the values' (a DP bin is text even where no
    ``<0``/``>500`` bin holds a record, a QUAL bin even where none is ``.``)."""
    from corpus import CORPUS

    store = files[1] if vcf == "simulated" else convert_once(CORPUS / vcf)
    with vcfzarr_sql.connect() as con:
        for section, want in (("DP", ["VARCHAR", "BIGINT", "DOUBLE", "BIGINT", "DOUBLE"]),
                              ("QUAL", ["VARCHAR", "BIGINT", "BIGINT", "BIGINT", "BIGINT"]),
                              ("TSTV", ["BIGINT", "BIGINT", "DOUBLE", "BIGINT", "BIGINT", "DOUBLE"])):
            types = con.sql(f"SELECT * FROM vcf_zarr_stats('{store}', section := '{section}')").types
            assert [str(t) for t in types] == want, section
