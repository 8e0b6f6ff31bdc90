"""``serve --protocol flight-sql``: ADBC's Flight SQL driver (a real client, in Go) against the
server on port 0: statements, parameters, catalog calls, a 1M-row result, cancellation, TLS and
user/password. Rows from stores are checked against bcftools (tests/oracle.py)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import oracle
import pytest

flight_sql = pytest.importorskip("adbc_driver_flightsql.dbapi")
adbc = pytest.importorskip("adbc_driver_manager")
pytest.importorskip("google.protobuf")

from vcfzarr_sql.serve.flight import FlightSqlServer, make_flight_server  # noqa: E402 (the flight extra)
from vcfzarr_sql.serve.pg.config import ServerConfigError  # noqa: E402

SAMPLE_VCF = oracle.CORPUS_SAMPLE


@contextlib.contextmanager
def _serving(**kwargs) -> Iterator[FlightSqlServer]:
    """A Flight SQL server on a free port, serving from a thread until the block ends."""
    server = make_flight_server("127.0.0.1", 0, **kwargs)
    threading.Thread(target=server.serve, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with _serving(data_dirs=[tmp_path_factory.getbasetemp().parent]) as server:  # the stores
        yield server


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(SAMPLE_VCF, variants_chunk_size=3))


@pytest.fixture()
def con(server):
    with flight_sql.connect(f"grpc://127.0.0.1:{server.port}", autocommit=True) as connection:
        yield connection


def test_parameterised_query_matches_bcftools(con, store) -> None:
    with con.cursor() as cur:
        cur.execute("SELECT contig, pos, ref FROM vcf_zarr(?) WHERE contig = ? AND pos > ? ORDER BY pos",
                    parameters=(store, "20", 1200000))
        rows = cur.fetchall()
    expected = [(r.chrom, r.pos, r.ref) for r in oracle.records(SAMPLE_VCF)
                if r.chrom == "20" and r.pos > 1200000]
    assert rows == expected and expected


def test_region_query_as_arrow(con, store) -> None:
    region = "20:1110000-1235000"
    with con.cursor() as cur:
        cur.execute(f"SELECT contig, pos, id, alt FROM vcf_zarr('{store}', region := '{region}')")
        table = cur.fetch_arrow_table()
    expected = oracle.records(SAMPLE_VCF, region=region)
    assert table.column_names == ["contig", "pos", "id", "alt"]
    assert [tuple(row.values()) for row in table.to_pylist()] == \
        [(r.chrom, r.pos, r.id, r.alt) for r in expected] and len(expected) > 1


@pytest.fixture()
def shared_con(tmp_path):
    """A client of a server whose statements share a writable database."""
    with _serving(data_dirs=[tmp_path], database=str(tmp_path / "shared.duckdb"), writable=True) as server, \
            flight_sql.connect(f"grpc://127.0.0.1:{server.port}", autocommit=True) as connection:
        yield connection


def test_updates_and_catalog(shared_con) -> None:
    con = shared_con
    with con.cursor() as cur:
        cur.execute("CREATE OR REPLACE TABLE flight_notes (id BIGINT, note VARCHAR, score DOUBLE)")
        cur.execute("INSERT INTO flight_notes VALUES (1, 'one', 0.5), (2, 'two', 1.5)")
        assert cur.rowcount == 2
        cur.execute("CREATE OR REPLACE VIEW flight_view AS SELECT id, note FROM flight_notes")
        cur.executemany("INSERT INTO flight_notes VALUES (?, ?, ?)", [(3, "three", 2.5), (4, "four", 3.5)])
        cur.execute("SELECT count(*) FROM flight_notes")
        assert cur.fetchone() == (4,)
    objects = con.adbc_get_objects(table_name_filter="flight%").read_all().to_pylist()
    [memory] = objects
    [main] = [s for s in memory["catalog_db_schemas"] if s["db_schema_name"] == "main"]
    tables = {t["table_name"]: t for t in main["db_schema_tables"]}
    assert {name: t["table_type"] for name, t in tables.items()} == \
        {"flight_notes": "TABLE", "flight_view": "VIEW"}
    assert [(c["column_name"], c["ordinal_position"]) for c in tables["flight_notes"]["table_columns"]] == \
        [("id", 1), ("note", 2), ("score", 3)]
    schema = con.adbc_get_table_schema("flight_view")
    assert [(f.name, str(f.type)) for f in schema] == [("id", "int64"), ("note", "string")]
    assert set(con.adbc_get_table_types()) >= {"TABLE", "VIEW"}


def test_million_rows(con) -> None:
    with con.cursor() as cur:
        cur.execute("SELECT i AS n, i * 0.5 AS half FROM range(1000000) t(i)")
        table = cur.fetch_arrow_table()
    assert table.num_rows == 1_000_000
    assert table.column("n").to_pylist()[-3:] == [999997, 999998, 999999]
    assert sum(table.column("half").to_pylist()) == sum(range(1_000_000)) * 0.5


def test_catalog_commands_are_answered_by_workers(con) -> None:
    """ADBC's get_objects and get_table_schema on a server whose statements run in worker
    processes (the catalog's tables come back from them as Arrow IPC bytes)."""
    with con.cursor() as cur:
        cur.execute("SELECT 1 AS one")  # (a worker waits now)
        assert cur.fetchall() == [(1,)]
    [memory] = con.adbc_get_objects(depth="db_schemas").read_all().to_pylist()
    assert memory["catalog_name"] == "memory"
    assert "main" in {schema["db_schema_name"] for schema in memory["catalog_db_schemas"]}
    assert set(con.adbc_get_table_types()) >= {"TABLE", "VIEW"}


def test_errors_are_reported(con) -> None:
    with con.cursor() as cur:
        with pytest.raises(adbc.Error, match="no_such_table"):
            cur.execute("SELECT * FROM no_such_table")
        cur.execute("SELECT 1 AS one")
        assert cur.fetchall() == [(1,)]


def _once_running(server: FlightSqlServer, then: Callable[[], None]) -> None:
    """Call ``then`` (from a thread) once a call of ``server`` has had a worker busy for 0.5 s
    (at most 120 s later): a timer could fire before the statement starts on a loaded machine,
    and cancel nothing, or waste time on an idle one."""
    def wait() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                runner.busy_since is not None and time.monotonic() - runner.busy_since > 0.5
                for runner in server._pool.all()):
            time.sleep(0.05)
        then()
    threading.Thread(target=wait, daemon=True).start()


