"""``serve`` answers the catalog queries of real clients: psql's ``\\dt``/``\\d``/``\\l``/``\\dn``,
SQLAlchemy 2's PostgreSQL dialect (what Superset uses) with ``inspect()``, and pgJDBC's
``DatabaseMetaData`` (DBeaver, Metabase, Tableau) through a small Java program.

Each client first makes a table and saves a view over ``vcf_zarr(...)`` in its session; the
columns and types the clients list are checked against what DuckDB itself says of them
(``DESCRIBE``).
"""

from __future__ import annotations

import shutil
import subprocess
import threading

import oracle
import psycopg
import pytest
from server_sessions import catalog_probe, needs_pgjdbc

import vcfzarr_sql
from vcfzarr_sql.serve.pg import make_server

#: DuckDB's type names -> what PostgreSQL's format_type calls the type the server sends.
POSTGRES_TYPE_NAMES = {"BIGINT": "bigint", "INTEGER": "integer", "VARCHAR": "text",
                       "DOUBLE": "double precision", "FLOAT": "real", "BOOLEAN": "boolean",
                       "SMALLINT": "smallint", "TINYINT": "smallint"}


@pytest.fixture(scope="module")
def setup(convert_once) -> list[str]:
    """What a user runs first in a session: a table, and a view saved over ``vcf_zarr(...)``."""
    store = convert_once(oracle.CORPUS_SAMPLE, variants_chunk_size=3)
    return ["CREATE TABLE notes (id BIGINT, note VARCHAR, score DOUBLE)",
            "INSERT INTO notes VALUES (1, 'first', 0.5), (2, 'second', 1.5)",
            f"CREATE VIEW calls AS SELECT contig, pos, id, qual FROM vcf_zarr('{store}')"]


@pytest.fixture(scope="module")
def described(setup) -> dict[str, list[tuple[str, str]]]:
    """(column, DuckDB type) of each relation, as DuckDB describes them."""
    con = vcfzarr_sql.connect()
    try:
        for statement in setup:
            con.execute(statement)
        return {name: [(row[0], row[1]) for row in con.sql(f"DESCRIBE {name}").fetchall()]
                for name in ("notes", "calls")}
    finally:
        con.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Each session has its own in-memory database (views over vcf_zarr live as long as the
    session that made them); the stores are under pytest's temporary root."""
    server = make_server("127.0.0.1", 0, data_dirs=[tmp_path_factory.getbasetemp().parent])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _psql(server, setup: list[str], command: str) -> list[list[str]]:
    """psql's unaligned, tuples-only output of ``command`` after ``setup``: rows of fields."""
    quiet = [arg for statement in setup for arg in ("-c", statement)]
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(server.port), "-U", "tester", "-d", "saved",
         "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", *quiet, "-c", command],
        capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


needs_psql = pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")


@needs_psql
def test_psql_lists_tables_views_schemas_databases(server, setup) -> None:
    assert _psql(server, setup, "\\dt") == [["main", "notes", "table", "vcfzarr"]]
    assert _psql(server, setup, "\\dv") == [["main", "calls", "view", "vcfzarr"]]
    assert sorted(row[1] for row in _psql(server, setup, "\\d")) == ["calls", "notes"]
    assert _psql(server, setup, "\\dn") == [["main", "vcfzarr"]]
    assert [row[0] for row in _psql(server, setup, "\\l")] == ["memory"]  # DuckDB's name for it


@needs_psql
def test_psql_describes_a_saved_view_over_vcf_zarr(server, setup, described) -> None:
    for name, columns in described.items():
        rows = _psql(server, setup, f"\\d {name}")
        assert [(row[0], row[1]) for row in rows] == [
            (column, POSTGRES_TYPE_NAMES[duckdb_type]) for column, duckdb_type in columns]


