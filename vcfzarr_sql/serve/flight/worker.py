"""Flight SQL statements in processes of their own, so that the server can always end them.

A statement runs on a *runner*: an :class:`Executor` (one statement at a time, each on a new
locked-down DuckDB session), either in a worker process forked from the servers' preloaded
forkserver (:class:`Worker`, see :mod:`vcfzarr_sql.serve.workers` for why) or, for a shared
writable database whose sessions share one DuckDB instance, in the server's own threads.

Server and worker talk over a socket pair, one request and one reply at a time, each a JSON
list (:func:`~vcfzarr_sql.serve.workers.encode`) and a payload of Arrow IPC stream bytes (data,
never code):

- ``prepare(query)`` -> the statement's kind and its number of parameters;
- ``schema(query, kind, count)`` + parameters -> the schema of its rows, without running it;
- ``run(query, kind)`` + parameters -> the schema of its rows; then ``next`` -> one record
  batch (``end``: none left);
- ``update(query)`` + parameter rows -> the rows changed;
- ``catalog(name, arguments)`` -> the table of a Flight SQL catalog command;
- any of them -> ``error(sqlstate, message)`` instead (``internal(text)``: an unexpected
  error, which the server logs);
- ``room(bytes, exact)``, before a request that starts a statement, unanswered: the memory
  the worker may take from then on (so that no statement starts under an older cap), counted
  as the server last measured the worker (``exact``: proportional sizes, else resident).

A request the server cannot write within :data:`WRITE_WAIT` seconds kills the worker; a
worker that runs on is the watchdog's (the server reads replies as they come).

Each use of a worker (a statement's requests, from when the server takes it from its
:class:`Pool` to when it gives it back) has a number: ``statement(n)``, unanswered, comes before the first request of use ``n``.

A control pipe, which the server never waits on (a worker whose pipe is full is killed),
carries ``interrupt(reason, n)`` (for use ``n`` only: one that arrives as use ``n`` ends is
ignored by the next, one that arrives ahead of its use's first request holds for it) and ``room(bytes, exact)`` (the memory the worker may take, kept by the
kernel: :func:`~vcfzarr_sql.serve.memory.cap_process_memory`). The watchdog
(:mod:`~vcfzarr_sql.serve.watchdog`) sees each worker as a session it can end: it
interrupts a statement past the statement timeout, kills the worker when the statement goes
on (the client gets the watchdog's error), and kills the largest worker when the server's
memory, the workers' included, passes ``--max-memory``.

A worker serves one statement at a time and is kept for the next (:class:`Pool`): a query
that is fetched right away, as most are, costs no process start; a query whose rows are not
fetched yet keeps its worker until they are, or until its statement is closed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import duckdb
import pyarrow as pa

from vcfzarr_sql.engine.connection import Connection
from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.serve import memory, workers
from vcfzarr_sql.serve.flight import catalog
from vcfzarr_sql.serve.pg.lockdown import LockedDatabase, SessionPolicy
from vcfzarr_sql.serve.pg.sqlstate import PgError, sql_error
from vcfzarr_sql.serve.pg.start_rate import StartRate
from vcfzarr_sql.serve.pg.statements import UNPARSED, refuse_relation_names, split

__all__ = ["BATCH_ROWS", "Executor", "Pool", "Runner", "Worker", "WorkerSetup"]

log = logging.getLogger("vcfzarr_sql.serve.flight")

#: Rows per Arrow record batch streamed to the client.
BATCH_ROWS = 1 << 16
#: Statement types that return rows (anything else is an update, run when it is executed).
QUERIES = frozenset({"SELECT", "EXPLAIN", "PRAGMA", "CALL", "SHOW", "RELATION"})
#: Idle runners kept for the next statements, and seconds one is kept unused.
IDLE_RUNNERS = 2
IDLE_LINGER = 60.0
#: Seconds a request may take to be written to a worker before the worker is killed.
WRITE_WAIT = 5.0
#: Longest payload either side reads (bytes).
MAX_PAYLOAD = 1 << 31
#: Longest request a worker reads (its statement's text is in it; gRPC's messages are smaller).
MAX_REQUEST = 1 << 28
_FRAME = struct.Struct(">IQ")  # the JSON message's length, the payload's
#: Characters of an error's text a worker sends (each at most 6 bytes of JSON, \u escaped:
#: the reply fits in the message the server reads; an error naming a long identifier does not).
_LONGEST_TEXT = workers.MAX_MESSAGE // 8


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker needs of its server (sent once, when it starts)."""

    policy: SessionPolicy
    max_memory: int