def test_cancel(server, con) -> None:
    with con.cursor() as cur:
        _once_running(server, cur.adbc_cancel)
        started = time.monotonic()
        with pytest.raises(adbc.Error):
            cur.execute("SELECT count(*) FROM range(1000000000000) a")
            cur.fetchall()
        assert time.monotonic() - started < 30
    deadline = time.monotonic() + 10
    while server.running() and time.monotonic() < deadline:  # DuckDB was interrupted
        time.sleep(0.05)
    assert server.running() == 0
    with con.cursor() as cur:
        cur.execute("SELECT 2 AS two")
        assert cur.fetchall() == [(2,)]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (openssl), and its key."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_tls_and_password(certificate) -> None:
    cert, key = certificate
    with _serving(password="s3cret", tls_cert=cert, tls_key=key) as server:
        uri = f"grpc+tls://127.0.0.1:{server.port}"
        tls = {"adbc.flight.sql.client_option.tls_root_certs": cert.read_text()}
        with pytest.raises(adbc.Error, match="(?i)unauthenticated|password"):
            with flight_sql.connect(uri, autocommit=True, db_kwargs={**tls, "username": "me", "password": "wrong"}) as con, \
                    con.cursor() as cur:
                cur.execute("SELECT 1")
        with pytest.raises(adbc.Error):  # no password at all
            with flight_sql.connect(uri, autocommit=True, db_kwargs=tls) as con, con.cursor() as cur:
                cur.execute("SELECT 1")
        with pytest.raises(adbc.Error):  # plaintext to a TLS server
            with flight_sql.connect(f"grpc://127.0.0.1:{server.port}", autocommit=True,
                                    db_kwargs={"username": "me", "password": "s3cret"}) as con, \
                    con.cursor() as cur:
                cur.execute("SELECT 1")
        with flight_sql.connect(uri, autocommit=True, db_kwargs={**tls, "username": "me", "password": "s3cret"}) as con, \
                con.cursor() as cur:
            cur.execute("SELECT 40 + ? AS answer", parameters=(2,))
            assert cur.fetchall() == [(42,)]


def test_a_server_without_password_lets_logins_in(server) -> None:
    with flight_sql.connect(f"grpc://127.0.0.1:{server.port}", autocommit=True,
                            db_kwargs={"username": "me", "password": "anything"}) as con, \
            con.cursor() as cur:
        cur.execute("SELECT 7 AS seven")
        assert cur.fetchall() == [(7,)]


@pytest.mark.parametrize("attack", [
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM glob('/*')",
    "COPY (SELECT 1) TO '{tmp}/out.csv'",
    "ATTACH '{tmp}/other.duckdb' AS other",
    "SET enable_external_access = true",
    "SELECT count(*) FROM vcf_zarr('{outside}')",
    "SELECT count(*) FROM vcf_zarr('ftp://127.0.0.1:1/x.zarr')",
])
def test_statements_run_locked_down(con, store, tmp_path, attack) -> None:
    """Flight SQL sessions are serve's: no files, settings or stores beyond the data dirs."""
    outside = tmp_path / "outside.zarr"
    shutil.copytree(store, outside)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with _serving(data_dirs=[data_dir]) as server, \
            flight_sql.connect(f"grpc://127.0.0.1:{server.port}", autocommit=True) as client, \
            client.cursor() as cur:
        with pytest.raises(adbc.Error):
            cur.execute(attack.format(tmp=tmp_path, outside=outside))
            cur.fetchall()
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "other.duckdb").exists()


def test_a_reachable_host_needs_tls_and_a_password() -> None:
    with pytest.raises(ServerConfigError, match="--tls-cert"):
        make_flight_server("0.0.0.0", 0)


def test_command_line(tmp_path) -> None:
    """``vcfzarr-sql serve --protocol flight-sql --port 0`` says where it listens and answers."""
    import re
    import sys

    process = subprocess.Popen([sys.executable, "-m", "vcfzarr_sql", "serve", "--protocol", "flight-sql",
                                "--port", "0"], stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"grpc://\S+", line)
        assert found is not None, line
        uri = found.group()
        with flight_sql.connect(uri, autocommit=True) as con, con.cursor() as cur:
            cur.execute("SELECT 6 * 7 AS answer")
            assert cur.fetchall() == [(42,)]
    finally:
        process.terminate()
        process.wait(30)
