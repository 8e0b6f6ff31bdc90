"""Views over the table functions saved in a database file work in later sessions, and the
calls they use are kept beside the file (``FILE.vcfzarr-calls.json``), never in it: plain
DuckDB, and every client of a server, sees only what the user made. Counts come from bcftools
(tests/oracle.py)."""

from __future__ import annotations

import json

import duckdb
import oracle
import pytest

import vcfzarr_sql
from vcfzarr_sql.engine import saved_calls

SAMPLE_VCF = oracle.CORPUS_SAMPLE


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(SAMPLE_VCF, variants_chunk_size=3))


def _everything_in(database: str) -> list[tuple[str, str, str]]:
    """(schema, name, kind) of every table and view of the file, as plain DuckDB lists them."""
    con = duckdb.connect(database, read_only=True)
    try:
        return con.execute("SELECT table_schema, table_name, table_type FROM information_schema.tables "
                           "WHERE table_catalog = current_database() ORDER BY 1, 2").fetchall()
    finally:
        con.close()


def test_a_saved_view_works_later_and_the_file_holds_only_the_users_objects(store, tmp_path) -> None:
    database = str(tmp_path / "mine.duckdb")
    with vcfzarr_sql.connect(database) as con:
        con.sql(f"CREATE VIEW chr20 AS SELECT pos FROM vcf_zarr('{store}', region := '20')")
        con.sql("CREATE TABLE notes (note VARCHAR)")
    assert _everything_in(database) == [("main", "chr20", "VIEW"), ("main", "notes", "BASE TABLE")]
    with duckdb.connect(database, read_only=True) as plain:
        assert plain.execute("SELECT count(*) FROM duckdb_schemas() WHERE database_name = current_database() "
                             "AND schema_name = ?", [saved_calls.SCHEMA]).fetchall() == [(0,)]
    kept = json.loads((tmp_path / "mine.duckdb.vcfzarr-calls.json").read_text())
    assert [(row["function"], row["region"]) for row in kept.values()] == [("vcf_zarr", "20")]
    with vcfzarr_sql.connect(database) as later:
        [(count,)] = later.sql("SELECT count(*) FROM chr20").fetchall()
    assert count == len(oracle.records(SAMPLE_VCF, region="20"))


def test_calls_kept_by_an_older_version_in_the_database_still_work(store, tmp_path) -> None:
    database = str(tmp_path / "old.duckdb")
    spec = saved_calls.ScanSpec("vcf_zarr", store, None, None)
    with duckdb.connect(database) as con:  # the layout older versions wrote
        con.execute(f"CREATE SCHEMA {saved_calls.SCHEMA}")
        con.execute(f"CREATE TABLE {saved_calls.TABLE} (name VARCHAR PRIMARY KEY, function VARCHAR, "
                    "path VARCHAR, region VARCHAR, samples VARCHAR[])")
        con.execute(f"INSERT INTO {saved_calls.TABLE} VALUES (?, 'vcf_zarr', ?, NULL, NULL)",
                    [spec.relation_name, saved_calls.canonical_path(store)])
    with vcfzarr_sql.connect(database) as con:
        assert spec.relation_name in con.table_function_calls()


def test_forged_rows_beside_the_file_are_skipped(store, tmp_path) -> None:
    database = str(tmp_path / "forged.duckdb")
    duckdb.connect(database).close()
    (tmp_path / "forged.duckdb.vcfzarr-calls.json").write_text(json.dumps({
        "x": {"function": "no_such_function", "path": store},
        "notes": {"function": "vcf_zarr", "path": store},  # not the name of its call
        "vcf_zarr_000000000000": ["not", "a", "row"],
    }))
    with vcfzarr_sql.connect(database) as con:
        assert con.table_function_calls() == {}
        assert con.sql("SELECT 1").fetchall() == [(1,)]


def test_an_in_memory_session_does_not_ask_duckdb_for_its_database_file(monkeypatch, tmp_path) -> None:
    """(a query of ~1 ms CPU per session, a new session's first query being ~30 ms)"""
    asked = []
    real = saved_calls._database_path

    def database_path(con):
        asked.append(con)
        return real(con)

    monkeypatch.setattr(saved_calls, "_database_path", database_path)
    for database in (":memory:", ":memory:other"):
        assert vcfzarr_sql.connect(database).sql("SELECT 1").fetchall() == [(1,)]
    assert asked == []
    with vcfzarr_sql.connect(str(tmp_path / "mine.duckdb")) as con:
        con.sql("SELECT 1")
    assert asked  # (a file: asked)
