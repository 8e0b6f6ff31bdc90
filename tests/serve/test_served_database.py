"""A read-only ``--database FILE`` served as dashboards use it: the file's tables and views
listed, described and read by the clients BI tools are built on, each the way its users drive
it: psql (``\\dt``, ``\\dv``, ``\\d``, ``\\d+``, ``\\df``, ``\\dn``, ``\\l``, ``\\copy``),
psycopg 3 (``cursor.copy``, ``pg_cancel_backend``/``pg_terminate_backend``), SQLAlchemy
``inspect()`` and ``pandas.read_sql_table`` (SQLAlchemy 2 with psycopg 3 here; SQLAlchemy 1.4
with psycopg2, Superset's pair, in the venv .ci/run makes for it), pgJDBC's
``DatabaseMetaData`` and ADBC Flight SQL's ``get_objects``.

The file is made here with plain DuckDB from hand-written rows (the expected answers), with a
second schema and, as files written by older versions hold it, the adapter's bookkeeping table,
which no client may see.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import duckdb
import psycopg
import pytest
from server_sessions import catalog_probe, needs_pgjdbc

from vcfzarr_sql.serve.pg import make_server

SITES = [("1", 100, 5.5), ("1", 200, 7.25), ("2", 50, 9.0)]
GOOD_SITES = [row for row in SITES if row[2] > 6]
#: (column, DuckDB type, PostgreSQL's format_type name, pgJDBC's TYPE_NAME and DATA_TYPE)
COLUMNS = [("contig", "VARCHAR", "text", "text", "12"), ("pos", "BIGINT", "bigint", "int8", "-5"),
           ("qual", "DOUBLE", "double precision", "float8", "8")]

needs_psql = pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("dashboards") / "dashboards.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE sites (contig VARCHAR, pos BIGINT PRIMARY KEY, qual DOUBLE)")
    con.executemany("INSERT INTO sites VALUES (?, ?, ?)", SITES)
    con.execute("CREATE VIEW good_sites AS SELECT * FROM sites WHERE qual > 6")
    con.execute("CREATE SCHEMA extra")
    con.execute("CREATE TABLE extra.notes (note VARCHAR)")
    con.execute("CREATE SCHEMA vcfzarr_sql")
    con.execute("CREATE TABLE vcfzarr_sql.table_function_calls (name VARCHAR, function VARCHAR, "
                "path VARCHAR, region VARCHAR, samples VARCHAR[])")
    con.close()
    return path


@pytest.fixture(scope="module")
def server(database):
    server = make_server("127.0.0.1", 0, data_dirs=[database.parent], database=str(database))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _connect(server, user: str = "analyst", **kwargs) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=server.port, user=user, dbname="dashboards",
                           autocommit=True, connect_timeout=10, **kwargs)


def _psql(server, *commands: str, tuples_only: bool = True) -> str:
    args = [arg for command in commands for arg in ("-c", command)]
    return subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(server.port), "-U", "analyst", "-d", "dashboards",
         "-X", "-q", "-A", *(["-t"] if tuples_only else []), "-F", "\t", "-v", "ON_ERROR_STOP=1",
         *args], capture_output=True, text=True, timeout=60, check=True).stdout


def _rows(out: str) -> list[list[str]]:
    return [line.split("\t") for line in out.splitlines() if line]


# -- psql ------------------------------------------------------------------------------------


@needs_psql
def test_psql_lists_the_files_relations_and_the_sessions_own(server) -> None:
    assert _rows(_psql(server, "\\dt")) == [["main", "sites", "table", "vcfzarr"]]
    assert _rows(_psql(server, "\\dt extra.*")) == [["extra", "notes", "table", "vcfzarr"]]
    assert _rows(_psql(server, "\\dv")) == [["main", "good_sites", "view", "vcfzarr"]]
    temp = _psql(server, "CREATE TEMP VIEW mine AS SELECT 1 AS one", "\\dv")
    assert _rows(temp) == [["main", "good_sites", "view", "vcfzarr"], ["main", "mine", "view", "vcfzarr"]]
    assert sorted(row[1] for row in _rows(_psql(server, "\\d"))) == ["good_sites", "sites"]
    assert _rows(_psql(server, "\\dn")) == [["extra", "vcfzarr"], ["main", "vcfzarr"]]
    assert sorted(row[0] for row in _rows(_psql(server, "\\l"))) == ["dashboards", "memory"]


@needs_psql
def test_psql_describes_tables_views_and_functions(server) -> None:
    for name in ("sites", "good_sites"):
        described = _rows(_psql(server, f"\\d {name}"))
        assert [(row[0], row[1]) for row in described[:3]] == [(c, pg) for c, _, pg, _, _ in COLUMNS]
    plus = _psql(server, "\\d+ sites", tuples_only=False)
    assert 'Table "main.sites"' in plus and '"sites_pos_pkey" PRIMARY KEY' in plus
    assert [(row[0], row[1]) for row in _rows(plus)[2:5]] == [(c, pg) for c, _, pg, _, _ in COLUMNS]
    functions = _rows(_psql(server, "CREATE MACRO twice(x) AS x * 2", "\\df"))
    assert [(row[0], row[1], row[3], row[4]) for row in functions] == [("main", "twice", "x", "func")]


@needs_psql
def test_psql_backend_pid_copy_and_aggregate_labels(server) -> None:
    [[pid]] = _rows(_psql(server, "SELECT pg_backend_pid()"))
    assert int(pid) > 0
    csv = _psql(server, "\\copy (SELECT * FROM sites ORDER BY pos) TO STDOUT WITH CSV HEADER")
    assert csv == "contig,pos,qual\n2,50,9\n1,100,5.5\n1,200,7.25\n"  # (PostgreSQL's 9.0 is 9)
    text = _psql(server, "\\copy good_sites (pos, contig) TO STDOUT")
    assert sorted(text.splitlines()) == sorted(f"{pos}\t{contig}" for contig, pos, _ in GOOD_SITES)
    labelled = _psql(server, "SELECT count(*), sum(pos), avg(qual), min(pos), max(pos), "
                             "count(*) AS n FROM sites", tuples_only=False)
    assert labelled.splitlines()[:2] == [
        "count\tsum\tavg\tmin\tmax\tn",
        f"3\t350\t{sum(q for *_, q in SITES) / 3}\t50\t200\t3"]


# -- psycopg ---------------------------------------------------------------------------------


def test_psycopg_copy_text_and_csv(server) -> None:
    with _connect(server) as con, con.cursor() as cur:
        with cur.copy("COPY (SELECT contig, pos, NULL AS none, 'a\tb\\c' AS odd FROM sites "
                      "ORDER BY pos) TO STDOUT") as copy:
            rows = list(copy.rows())
        assert rows == [(contig, str(pos), None, "a\tb\\c") for contig, pos, _ in sorted(SITES, key=lambda r: r[1])]
        with cur.copy("COPY (SELECT 'say \"hi\", ok' AS said, NULL AS none, '' AS empty) "
                      "TO STDOUT (FORMAT csv, HEADER)") as copy:
            data = b"".join(bytes(chunk) for chunk in copy)
        assert data == b'said,none,empty\n"say ""hi"", ok",,""\n'
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            with cur.copy("COPY sites TO STDOUT (FORMAT binary)") as copy:
                list(copy)
        with pytest.raises(psycopg.Error, match="Permission|disabled"):
            cur.execute("COPY sites TO 'sites.csv'")  # to a file of the server's: refused


def test_column_labels_are_postgres_s_unless_aliased(server) -> None:
    """PostgreSQL's labels (docs, "Column Labels": a column reference is named by the column, a
    function call by the function, anything else ``?column?``; ``CASE`` is ``case`` in the
    docs' own CASE example), as PostgreSQL 15 gives them for the same query."""
    with _connect(server) as con, con.cursor() as cur:
        cur.execute('SELECT count(*), count(qual), sum(pos), avg(qual), min(contig), max(pos), '
                    'count(*) AS total, sum(pos) AS "sum(pos)", lower(contig) FROM sites GROUP BY contig')
        assert [c.name for c in cur.description or ()] == [
            "count", "count", "sum", "avg", "min", "max", "total", "sum(pos)", "lower"]
        cur.execute("SELECT s.pos, POS, pos::int, CAST(pos AS text), 1::int, 'x'::text, "
                    "(pos + 1)::bigint, CASE WHEN pos > 60 THEN 'big' ELSE 'small' END, "
                    "CASE WHEN pos > 60 THEN contig ELSE upper(contig) END, pos + 1, 2 + 2, "
                    "pos IS NULL, coalesce(qual, 0), round(qual), sum(pos) OVER (), "
                    "(SELECT max(pos) FROM sites), 'a', now() FROM sites s ORDER BY pos")
        assert [c.name for c in cur.description or ()] == [
            "pos", "pos", "pos", "pos", "int4", "text", "int8", "case", "upper", "?column?",
            "?column?", "?column?", "coalesce", "round", "sum", "max", "?column?", "now"]
        first = cur.fetchone()
        assert first is not None and first[:4] == (50, 50, 50, "50")
        cur.execute("SELECT * FROM sites ORDER BY pos")
        assert [c.name for c in cur.description or ()] == [c for c, *_ in COLUMNS]
        cur.execute("SELECT * FROM (SELECT lower(contig), pos * 2 FROM sites) q")
        assert [c.name for c in cur.description or ()] == ["lower", "?column?"]