class Runner(Protocol):
    """What a statement runs on: an :class:`Executor` here, or a :class:`Worker` process.
    ``parameters``: the rows bound by DoPut (None: none). The watchdog sees it as a session
    (:class:`~vcfzarr_sql.serve.watchdog.Watched`)."""

    connected_at: float
    logged_in: bool
    busy_since: float | None
    #: The number of its current use (:meth:`begin`), which interrupts name.
    statement: int

    def begin(self) -> int: ...

    def fileno(self) -> int | None: ...

    def drop(self) -> None: ...

    def prepare(self, query: str) -> tuple[str, int]: ...

    def schema(self, query: str, kind: str, count: int, parameters: pa.Table | None) -> pa.Schema: ...

    def run(self, query: str, kind: str, parameters: pa.Table | None) -> pa.Schema: ...

    def next(self) -> pa.RecordBatch | None: ...

    def update(self, query: str, parameters: pa.Table | None) -> int: ...

    def catalog(self, name: str, arguments: dict) -> pa.Table: ...

    def interrupt(self, reason: str = "user request", statement: int | None = None) -> None: ...

    def alive(self) -> bool: ...

    def close(self) -> None: ...


def _rows(parameters: pa.Table | None) -> list[list[object]]:
    """The parameter rows of a statement (one empty row when none are bound)."""
    if parameters is None:
        return [[]]
    return [list(row.values()) for row in parameters.to_pylist()] or [[]]


