"""The metadata tables' columns: names that need no quoting (hand facts of sample.vcf.gz's header)."""

from __future__ import annotations

import pytest
from corpus import CORPUS

import vcfzarr_sql

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(SAMPLE))


def test_fields_name_each_column_without_a_reserved_word(store):
    with vcfzarr_sql.connect() as con:
        rows = con.sql(f"SELECT category, name, column_name FROM vcf_zarr_fields('{store}') "
                       "WHERE name IN ('DP', 'GT') ORDER BY ALL").fetchall()
        assert con.sql(f"SELECT count(*) FROM vcf_zarr_fields('{store}') WHERE column_name <> \"column\"").fetchall() == [(0,)]
    # (sample.vcf.gz declares INFO/DP, FORMAT/DP and FORMAT/GT)
    assert rows == [("FORMAT", "DP", "fmt_DP"), ("FORMAT", "GT", "fmt_GT"), ("INFO", "DP", "info_DP")]
