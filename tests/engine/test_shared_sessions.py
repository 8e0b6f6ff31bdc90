"""What the sessions of one process share, and that no session sees another's leftovers or a
stale store: opened local stores (:mod:`vcfzarr_sql.store.shared`) and the in-memory DuckDB
database a finished session leaves (:mod:`vcfzarr_sql.engine.instances`). Expected values
come from bcftools (tests/oracle.py) and from a database fresh from ``duckdb.connect()``.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import shutil
from pathlib import Path

import duckdb
import oracle
import pytest

import vcfzarr_sql
from vcfzarr_sql.engine import instances
from vcfzarr_sql.errors import StoreError

SAMPLE_VCF = oracle.CORPUS_SAMPLE
CHRM_VCF = str(Path(SAMPLE_VCF).parent / "1kg_2020_chrM.vcf.gz")


def _convert(vcf: str, out: Path) -> str:
    vcfzarr_sql.convert(vcf, out, variants_chunk_size=3, show_progress=False)
    return str(out)


def _answers(path: str) -> tuple[list, list]:
    """(contig, pos) of every record and the sample names, each from a new session."""
    positions = vcfzarr_sql.connect().sql(
        f"SELECT contig, pos FROM vcf_zarr('{path}') ORDER BY contig, pos").fetchall()
    samples = vcfzarr_sql.connect().sql(
        f"SELECT sample_id FROM vcf_zarr_sample_stats('{path}') ORDER BY sample_id").fetchall()
    return positions, [s for (s,) in samples]


def test_a_store_replaced_between_sessions_is_seen(tmp_path) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    expected = sorted((r.chrom, r.pos) for r in oracle.records(SAMPLE_VCF))
    assert _answers(path) == (expected, sorted(oracle.header(SAMPLE_VCF).samples))
    first, second = vcfzarr_sql.connect(), vcfzarr_sql.connect()
    before = first.store(path)
    assert second.store(path) is before  # (shared: what makes this test one)

    replacement = _convert(CHRM_VCF, tmp_path / "new.zarr")
    shutil.rmtree(path)
    os.rename(replacement, path)

    expected = sorted((r.chrom, r.pos) for r in oracle.records(CHRM_VCF))
    assert _answers(path) == (expected, sorted(oracle.header(CHRM_VCF).samples))
    assert vcfzarr_sql.connect().store(path) is not before


def test_a_damaged_sample_id_is_an_error_in_every_later_session(tmp_path) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    assert _answers(path)[1] == sorted(oracle.header(SAMPLE_VCF).samples)  # (opened and kept)

    chunk = Path(path) / "sample_id" / "0"
    chunk.write_bytes(b"\x00" * len(chunk.read_bytes()))  # same size, rewritten in place

    for _ in range(2):  # (a failed opening is not kept: the second session fails as well)
        with pytest.raises(StoreError, match="sample_id"):
            vcfzarr_sql.connect().sql(f"SELECT * FROM vcf_zarr_sample_stats('{path}')").fetchall()


#: A fresh database as DuckDB describes it (settings, databases, catalog entries, extensions).
STATE = """
SELECT 'setting', name || '=' || coalesce(value, 'NULL') FROM duckdb_settings()
UNION ALL SELECT 'database', database_name FROM duckdb_databases()
UNION ALL SELECT 'schema', database_name || '.' || schema_name FROM duckdb_schemas() WHERE NOT internal
UNION ALL SELECT 'table', database_name || '.' || table_name FROM duckdb_tables()
UNION ALL SELECT 'view', database_name || '.' || view_name FROM duckdb_views() WHERE NOT internal
UNION ALL SELECT 'function', function_name FROM duckdb_functions() WHERE NOT internal
UNION ALL SELECT 'sequence', sequence_name FROM duckdb_sequences()
UNION ALL SELECT 'type', type_name FROM duckdb_types() WHERE NOT internal
UNION ALL SELECT 'extension', extension_name FROM duckdb_extensions() WHERE loaded
ORDER BY ALL
"""

CHANGES = [
    "CREATE TABLE t AS SELECT 1 AS x", "CREATE MACRO m(x) AS x + 1", "CREATE SEQUENCE s",
    "CREATE TYPE mood AS ENUM ('ok')", "CREATE SCHEMA other", "CREATE VIEW v AS SELECT 1 AS x",
    "SET threads = 1", "SET memory_limit = '123MB'", "SET enable_progress_bar = true",
    "ATTACH ':memory:' AS elsewhere", "SET search_path = 'main'",
]


def _state_of_next_session() -> list[tuple]:
    gc.collect()
    return vcfzarr_sql.connect().sql(STATE).fetchall()


@pytest.mark.parametrize("statement", CHANGES)
def test_a_session_leaves_nothing_to_the_next(statement) -> None:
    fresh = duckdb.connect().sql(STATE).fetchall()
    con = vcfzarr_sql.connect()
    con.execute(statement)
    del con
    assert _state_of_next_session() == fresh


def test_what_a_relation_does_after_its_session_is_dropped_stays_out(tmp_path) -> None:
    fresh = duckdb.connect().sql(STATE).fetchall()
    path = _convert(CHRM_VCF, tmp_path / "s.zarr")
    relation = vcfzarr_sql.connect().sql(f"SELECT pos FROM vcf_zarr('{path}')")
    relation.create("made")  # (the session's Connection is gone; its DuckDB connection lives)
    del relation
    assert _state_of_next_session() == fresh
    raw = vcfzarr_sql.connect().duckdb_connection.cursor()  # (outside the session's accounting)
    raw.execute("SET threads = 1")
    assert _state_of_next_session() == fresh
    raw.close()


def test_a_finished_sessions_database_is_lent_and_live_ones_are_not_shared(tmp_path) -> None:
    path = _convert(CHRM_VCF, tmp_path / "s.zarr")
    count = f"SELECT count(*) FROM vcf_zarr('{path}')"
    first = vcfzarr_sql.connect()
    first.sql(count).fetchall()
    database = first._lease._root
    first.close()
    second = vcfzarr_sql.connect()
    assert second._lease._root is database  # (lent again: the point of lending)
    third = vcfzarr_sql.connect()  # while the second lives: a database of its own
    assert third._lease._root is not second._lease._root
    second.execute("CREATE TABLE mine AS SELECT 1 AS x")
    assert third.sql("SELECT count(*) FROM duckdb_tables()").fetchall() == [(0,)]
    assert second.sql(count).fetchall() == third.sql(count).fetchall() == \
        [(len(oracle.records(CHRM_VCF)),)]
    assert instances._spare is None or instances._spare is not second._lease._root


def _query_in_child(queue) -> None:
    queue.put(vcfzarr_sql.connect().sql("SELECT 2").fetchall())


def test_a_process_forked_after_a_session_runs_sessions_and_exits() -> None:
    """A spare database is destroyed before a fork: destroyed in the child, which has none of
    DuckDB's threads, it crashed the child (a segmentation fault)."""
    vcfzarr_sql.connect().sql("SELECT 1").fetchall()
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_query_in_child, args=(queue,), daemon=True)
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == [(2,)]