class Executor:
    """Runs one statement at a time, each on a new session of ``sessions`` (see the module);
    also what the watchdog reads of it when it runs in the server's process."""

    def __init__(self, sessions: LockedDatabase):
        self.sessions = sessions
        self.connected_at = time.monotonic()
        self.logged_in = True
        self.busy_since: float | None = None
        self._con: Connection | None = None
        self._reader: pa.RecordBatchReader | None = None
        self._reason: str | None = None
        self.statement = 0
        self._early: tuple[int, str] | None = None  # (an interrupt of a use not begun yet)
        self._lock = threading.Lock()

    def begin(self, statement: int | None = None) -> int:
        """Begin use number ``statement`` (None: the next): interrupts of earlier uses are
        ignored from now on; one told for this use before it began holds."""
        with self._lock:
            self.statement = self.statement + 1 if statement is None else statement
            early, self._early = self._early, None
            self._reason = early[1] if early is not None and early[0] == self.statement else None
            return self.statement

    @contextlib.contextmanager
    def _session(self, keep: bool = False) -> Iterator[Connection]:
        """A new session (the last one closed), whose interruption is told as such (an
        interrupt of this use before it started cancels it now); closed at the end unless
        ``keep``."""
        self.close()
        con = self.sessions.connect()
        with self._lock:
            self._con, reason = con, self._reason
        try:
            if reason is not None:
                raise PgError("57014", f"canceling statement due to {reason}")
            yield con
        except (duckdb.Error, pa.ArrowException) as err:
            self._told(err)
            raise
        finally:
            if not keep:
                self.close()

    def _told(self, err: Exception) -> None:
        """Raise the cancellation ``err`` is, if the statement was interrupted."""
        reason = self._reason
        if reason is not None and (isinstance(err, duckdb.InterruptException)
                                   or "interrupt" in str(err).lower()):
            raise PgError("57014", f"canceling statement due to {reason}") from None

    def prepare(self, query: str) -> tuple[str, int]:
        with self._session() as con:
            parsed = split(con.duckdb_connection, query)
            if len(parsed) != 1 or parsed[0].kind == UNPARSED:
                con.duckdb_connection.extract_statements(query)  # raises DuckDB's syntax error
                raise PgError("42601", f"one statement expected, got {len(parsed)}")
            refuse_relation_names(parsed[0])
        return parsed[0].kind, parsed[0].parameters

    @staticmethod
    def _start(con: Connection, query: str, row: list[object]) -> pa.RecordBatchReader:
        reader = con.rows(query, row or None, batch_rows=BATCH_ROWS)
        return pa.RecordBatchReader.from_batches(pa.schema([]), []) if reader is None else reader

    def schema(self, query: str, kind: str, count: int, parameters: pa.Table | None) -> pa.Schema:
        if kind not in QUERIES:
            return pa.schema([])
        row = _rows(parameters)[0]
        with self._session() as con:
            if kind != "SELECT":  # PRAGMA, SHOW...: cheap, and not a subquery
                reader = self._start(con, query, row)
            else:
                reader = self._start(con, f"SELECT * FROM ({query}) LIMIT 0", row or [None] * count)
            with reader:
                return reader.schema

    def run(self, query: str, kind: str, parameters: pa.Table | None) -> pa.Schema:
        rows = _rows(parameters)
        if len(rows) > 1 and kind in QUERIES:
            raise PgError("22023", "a query takes one row of parameters; bind one row")
        with self._session(keep=True) as con:
            reader = self._start(con, query, rows[0])
        with self._lock:
            self._reader = reader
        return reader.schema

    def next(self) -> pa.RecordBatch | None:
        reader = self._reader
        if reader is None:
            return None
        try:
            return reader.read_next_batch()
        except StopIteration:
            self.close()
            return None
        except (duckdb.Error, pa.ArrowException, OSError) as err:  # (DuckDB's interrupt: OSError)
            self._told(err)
            raise

    def update(self, query: str, parameters: pa.Table | None) -> int:
        """Run an update once per parameter row: the rows changed (-1: not known)."""
        total = 0
        with self._session() as con:
            for row in _rows(parameters):
                rows = con.execute(query, row or None).fetchall()
                description = con.duckdb_connection.description
                if not description or description[0][0] != "Count":
                    total = -1
                elif total >= 0 and rows:  # DDL: a Count column without rows
                    total += rows[0][0]
        return total

    def catalog(self, name: str, arguments: dict) -> pa.Table:
        """The table of the catalog command ``name`` (``catalogs``, ``db_schemas``, ``tables``)."""
        answer = {"catalogs": catalog.catalogs, "db_schemas": catalog.db_schemas,
                  "tables": catalog.tables}[name]
        with self._session() as con:
            return answer(con.duckdb_connection, **arguments)  # type: ignore[operator]

    def interrupt(self, reason: str = "user request", statement: int | None = None) -> None:
        """Cancel the running statement (from another thread), if it is of use number
        ``statement`` (None: the current use); one of a later use is kept for it."""
        with self._lock:
            if statement is not None and statement != self.statement:
                if statement > self.statement:
                    self._early = (statement, reason)
                return
            self._reason = reason
            if self._con is not None:
                with contextlib.suppress(duckdb.Error):
                    self._con.duckdb_connection.interrupt()

    def fileno(self) -> None:
        """No socket of its own."""
        return None

    def drop(self) -> None:
        """(Never logging in.)"""

    def alive(self) -> bool:
        return True

    def close(self) -> None:
        """Close the last session (and its rows)."""
        with self._lock:
            reader, con = self._reader, self._con
            self._reader, self._con = None, None
        if reader is not None:
            reader.close()
        if con is not None:
            con.close()


# -- the server's handle on a worker process -------------------------------------------------


def _write(sock: socket.socket, message: tuple, payload: bytes = b"") -> None:
    data = workers.encode(*message)
    sock.sendall(_FRAME.pack(len(data), len(payload)) + data)
    if payload:
        sock.sendall(payload)


def _read_exactly(sock: socket.socket, size: int) -> bytearray:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        count = sock.recv_into(view[got:])
        if not count:
            raise EOFError("the other side is gone")
        got += count
    return data


def _read(sock: socket.socket, longest: int = workers.MAX_MESSAGE) -> tuple[list, bytearray]:
    """The next message and its payload (a message of at most ``longest`` bytes)."""
    length, size = _FRAME.unpack(_read_exactly(sock, _FRAME.size))
    if length > longest or size > MAX_PAYLOAD:
        raise EOFError("message too long")
    return workers.decode(bytes(_read_exactly(sock, length))), _read_exactly(sock, size)


def _ipc(data: pa.Table | pa.RecordBatch | None) -> bytes:
    """Arrow IPC stream bytes of a table or batch (none: b"")."""
    if data is None:
        return b""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write(data)
    return sink.getvalue().to_pybytes()


def _table(data: bytes | bytearray) -> pa.Table | None:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all() if data else None


