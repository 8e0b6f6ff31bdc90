"""bcftools -r region strings (vcfzarr_sql.query.region): parsing and errors.

Rows selected by regions are checked against bcftools itself in test_scan.py.
"""

from __future__ import annotations

import warnings
from typing import Any

import pyarrow as pa
import pytest
from corpus import CORPUS

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query.region import Region, parse_regions, regions_expression


@pytest.mark.parametrize(
    "text, expected",
    [
        ("chr1", [Region("chr1", 1, None)]),
        ("chr1:100", [Region("chr1", 100, 100)]),
        ("chr1:100-200", [Region("chr1", 100, 200)]),
        ("chr1:100-", [Region("chr1", 100, None)]),
        ("chr1:100-200,chr2,chr3:5", [Region("chr1", 100, 200), Region("chr2", 1, None), Region("chr3", 5, 5)]),
        ("chr1,,chr2", [Region("chr1", 1, None), Region("chr2", 1, None)]),
        ("1:1k-2.5k", [Region("1", 1000, 2500)]),
        ("grch38#chr4:10-20", [Region("grch38#chr4", 10, 20)]),
        # htslib: a name runs to the first ':'; names holding ':' go in braces.
        ("HLA-A*01:01", [Region("HLA-A*01", 1, 1)]),
        ("{HLA-A*01:01}", [Region("HLA-A*01:01", 1, None)]),
        ("{HLA-A*01:01}:5-6,x", [Region("HLA-A*01:01", 5, 6), Region("x", 1, None)]),
    ],
)
def test_parse_regions(text, expected):
    assert list(parse_regions(text)) == expected


@pytest.mark.parametrize(
    "text", ["", ",", "chr1:abc", "chr1:100-200x", "chr1:0", "chr1:-5", "chr1:200-100", "{chr1", "{a}x", "chr1:5:6",
             "1:1-1e100", "1:99999999999999999999"]
)
def test_bad_region_strings_raise_query_error_naming_the_argument(text):
    with pytest.raises(QueryError, match=r"^region: "):
        parse_regions(text)


def test_not_a_string_raises_query_error():
    not_a_string: Any = 5
    with pytest.raises(QueryError, match="region"):
        parse_regions(not_a_string)


def test_region_filter_is_reference_span_overlap():
    table = pa.table(
        {
            "contig": ["1", "1", "1", "1", "2"],
            "pos": [90, 95, 150, 201, 100],
            "end": [99, 100, 150, 210, 100],
        }
    )
    kept = table.filter(regions_expression(parse_regions("1:100-200")))
    assert kept["pos"].to_pylist() == [95, 150]  # 90-99 ends before 100; 201 starts after 200
    whole = table.filter(regions_expression(parse_regions("2,1:201-")))
    assert whole["pos"].to_pylist() == [201, 100]


SAMPLE_VCF = str(CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz")


def _bcftools_records(*args: str) -> list[str]:
    import subprocess

    return subprocess.run(["bcftools", "view", "-H", *args, SAMPLE_VCF], check=True,
                          capture_output=True, text=True).stdout.splitlines()


HINT = "contig 'chr20' is not in the store, which has 19, 20, X: did you mean '20'?"


@pytest.mark.parametrize(
    "args",
    [
        ["view", "{store}", "-r", "chr20"],
        ["view", "{store}", "-r", "chr20:1-20000,19"],
        ["query", "-f", "csv", "-r", "chr20", "SELECT count(*) AS n FROM vcf_zarr('{store}')"],
        ["query", "-f", "csv", "SELECT count(*) AS n FROM vcf_zarr('{store}') WHERE contig = 'chr20'"],
        ["query", "-f", "csv", "SELECT count(*) AS n FROM vcf_zarr('{store}', region := 'chr20:1-2000000')"],
    ],
)
def test_a_contig_differing_by_a_chr_prefix_gets_a_hint(args, convert_once, capfd):
    """bcftools finds nothing on chr20 of a file whose contig is 20, silently; so do we (the
    results do not change), with a warning naming the store's contigs."""
    from vcfzarr_sql.cli import main
    from vcfzarr_sql.errors import VcfZarrWarning

    assert _bcftools_records("-r", "chr20") == []
    store = convert_once(SAMPLE_VCF)
    with warnings.catch_warnings():  # (pytest's configuration ignores our warnings)
        warnings.simplefilter("always", VcfZarrWarning)
        assert main([a.format(store=store) for a in args]) == 0
    out, err = capfd.readouterr()
    assert err == f"warning: {HINT}\n"
    if args[0] == "view":
        assert [line for line in out.splitlines() if not line.startswith("#")] == _bcftools_records(*args[2:])
    else:
        assert out.split() == ["n", "0"]


def test_contigs_the_store_lacks_otherwise_get_no_hint(convert_once, recwarn):
    import vcfzarr_sql

    store = convert_once(SAMPLE_VCF)
    with vcfzarr_sql.connect() as con:
        assert con.sql(f"SELECT count(*) FROM vcf_zarr('{store}') WHERE contig IN ('chrY', '20')").fetchall() == [
            (len(_bcftools_records("-r", "chrY,20")),)]
    assert not [w for w in recwarn if issubclass(w.category, vcfzarr_sql.VcfZarrWarning)]
