"""``serve --protocol flight-sql`` under attack: what errors tell clients, password guessing,
bearer tokens, and statements left open (pyarrow.flight as the client)."""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from server_sessions import longest_gil_hold, peak_tree_memory, relayed_from, serve_process

pytest.importorskip("google.protobuf")
if TYPE_CHECKING:
    from pyarrow import flight
else:
    flight = pytest.importorskip("pyarrow.flight")

from vcfzarr_sql.serve import memory, watchdog, workers  # noqa: E402
from vcfzarr_sql.serve.flight import Flight_pb2, FlightSqlServer, make_flight_server  # noqa: E402
from vcfzarr_sql.serve.flight import FlightSql_pb2 as sql  # noqa: E402 (the flight extra)
from vcfzarr_sql.serve.flight import worker as worker_module  # noqa: E402
from vcfzarr_sql.serve.flight.auth import PasswordAuth, Tokens  # noqa: E402
from vcfzarr_sql.serve.flight.server import MAX_STATEMENTS_PER_CLIENT, pack, unpack  # noqa: E402
from vcfzarr_sql.serve.flight.worker import Pool  # noqa: E402
from vcfzarr_sql.serve.pg.config import Limits  # noqa: E402
from vcfzarr_sql.serve.pg.lockdown import LockedDatabase, SessionPolicy  # noqa: E402
from vcfzarr_sql.serve.pg.sqlstate import PgError  # noqa: E402
from vcfzarr_sql.store.confined import DataDirs  # noqa: E402

PASSWORD = "correct horse battery staple"

Serve = Callable[..., tuple[FlightSqlServer, flight.FlightClient]]


@pytest.fixture()
def flight_serving() -> Iterator[Serve]:
    """Starts Flight SQL servers on free ports (each with a client), shut down at the end."""
    servers = []

    def start(**kwargs) -> tuple[FlightSqlServer, flight.FlightClient]:
        server = make_flight_server("127.0.0.1", 0, **kwargs)
        threading.Thread(target=server.serve, daemon=True).start()
        servers.append(server)
        return server, flight.FlightClient(f"grpc://127.0.0.1:{server.port}")

    yield start
    for server in servers:
        server.shutdown()


def _basic(user: bytes, password: bytes) -> tuple[bytes, bytes]:
    return b"authorization", b"Basic " + base64.b64encode(user + b":" + password)


def _logged_in(client: flight.FlightClient, user: bytes = b"me") -> flight.FlightCallOptions:
    return flight.FlightCallOptions(headers=[client.authenticate_basic_token(user, PASSWORD.encode())])


def _query(query: str) -> flight.FlightDescriptor:
    return flight.FlightDescriptor.for_command(pack(sql.CommandStatementQuery(query=query)))


def _prepare(client: flight.FlightClient, options: flight.FlightCallOptions) -> bytes:
    """A new prepared statement's handle."""
    body = pack(sql.ActionCreatePreparedStatementRequest(query="SELECT 1"))
    [result] = client.do_action(flight.Action("CreatePreparedStatement", body), options)
    created = unpack(result.body.to_pybytes())
    assert isinstance(created, sql.ActionCreatePreparedStatementResult)
    return created.prepared_statement_handle


def _close(client: flight.FlightClient, options: flight.FlightCallOptions, handle: bytes) -> None:
    body = pack(sql.ActionClosePreparedStatementRequest(prepared_statement_handle=handle))
    list(client.do_action(flight.Action("ClosePreparedStatement", body), options))


def _one_line(error: Exception) -> str:
    message = str(error)
    assert "Traceback" not in message and '.py"' not in message and "\n" not in message.strip(), message
    return message


def test_errors_are_one_line_without_traceback(flight_serving, tmp_path) -> None:
    server, client = flight_serving(data_dirs=[tmp_path], password=PASSWORD)
    with pytest.raises(flight.FlightUnauthenticatedError) as raised:  # before login: not UTF-8
        client.list_actions(options=flight.FlightCallOptions(headers=[_basic(b"\xff", b"x")]))
    assert "password authentication failed" in _one_line(raised.value)
    with pytest.raises(flight.FlightUnauthorizedError) as raised:
        client.get_flight_info(_query("SELECT * FROM vcf_zarr('/etc')"), _logged_in(client))
    assert "not under a served data directory (SQLSTATE 42501)" in _one_line(raised.value)
    with pytest.raises(flight.FlightServerError) as raised:
        client.get_flight_info(_query("SELEC 1"), _logged_in(client))
    assert "(SQLSTATE 42601)" in _one_line(raised.value)
    with pytest.raises(Exception) as raised:  # pyarrow 26 sends it as a Python error, traceback too
        client.get_schema(_query("SELECT * FROM vcf_zarr('/etc')"), _logged_in(client))
    assert "(SQLSTATE 42501)" in str(raised.value) and "server.py" not in str(raised.value)