class Worker(workers.ProcessHandle):
    """The server's handle on one worker process (see the module): a :class:`Runner`, and a
    session the watchdog can end (:class:`~vcfzarr_sql.serve.watchdog.Endable`)."""

    def __init__(self, setup: WorkerSetup):
        self.connected_at = time.monotonic()
        self.logged_in = True
        self.busy_since: float | None = None
        self._room_due: int | None = None
        self.statement = 0
        self._told_statement = 0
        self._lock = threading.Lock()
        self._ended: PgError | None = None
        self._gone = False
        self._calls, calls_there = socket.socketpair()
        control_there, self._control = workers.CONTEXT.Pipe(duplex=False)
        self._process = workers.Process(target=_worker_main, name="vcfzarr-sql flight worker",
                                        daemon=True, args=(calls_there, control_there, setup))
        try:
            self._process.start()
        except (OSError, EOFError) as err:  # no process to be had (the machine's limits)
            log.warning("no process for a Flight SQL statement: %s", err)
            self._calls.close()
            self._control.close()
            raise PgError("53300", "could not start a process for the statement") from None
        finally:
            calls_there.close()
            control_there.close()
        self._pid = self._process.pid
        os.set_blocking(self._control.fileno(), False)  # (a full pipe: the worker is killed)

    # -- requests ------------------------------------------------------------------------------

    def _call(self, *message: object, payload: bytes = b"") -> tuple[list, bytearray]:
        """The worker's reply to ``message`` (PgError: its error, or why it ended)."""
        try:
            self._calls.settimeout(WRITE_WAIT)  # (a worker that does not read is killed)
            if self.statement != self._told_statement:
                _write(self._calls, ("statement", self.statement))
                self._told_statement = self.statement
            room, self._room_due = self._room_due, None
            if room is not None:  # (read before the request: no statement starts under an older cap)
                exact = self._exact
                _write(self._calls, ("room", room, exact))
                self._room, self._told_exact = room, exact
            _write(self._calls, message, payload)
            self._calls.settimeout(None)  # (its reply: the watchdog ends a worker that runs on)
            reply, data = _read(self._calls)
        except TimeoutError:
            self._kill()
            raise PgError("XX000", "the statement's process stopped reading") from None
        except (OSError, EOFError, ValueError):
            self._gone = True
            raise self._ended or PgError("XX000", "the statement's process ended unexpectedly") from None
        except BaseException:  # (MemoryError...: what is left of the reply would be read as the next)
            self._kill()
            raise
        if reply[0] == "error":
            raise PgError(str(reply[1]), str(reply[2]))
        if reply[0] == "internal":
            raise RuntimeError(f"in a Flight SQL worker: {reply[1]}")
        return reply, data

    def prepare(self, query: str) -> tuple[str, int]:
        reply, _ = self._call("prepare", query)
        return str(reply[1]), int(reply[2])

    def _received(self, data: bytearray) -> pa.Table:
        """The Arrow IPC stream a worker sent, fully validated (``validate(full=True)``: offsets,
        UTF-8...; ~0.15 ms a 64k-row string batch, nothing for fixed-width columns), as the
        server trusts nothing a worker says: bytes that fail are an error and kill the worker."""
        try:
            table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
            table.validate(full=True)
        except pa.ArrowException:
            self._kill()
            raise PgError("XX000", "the statement's process sent invalid Arrow data") from None
        return table

    def _schema(self, data: bytearray) -> pa.Schema:
        try:
            return pa.ipc.read_schema(pa.py_buffer(data))
        except pa.ArrowException:
            self._kill()
            raise PgError("XX000", "the statement's process sent an invalid Arrow schema") from None

    def schema(self, query: str, kind: str, count: int, parameters: pa.Table | None) -> pa.Schema:
        _, data = self._call("schema", query, kind, count, payload=_ipc(parameters))
        return self._schema(data)

    def run(self, query: str, kind: str, parameters: pa.Table | None) -> pa.Schema:
        _, data = self._call("run", query, kind, payload=_ipc(parameters))
        return self._schema(data)

    def next(self) -> pa.RecordBatch | None:
        reply, data = self._call("next")
        if reply[0] == "end":
            return None
        batches = self._received(data).to_batches()
        return batches[0] if batches else None

    def update(self, query: str, parameters: pa.Table | None) -> int:
        reply, _ = self._call("update", query, payload=_ipc(parameters))
        return int(reply[1])

    def catalog(self, name: str, arguments: dict) -> pa.Table:
        _, data = self._call("catalog", name, arguments)
        return self._received(data)

    # -- what the watchdog and the pool do to it -------------------------------------------------

    def _tell(self, *message: object) -> bool:
        """Send ``message`` on the control pipe (False: not running). A worker whose pipe
        is full has stopped doing what it is told: it is killed (the lock held: its pid is
        not reaped, so not reused, meanwhile)."""
        with self._lock:
            if self._pid is None:
                return False
            try:
                workers.send(self._control, *message)
                return True
            except BlockingIOError:
                self._kill_locked()
                return False
            except OSError:
                return False

    def _kill(self) -> None:
        """Kill the process, if not reaped yet (its pid is not reused before)."""
        with self._lock:
            self._kill_locked()

    def _kill_locked(self) -> None:
        self._gone = True
        if self._pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)

    def fileno(self) -> None:
        """No socket the server sees (gRPC's calls have none)."""
        return None

    def begin(self) -> int:
        """Begin its next use (told to the process with the use's first request)."""
        self.statement += 1
        return self.statement

    def interrupt(self, reason: str = "user request", statement: int | None = None) -> None:
        """Interrupt use number ``statement`` (None: the current one)."""
        self._tell("interrupt", reason, self.statement if statement is None else statement)

    def drop(self) -> None:
        """(Never logging in.)"""

    def end(self, sqlstate: str, message: str) -> None:
        """End the worker now, whatever it is doing: its statement fails with this error."""
        self._ended = PgError(sqlstate, message.replace("connection", "statement").replace(
            "so the session was ended", "so its process was ended"))
        self._kill()

    def start_with(self, room: int) -> None:
        """Let the process take at most ``room`` bytes from its next request on."""
        self._room_due = room

    def alive(self) -> bool:
        return not self._gone and self._process.exitcode is None

    def close(self) -> None:
        """End the worker (it exits when its pipes close; killed :data:`~.workers.KILL_WAIT`
        seconds later if it has not), without waiting for it. The reaper is not a daemon
        thread: the server's exit waits for it (a second at most), as a reaper still running
        at exit closed its process under multiprocessing's exit handler, whose join of it then
        failed, before it removed its temporary directory (the forkserver's socket)."""
        self._gone = True
        with contextlib.suppress(OSError):
            self._calls.shutdown(socket.SHUT_RDWR)
        threading.Thread(target=self._reap, name="vcfzarr-sql flight worker reaper").start()

    def _reap(self) -> None:
        self._process.join(workers.KILL_WAIT)
        if self._process.exitcode is None:
            self._kill()
            self._process.join()
        with self._lock:
            self._pid = None
            self._calls.close()
            self._control.close()
        self._process.close()


