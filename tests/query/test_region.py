"""bcftools -r region strings (vcfzarr_sql.query.region): parsing and errors.

Rows selected by regions are checked against bcftools itself in test_scan.py.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

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