def test_unexpected_errors_are_logged_not_sent(flight_serving, tmp_path, monkeypatch, caplog) -> None:
    server, client = flight_serving(data_dirs=[tmp_path])

    def broken(command: object, context: object) -> None:
        raise KeyError("/home/server/secret/path")

    monkeypatch.setattr(server, "_catalog_table", broken)
    with caplog.at_level(logging.ERROR, logger="vcfzarr_sql.serve.flight"), \
            pytest.raises(flight.FlightInternalError) as raised:
        client.get_flight_info(flight.FlightDescriptor.for_command(pack(sql.CommandGetCatalogs())))
    assert "internal error" in _one_line(raised.value) and "secret" not in str(raised.value)
    assert "/home/server/secret/path" in caplog.text


def test_failed_logins_are_slowed_and_logged(flight_serving, tmp_path, caplog) -> None:
    server, client = flight_serving(data_dirs=[tmp_path], password=PASSWORD)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="vcfzarr_sql.serve.flight"):
        for attempt in range(5):
            with pytest.raises(flight.FlightUnauthenticatedError):
                client.list_actions(options=flight.FlightCallOptions(
                    headers=[_basic(b"me", f"guess{attempt}".encode())]))
    # as the PostgreSQL server: waits of 0.5, 1, 2, 4 s between these (docs/security.md)
    assert time.monotonic() - started > 7
    assert caplog.text.count('failed Flight SQL login for user "me": wrong password') == 5


def test_tokens_expire_and_are_bounded() -> None:
    now = [0.0]  # a fake clock: no sleeps a loaded machine could stretch (issue 23 item 10)
    tokens = Tokens(idle_timeout=0.2, limit=2, clock=lambda: now[0])
    first, second, third = (tokens.issue(user) for user in ("ann", "bob", "cy"))
    assert (tokens.user(first), tokens.user(second), tokens.user(third)) == (None, "bob", "cy")
    now[0] += 0.1
    assert tokens.user(second) == "bob"  # a use keeps it alive
    now[0] += 0.15
    assert (tokens.user(second), tokens.user(third)) == ("bob", None)


def test_without_a_password_logins_keep_no_token() -> None:
    auth, basic = PasswordAuth(None), "Basic " + base64.b64encode(b"me:anything").decode()
    replies = {auth.start_call(None, {"authorization": [basic]}).sending_headers()["authorization"]
               for _ in range(3)}
    assert replies == {"Bearer unchecked"}  # what clients expect back, the same for every login


@contextlib.contextmanager
def _client_from(address: str, server: FlightSqlServer) -> Iterator[flight.FlightClient]:
    """A client of ``server`` that the server sees at ``address`` (127.0.0.2...)."""
    with relayed_from(address, server.port) as port:
        client = flight.FlightClient(f"grpc://127.0.0.1:{port}")
        try:
            yield client
        finally:
            client.close()


def test_open_statements_are_bounded_per_client(flight_serving, tmp_path) -> None:
    server, client = flight_serving(data_dirs=[tmp_path], password=PASSWORD)
    mallory = _logged_in(client, b"mallory")
    handles = [_prepare(client, mallory) for _ in range(MAX_STATEMENTS_PER_CLIENT)]
    with pytest.raises(flight.FlightServerError, match="too many open statements"):
        _prepare(client, mallory)
    with pytest.raises(flight.FlightServerError, match="too many open statements"):
        client.get_flight_info(_query("SELECT 1"), mallory)  # a query never fetched counts too
    with _client_from("127.0.0.2", server) as elsewhere:
        assert _prepare(elsewhere, _logged_in(elsewhere, b"alice"))  # another client is not held back
    _close(client, mallory, handles.pop())
    assert _prepare(client, mallory)  # closing freed its place