# -- the worker's side -----------------------------------------------------------------------


def _answer(executor: Executor, message: list, payload: bytearray) -> tuple[tuple, bytes]:
    """The reply to one request (see the module)."""
    name, *args = message
    if name == "prepare":
        kind, count = executor.prepare(str(args[0]))
        return ("prepared", kind, count), b""
    if name == "schema":
        schema = executor.schema(str(args[0]), str(args[1]), int(args[2]), _table(payload))
        return ("schema",), schema.serialize().to_pybytes()
    if name == "run":
        return ("schema",), executor.run(str(args[0]), str(args[1]), _table(payload)).serialize().to_pybytes()
    if name == "next":
        batch = executor.next()
        return (("end",), b"") if batch is None else (("batch",), _ipc(batch))
    if name == "update":
        return ("updated", executor.update(str(args[0]), _table(payload))), b""
    if name == "catalog":
        return ("table",), _ipc(executor.catalog(str(args[0]), dict(args[1])))
    raise ValueError(f"unknown request {name!r}")


def _worker_main(calls: socket.socket, control: object, setup: WorkerSetup) -> None:
    """A worker process: answer the server's requests, doing what it says meanwhile."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the server stops its workers itself)
    if setup.max_memory:
        memory.cap_process_memory(setup.max_memory)
    executor = Executor(LockedDatabase(setup.policy, check=False))
    cap = workers.MemoryCap(setup.max_memory)
    threading.Thread(target=_obey, args=(control, executor, cap),
                     name="vcfzarr-sql worker control", daemon=True).start()
    while True:
        try:
            message, payload = _read(calls, MAX_REQUEST)
        except (EOFError, OSError, ValueError):  # the server is gone, or closed this worker
            os._exit(0)
        if message[0] == "room":  # (no reply)
            cap.set(int(message[1]), bool(message[2]))
            continue
        if message[0] == "statement":  # (no reply)
            executor.begin(int(message[1]))
            continue
        try:
            reply, data = _answer(executor, message, payload)
        except (VcfZarrError, duckdb.Error) as err:
            error = sql_error(err)
            reply, data = ("error", error.sqlstate[:5], error.message[:_LONGEST_TEXT]), b""
        except Exception as err:  # (told to the server, which logs it)
            reply, data = ("internal", f"{type(err).__name__}: {err}"[:_LONGEST_TEXT]), b""
        try:
            _write(calls, reply, data)
        except OSError:
            os._exit(0)


def _obey(control: object, executor: Executor, cap: workers.MemoryCap) -> None:
    """Do what the server says; keep the process's memory cap current."""
    while True:
        cap.keep()
        try:
            if not control.poll(workers.PERIOD):  # type: ignore[attr-defined]
                continue
            name, *args = workers.receive(control)  # type: ignore[arg-type]
        except (EOFError, OSError, ValueError):  # the server is gone
            os._exit(1)
        if name == "interrupt":
            executor.interrupt(str(args[0]), int(args[1]))
        elif name == "room":
            cap.set(int(args[0]), bool(args[1]))


