"""``COPY (query over the table functions) TO 'x.parquet'`` is written by pyarrow's writer a
bounded row group at a time (DuckDB's writer held 122,880 rows of genotypes: 8.9 GiB RSS for
a 1,000-sample store; benchmarks/copy_parquet.py measures it): the same rows and column types
as DuckDB's writer gives, and DuckDB's reply."""

from __future__ import annotations

import importlib

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus import CORPUS

import vcfzarr_sql
from vcfzarr_sql.engine import parquet_copy

dataset_module = importlib.import_module("vcfzarr_sql.adapters.dataset")  # (the package exports a function of that name)
SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


@pytest.fixture(scope="module")
def store(convert_once):
    return convert_once(SAMPLE)


def _rows(path) -> tuple[list, list]:
    relation = duckdb.sql(f"SELECT * FROM read_parquet('{path}')")
    assert relation is not None
    return relation.types, relation.fetchall()


def test_the_rows_and_types_of_duckdbs_writer_in_bounded_row_groups(store, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(parquet_copy, "ROW_GROUP_BYTES", 1)  # a row group per batch read
    monkeypatch.setattr(parquet_copy, "BATCH_ROWS", 4)
    con = vcfzarr_sql.connect()
    reply = con.sql(f"COPY (SELECT * FROM vcf_zarr('{store}')) TO '{tmp_path / 'ours.parquet'}'")
    assert reply.type == "MATERIALIZED_RELATION" and reply.fetchall() == [(9,)]
    con.sql(f"CREATE TABLE t AS SELECT * FROM vcf_zarr('{store}')")
    con.sql(f"COPY t TO '{tmp_path / 'duckdb.parquet'}'")  # no table function: DuckDB's writer
    assert _rows(tmp_path / "ours.parquet") == _rows(tmp_path / "duckdb.parquet")
    assert pq.ParquetFile(tmp_path / "ours.parquet").metadata.num_row_groups == 3  # 9 rows, 4 a batch
    assert not list(tmp_path.glob("*.part"))


def test_options_and_execute(store, tmp_path) -> None:
    con = vcfzarr_sql.connect()
    out = tmp_path / "z.parquet"
    con.execute(f"COPY (SELECT pos FROM vcf_zarr('{store}') WHERE pos > ?) TO '{out}' "
                "(FORMAT parquet, COMPRESSION zstd)", [1_000_000])
    assert con.fetchall() == [(4,)]  # sample.vcf.gz: 20:1110696, 20:1230237, 20:1234567, 20:1235237
    assert pq.ParquetFile(out).metadata.num_rows == 4
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "ZSTD"
    assert parquet_copy.parquet_copy(f"COPY (SELECT 1) TO '{out}' (PER_THREAD_OUTPUT)") is None


def test_where_duckdb_may_not_write_files_its_refusal_stands(store, tmp_path) -> None:
    con = vcfzarr_sql.connect()
    con.sql("SET enable_external_access = false")
    with pytest.raises(duckdb.Error):
        con.sql(f"COPY (SELECT pos FROM vcf_zarr('{store}')) TO '{tmp_path / 'no.parquet'}'")
    assert not list(tmp_path.iterdir())


def test_wide_batches_reach_duckdb_in_slices_with_the_same_rows(store, tmp_path, monkeypatch) -> None:
    """A scan's batch over ``adapters.dataset.SLICE_BYTES`` is handed on in slices (DuckDB
    holds vectors of its own per batch: a whole-store COPY of 10,000 x 6,000 peaked at
    1.65 GiB RSS with whole batches, 0.8 GiB sliced)."""
    query = f"SELECT * FROM vcf_zarr('{store}')"
    whole = vcfzarr_sql.connect().sql(query).fetchall()
    batches = list(vcfzarr_sql.dataset(str(store)).to_batches())
    monkeypatch.setattr(dataset_module, "SLICE_BYTES", 1)  # every batch cut into single rows
    sliced = list(vcfzarr_sql.dataset(str(store)).to_batches())
    assert [b.num_rows for b in sliced] == [1] * 9 and len(batches) < 9
    assert pa.Table.from_batches(sliced).equals(pa.Table.from_batches(batches))
    con = vcfzarr_sql.connect()
    assert con.sql(query).fetchall() == whole
    con.sql(f"COPY ({query}) TO '{tmp_path / 'sliced.parquet'}'")
    assert _rows(tmp_path / "sliced.parquet")[1] == whole