def test_user_names_from_one_address_share_its_statements(flight_serving, tmp_path) -> None:
    """Issue 23 item 4: the password is shared and a user name is the client's claim, so a
    client is its address: logging in under new names gives no more room (before, each name
    at an address was a client of its own, with 32 statements)."""
    server, client = flight_serving(data_dirs=[tmp_path], password=PASSWORD)
    opened = 0
    with pytest.raises(flight.FlightServerError, match="too many open statements"):
        for name in range(3):
            options = _logged_in(client, f"user{name}".encode())
            for _ in range(MAX_STATEMENTS_PER_CLIENT // 2):
                _prepare(client, options)
                opened += 1
    assert opened == MAX_STATEMENTS_PER_CLIENT


def test_logging_in_again_gives_no_more_statements(flight_serving, tmp_path) -> None:
    """Issue 23 item 4: the cap is per user and address, not per bearer token."""
    server, client = flight_serving(data_dirs=[tmp_path], password=PASSWORD)
    for _ in range(MAX_STATEMENTS_PER_CLIENT // 2):
        _prepare(client, _logged_in(client, b"mallory"))
    with pytest.raises(flight.FlightServerError, match="too many open statements"):
        for _ in range(MAX_STATEMENTS_PER_CLIENT // 2 + 1):
            _prepare(client, _logged_in(client, b"mallory"))


def test_clients_with_open_statements_are_bounded(flight_serving, tmp_path) -> None:
    """Issue 23 item 4: --max-connections counts clients (addresses) with open statements; a
    client that closes its statements frees its place."""
    server, _ = flight_serving(data_dirs=[tmp_path], password=PASSWORD, limits=Limits(max_connections=3))
    with contextlib.ExitStack() as stack:
        clients = {user: stack.enter_context(_client_from(f"127.0.0.{number}", server))
                   for number, user in enumerate((b"a", b"b", b"c", b"d"), start=2)}
        handles = {user: _prepare(clients[user], _logged_in(clients[user], user)) for user in (b"a", b"b", b"c")}
        with pytest.raises(flight.FlightServerError, match="too many clients"):
            _prepare(clients[b"d"], _logged_in(clients[b"d"], b"d"))
        _close(clients[b"a"], _logged_in(clients[b"a"], b"a"), handles[b"a"])
        assert _prepare(clients[b"d"], _logged_in(clients[b"d"], b"d"))


def test_statement_timeout_cancels_flight_queries(flight_serving, tmp_path) -> None:
    """Issue 23 item 4: Flight SQL statements end at the statement timeout, and the server
    goes on."""
    server, client = flight_serving(data_dirs=[tmp_path], limits=Limits(statement_timeout=1))
    options = flight.FlightCallOptions()
    started = time.monotonic()
    with pytest.raises(flight.FlightCancelledError, match="statement timeout"):
        info = client.get_flight_info(_query(
            "SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3"), options)
        client.do_get(info.endpoints[0].ticket, options).read_all()
    assert time.monotonic() - started < 1 + 15
    info = client.get_flight_info(_query("SELECT 42 AS answer"), options)
    assert client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist() == [{"answer": 42}]


def test_a_value_that_cannot_be_interrupted_ends_its_statement_in_time(flight_serving, tmp_path) -> None:
    """Issue 23 item 1 on Flight SQL: DuckDB's interrupt() does not stop repeat(), which ran
    far past the statement timeout in a thread of the server; its worker process is ended once
    it has spent 1.5 s of CPU after the interrupt (at most 5 s later), and the server goes on."""
    server, client = flight_serving(data_dirs=[tmp_path], memory_limit="300MB",
                                    limits=Limits(statement_timeout=1))
    options = flight.FlightCallOptions()
    info = client.get_flight_info(_query("SELECT 1 AS one"), options)  # (a worker waits now)
    assert client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist() == [{"one": 1}]
    started = time.monotonic()
    with pytest.raises(flight.FlightCancelledError, match="could not be stopped"):
        info = client.get_flight_info(_query("SELECT length(repeat('x', 2000000000)) AS n"), options)
        client.do_get(info.endpoints[0].ticket, options).read_all()
    took = time.monotonic() - started
    assert took < 1 + 7, f"{took:.1f} s"
    info = client.get_flight_info(_query("SELECT 42 AS answer"), options)
    assert client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist() == [{"answer": 42}]


def test_statements_allocating_at_once_stay_within_the_servers_memory(tmp_path) -> None:
    """Issue 23 item 1 on Flight SQL: three statements building values at once, each of which
    fits the cap but no two together, fail but for at most one (in threads of the server,
    several ran to their end; the last to allocate, once the others were refused, fits alone),
    and the server and its workers stay within the cap, give or take what they allocate before
    the watchdog ends the largest (as the PostgreSQL server's test)."""
    cap = 1_900_000_000  # (3 x --memory-limit + 1GB)
    with serve_process("--protocol", "flight-sql", "--data-dir", str(tmp_path),
                       "--memory-limit", "300MB") as (process, port):
        client = flight.FlightClient(f"grpc://127.0.0.1:{port}")
        failed: list[BaseException] = []

        def build() -> None:
            try:
                query = f"SELECT length(repeat('{'x' * 64}', {10**9 // 64})) AS n"  # (64 at a time: fast)
                info = client.get_flight_info(_query(query))
                client.do_get(info.endpoints[0].ticket).read_all()
            except flight.FlightError as err:
                failed.append(err)

        threads = [threading.Thread(target=build) for _ in range(3)]
        peak = peak_tree_memory(process.pid, threads)
        assert len(failed) >= 2, failed
        assert peak < 1.5 * cap, f"{peak >> 20} MiB"
        info = client.get_flight_info(_query("SELECT 42 AS answer"))
        assert client.do_get(info.endpoints[0].ticket).read_all().to_pylist() == [{"answer": 42}]


def test_a_worker_that_stops_reading_is_killed_not_waited_for(flight_serving, tmp_path) -> None:
    """The server never waits on a worker process: what it tells one (interrupt, memory room)
    goes down a pipe it writes without blocking, and a worker that does not read it (stopped
    here; a hostile or stuck process) is killed once the pipe is full."""
    server, client = flight_serving(data_dirs=[tmp_path])
    options = flight.FlightCallOptions()
    info = client.get_flight_info(_query("SELECT 1 AS one"), options)  # (a worker waits now)
    client.do_get(info.endpoints[0].ticket, options).read_all()
    [worker] = server._pool.all()
    pid = worker._pid
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        for _ in range(20_000):  # (~40 bytes each: a 64 KiB pipe is full long before)
            worker.interrupt()
            if not worker.alive():
                break
        assert time.monotonic() - started < 10
        assert not worker.alive() and _wait_for_exit(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    info = client.get_flight_info(_query("SELECT 42 AS answer"), options)
    assert client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist() == [{"answer": 42}]


def _wait_for_exit(pid: int, timeout: float = 10) -> bool:
    """Whether process ``pid`` is gone or a zombie within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_idle_statements_are_closed_by_the_idle_timeout(flight_serving, tmp_path) -> None:
    server, client = flight_serving(data_dirs=[tmp_path], limits=Limits(idle_timeout=0.5))
    options = flight.FlightCallOptions()
    handle = _prepare(client, options)
    deadline = time.monotonic() + 30
    while handle in server._statements._open and time.monotonic() < deadline:  # (not a use)
        time.sleep(0.2)
    with pytest.raises(flight.FlightServerError, match="unknown or closed statement"):
        client.get_flight_info(flight.FlightDescriptor.for_command(
            pack(sql.CommandPreparedStatementQuery(prepared_statement_handle=handle))), options)


def test_failed_queries_leave_no_statement_open(flight_serving, tmp_path) -> None:
    """A query that fails when it starts has no ticket to fetch it: it takes no place."""
    server, client = flight_serving(data_dirs=[tmp_path], password=PASSWORD)
    bob = _logged_in(client)
    for _ in range(MAX_STATEMENTS_PER_CLIENT + 1):
        with pytest.raises(flight.FlightError, match="no_such_table"):
            client.get_flight_info(_query("SELECT * FROM no_such_table"), bob)
    info = client.get_flight_info(_query("SELECT 42 AS answer"), bob)
    assert client.do_get(info.endpoints[0].ticket, bob).read_all().to_pylist() == [{"answer": 42}]


def test_idle_statements_are_closed(flight_serving, tmp_path, monkeypatch) -> None:
    server, client = flight_serving(data_dirs=[tmp_path])
    options = flight.FlightCallOptions()
    first = _prepare(client, options)
    for _ in range(MAX_STATEMENTS_PER_CLIENT - 1):
        _prepare(client, options)
    monkeypatch.setattr(server._statements, "idle_timeout", 0.0)
    assert _prepare(client, options)  # the others were idle: closed to make room
    with pytest.raises(flight.FlightServerError, match="unknown or closed statement"):
        client.get_flight_info(flight.FlightDescriptor.for_command(
            pack(sql.CommandPreparedStatementQuery(prepared_statement_handle=first))), options)


def test_a_long_statement_does_not_hold_the_gil(flight_serving, tmp_path) -> None:
    """Issue 23 item 7 on Flight SQL: DuckDB's ``sql()`` parses with Python's GIL held (9.8 s
    for a 9 MB statement on a loaded machine: every client stopped); this thread must keep
    running while the server parses a long query (its schema, then its rows) and a long update."""
    server, client = flight_serving(data_dirs=[tmp_path])
    options = flight.FlightCallOptions()
    values = ",".join(map(str, range(600_000)))
    query = f"SELECT count(*) AS n FROM range(10) WHERE range IN ({values})"
    with longest_gil_hold() as gaps:
        assert client.get_schema(_query(query), options).schema.names == ["n"]
        info = client.get_flight_info(_query(query), options)
        assert client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist() == [{"n": 10}]
        update = pack(sql.CommandStatementUpdate(query=f"CREATE TEMP TABLE t AS SELECT 1 WHERE 1 IN ({values})"))
        writer, reader = client.do_put(flight.FlightDescriptor.for_command(update), pa.schema([]), options)
        writer.done_writing()
        assert sql.DoPutUpdateResult.FromString(reader.read().to_pybytes()).record_count == 1
        writer.close()
    assert max(gaps) < 1.5, f"the GIL was held {max(gaps):.1f} s"


def test_worker_processes_are_bounded_however_many_calls_run_at_once(flight_serving, tmp_path) -> None:
    """Calls that run on a worker without an open statement (catalog commands, prepares)
    take processes too: they are bounded as statements are (4 x --max-connections), the rest
    refused (53300). Before, 40 such calls at once forked 16 workers under a limit of 8."""
    server, client = flight_serving(data_dirs=[tmp_path], limits=Limits(max_connections=1))
    tables = flight.FlightDescriptor.for_command(pack(sql.CommandGetTables(include_schema=True)))
    peak, errors, done = [0], [], threading.Event()

    def count() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], len(server._pool._taken) + len(server._pool._idle))
            time.sleep(0.002)

    def call() -> None:
        try:
            flight.FlightClient(f"grpc://127.0.0.1:{server.port}").get_flight_info(tables)
        except flight.FlightError as err:
            errors.append(str(err))

    threading.Thread(target=count, daemon=True).start()
    calls = [threading.Thread(target=call) for _ in range(16)]
    for thread in calls:
        thread.start()
    for thread in calls:
        thread.join()
    done.set()
    assert peak[0] <= 4
    assert all("too many statements running at once" in error for error in errors), errors
    client.get_flight_info(tables)  # (and the server goes on)


class _FakeRunner:
    def alive(self) -> bool:
        return True

    def close(self) -> None:
        pass


def test_the_pool_never_has_more_runners_than_its_limit() -> None:
    pool = Pool(_FakeRunner, limit=2)  # type: ignore[arg-type]
    first, _ = pool.take(), pool.take()
    with pytest.raises(PgError, match="too many statements running at once"):
        pool.take()
    pool.give_back(first)
    assert pool.take() is first


def test_one_address_takes_at_most_its_share_of_the_pool() -> None:
    """Calls running at once count per client (address) too: one address cannot take every
    worker the server may have (before, the pool counted only its total)."""
    pool = Pool(_FakeRunner, limit=4, per_client=2)  # type: ignore[arg-type]
    pool.take("10.0.0.1"), pool.take("10.0.0.1")
    with pytest.raises(PgError, match=r"too many statements running at once from your address \(2\)"):
        pool.take("10.0.0.1")
    assert pool.take("10.0.0.2")


def test_worker_starts_past_an_addresss_rate_are_refused(flight_serving, tmp_path) -> None:
    """Issue 23: a client made the server fork workers as fast as it sent statements (a query
    not fetched keeps its worker, so the next needs a new one). Worker starts beyond the idle
    ones follow the PostgreSQL server's start rates, per address and in all, and the refusal
    names the limit (before, every query had a new worker)."""
    server, client = flight_serving(data_dirs=[tmp_path],
                                    limits=Limits(starts_per_address=(3, 0.01), starts=(5, 0.01)))
    for _ in range(3):
        client.get_flight_info(_query("SELECT 1"))  # (never fetched: each keeps its worker)
    with pytest.raises(flight.FlightServerError, match=r"too many statement processes started from your "
                       r"address in a short time \(3 at once, then 0.01 a second\).*53300"):
        client.get_flight_info(_query("SELECT 1"))
    with _client_from("127.0.0.2", server) as elsewhere:
        for _ in range(2):
            elsewhere.get_flight_info(_query("SELECT 1"))
        with pytest.raises(flight.FlightServerError, match="processes started to the server in a short time"):
            elsewhere.get_flight_info(_query("SELECT 1"))


def test_a_reply_the_server_fails_to_read_ends_its_worker(flight_serving, tmp_path, monkeypatch) -> None:
    """A reply the server cannot take in (here its payload's memory refused after its header,
    as ``--max-memory`` may) leaves the rest of it in the socket: its worker must not serve
    the next statement. Before, the next query on it failed with 'the statement's process
    ended unexpectedly' (it read that rest as a reply)."""
    server, client = flight_serving(data_dirs=[tmp_path])
    options = flight.FlightCallOptions()

    def fetch(query: str) -> list[dict]:
        info = client.get_flight_info(_query(query), options)
        return client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist()

    assert fetch("SELECT 1 AS one") == [{"one": 1}]  # (a worker waits in the pool now)
    read_exactly = worker_module._read_exactly

    def refused(sock, size: int) -> bytearray:
        if size > worker_module._FRAME.size:
            raise MemoryError
        return read_exactly(sock, size)

    monkeypatch.setattr(worker_module, "_read_exactly", refused)
    with pytest.raises(flight.FlightError):
        fetch("SELECT 2 AS two")
    monkeypatch.setattr(worker_module, "_read_exactly", read_exactly)
    assert fetch("SELECT 42 AS answer") == [{"answer": 42}]


def test_a_workers_memory_room_is_counted_as_the_server_measured_it(flight_serving, tmp_path) -> None:
    """Below half the cap the server measures workers by resident size and gives each its
    room in that measure; the worker counted it against its proportional size (smaller by
    the pages it shares with the forkserver, ~70 MB), so it could take that much more than
    its room. Now it counts as the server measured (read here from its ``RLIMIT_DATA``)."""
    server, client = flight_serving(data_dirs=[tmp_path], limits=Limits(max_memory=1 << 40))
    info = client.get_flight_info(_query("SELECT 1 AS one"))
    client.do_get(info.endpoints[0].ticket).read_all()
    [worker] = server._pool.all()
    pid = worker._pid
    spare = memory.SPARE_THREADS * memory.thread_stack_bytes()
    time.sleep(2 * workers.PERIOD)  # (the worker has kept its cap with its room since)
    with open(f"/proc/{pid}/limits") as f:
        [limit] = [int(line.split()[3]) for line in f if line.startswith("Max data size")]
    with open(f"/proc/{pid}/status") as f:
        [data] = [int(line.split()[1]) << 10 for line in f if line.startswith("VmData:")]
    resident, proportional = memory.resident_bytes(pid), memory.proportional_bytes(pid)
    assert resident - proportional > 16 << 20  # (else this test shows nothing)
    slack = limit - data - spare
    assert abs(slack - (worker._room - resident)) < (resident - proportional) / 2


def test_a_cancelled_call_whose_worker_does_not_stop_ends_it(flight_serving, tmp_path) -> None:
    """A call the client cancels (its deadline here) interrupts its statement; a worker that
    does not stop (stopped here; a value DuckDB cannot interrupt) is killed 5 s later, as the
    watchdog ends a departed client's statement. Before, the server waited on it until the
    statement timeout (an hour by default), its worker and a gRPC thread held meanwhile."""
    server, client = flight_serving(data_dirs=[tmp_path])
    info = client.get_flight_info(_query("SELECT 1 AS one"))
    client.do_get(info.endpoints[0].ticket).read_all()
    [worker] = server._pool.all()
    pid = worker._pid
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(flight.FlightTimedOutError):
            client.get_flight_info(_query("SELECT 2 AS two"), flight.FlightCallOptions(timeout=1))
        assert _wait_for_exit(pid, 15)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    info = client.get_flight_info(_query("SELECT 42 AS answer"))
    assert client.do_get(info.endpoints[0].ticket).read_all().to_pylist() == [{"answer": 42}]


def test_parameter_rows_are_bounded(flight_serving, tmp_path) -> None:
    """The rows a DoPut binds stay in the server's memory as long as their prepared statement
    is open: they are refused past Limits.max_message, 64 MiB (as a PostgreSQL Bind is). Before, any size
    was kept (measured: 200 MB bound to one statement, 32 statements a client)."""
    server, client = flight_serving(data_dirs=[tmp_path], limits=Limits(max_message=1 << 20))
    body = pack(sql.ActionCreatePreparedStatementRequest(query="SELECT $1::VARCHAR AS s"))
    [result] = client.do_action(flight.Action("CreatePreparedStatement", body))
    created = unpack(result.body.to_pybytes())
    assert isinstance(created, sql.ActionCreatePreparedStatementResult)
    handle = created.prepared_statement_handle
    prepared = flight.FlightDescriptor.for_command(
        pack(sql.CommandPreparedStatementQuery(prepared_statement_handle=handle)))

    def bind(table: pa.Table) -> None:
        writer, reader = client.do_put(prepared, table.schema)
        with writer:
            writer.write_table(table, max_chunksize=64)
            writer.done_writing()
            reader.read()

    with pytest.raises(flight.FlightError, match="parameter rows of more than 1 MB"):
        bind(pa.table({"p": ["x" * 1000] * 2000}))
    assert server._statements._open[handle].parameters is None
    bind(pa.table({"p": ["here"]}))
    info = client.get_flight_info(prepared)
    assert client.do_get(info.endpoints[0].ticket).read_all().to_pylist() == [{"s": "here"}]


def test_a_long_error_reaches_the_client_and_keeps_its_worker(flight_serving, tmp_path) -> None:
    """An error longer than a worker's reply may be (one naming a 20,000-character column)
    came out as 'the statement's process ended unexpectedly', and its worker was thrown away,
    so each such query cost a process start. Now its text is cut to fit."""
    server, client = flight_serving(data_dirs=[tmp_path])
    client.do_get(client.get_flight_info(_query("SELECT 1 AS one")).endpoints[0].ticket).read_all()
    [worker] = server._pool.all()
    with pytest.raises(flight.FlightServerError, match="42703") as raised:
        client.get_flight_info(_query('SELECT "' + "\x01" * 20_000 + '"'))
    assert "ended unexpectedly" not in str(raised.value)
    assert server._pool.all() == [worker] and worker.alive()


def _poisoned_batch() -> bytes:
    """Arrow IPC bytes of a string batch whose offsets go backwards (0, 5, 3): the IPC reader
    and a basic ``validate()`` take it; a full validation refuses it."""
    offsets = pa.py_buffer(pa.array([0, 5, 3], pa.int32()).buffers()[1])
    strings = pa.StringArray.from_buffers(2, offsets, pa.py_buffer(b"abcdef"))
    return worker_module._ipc(pa.record_batch({"s": strings}))


def test_rows_a_worker_sends_are_validated(flight_serving, tmp_path, monkeypatch) -> None:
    """A worker process is trusted no more than a client: a record batch it sends with bad
    offsets (a hostile or broken worker, here its reply replaced in the server) is refused
    with an error and the worker killed. Before, the batch went on to the client as it was."""
    server, client = flight_serving(data_dirs=[tmp_path])
    client.do_get(client.get_flight_info(_query("SELECT 1 AS one")).endpoints[0].ticket).read_all()
    [worker] = server._pool.all()
    pid = worker._pid
    read = worker_module._read

    def poisoned(sock, longest: int = worker_module.workers.MAX_MESSAGE) -> tuple[list, bytearray]:
        reply, data = read(sock, longest)
        return (reply, bytearray(_poisoned_batch())) if reply == ["batch"] else (reply, data)

    monkeypatch.setattr(worker_module, "_read", poisoned)
    info = client.get_flight_info(_query("SELECT 'ab' AS s"))
    with pytest.raises(flight.FlightError, match="invalid Arrow data") as raised:
        client.do_get(info.endpoints[0].ticket).read_all()
    _one_line(raised.value)
    assert _wait_for_exit(pid)
    monkeypatch.setattr(worker_module, "_read", read)
    info = client.get_flight_info(_query("SELECT 42 AS answer"))
    assert client.do_get(info.endpoints[0].ticket).read_all().to_pylist() == [{"answer": 42}]


def test_an_interrupt_reaches_only_the_use_it_was_sent_for(tmp_path) -> None:
    """An interrupt (a client's cancel, CancelFlightInfo) names the use of the worker it is
    for; the worker's control thread drives its executor as here. One that arrives as its
    statement ends, once the next began, is ignored (before: it cancelled the next statement,
    another client's maybe); one that arrives ahead of its statement's first request holds."""
    executor = worker_module.Executor(LockedDatabase(SessionPolicy(DataDirs.of([tmp_path]))))
    rows = 3 * worker_module.BATCH_ROWS

    def fetched() -> int:
        count = 0
        while (batch := executor.next()) is not None:
            count += batch.num_rows
        return count

    try:
        executor.begin(1)
        executor.run(f"SELECT * FROM range({rows})", "SELECT", None)
        executor.begin(2)  # (the server's next statement, before statement 1's interrupt came)
        executor.run(f"SELECT * FROM range({rows})", "SELECT", None)
        executor.interrupt("user request", 1)
        assert fetched() == rows
        executor.interrupt("user request", 3)  # (its request not read yet)
        executor.begin(3)
        with pytest.raises(PgError, match="canceling statement due to user request"):
            executor.prepare("SELECT 1")
        executor.begin(4)
        executor.interrupt("statement timeout", 4)  # (before its session started)
        with pytest.raises(PgError, match="canceling statement due to statement timeout"):
            executor.run("SELECT 1", "SELECT", None)
        executor.begin(5)
        executor.run(f"SELECT * FROM range({rows})", "SELECT", None)
        executor.interrupt("user request", 5)
        with pytest.raises(PgError, match="canceling statement due to user request"):
            fetched()
    finally:
        executor.close()


def _stopped_idle_worker(server: FlightSqlServer, client: flight.FlightClient) -> int:
    """The pid of the server's one idle worker (after a query), stopped (SIGCONT it after)."""
    client.do_get(client.get_flight_info(_query("SELECT 1 AS one")).endpoints[0].ticket).read_all()
    [worker] = server._pool.all()
    assert isinstance(worker, worker_module.Worker) and worker._pid is not None
    os.kill(worker._pid, signal.SIGSTOP)
    return worker._pid


def test_a_cancelled_catalog_call_whose_worker_does_not_stop_ends_it(
        flight_serving, tmp_path, monkeypatch) -> None:
    """Catalog calls (GetTables...) run in a worker as statements do, and now are stopped as
    theirs are when the client cancels: interrupted, and the worker killed if it has not
    stopped END_GRACE_WALL seconds later (1 s here). Before, they had no call context: only
    the statement timeout (an hour by default) ended them."""
    monkeypatch.setattr(watchdog, "END_GRACE_WALL", 1.0)
    server, client = flight_serving(data_dirs=[tmp_path])
    pid = _stopped_idle_worker(server, client)
    try:
        with pytest.raises(flight.FlightTimedOutError):
            client.get_flight_info(flight.FlightDescriptor.for_command(pack(sql.CommandGetTables())),
                                   flight.FlightCallOptions(timeout=0.5))
        assert _wait_for_exit(pid, 10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    tables = client.get_flight_info(flight.FlightDescriptor.for_command(pack(sql.CommandGetTables())))
    assert client.do_get(tables.endpoints[0].ticket).read_all().num_rows == 0


def test_cancel_flight_info_ends_a_worker_that_does_not_stop(flight_serving, tmp_path, monkeypatch) -> None:
    """CancelFlightInfo interrupts the statement and, as a cancelled call's, kills its worker
    if it has not stopped END_GRACE_WALL seconds later (1 s here). Before, it only
    interrupted: a statement DuckDB cannot interrupt ran on to the statement timeout."""
    monkeypatch.setattr(watchdog, "END_GRACE_WALL", 1.0)
    server, client = flight_serving(data_dirs=[tmp_path])
    handle = _prepare(client, flight.FlightCallOptions())
    prepared = pack(sql.CommandPreparedStatementQuery(prepared_statement_handle=handle))
    pid = _stopped_idle_worker(server, client)
    failed: list[Exception] = []

    def run() -> None:
        try:
            client.get_flight_info(flight.FlightDescriptor.for_command(prepared))
        except flight.FlightError as err:
            failed.append(err)

    caller = threading.Thread(target=run)
    try:
        caller.start()
        deadline = time.monotonic() + 10
        while server.running() == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        request = Flight_pb2.CancelFlightInfoRequest()
        request.info.endpoint.add().ticket.ticket = prepared
        [result] = client.do_action(flight.Action("CancelFlightInfo", request.SerializeToString()))
        status = Flight_pb2.CancelFlightInfoResult.FromString(result.body.to_pybytes()).status
        assert status == Flight_pb2.CANCEL_STATUS_CANCELLED
        assert _wait_for_exit(pid, 10)
        caller.join(10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert len(failed) == 1 and "57014" in str(failed[0]), failed