def test_sqlalchemy_inspect(server, setup, described) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/saved")
    try:
        with engine.connect() as con:
            for statement in setup:
                con.execute(sqlalchemy.text(statement))
            inspector = sqlalchemy.inspect(con)
            assert inspector.default_schema_name == "main"
            assert inspector.get_table_names() == ["notes"]
            assert inspector.get_view_names() == ["calls"]
            for name, columns in described.items():
                got = inspector.get_columns(name)
                assert [c["name"] for c in got] == [column for column, _ in columns]
                expected = {"BIGINT": sqlalchemy.BigInteger, "INTEGER": sqlalchemy.Integer,
                            "VARCHAR": sqlalchemy.Text, "DOUBLE": sqlalchemy.Float,
                            "FLOAT": sqlalchemy.Float}
                for column, (_, duckdb_type) in zip(got, columns):
                    assert isinstance(column["type"], expected[duckdb_type]), column
            rows = con.execute(sqlalchemy.text("SELECT id, note FROM notes WHERE score > :s ORDER BY id"),
                               {"s": 1.0}).fetchall()
            assert rows == [(2, "second")]
            assert con.execute(sqlalchemy.text("SELECT count(*) FROM calls")).scalar() == \
                len(oracle.records(oracle.CORPUS_SAMPLE))
    finally:
        engine.dispose()


def test_psycopg_reads_the_catalog(server, setup) -> None:
    with psycopg.connect(host="127.0.0.1", port=server.port, user="tester", dbname="saved",
                         autocommit=True) as con:
        for statement in setup:
            con.execute(statement)
        version = con.execute("SELECT pg_catalog.version()").fetchone()
        assert version is not None and version[0].startswith("PostgreSQL 15")
        rows = con.execute(
            "SELECT c.relname, c.relkind FROM pg_catalog.pg_class c "
            "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relname OPERATOR(pg_catalog.~) '^(calls|notes)$' "
            "ORDER BY 1").fetchall()
        assert rows == [("calls", "v"), ("notes", "r")]
        [(oid,)] = con.execute("SELECT 'main.notes'::regclass::oid").fetchall()
        assert con.execute("SELECT relname FROM pg_class WHERE oid = %s", [oid]).fetchall() == [("notes",)]


@pytest.mark.slow
@needs_pgjdbc
def test_pgjdbc_database_metadata(server, setup, described) -> None:
    sections = catalog_probe(server.port, "saved", "tester", "calls", *setup)
    assert sections["product"] == [["PostgreSQL", "15"]]
    assert sections["schemas"] == [["main"]]
    assert sections["tables"] == [["main", "calls", "VIEW"], ["main", "notes", "TABLE"]] or \
        sections["tables"] == [["main", "notes", "TABLE"], ["main", "calls", "VIEW"]]
    jdbc_types = {"BIGINT": ("int8", "-5"), "INTEGER": ("int4", "4"), "VARCHAR": ("text", "12"),
                  "DOUBLE": ("float8", "8"), "FLOAT": ("float4", "7")}
    assert sections["columns"] == [
        ["calls", column, *jdbc_types[duckdb_type], str(i)]
        for i, (column, duckdb_type) in enumerate(described["calls"], start=1)]
    type_names = {row[0] for row in sections["types"]}
    assert {"int8", "int4", "float8", "text", "bool", "_int8"} <= type_names
    assert sections["catalogs"] == [["saved"]]
    with psycopg.connect(host="127.0.0.1", port=server.port, user="tester", dbname="saved") as con:
        for statement in setup:
            con.execute(statement)
        first_two = con.execute("SELECT * FROM calls LIMIT 2").fetchall()
    assert sections["query"] == [[str(row[0]), str(row[1])] for row in first_two]


def test_savepoints_are_accepted_but_not_rolled_back_to(server) -> None:
    """psycopg nests transactions with savepoints; rolling back to one fails instead of
    silently rolling back the whole transaction."""
    with psycopg.connect(host="127.0.0.1", port=server.port, user="tester") as con:
        con.execute("CREATE TABLE kept (a INT)")
        with con.transaction():  # inside the outer transaction: SAVEPOINT ... RELEASE
            con.execute("INSERT INTO kept VALUES (1)")
        assert con.execute("SELECT a FROM kept").fetchall() == [(1,)]
        con.execute("SAVEPOINT s")
        with pytest.raises(psycopg.Error):
            con.execute("ROLLBACK TO SAVEPOINT s")
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