def test_set_search_path_keeps_the_files_tables_in_reach(server) -> None:
    """Superset runs ``SET search_path = "main"`` before a dataset's query."""
    with _connect(server) as con:
        con.execute('SET search_path = "main"')
        assert con.execute("SELECT count(*) FROM main.sites").fetchall() == [(len(SITES),)]
        assert con.execute("SELECT count(*) FROM sites").fetchall() == [(len(SITES),)]
        assert con.execute("SELECT count(*) FROM extra.notes").fetchall() == [(0,)]
        con.execute("SET search_path TO extra")
        assert con.execute("SELECT count(*) FROM notes").fetchall() == [(0,)]


def test_information_schema_lists_the_file_and_the_sessions_own(server, database) -> None:
    with _connect(server) as con:
        con.execute("CREATE TEMP VIEW mine AS SELECT 1 AS one")
        con.execute("CREATE TABLE scratch AS SELECT 1 AS one")
        tables = con.execute("SELECT table_catalog, table_schema, table_name, table_type "
                             "FROM information_schema.tables ORDER BY 3").fetchall()
        schemata = con.execute("SELECT catalog_name, schema_name FROM information_schema.schemata "
                               "WHERE catalog_name = %s ORDER BY 2", [database.stem]).fetchall()
        columns = con.execute("SELECT column_name FROM information_schema.columns "
                              "WHERE table_name = 'sites' ORDER BY ordinal_position").fetchall()
    assert tables == [("dashboards", "main", "good_sites", "VIEW"), ("temp", "main", "mine", "VIEW"),
                      ("dashboards", "extra", "notes", "BASE TABLE"), ("memory", "main", "scratch", "BASE TABLE"),
                      ("dashboards", "main", "sites", "BASE TABLE")]
    assert schemata == [("dashboards", "extra"), ("dashboards", "main")]
    assert columns == [(c,) for c, *_ in COLUMNS]


