"""Values where a naive reader loses fidelity, against bcftools (issue 15).

``tests/data/corpus/vcfzarr-sql/fidelity.vcf`` holds POS 0 records, real Integer values -1
and -2 (the spec's missing and fill sentinels), empty strings inside String lists and fields
whose IDs differ only in case. It is also in the corpus (MANIFEST.tsv), so test_sql_corpus
compares every column of it with bcftools; the tests here are the pointed ones.
"""

from __future__ import annotations

import pysam
import pytest

import oracle
import vcfzarr_sql
from corpus import CORPUS

FIDELITY = CORPUS / "vcfzarr-sql" / "fidelity.vcf"


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(FIDELITY, variants_chunk_size=3, samples_chunk_size=2))


@pytest.fixture(scope="module")
def con():
    connection = vcfzarr_sql.connect()
    yield connection
    connection.close()


@pytest.mark.parametrize("region", ["1", "1:1", "1:1-", "1:1-2", "1:2", "1:2-3", "2", "2:1-3", "1,2"])
def test_pos_0_records_are_in_no_region_as_in_bcftools(con, store, region) -> None:
    got = con.sql(
        f"SELECT contig, pos, ref FROM vcf_zarr('{store}', region := '{region}') ORDER BY contig, pos"
    ).fetchall()
    expected = [(r.chrom, r.pos, r.ref) for r in oracle.records(FIDELITY, region=region)]
    assert got == expected


def _bcftools_query(*args: str) -> list[list[str]]:
    return [line.split(" ") for line in pysam.bcftools.query(*args, str(FIDELITY)).splitlines()]


@pytest.mark.parametrize(
    "category, twins", [("INFO", ["DP", "dp", "Dp"]), ("FORMAT", ["DQ", "dq"])]
)
def test_case_twin_fields_have_distinct_columns_in_every_table(con, store, category, twins) -> None:
    fields = dict(
        con.execute(
            f"SELECT name, \"column\" FROM vcf_zarr_fields('{store}') WHERE category = ?", [category]
        ).fetchall()
    )
    columns = [fields[name] for name in twins]
    assert len({c.casefold() for c in columns}) == len(twins)
    for table in ("vcf_zarr", "vcf_zarr_calls"):
        described = [name for name, *_ in con.sql(f"DESCRIBE SELECT * FROM {table}('{store}')").fetchall()]
        assert set(columns) <= set(described), table
        assert len({c.casefold() for c in described}) == len(described), table


@pytest.mark.xfail(strict=True, reason="real -1/-2 values (issue 15 item 1)")
def test_each_case_twin_column_reads_its_own_field(con, store) -> None:
    header = oracle.header(FIDELITY)
    records = oracle.records(FIDELITY)
    fields = dict(con.sql(f"SELECT name, \"column\" FROM vcf_zarr_fields('{store}')").fetchall())
    for name in ("DP", "dp", "Dp"):
        assert header.info[name]
        got = con.sql(f"SELECT {fields[name]} FROM vcf_zarr('{store}')").fetchall()
        expected = [r.info[name] for r in records]
        assert [v for (v,) in got] == expected, name


def test_filters_on_case_twin_columns_match_bcftools(con, store) -> None:
    fields = dict(con.sql(f"SELECT name, \"column\" FROM vcf_zarr_fields('{store}')").fetchall())
    for name in ("DP", "dp"):
        got = con.sql(f"SELECT pos FROM vcf_zarr('{store}') WHERE {fields[name]} > 7").fetchall()
        expected = _bcftools_query("-i", f"INFO/{name}>7", "-f", "%POS\n")
        assert [str(p) for (p,) in got] == [p for (p,) in expected], name
    got = con.sql(
        f"SELECT pos, sample_id FROM vcf_zarr_calls('{store}') WHERE {fields['dq']} >= 4 ORDER BY pos, sample_id"
    ).fetchall()
    assert [[str(p), s] for p, s in got] == _bcftools_query("-i", "FMT/dq>=4", "-f", "[%POS %SAMPLE\n]")