# -- runners kept for the next statements -------------------------------------------------------


class Pool:
    """Runners made by ``start``, one per statement while it runs (or holds rows not fetched
    yet), kept for the next statements once done: at most :data:`IDLE_RUNNERS` idle, each
    for :data:`IDLE_LINGER` seconds; at most ``limit`` in all and ``per_client`` taken by one
    client (an address, :func:`~vcfzarr_sql.serve.flight.auth.client_of`) at once (each call
    that runs something takes one, open statements or not: concurrent calls cannot fork
    without bound); a new one started only as fast as ``starts`` lets its client (None: no
    rate)."""

    def __init__(self, start: Callable[[], Runner], limit: int = 128, *, per_client: int | None = None,
                 starts: StartRate | None = None):
        self._start = start
        self.limit = limit
        self.per_client = per_client or limit
        self._starts = starts
        self._idle: list[tuple[float, Runner]] = []
        self._taken: dict[Runner, str] = {}  # (and the client that took it)
        self._starting: list[str] = []  # (the clients of runners being started)
        self._lock = threading.Lock()

    def take(self, client: str = "") -> Runner:
        """A runner for a statement of ``client``: an idle one, or a new one; PgError 53300
        when ``limit`` are in use, or ``per_client`` by ``client``, or when ``starts`` refuses
        it a new one."""
        while True:
            with self._lock:
                if [*self._taken.values(), *self._starting].count(client) >= self.per_client:
                    raise PgError("53300", "too many statements running at once from your address "
                                           f"({self.per_client})")
                if not self._idle:
                    if len(self._taken) + len(self._starting) >= self.limit:
                        raise PgError("53300", f"too many statements running at once ({self.limit})")
                    refusal = None if self._starts is None else self._starts.refusal(client)
                    if refusal is not None:
                        raise PgError("53300", refusal)
                    self._starting.append(client)
                    break
                _, runner = self._idle.pop()
            if runner.alive():
                with self._lock:
                    self._taken[runner] = client
                return runner
            runner.close()
        try:
            runner = self._start()
        finally:
            with self._lock:
                self._starting.remove(client)
        with self._lock:
            self._taken[runner] = client
        return runner

    def give_back(self, runner: Runner) -> None:
        """``runner``'s statement is done with it (never waits)."""
        with self._lock:
            self._taken.pop(runner, None)
            keep = runner.alive() and len(self._idle) < IDLE_RUNNERS
            if keep:
                self._idle.append((time.monotonic(), runner))
        if not keep:
            runner.close()

    def all(self) -> list[Runner]:
        """Every runner (idle ones unused for :data:`IDLE_LINGER` seconds closed first)."""
        oldest = time.monotonic() - IDLE_LINGER
        with self._lock:
            old = [runner for used, runner in self._idle if used < oldest]
            self._idle = [(used, runner) for used, runner in self._idle if used >= oldest]
            runners = [*self._taken, *(runner for _, runner in self._idle)]
        for runner in old:
            runner.close()
        return runners

    def close(self) -> None:
        """Close every runner."""
        with self._lock:
            runners = [*self._taken, *(runner for _, runner in self._idle)]
            self._taken, self._idle = {}, []
        for runner in runners:
            runner.close()