def _running_query(server, user: str) -> tuple[psycopg.Connection, int, threading.Thread, list]:
    """A session of ``user`` running a 30 s query in a thread: (its connection, pid, thread,
    what the query ended with)."""
    con = _connect(server, user)
    [(pid,)] = con.execute("SELECT pg_backend_pid()").fetchall()
    ended: list = []

    def run() -> None:
        try:
            con.execute("SELECT pg_sleep(30)")
            ended.append("finished")
        except psycopg.Error as err:
            ended.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10  # (its statement running: a cancel before it cancels nothing)
    while not any(s.busy_since for s in server.sessions.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    return con, pid, thread, ended


def test_cancel_and_terminate_backend_only_for_the_same_user(server) -> None:
    victim, pid, thread, ended = _running_query(server, "analyst")
    with _connect(server, "mallory") as mallory:
        assert mallory.execute("SELECT pg_cancel_backend(%s), pg_terminate_backend(%s)",
                               [pid, pid]).fetchall() == [(False, False)]
        assert mallory.execute("SELECT pg_cancel_backend(123456)").fetchall() == [(False,)]
    time.sleep(0.3)
    assert thread.is_alive()  # untouched by another user's calls
    with _connect(server) as same_user:  # (what Superset does to stop a query)
        assert same_user.execute("SELECT pg_cancel_backend(%s)", [pid]).fetchall() == [(True,)]
        thread.join(10)
        assert isinstance(ended[0], psycopg.errors.QueryCanceled)
        assert victim.execute("SELECT 1").fetchall() == [(1,)]  # the session goes on
        assert same_user.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchall() == [(True,)]
    # (as in PostgreSQL, pg_terminate_backend returns once the session is told, not once it
    # has ended: on a loaded machine the victim's next statement may come first)
    deadline = time.monotonic() + 30
    while any(number == pid for number, _ in server.sessions) and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(psycopg.OperationalError):
        victim.execute("SELECT 1")
    victim.close()


def test_signals_name_their_caller_in_a_shared_database(serving, tmp_path) -> None:
    """A writable database's sessions share one DuckDB instance (and its Python functions):
    each session's call still names its own session, with a secret no other one knows."""
    server = serving(data_dirs=[tmp_path], database=str(tmp_path / "team.duckdb"), writable=True)
    victim, pid, thread, ended = _running_query(server, "analyst")
    with _connect(server, "mallory") as mallory:
        assert mallory.execute("SELECT pg_cancel_backend(%s)", [pid]).fetchall() == [(False,)]
        forged = "SELECT vcfzarr_signal_backend(%s, 0, %s, false)"  # the victim's key, guessed
        assert mallory.execute(forged, [pid, pid]).fetchall() == [(False,)]
    assert thread.is_alive()
    with _connect(server) as same_user:
        assert same_user.execute("SELECT pg_cancel_backend(%s)", [pid]).fetchall() == [(True,)]
    thread.join(10)
    assert isinstance(ended[0], psycopg.errors.QueryCanceled)
    victim.close()


# -- SQLAlchemy (2 with psycopg 3; 1.4 with psycopg2) and pandas ------------------------------


def _engine_url(server) -> str:
    """What the guide tells each SQLAlchemy to use: psycopg 3 on SQLAlchemy 2, psycopg2
    (``postgresql://``) on 1.4 (Superset's)."""
    sqlalchemy = pytest.importorskip("sqlalchemy")
    scheme = "postgresql" if sqlalchemy.__version__.startswith("1.") else "postgresql+psycopg"
    if scheme == "postgresql":
        pytest.importorskip("psycopg2")
    return f"{scheme}://analyst@127.0.0.1:{server.port}/dashboards"


def test_sqlalchemy_inspects_the_file_and_reads_its_tables(server) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(_engine_url(server))
    try:
        inspector = sqlalchemy.inspect(engine)
        assert {"main", "extra"} <= set(inspector.get_schema_names())
        assert "vcfzarr_sql" not in inspector.get_schema_names()
        assert inspector.get_table_names() == ["sites"]
        assert inspector.get_view_names() == ["good_sites"]
        assert inspector.get_table_names(schema="extra") == ["notes"]
        expected = {"VARCHAR": sqlalchemy.Text, "BIGINT": sqlalchemy.BigInteger, "DOUBLE": sqlalchemy.Float}
        for name in ("sites", "good_sites"):
            columns = inspector.get_columns(name)
            assert [c["name"] for c in columns] == [c for c, *_ in COLUMNS]
            for column, (_, duckdb_type, *_) in zip(columns, COLUMNS):
                assert isinstance(column["type"], expected[duckdb_type]), column
        assert inspector.get_pk_constraint("sites")["constrained_columns"] == ["pos"]
        table = sqlalchemy.Table("good_sites", sqlalchemy.MetaData(), autoload_with=engine)
        with engine.connect() as con:  # (what pandas.read_sql_table does)
            assert sorted(con.execute(sqlalchemy.select(table)).fetchall()) == sorted(GOOD_SITES)
    finally:
        engine.dispose()


def test_pandas_read_sql_table(server) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    if sqlalchemy.__version__.startswith("1."):
        pytest.skip("pandas 2.2 and later read SQL tables through SQLAlchemy 2 only")
    pandas = pytest.importorskip("pandas")
    engine = sqlalchemy.create_engine(_engine_url(server))
    try:
        frame = pandas.read_sql_table("sites", engine)
        assert sorted(frame.itertuples(index=False, name=None)) == sorted(SITES)
        view = pandas.read_sql_table("good_sites", engine, schema="main")
        assert sorted(view.itertuples(index=False, name=None)) == sorted(GOOD_SITES)
        notes = pandas.read_sql_table("notes", engine, schema="extra")
        assert list(notes.columns) == ["note"] and len(notes) == 0
    finally:
        engine.dispose()


# -- pgJDBC (DBeaver, Metabase, Tableau) -----------------------------------------------------


@pytest.mark.slow
@needs_pgjdbc
def test_pgjdbc_database_metadata(server) -> None:
    sections = catalog_probe(server.port, "dashboards", "analyst", "sites")
    assert sections["schemas"] == [["extra"], ["main"]]
    assert sorted(sections["tables"]) == [["extra", "notes", "TABLE"], ["main", "good_sites", "VIEW"],
                                          ["main", "sites", "TABLE"]]
    assert sections["columns"] == [["sites", column, jdbc_name, jdbc_type, str(i)]
                                   for i, (column, _, _, jdbc_name, jdbc_type) in enumerate(COLUMNS, 1)]
    assert sections["primary keys"] == [["sites", "pos", "1", "sites_pos_pkey"]]
    assert sections["index info"] == [["sites", "sites_pos_pkey", "f", "pos", "1"]]
    assert sections["query"] == [[contig, str(pos)] for contig, pos, _ in SITES[:2]]


# -- ADBC Flight SQL -------------------------------------------------------------------------


def test_flight_sql_get_objects_lists_the_file_with_type_names(database) -> None:
    flight_sql = pytest.importorskip("adbc_driver_flightsql.dbapi")
    pytest.importorskip("google.protobuf")
    from vcfzarr_sql.serve.flight import make_flight_server

    server = make_flight_server("127.0.0.1", 0, data_dirs=[database.parent], database=str(database),
                                password="pw")
    threading.Thread(target=server.serve, daemon=True).start()
    try:
        # adbc-driver-flightsql 1.13 sends "Basic dTpwdw" (base64 without its padding) for u:pw
        with flight_sql.connect(f"grpc://127.0.0.1:{server.port}", autocommit=True,
                                db_kwargs={"username": "u", "password": "pw"}) as con:
            objects = con.adbc_get_objects().read_all().to_pylist()
    finally:
        server.shutdown()
    schemas = {(catalog["catalog_name"], schema["db_schema_name"]): schema
               for catalog in objects for schema in catalog["catalog_db_schemas"] or ()}
    assert ("dashboards", "vcfzarr_sql") not in schemas
    tables = {t["table_name"]: t for t in schemas["dashboards", "main"]["db_schema_tables"]}
    assert {name: t["table_type"] for name, t in tables.items()} == {"sites": "TABLE", "good_sites": "VIEW"}
    for table in tables.values():
        assert [(c["column_name"], c["xdbc_type_name"]) for c in table["table_columns"]] == \
            [(column, duckdb_type) for column, duckdb_type, *_ in COLUMNS]


# -- views over the table functions, saved in the served file -------------------------------


def test_a_view_over_vcf_zarr_in_the_file_reads_in_every_session(data_dir, tmp_path) -> None:
    import oracle
    from server_sessions import SAMPLE_VCF

    import vcfzarr_sql

    outside = tmp_path / "outside.zarr"  # a store the server was not given
    shutil.copytree(data_dir / "sample.zarr", outside)
    path = tmp_path / "views.duckdb"
    with vcfzarr_sql.connect(str(path)) as con:
        con.sql(f"CREATE VIEW sites AS SELECT contig, pos FROM vcf_zarr('{data_dir / 'sample.zarr'}')")
        con.sql(f"CREATE VIEW elsewhere AS SELECT pos FROM vcf_zarr('{outside}')")
    expected = [(r.chrom, r.pos) for r in oracle.records(SAMPLE_VCF)]
    server = make_server("127.0.0.1", 0, data_dirs=[data_dir], database=str(path))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for _ in range(2):  # each session registers the file's calls
            with _connect(server) as con:
                assert con.execute("SELECT contig, pos FROM sites ORDER BY contig, pos").fetchall() \
                    == sorted(expected)
                with pytest.raises(psycopg.Error) as refused:
                    con.execute("SELECT count(*) FROM elsewhere").fetchall()
                assert str(tmp_path) not in str(refused.value)
    finally:
        server.shutdown()
        server.server_close()
