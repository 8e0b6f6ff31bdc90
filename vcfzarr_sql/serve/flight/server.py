"""An Arrow Flight SQL server over vcfzarr-sql's DuckDB sessions: results leave as Arrow record
batches from DuckDB's Arrow reader (in a worker process, sent to the server as Arrow IPC bytes).

Every statement runs on a connection of its own (a locked-down session of
:class:`~vcfzarr_sql.serve.pg.lockdown.LockedDatabase`) in a worker process
(:mod:`~vcfzarr_sql.serve.flight.worker`), so clients and their statements never wait on each
other, one can be cancelled alone, and one DuckDB cannot interrupt can be ended; tables and
views created by one statement are there for the next only in a shared writable database
(``--database FILE --writable``, whose statements are threads of the server). The PostgreSQL
server's :class:`~vcfzarr_sql.serve.pg.config.Limits` hold here too, counted per client (an
address: :func:`~vcfzarr_sql.serve.flight.auth.client_of`): clients with open statements,
statement and idle timeouts, the rate of worker process starts
(:mod:`~vcfzarr_sql.serve.pg.start_rate`), and the memory of the whole server, its workers
included, kept by the same watchdog (:mod:`~vcfzarr_sql.serve.watchdog`).

Flight SQL messages are protobufs (``google.protobuf.Any`` around the Flight SQL commands) read
and written with the classes ``protoc`` generated from Apache Arrow's ``FlightSql.proto``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import duckdb
import pyarrow as pa
import pyarrow.flight as flight
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from vcfzarr_sql import __version__
from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.serve import memory, watchdog, workers
from vcfzarr_sql.serve.flight import Flight_pb2, catalog
from vcfzarr_sql.serve.flight import FlightSql_pb2 as sql
from vcfzarr_sql.serve.flight.auth import HandshakeAccepted, PasswordAuth, client_of
from vcfzarr_sql.serve.flight.errors import answered, answering
from vcfzarr_sql.serve.flight.worker import QUERIES, Executor, Pool, Runner, Worker, WorkerSetup
from vcfzarr_sql.serve.pg.config import Limits
from vcfzarr_sql.serve.pg.lockdown import LockedDatabase
from vcfzarr_sql.serve.pg.sqlstate import PgError
from vcfzarr_sql.serve.pg.start_rate import StartRate

__all__ = ["FlightSqlServer", "pack", "unpack", "unpack_as"]

M = TypeVar("M", bound=Message)

log = logging.getLogger("vcfzarr_sql.serve.flight")

#: Statements (prepared, or queries not yet fetched) one client (address) may have open at
#: once, and calls it may have running at once.
MAX_STATEMENTS_PER_CLIENT = 32
#: Statements open at once on the server, per client ``Limits.max_connections`` allows.
STATEMENTS_PER_CONNECTION = 4

def pack(message: Message) -> bytes:
    """``message`` wrapped in ``google.protobuf.Any``, as Flight SQL sends commands.

    >>> unpack(pack(sql.CommandStatementQuery(query="SELECT 1"))).query
    'SELECT 1'
    """
    wrapped = any_pb2.Any()
    wrapped.Pack(message)
    return wrapped.SerializeToString()


def unpack_as(data: bytes, kind: type[M]) -> M:
    """The Flight SQL command of type ``kind`` inside a serialized ``Any``."""
    message = unpack(data)
    if not isinstance(message, kind):
        raise flight.FlightServerError(f"{kind.__name__} expected, not {type(message).__name__}")
    return message


def unpack(data: bytes) -> Message:
    """The Flight SQL command inside a serialized ``Any``."""
    wrapped = any_pb2.Any()
    try:
        wrapped.ParseFromString(data)
        name = wrapped.TypeName().rpartition(".")[2]
        message_type = getattr(sql, name, None)
        if message_type is None or not wrapped.TypeName().startswith("arrow.flight.protocol.sql."):
            raise flight.FlightServerError(f"unsupported Flight SQL command {wrapped.TypeName()!r}")
        message = message_type()
        wrapped.Unpack(message)
    except DecodeError:
        raise flight.FlightServerError("malformed Flight SQL command") from None
    return message


@dataclass
class _Statement:
    """A statement (prepared or not) of ``client`` (see
    :func:`~vcfzarr_sql.serve.flight.auth.client_of`); ``parameters``: rows bound by DoPut."""

    query: str
    kind: str  # DuckDB's statement type
    client: str
    parameter_count: int = 0  # the highest $n
    parameters: pa.Table | None = None
    #: The runner holding its rows, from when it runs until they are fetched.
    runner: Runner | None = None
    schema: pa.Schema | None = None  # (of those rows)
    busy: bool = False  # running or streaming: closing interrupts it, its end closes it
    closed: bool = False
    used: float = field(default_factory=time.monotonic)  # when a call last named it
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def is_query(self) -> bool:
        return self.kind in QUERIES

    def close(self, pool: Pool) -> None:
        """Give back its runner (now, or when the call using it ends)."""
        with self.lock:
            self.closed = True
            runner, busy = self.runner, self.busy
            use = runner.statement if runner is not None else 0  # (its runner's use: this statement's)
            if not busy:
                self.runner = None
        if busy and runner is not None:
            runner.interrupt("user request", use)
        elif runner is not None:
            pool.give_back(runner)


class _Statements:
    """Open statements by handle: at most ``limit`` per client, ``clients`` clients with
    statements open and ``total`` statements in all; each closed once unused for
    ``idle_timeout`` seconds unless it is running; closed ones give their runners back to
    ``pool``."""

    def __init__(self, pool: Pool, limit: int = MAX_STATEMENTS_PER_CLIENT, idle_timeout: float = math.inf,
                 clients: int = Limits.max_connections, total: int | None = None):
        self.pool = pool
        self.limit = limit
        self.idle_timeout = idle_timeout
        self.clients = clients
        self.total = STATEMENTS_PER_CONNECTION * clients if total is None else total
        self._open: dict[bytes, _Statement] = {}
        self._lock = threading.Lock()

    def add(self, statement: _Statement) -> bytes:
        """The new statement's handle; FlightServerError when its client has ``limit`` open,
        or the server ``total``, or ``clients`` other clients have some open."""
        self.close_idle()
        with self._lock:
            owners = {other.client for other in self._open.values()}
            if sum(other.client == statement.client for other in self._open.values()) >= self.limit:
                raise flight.FlightServerError(
                    f"too many open statements from your address ({self.limit}): close prepared statements "
                    "and fetch queries before opening more")
            if len(self._open) >= self.total or (
                    statement.client not in owners and len(owners) >= self.clients):
                raise PgError("53300", "sorry, too many clients already")
            handle = secrets.token_bytes(16)
            self._open[handle] = statement
        return handle

    def get(self, handle: bytes) -> _Statement | None:
        """The statement of ``handle`` (None: unknown or closed), now used."""
        with self._lock:
            statement = self._open.get(handle)
        if statement is not None:
            statement.used = time.monotonic()
        return statement

    def pop(self, handle: bytes) -> _Statement | None:
        """The statement of ``handle``, no longer open (None: unknown or closed)."""
        with self._lock:
            return self._open.pop(handle, None)

    def running(self) -> int:
        """How many statements are running or streaming now."""
        with self._lock:
            return sum(statement.busy for statement in self._open.values())

    def close_all(self) -> None:
        """Close every open statement."""
        with self._lock:
            statements, self._open = list(self._open.values()), {}
        for statement in statements:
            statement.close(self.pool)

    def close_idle(self) -> None:
        """Close the statements unused for ``idle_timeout`` seconds, unless running."""
        oldest = time.monotonic() - self.idle_timeout
        with self._lock:
            idle = {handle: statement for handle, statement in self._open.items()
                    if statement.used < oldest and not statement.busy}
            for handle in idle:
                del self._open[handle]
        for statement in idle.values():
            statement.close(self.pool)


class FlightSqlServer(flight.FlightServerBase):
    """Flight SQL at ``location`` (``grpc://host:port`` or ``grpc+tls://``) over ``sessions``,
    whose policy (which database, which files) each statement's connection follows: in a
    worker process (:class:`~.worker.Worker`) unless ``processes`` is False or the database
    is shared and writable, else on ``sessions.connect()`` in a thread (``close()`` at
    shutdown).

    ``password``: clients must log in with it (any user name). ``tls_certificates``: a list of
    :class:`pyarrow.flight.CertKeyPair` for a ``grpc+tls`` location. ``limits``: the
    PostgreSQL server's (``max_connections``: clients, addresses, with statements open;
    ``starts_per_address`` and ``starts``: worker processes started), kept by a watchdog
    thread until :meth:`shutdown`.

    Every call's exception reaches the client as a one-line Flight error
    (:func:`~vcfzarr_sql.serve.flight.errors.flight_error`).
    """

    def __init__(self, location: str, sessions: LockedDatabase, *, password: str | None = None,
                 tls_certificates: list[flight.CertKeyPair] | None = None,
                 limits: Limits | None = None, processes: bool = True):
        self.sessions = sessions
        self.limits = limits or Limits()
        policy = sessions.policy
        #: Whether statements run in worker processes (not for a shared writable database).
        self.processes = processes and not (policy.writable and policy.database is not None)
        # (as many runners as statements may be open: each holds one at most)
        most = STATEMENTS_PER_CONNECTION * self.limits.max_connections
        if self.processes:
            workers.start_forkserver()
            setup = WorkerSetup(policy, self.limits.max_memory)
            starts = StartRate(self.limits.starts_per_address, self.limits.starts,
                               what="statement processes started")
            self._pool = Pool(lambda: Worker(setup), most, per_client=MAX_STATEMENTS_PER_CLIENT,
                              starts=starts)
        else:
            self._pool = Pool(lambda: Executor(sessions), most, per_client=MAX_STATEMENTS_PER_CLIENT)
        self._used = 0  # (bytes, at the watchdog's last look)
        self._statements = _Statements(self._pool, idle_timeout=self.limits.idle_timeout or math.inf,
                                       clients=self.limits.max_connections, total=most)
        super().__init__(location, tls_certificates=tls_certificates or [],
                         auth_handler=HandshakeAccepted(), middleware={"auth": PasswordAuth(password)})
        self._stop_watching = threading.Event()
        threading.Thread(target=watchdog.watch, name="vcfzarr-sql flight watchdog", daemon=True,
                         args=(self._watched, self.limits, self._stop_watching, self.memory_used)).start()

    def _watched(self) -> list[Runner]:
        """What the watchdog looks at: every runner (idle statements closed first)."""
        self._statements.close_idle()
        return self._pool.all()

    def memory_used(self) -> int:
        """Bytes the server takes now: this process's resident memory, and with worker
        processes, the memory of this process, of their parent and of each
        (:func:`.workers.server_bytes`)."""
        if not self.processes:
            return memory.resident_bytes()
        self._used = workers.server_bytes(
            [runner for runner in self._pool.all() if isinstance(runner, Worker)],
            self.limits.max_memory)
        return self._used

    def _room(self, runner: Worker) -> int:
        """The memory a worker may take for a statement it starts: its own and its share of
        what the cap left free at the watchdog's last look (as the watchdog shares it)."""
        busy = sum(other.busy_since is not None for other in self._pool.all())
        return runner.measured + max(self.limits.max_memory - self._used, 0) // (2 + busy)

    # -- statements --------------------------------------------------------------------------

    def _new_statement(self, context: flight.ServerCallContext, query: str) -> tuple[bytes, _Statement]:
        with self._borrowed(context) as runner:
            kind, count = runner.prepare(query)
        statement = _Statement(query, kind, client_of(context), count)
        return self._statements.add(statement), statement

    def _statement(self, handle: bytes) -> _Statement:
        statement = self._statements.get(handle)
        if statement is None:
            raise flight.FlightServerError("unknown or closed statement handle")
        return statement

    def _close(self, handle: bytes) -> None:
        statement = self._statements.pop(handle)
        if statement is not None:
            statement.close(self._pool)

    def _schema(self, context: flight.ServerCallContext, statement: _Statement) -> pa.Schema:
        """The schema of the statement's rows, without running it."""
        with self._busy(statement), self._borrowed(context) as runner:
            return runner.schema(statement.query, statement.kind, statement.parameter_count,
                                 statement.parameters)

    def _update(self, context: flight.ServerCallContext, statement: _Statement) -> int:
        """Run an update once per bound parameter row: the rows changed (-1: not known)."""
        with self._busy(statement), self._borrowed(context) as runner:
            return runner.update(statement.query, statement.parameters)

    def _start(self, context: flight.ServerCallContext, statement: _Statement) -> pa.Schema:
        """Run the statement: its rows wait on its runner (an empty stream for an update)."""
        with self._busy(statement):
            runner = statement.runner or self._take(context)
            statement.runner = runner
            try:
                with self._watching(context, runner):
                    statement.schema = runner.run(statement.query, statement.kind, statement.parameters)
            except BaseException:
                with statement.lock:
                    statement.runner = None
                self._pool.give_back(runner)
                raise
        return statement.schema

    def _catalog_table(self, command: Message, context: flight.ServerCallContext) -> pa.Table:
        """The answer to a catalog command, read on a connection of its own (interrupted, and
        ended if need be, when the client cancels the call, as a statement is)."""
        if isinstance(command, sql.CommandGetCatalogs):
            return self._catalog(context, "catalogs", {})
        if isinstance(command, sql.CommandGetDbSchemas):
            return self._catalog(context, "db_schemas", {
                "catalog": _optional(command, "catalog"),
                "pattern": _optional(command, "db_schema_filter_pattern")})
        if isinstance(command, sql.CommandGetTables):
            return self._catalog(context, "tables", {
                "catalog": _optional(command, "catalog"),
                "schema_pattern": _optional(command, "db_schema_filter_pattern"),
                "table_pattern": _optional(command, "table_name_filter_pattern"),
                "table_types": list(command.table_types), "include_schema": command.include_schema})
        if isinstance(command, sql.CommandGetTableTypes):
            return catalog.table_types()
        if isinstance(command, sql.CommandGetPrimaryKeys):
            return catalog.keys(catalog.PRIMARY_KEYS)
        if isinstance(command, (sql.CommandGetExportedKeys, sql.CommandGetImportedKeys,
                                sql.CommandGetCrossReference)):
            return catalog.keys(catalog.FOREIGN_KEYS)
        if isinstance(command, sql.CommandGetSqlInfo):
            return catalog.sql_info(self._sql_info(), list(command.info))
        raise flight.FlightServerError(f"{type(command).__name__} is not supported")

    def _catalog(self, context: flight.ServerCallContext, name: str, arguments: dict) -> pa.Table:
        with self._borrowed(context) as runner:
            return runner.catalog(name, arguments)

    def _sql_info(self) -> dict[int, str | bool | int]:
        return {
            sql.FLIGHT_SQL_SERVER_NAME: "vcfzarr-sql",
            sql.FLIGHT_SQL_SERVER_VERSION: __version__,
            sql.FLIGHT_SQL_SERVER_ARROW_VERSION: pa.__version__,
            sql.FLIGHT_SQL_SERVER_READ_ONLY: not self.sessions.policy.writable,
            sql.FLIGHT_SQL_SERVER_SQL: True,
            sql.FLIGHT_SQL_SERVER_SUBSTRAIT: False,
            sql.FLIGHT_SQL_SERVER_CANCEL: True,
            sql.SQL_IDENTIFIER_QUOTE_CHAR: '"',
        }

    # -- Flight RPCs -------------------------------------------------------------------------

    @answering
    def get_flight_info(self, context: flight.ServerCallContext,
                        descriptor: flight.FlightDescriptor) -> flight.FlightInfo:
        command = unpack(descriptor.command)
        if isinstance(command, sql.CommandStatementQuery):
            handle, statement = self._new_statement(context, command.query)
            ticket = pack(sql.TicketStatementQuery(statement_handle=handle))
        elif isinstance(command, sql.CommandPreparedStatementQuery):
            statement = self._statement(command.prepared_statement_handle)
            ticket = descriptor.command
        else:
            schema = self._catalog_table(command, context).schema
            return flight.FlightInfo(schema, descriptor, [flight.FlightEndpoint(descriptor.command, [])], -1, -1)
        try:
            schema = self._start(context, statement)  # DuckDB starts; DoGet streams its batches
        except BaseException:
            if isinstance(command, sql.CommandStatementQuery):  # (no ticket will fetch it)
                self._close(handle)
            raise
        return flight.FlightInfo(schema, descriptor, [flight.FlightEndpoint(ticket, [])], -1, -1)

    @answering
    def get_schema(self, context: flight.ServerCallContext,
                   descriptor: flight.FlightDescriptor) -> flight.SchemaResult:
        command = unpack(descriptor.command)
        if isinstance(command, sql.CommandStatementQuery):
            handle, statement = self._new_statement(context, command.query)
            try:
                return flight.SchemaResult(self._schema(context, statement))
            finally:
                self._close(handle)
        if isinstance(command, sql.CommandPreparedStatementQuery):
            return flight.SchemaResult(self._schema(context, self._statement(command.prepared_statement_handle)))
        return flight.SchemaResult(self._catalog_table(command, context).schema)

    @answering
    def do_get(self, context: flight.ServerCallContext, ticket: flight.Ticket) -> flight.FlightDataStream:
        command = unpack(ticket.ticket)
        if isinstance(command, sql.TicketStatementQuery):
            handle = command.statement_handle
        elif isinstance(command, sql.CommandPreparedStatementQuery):
            handle = command.prepared_statement_handle
        else:
            return flight.RecordBatchStream(self._catalog_table(command, context))
        statement = self._statement(handle)
        schema = statement.schema
        if statement.runner is None or schema is None:  # (not run yet, or its rows fetched)
            schema = self._start(context, statement)
        if isinstance(command, sql.TicketStatementQuery):
            self._statements.pop(handle)  # tickets are single-use: the statement ends with its stream
        return flight.GeneratorStream(schema, answered(self._streamed(
            context, statement, single_use=isinstance(command, sql.TicketStatementQuery))))

    @answering
    def do_put(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor,
               reader: flight.MetadataRecordBatchReader, writer: flight.FlightMetadataWriter) -> None:
        command = unpack(descriptor.command)
        if isinstance(command, sql.CommandStatementUpdate):
            handle, statement = self._new_statement(context, command.query)
            try:
                count = self._update(context, statement)
            finally:
                self._close(handle)
        elif isinstance(command, (sql.CommandPreparedStatementQuery, sql.CommandPreparedStatementUpdate)):
            statement = self._statement(command.prepared_statement_handle)
            rows = _parameter_rows(reader, self.limits.max_message)
            statement.parameters = rows if rows.num_rows else None
            if isinstance(command, sql.CommandPreparedStatementQuery):
                result = sql.DoPutPreparedStatementResult(
                    prepared_statement_handle=command.prepared_statement_handle)
                writer.write(pa.py_buffer(result.SerializeToString()))
                return
            count = self._update(context, statement)
        else:
            raise flight.FlightServerError(f"{type(command).__name__} is not supported")
        writer.write(pa.py_buffer(sql.DoPutUpdateResult(record_count=count).SerializeToString()))

    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:
        return [("CreatePreparedStatement", "prepare a statement"),
                ("ClosePreparedStatement", "close a prepared statement"),
                ("CancelFlightInfo", "cancel a running query"),
                ("CancelQuery", "cancel a running query (before Flight SQL 15)")]

    @answering
    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[bytes]:
        body = action.body.to_pybytes()
        if action.type == "CreatePreparedStatement":
            request = unpack_as(body, sql.ActionCreatePreparedStatementRequest)
            handle, statement = self._new_statement(context, request.query)
            try:
                schema = self._schema(context, statement).serialize().to_pybytes()
            except (duckdb.Error, VcfZarrError):  # known once parameters are bound (vcf_zarr(?))
                schema = b""
            result = sql.ActionCreatePreparedStatementResult(
                prepared_statement_handle=handle, dataset_schema=schema, is_update=not statement.is_query)
            return iter([pack(result)])
        if action.type == "ClosePreparedStatement":
            self._close(unpack_as(body, sql.ActionClosePreparedStatementRequest).prepared_statement_handle)
            return iter([])
        if action.type == "CancelFlightInfo":
            cancel = Flight_pb2.CancelFlightInfoRequest.FromString(body)
            status = Flight_pb2.CANCEL_STATUS_CANCELLED if self._cancel(
                [e.ticket.ticket for e in cancel.info.endpoint]) else Flight_pb2.CANCEL_STATUS_NOT_CANCELLABLE
            return iter([Flight_pb2.CancelFlightInfoResult(status=status).SerializeToString()])
        if action.type == "CancelQuery":
            info = flight.FlightInfo.deserialize(unpack_as(body, sql.ActionCancelQueryRequest).info)
            answer = sql.ActionCancelQueryResult
            outcome = answer.CANCEL_RESULT_CANCELLED if self._cancel([e.ticket.ticket for e in info.endpoints]) \
                else answer.CANCEL_RESULT_NOT_CANCELLABLE
            return iter([pack(answer(result=outcome))])
        raise flight.FlightServerError(f"unknown action {action.type!r}")

    def _cancel(self, tickets: list[bytes]) -> bool:
        """Stop the statements the tickets name, as a cancelled call's (:meth:`_stop`, in a
        thread); False when none is known (any more)."""
        cancelled = False
        for ticket in tickets:
            command = unpack(ticket)
            handle = getattr(command, "statement_handle", None) or \
                getattr(command, "prepared_statement_handle", None)
            statement = self._statements.get(handle or b"")
            if statement is not None:
                with statement.lock:  # (while it holds its runner, the runner's use is its own)
                    runner = statement.runner
                    use = runner.statement if runner is not None else 0
                if runner is not None:
                    threading.Thread(target=self._stop, args=(runner, use, "user request"),
                                     name="vcfzarr-sql flight cancel", daemon=True).start()
                cancelled = True
        return cancelled

    @staticmethod
    def _stop(runner: Runner, use: int, reason: str, over: threading.Event | None = None) -> None:
        """Interrupt ``runner``'s use number ``use``; end a worker still busy on it
        :data:`~.watchdog.END_GRACE_WALL` seconds later (``over`` not set then: the call
        using it has not ended), as the watchdog ends a departed client's statement that does
        not stop. Waits that long: for a thread of its own."""
        runner.interrupt(reason, use)
        if not isinstance(runner, Worker):
            return
        if (over or threading.Event()).wait(watchdog.END_GRACE_WALL):
            return
        if runner.statement == use and runner.busy_since is not None:
            runner.end("57014", f"terminating connection due to {reason}: the statement could not "
                                "be stopped, so the session was ended")

    def running(self) -> int:
        """How many statements are running or streaming now."""
        return self._statements.running()

    def shutdown(self) -> None:
        """Stop serving; running statements end (at once with worker processes)."""
        self._stop_watching.set()
        self._statements.close_all()
        if self.processes:  # (their calls fail now: nothing keeps the server waiting)
            self._pool.close()
        super().shutdown()
        self._pool.close()
        self.sessions.close()

    @contextlib.contextmanager
    def _busy(self, statement: _Statement) -> Iterator[None]:
        """While a call uses the statement (one at a time): a close asked meanwhile
        interrupts it and happens at the end."""
        with statement.lock:
            if statement.busy:
                raise flight.FlightServerError("the statement is running: wait for its end")
            statement.busy = True
        try:
            yield
        finally:
            with statement.lock:
                statement.busy = False
                runner = statement.runner if statement.closed else None
                if runner is not None:
                    statement.runner = None
            if runner is not None:
                self._pool.give_back(runner)

    @contextlib.contextmanager
    def _borrowed(self, context: flight.ServerCallContext) -> Iterator[Runner]:
        """A runner of the pool for the block (:meth:`_watching` it)."""
        runner = self._take(context)
        try:
            with self._watching(context, runner):
                yield runner
        finally:
            self._pool.give_back(runner)

    def _take(self, context: flight.ServerCallContext) -> Runner:
        """A runner of the pool for the call's client, on a new use
        (:meth:`~.worker.Runner.begin`)."""
        runner = self._pool.take(client_of(context))
        runner.begin()
        return runner

    @contextlib.contextmanager
    def _watching(self, context: flight.ServerCallContext | None, runner: Runner) -> Iterator[None]:
        """While the block uses ``runner``: busy for the watchdog (the statement timeout...),
        and interrupted as soon as the client cancels the call."""
        finished = threading.Event()
        use = runner.statement  # (taken: its use is this call's until given back)

        def watch() -> None:
            while not finished.wait(0.1):
                if context is not None and context.is_cancelled():
                    self._stop(runner, use, "client disconnect", finished)
                    return

        if isinstance(runner, Worker) and self.limits.max_memory:
            runner.start_with(self._room(runner))
        runner.busy_since = time.monotonic()
        if context is not None:
            threading.Thread(target=watch, daemon=True).start()
        try:
            yield
        finally:
            finished.set()
            runner.busy_since = None

    def _streamed(self, context: flight.ServerCallContext, statement: _Statement, *,
                  single_use: bool) -> Iterator[pa.RecordBatch]:
        """The statement's rows, batch by batch, from its runner (then given back)."""
        with self._busy(statement):
            runner = statement.runner
            try:
                if runner is not None:
                    with self._watching(context, runner):
                        while (batch := runner.next()) is not None:
                            yield batch
            finally:
                with statement.lock:
                    statement.runner, statement.schema = None, None
                    statement.closed = statement.closed or single_use
                if runner is not None:
                    self._pool.give_back(runner)


def _parameter_rows(reader: flight.MetadataRecordBatchReader, longest: int) -> pa.Table:
    """The rows a DoPut binds to a prepared statement, which it keeps in the server's memory
    until it is closed: refused (PgError 54000) past ``longest`` bytes, as a PostgreSQL Bind
    message longer than ``Limits.max_message`` is."""
    batches, size = [], 0
    for chunk in reader:
        if chunk.data is None:
            continue
        size += chunk.data.nbytes
        if size > longest:
            raise PgError("54000", f"parameter rows of more than {longest >> 20} MB: bind fewer at once")
        batches.append(chunk.data)
    return pa.Table.from_batches(batches, reader.schema)


def _optional(message: Message, name: str) -> str | None:
    return getattr(message, name) if message.HasField(name) else None
