"""An Arrow Flight SQL server over vcfzarr-sql's DuckDB sessions: results leave as Arrow record
batches, straight from DuckDB's Arrow reader.

Every statement runs on its own connection (a locked-down session of
:class:`~vcfzarr_sql.serve.pg.lockdown.LockedDatabase`), so clients and their statements never
wait on each other and one can be cancelled alone; tables and views created by one statement
are there for the next only in a shared writable database (``--database FILE --writable``).
The PostgreSQL server's :class:`~vcfzarr_sql.serve.pg.config.Limits` hold here too, counted
per client (user and address): clients with open statements, statement and idle timeouts, and
the memory of the whole process, kept by the same watchdog (:mod:`~vcfzarr_sql.serve.pg.watchdog`).

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
from vcfzarr_sql.engine.connection import Connection
from vcfzarr_sql.serve.flight import Flight_pb2, catalog
from vcfzarr_sql.serve.flight import FlightSql_pb2 as sql
from vcfzarr_sql.serve.flight.auth import HandshakeAccepted, PasswordAuth, client_of
from vcfzarr_sql.serve.flight.errors import answered, answering
from vcfzarr_sql.serve.pg import watchdog
from vcfzarr_sql.serve.pg.config import Limits
from vcfzarr_sql.serve.pg.lockdown import LockedDatabase
from vcfzarr_sql.serve.pg.sqlstate import PgError
from vcfzarr_sql.serve.pg.statements import UNPARSED, refuse_relation_names, split

__all__ = ["FlightSqlServer", "pack", "unpack", "unpack_as"]

M = TypeVar("M", bound=Message)

log = logging.getLogger("vcfzarr_sql.serve.flight")

#: Rows per Arrow record batch streamed to the client.
BATCH_ROWS = 1 << 16

#: Statements (prepared, or queries not yet fetched) one client may have open at once.
MAX_STATEMENTS_PER_CLIENT = 32
#: Statements open at once on the server, per client ``Limits.max_connections`` allows.
STATEMENTS_PER_CONNECTION = 4

#: Statement types that return rows (anything else is an update, run when it is executed).
_QUERIES = {"SELECT", "EXPLAIN", "PRAGMA", "CALL", "SHOW", "RELATION"}


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
    """A statement (prepared or not) on its own connection, of ``client`` (see
    :func:`~vcfzarr_sql.serve.flight.auth.client_of`); ``parameters``: rows bound by DoPut."""

    query: str
    con: Connection
    kind: str  # DuckDB's statement type
    client: str
    parameter_count: int = 0  # the highest $n
    parameters: list[list[object]] = field(default_factory=lambda: [[]])
    reader: pa.RecordBatchReader | None = None
    busy: bool = False  # running or streaming: closing interrupts it and waits for its end
    closed: bool = False
    used: float = field(default_factory=time.monotonic)  # when a call last named it
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: What the watchdog reads (:class:`~vcfzarr_sql.serve.pg.watchdog.Watched`).
    connected_at: float = field(default_factory=time.monotonic)
    logged_in: bool = True
    busy_since: float | None = None
    cancel_reason: str | None = None

    @property
    def is_query(self) -> bool:
        return self.kind in _QUERIES

    def run(self) -> pa.RecordBatchReader:
        """Run it with its first parameter row: its rows (an empty reader for an update)."""
        if len(self.parameters) > 1 and self.is_query:
            raise flight.FlightServerError("a query takes one row of parameters; bind one row")
        reader = self.con.rows(self.query, self.parameters[0] or None, batch_rows=BATCH_ROWS)
        return pa.RecordBatchReader.from_batches(pa.schema([]), []) if reader is None else reader

    def schema(self) -> pa.Schema:
        """The schema of its rows, without running it (parameters NULL when none are bound)."""
        if not self.is_query:
            return pa.schema([])
        if self.kind != "SELECT":  # PRAGMA, SHOW...: cheap, and not a subquery
            with self.run() as reader:
                return reader.schema
        bound = self.parameters[0] or [None] * self.parameter_count
        reader = self.con.rows(f"SELECT * FROM ({self.query}) LIMIT 0", bound or None)
        assert reader is not None  # (a SELECT)
        with reader:
            return reader.schema

    def fileno(self) -> None:
        """No socket of its own (gRPC's calls have none the server sees)."""
        return None

    def interrupt(self, reason: str = "user request") -> None:
        """Cancel its running query (from another thread)."""
        self.cancel_reason = reason
        with contextlib.suppress(duckdb.Error):  # closed meanwhile
            self.con.duckdb_connection.interrupt()

    def drop(self) -> None:
        """(Statements are never logging in.)"""

    def close(self) -> None:
        """Free its connection (now, or when the stream reading it ends)."""
        with self.lock:
            self.closed = True
            if self.busy:
                self.con.duckdb_connection.interrupt()
                return
        if self.reader is not None:
            self.reader.close()
        self.con.close()


class _Statements:
    """Open statements by handle: at most ``limit`` per client, ``clients`` clients with
    statements open and ``total`` statements in all; each closed once unused for
    ``idle_timeout`` seconds unless it is running. Running ones (open or not: a
    fetched query's stream) are in :meth:`running_now` for the watchdog."""

    def __init__(self, limit: int = MAX_STATEMENTS_PER_CLIENT, idle_timeout: float = math.inf,
                 clients: int = Limits.max_connections, total: int | None = None):
        self.limit = limit
        self.idle_timeout = idle_timeout
        self.clients = clients
        self.total = STATEMENTS_PER_CONNECTION * clients if total is None else total
        self._open: dict[bytes, _Statement] = {}
        self._running: dict[int, _Statement] = {}
        self._lock = threading.Lock()

    def add(self, statement: _Statement) -> bytes:
        """The new statement's handle; FlightServerError when its client has ``limit`` open,
        or the server ``total``, or ``clients`` other clients have some open."""
        self.close_idle()
        with self._lock:
            owners = {other.client for other in self._open.values()}
            if sum(other.client == statement.client for other in self._open.values()) >= self.limit:
                raise flight.FlightServerError(
                    f"too many open statements ({self.limit}): close prepared statements "
                    "and fetch queries before opening more")
            if len(self._open) >= self.total or (
                    statement.client not in owners and len(owners) >= self.clients):
                raise PgError("53300", "sorry, too many clients already")
            handle = secrets.token_bytes(16)
            self._open[handle] = statement
        return handle

    def started(self, statement: _Statement) -> None:
        """``statement`` runs (or streams) now."""
        with self._lock:
            self._running[id(statement)] = statement

    def ended(self, statement: _Statement) -> None:
        with self._lock:
            self._running.pop(id(statement), None)

    def running_now(self) -> list[_Statement]:
        """The statements running or streaming now (idle ones closed first)."""
        self.close_idle()
        with self._lock:
            return list(self._running.values())

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
            statement.close()

    def close_idle(self) -> None:
        """Close the statements unused for ``idle_timeout`` seconds, unless running."""
        oldest = time.monotonic() - self.idle_timeout
        with self._lock:
            idle = {handle: statement for handle, statement in self._open.items()
                    if statement.used < oldest and not statement.busy}
            for handle in idle:
                del self._open[handle]
        for statement in idle.values():
            statement.close()


class FlightSqlServer(flight.FlightServerBase):
    """Flight SQL at ``location`` (``grpc://host:port`` or ``grpc+tls://``) over ``sessions``,
    whose ``connect()`` gives each statement and catalog call its connection (the session
    policy: which database, which files; ``close()`` at shutdown).

    ``password``: clients must log in with it (any user name). ``tls_certificates``: a list of
    :class:`pyarrow.flight.CertKeyPair` for a ``grpc+tls`` location. ``limits``: the
    PostgreSQL server's (``max_connections``: clients with statements open), kept by a
    watchdog thread until :meth:`shutdown`.

    Every call's exception reaches the client as a one-line Flight error
    (:func:`~vcfzarr_sql.serve.flight.errors.flight_error`).
    """

    def __init__(self, location: str, sessions: LockedDatabase, *, password: str | None = None,
                 tls_certificates: list[flight.CertKeyPair] | None = None,
                 limits: Limits | None = None):
        self.sessions = sessions
        self.limits = limits or Limits()
        self._statements = _Statements(idle_timeout=self.limits.idle_timeout or math.inf,
                                       clients=self.limits.max_connections)
        super().__init__(location, tls_certificates=tls_certificates or [],
                         auth_handler=HandshakeAccepted(), middleware={"auth": PasswordAuth(password)})
        self._stop_watching = threading.Event()
        threading.Thread(target=watchdog.watch, name="vcfzarr-sql flight watchdog", daemon=True,
                         args=(self._statements.running_now, self.limits, self._stop_watching)).start()

    # -- statements --------------------------------------------------------------------------

    def _new_statement(self, context: flight.ServerCallContext, query: str) -> tuple[bytes, _Statement]:
        con = self.sessions.connect()
        try:
            parsed = split(con.duckdb_connection, query)
            if len(parsed) != 1 or parsed[0].kind == UNPARSED:
                con.duckdb_connection.extract_statements(query)  # raises DuckDB's syntax error
                raise flight.FlightServerError(f"one statement expected, got {len(parsed)}")
            refuse_relation_names(parsed[0])
            statement = _Statement(query, con, parsed[0].kind, client_of(context), parsed[0].parameters)
            return self._statements.add(statement), statement
        except BaseException:
            con.close()
            raise

    def _statement(self, handle: bytes) -> _Statement:
        statement = self._statements.get(handle)
        if statement is None:
            raise flight.FlightServerError("unknown or closed statement handle")
        return statement

    def _close(self, handle: bytes) -> None:
        statement = self._statements.pop(handle)
        if statement is not None:
            statement.close()

    def _catalog_table(self, command: Message) -> pa.Table:
        """The answer to a catalog command, read on a connection of its own."""
        session = self.sessions.connect()
        con = session.duckdb_connection
        try:
            if isinstance(command, sql.CommandGetCatalogs):
                return catalog.catalogs(con)
            if isinstance(command, sql.CommandGetDbSchemas):
                return catalog.db_schemas(con, _optional(command, "catalog"),
                                          _optional(command, "db_schema_filter_pattern"))
            if isinstance(command, sql.CommandGetTables):
                return catalog.tables(con, _optional(command, "catalog"),
                                      _optional(command, "db_schema_filter_pattern"),
                                      _optional(command, "table_name_filter_pattern"),
                                      list(command.table_types), include_schema=command.include_schema)
        finally:
            session.close()
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
            schema = self._catalog_table(command).schema
            return flight.FlightInfo(schema, descriptor, [flight.FlightEndpoint(descriptor.command, [])], -1, -1)
        try:
            with self._running(context, statement):
                statement.reader = statement.run()  # DuckDB starts; DoGet streams its batches
        except BaseException:
            if isinstance(command, sql.CommandStatementQuery):  # (no ticket will fetch it)
                self._close(handle)
            raise
        return flight.FlightInfo(statement.reader.schema, descriptor, [flight.FlightEndpoint(ticket, [])], -1, -1)

    @answering
    def get_schema(self, context: flight.ServerCallContext,
                   descriptor: flight.FlightDescriptor) -> flight.SchemaResult:
        command = unpack(descriptor.command)
        if isinstance(command, sql.CommandStatementQuery):
            handle, statement = self._new_statement(context, command.query)
            try:
                return flight.SchemaResult(statement.schema())
            finally:
                self._close(handle)
        if isinstance(command, sql.CommandPreparedStatementQuery):
            return flight.SchemaResult(self._statement(command.prepared_statement_handle).schema())
        return flight.SchemaResult(self._catalog_table(command).schema)

    @answering
    def do_get(self, context: flight.ServerCallContext, ticket: flight.Ticket) -> flight.FlightDataStream:
        command = unpack(ticket.ticket)
        if isinstance(command, sql.TicketStatementQuery):
            handle = command.statement_handle
        elif isinstance(command, sql.CommandPreparedStatementQuery):
            handle = command.prepared_statement_handle
        else:
            return flight.RecordBatchStream(self._catalog_table(command))
        statement = self._statement(handle)
        reader, statement.reader = statement.reader, None
        if reader is None:
            with self._running(context, statement):
                reader = statement.run()
        if isinstance(command, sql.TicketStatementQuery):
            self._statements.pop(handle)  # tickets are single-use: the statement ends with its stream
            statement.closed = True
        return flight.GeneratorStream(reader.schema, answered(self._streamed(reader, statement, context)))

    @answering
    def do_put(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor,
               reader: flight.MetadataRecordBatchReader, writer: flight.FlightMetadataWriter) -> None:
        command = unpack(descriptor.command)
        if isinstance(command, sql.CommandStatementUpdate):
            handle, statement = self._new_statement(context, command.query)
            try:
                with self._running(context, statement):
                    count = _update(statement)
            finally:
                self._close(handle)
        elif isinstance(command, (sql.CommandPreparedStatementQuery, sql.CommandPreparedStatementUpdate)):
            statement = self._statement(command.prepared_statement_handle)
            rows = reader.read_all()
            statement.parameters = [list(row.values()) for row in rows.to_pylist()] or [[]]
            if isinstance(command, sql.CommandPreparedStatementQuery):
                result = sql.DoPutPreparedStatementResult(
                    prepared_statement_handle=command.prepared_statement_handle)
                writer.write(pa.py_buffer(result.SerializeToString()))
                return
            with self._running(context, statement):
                count = _update(statement)
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
                schema = statement.schema().serialize().to_pybytes()
            except (duckdb.Error, ValueError):  # known once parameters are bound (vcf_zarr(?))
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
        """Interrupt the statements the tickets name; False when none is known (any more)."""
        cancelled = False
        for ticket in tickets:
            command = unpack(ticket)
            handle = getattr(command, "statement_handle", None) or \
                getattr(command, "prepared_statement_handle", None)
            statement = self._statements.get(handle or b"")
            if statement is not None:
                statement.interrupt()
                cancelled = True
        return cancelled

    def running(self) -> int:
        """How many statements are running or streaming now."""
        return self._statements.running()

    def shutdown(self) -> None:
        self._stop_watching.set()
        super().shutdown()
        self._statements.close_all()
        self.sessions.close()

    @contextlib.contextmanager
    def _running(self, context: flight.ServerCallContext, statement: _Statement) -> Iterator[None]:
        """While the block uses the statement's connection: DuckDB is interrupted as soon as
        the client cancels the call or the watchdog says so (the statement timeout...), and a
        close asked meanwhile happens at the end."""
        finished = threading.Event()

        def watch() -> None:
            while not finished.wait(0.1):
                if context.is_cancelled():
                    statement.interrupt()
                    return

        with statement.lock:
            statement.busy = True
        statement.cancel_reason = None
        statement.busy_since = time.monotonic()
        self._statements.started(statement)
        threading.Thread(target=watch, daemon=True).start()
        try:
            yield
        except duckdb.InterruptException:
            if statement.cancel_reason is None:
                raise
            raise PgError("57014", f"canceling statement due to {statement.cancel_reason}") from None
        finally:
            finished.set()
            self._statements.ended(statement)
            statement.busy_since = None
            with statement.lock:
                statement.busy = False
                closed = statement.closed
            if closed:
                statement.close()

    def _streamed(self, reader: pa.RecordBatchReader, statement: _Statement,
                  context: flight.ServerCallContext) -> Iterator[pa.RecordBatch]:
        """The reader's batches, DuckDB interrupted if the client cancels."""
        with self._running(context, statement):
            try:
                yield from reader
            finally:
                reader.close()


def _optional(message: Message, name: str) -> str | None:
    return getattr(message, name) if message.HasField(name) else None


def _update(statement: _Statement) -> int:
    """Run an update once per bound parameter row: the rows changed (-1: not known)."""
    total = 0
    for row in statement.parameters:
        rows = statement.con.execute(statement.query, row or None).fetchall()
        description = statement.con.duckdb_connection.description
        if not description or description[0][0] != "Count":
            total = -1
        elif total >= 0 and rows:  # DDL: a Count column without rows
            total += rows[0][0]
    return total
