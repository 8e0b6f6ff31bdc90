"""One client connection: startup, then simple and extended queries on its own connection.

Every session has its own locked-down connection (:mod:`.lockdown`), so ``vcf_zarr(...)`` and
the other table functions work as in Python, over the served data directories only. Errors
become ErrorResponses and the session goes on (in the extended protocol, after the client's
next Sync, as the protocol requires).
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from vcfzarr_sql.engine import sql_text
from vcfzarr_sql.engine.connection import Connection
from vcfzarr_sql.serve.pg import copy_out, pg_catalog, protocol
from vcfzarr_sql.serve.pg.auth import MECHANISM, AuthenticationFailed, ScramExchange
from vcfzarr_sql.serve.pg.config import Limits, Security
from vcfzarr_sql.serve.pg.cursors import CursorCommand, cursor_command
from vcfzarr_sql.serve.pg.lockdown import LockedDatabase
from vcfzarr_sql.serve.pg.protocol import Payload, ProtocolError
from vcfzarr_sql.serve.pg.results import Result, RowStream
from vcfzarr_sql.serve.pg.rows import data_rows
from vcfzarr_sql.serve.pg.search_path import duckdb_search_path
from vcfzarr_sql.serve.pg.sqlstate import PgError, sql_error
from vcfzarr_sql.serve.pg.statements import (
    IGNORED,
    UNPARSED,
    Statement,
    command_tag,
    duckdb_equivalent,
    postgres_answer,
    refuse_relation_names,
    split,
    transaction_status,
    transaction_verb,
)
from vcfzarr_sql.serve.pg.types import TEXT, parameter_value

log = logging.getLogger("vcfzarr_sql.serve.pg")

#: Rows per Arrow batch pulled from DuckDB (and per burst of DataRows).
BATCH_ROWS = 8192
#: Bytes buffered before they are sent.
SEND_BUFFER = 1 << 18
#: Seconds a send may wait for the client past the statement timeout (the error, the rows
#: of a statement that ends near it).
SEND_GRACE = 2.0

SERVER_VERSION = "15.0 (vcfzarr-sql)"

def server_parameters(user: str, application_name: str) -> dict[str, str]:
    """The ParameterStatus values sent at startup (also what ``SHOW name`` answers)."""
    return {
        "server_version": SERVER_VERSION,
        "server_encoding": "UTF8",
        "client_encoding": "UTF8",
        "DateStyle": "ISO, MDY",
        "IntervalStyle": "postgres",
        "integer_datetimes": "on",
        "standard_conforming_strings": "on",
        "is_superuser": "off",
        "session_authorization": user,
        "application_name": application_name,
    }


#: Further parameters ``SHOW`` answers (never sent as ParameterStatus).
SHOW_ONLY = {
    "transaction_isolation": "read committed",
    "default_transaction_isolation": "read committed",
    "transaction_read_only": "off",
    "max_identifier_length": "63",
    "lc_collate": "C",
    "lc_ctype": "C",
}


@dataclass
class Prepared:
    """A parsed statement (``Parse``): its text and declared parameter types."""

    statement: Statement
    parameter_oids: list[int]


@dataclass
class Portal:
    """A bound statement (``Bind``); its result starts at Describe or Execute."""

    statement: Statement
    parameters: list[object]
    result: Result | None = None
    hold: bool = False  # a cursor declared WITH HOLD outlives its transaction
    result_formats: list[int] = field(default_factory=list)  # Bind's, for the result columns

    def close(self) -> None:
        """Stop its result (if one is streaming)."""
        if self.result is not None and self.result.rows is not None:
            self.result.rows.close()


class ClientSession:
    """Serves one client over ``sock`` until it leaves.

    ``sessions`` opens its locked-down DuckDB session; ``security``: TLS (then required),
    the password's SCRAM secret (then required) and the login throttle; ``limits``: sizes and
    timeouts. ``key``: (process id, secret) sent in BackendKeyData; a connection that brings a
    CancelRequest instead of a StartupMessage passes the key it names to ``cancel``.
    ``peer``: the client's address (for the log and the login throttle). ``signal(key, pid,
    terminate)``: what ``pg_cancel_backend(pid)``/``pg_terminate_backend(pid)`` run.
    ``admit(user)``: asked once the password is right, whether a logged-in client may be
    added (False: "too many clients"). ``on_busy(busy)``: told when the session starts and
    ends handling a message (a session in a process of its own tells its server's watchdog).
    ``connected_at``: when the client connected (``time.monotonic()``; default: now).
    """

    def __init__(self, sock: socket.socket, *, sessions: LockedDatabase,
                 security: Security | None = None, limits: Limits | None = None,
                 key: tuple[int, int] = (0, 0),
                 cancel: Callable[[tuple[int, int]], None] | None = None, peer: str = "",
                 signal: pg_catalog.Signal | None = None,
                 admit: Callable[[str], bool] | None = None,
                 on_busy: Callable[[bool], None] | None = None, connected_at: float | None = None):
        self._sock = sock
        # unbuffered until logged in: nothing a client sends early is read past a TLS switch
        self._in: socket.SocketIO | io.BufferedReader = sock.makefile("rb", buffering=0)
        self._out = bytearray()
        self._sessions = sessions
        self._security = security or Security()
        self._limits = limits or Limits()
        self.key = key
        self._cancel = cancel
        self.peer = peer
        self._signal = signal
        #: The user name the client logged in with.
        self.user = ""
        self._admit = admit
        self._on_busy = on_busy
        #: When the connection was made, and whether the client logged in (the auth timeout).
        self.connected_at = time.monotonic() if connected_at is None else connected_at
        self.logged_in = False
        self._login_expired = False
        #: When the message being handled arrived (None: waiting for the client).
        self.busy_since: float | None = None
        self._cancel_reason: str | None = None
        self._con: Connection | None = None
        self._status = "I"
        self._settings: dict[str, str] = {}
        self._duckdb_settings: set[str] = set()
        self._prepared: dict[str, Prepared] = {}
        self._portals: dict[str, Portal] = {}
        self._skip_to_sync = False

    # -- output ------------------------------------------------------------------------------

    def _send(self, data: bytes | pa.Buffer) -> None:
        """Queue ``data``; a big piece (a batch of rows) goes out at once, not copied first."""
        if len(data) >= SEND_BUFFER:
            self._flush()
            self._write(data)
            return
        self._out += data
        if len(self._out) >= SEND_BUFFER:
            self._flush()

    def _flush(self) -> None:
        if self._out:
            self._write(self._out)
            self._out.clear()

    def _write(self, data: bytes | bytearray | pa.Buffer) -> None:
        """Send ``data`` now, while a statement runs within what is left of the statement
        timeout, and at least :data:`SEND_GRACE` (a client that stops reading its rows holds
        the session little longer than a running statement, and is then hung up on); any
        error of the socket is ConnectionError: the client is gone (other OSErrors of a
        statement are the statement's)."""
        limit = self._limits.statement_timeout
        if limit and self.busy_since is not None:
            self._sock.settimeout(max(self.busy_since + limit - time.monotonic(), SEND_GRACE))
        try:
            self._sock.sendall(data)
        except OSError as err:
            raise ConnectionError(f"sending to the client failed: {err}") from err

    def _send_error(self, err: BaseException, severity: str = "ERROR") -> None:
        if self._cancel_reason and isinstance(err, (duckdb.InterruptException, PgError)) \
                and getattr(err, "sqlstate", "57014") == "57014":
            err = PgError("57014", f"canceling statement due to {self._cancel_reason}")
        error = sql_error(err)
        self._send(protocol.error_response(severity, error.sqlstate, error.message, error.detail))

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> None:
        """Serve the client until it terminates or the connection drops."""
        try:
            if self._start():
                self._loop()
        except TimeoutError:
            self._end_with("57P05" if self.logged_in else "08006",
                           "terminating connection due to idle-session timeout" if self.logged_in
                           else "timeout expired before the client logged in")
        except (ProtocolError, ConnectionError, OSError) as err:
            if self._login_expired:
                self._end_with("08006", "timeout expired before the client logged in")
            else:
                log.debug("session %s ended: %s", self.key[0], err)
        except Exception:  # a bug of ours outside any query: this session ends, the server goes on
            log.exception("session %s failed", self.key[0])
        finally:
            self.close()

    def _end_with(self, sqlstate: str, message: str) -> None:
        """A FATAL error as the last word to the client, if it still listens."""
        with contextlib.suppress(OSError):
            self._out.clear()
            self._sock.settimeout(1)
            self._sock.sendall(protocol.error_response("FATAL", sqlstate, message))

    def end(self, sqlstate: str, message: str) -> None:
        """Tell the client a FATAL error and hang up, whatever the session is doing (from
        another thread, when its process is about to exit)."""
        self._end_with(sqlstate, message)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def interrupt(self, reason: str = "user request") -> None:
        """Cancel the running query (a client's CancelRequest, the statement timeout, the
        client gone); called from another thread."""
        self._cancel_reason = reason
        con = self._con
        if con is not None:
            with contextlib.suppress(duckdb.Error):  # the session closed meanwhile
                con.duckdb_connection.interrupt()

    def terminate(self) -> None:
        """End the session (``pg_terminate_backend``; from another thread): its query is
        cancelled and its connection shut."""
        self.interrupt("administrator command")
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._close_portals()
        if self._con is not None:
            self._con.close()
            self._con = None
        with contextlib.suppress(OSError):
            self._in.close()
            self._sock.close()  # after TLS, the only handle on the connection

    def fileno(self) -> int:
        """The connection's file descriptor (-1 once closed)."""
        return self._sock.fileno()

    def drop(self) -> None:
        """End a login past the auth timeout (from another thread): the session's pending
        read ends, and the session tells the client why before it hangs up."""
        self._login_expired = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RD)

    def hang_up(self) -> None:
        """End the session from another thread (the server stops): its statement is
        cancelled and its pending read ends."""
        self.interrupt("server shutdown")
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def _start(self) -> bool:
        """The startup phase; False when the client only probed (SSL, cancel) or failed."""
        self._sock.settimeout(self._limits.auth_timeout or None)
        tls = self._security.tls
        encrypted = False
        while True:
            code, payload = protocol.read_startup(self._in, self._limits.max_startup_packet)
            if code == protocol.SSL_REQUEST and tls is not None and not encrypted:
                self._sock.sendall(b"S")
                self._in.close()
                self._sock = tls.wrap_socket(self._sock, server_side=True)
                self._in = self._sock.makefile("rb", buffering=0)
                encrypted = True
                continue
            if code in (protocol.SSL_REQUEST, protocol.GSSENC_REQUEST):
                self._sock.sendall(b"N")
                continue
            if code == protocol.CANCEL_REQUEST:
                if self._cancel is not None and len(payload) >= 8:
                    self._cancel(struct.unpack(">ii", payload[:8]))
                return False
            break
        if code >> 16 != 3:
            version = f"{code >> 16}.{code & 0xFFFF}"
            self._send(protocol.error_response("FATAL", "0A000",
                                               f"unsupported frontend protocol {version}"))
            self._flush()
            return False
        if tls is not None and not encrypted:
            self._end_with("28000", "this server accepts TLS connections only (sslmode=require)")
            return False
        params = protocol.startup_parameters(payload)
        unknown = [name for name in params if name.startswith("_pq_.")]
        if code & 0xFFFF or unknown:
            self._send(protocol.negotiate_protocol_version(0, unknown))
        user = self.user = params.get("user", "")
        if self._security.secret is not None and not self._authenticate(user):
            return False
        if self._admit is not None and not self._admit(user):
            self._end_with("53300", "sorry, too many clients already")
            return False
        try:
            self._con = self._sessions.connect()
        except Exception as err:  # a database file that cannot be opened
            self._send_error(err, "FATAL")
            self._flush()
            return False
        self.logged_in = True
        self._in.close()
        self._in = self._sock.makefile("rb")
        pg_catalog.install(self._con.duckdb_connection, self.key, self._signal)
        self._duckdb_settings = {
            name.lower() for (name,) in self._con.duckdb_connection.sql(
                "SELECT name FROM duckdb_settings()").fetchall()
        }
        self._send(protocol.authentication(0))
        status = server_parameters(user, params.get("application_name", ""))
        [(status["TimeZone"],)] = self._con.duckdb_connection.sql(
            "SELECT current_setting('TimeZone')").fetchall()
        for name, value in status.items():
            self._send(protocol.parameter_status(name, value))
        given = {name: value for name, value in params.items()
                 if name not in ("user", "database", "options")}
        self._settings = {name.lower(): value
                          for name, value in {**SHOW_ONLY, **given, **status}.items()}
        self._send(protocol.backend_key_data(*self.key))
        self._ready()
        return True

    def _authenticate(self, user: str) -> bool:
        """SCRAM-SHA-256; a failure is logged, and slows the next attempt from the host."""
        secret, throttle = self._security.secret, self._security.throttle
        assert secret is not None
        timeout = self._limits.auth_timeout
        if not throttle.wait(self.peer, self.connected_at + timeout if timeout else None):
            log.warning('login for user "%s" from %s refused: too many failed logins', user, self.peer)
            self._end_with("53300", "too many failed logins from this address; try again later")
            return False
        exchange = ScramExchange(secret)
        self._send(protocol.authentication(protocol.AUTH_SASL, protocol.sasl_mechanisms(MECHANISM)))
        self._flush()
        try:
            mechanism, first = protocol.sasl_initial_response(self._sasl_message())
            if mechanism != MECHANISM:
                raise AuthenticationFailed(f"unsupported SASL mechanism {mechanism!r}")
            server_first = exchange.server_first(first.decode())
            self._send(protocol.authentication(protocol.AUTH_SASL_CONTINUE, server_first.encode()))
            self._flush()
            server_final = exchange.server_final(self._sasl_message().decode())
        except (AuthenticationFailed, UnicodeDecodeError, PgError) as err:
            throttle.failed(self.peer)
            log.warning('failed login for user "%s" from %s: %s', user, self.peer, err)
            self._end_with("28P01", f'password authentication failed for user "{user}"')
            return False
        throttle.succeeded(self.peer)
        self._send(protocol.authentication(protocol.AUTH_SASL_FINAL, server_final.encode()))
        return True

    def _sasl_message(self) -> bytes:
        kind, payload = protocol.read_message(self._in, self._limits.max_startup_packet)
        if kind != b"p":
            raise AuthenticationFailed(f"expected a password message, not {kind!r}")
        return payload

    def _ready(self) -> None:
        self._send(protocol.ready_for_query(self._status))
        self._flush()

    def _loop(self) -> None:
        handlers = {
            b"Q": self._simple_query, b"P": self._parse, b"B": self._bind, b"D": self._describe,
            b"E": self._execute, b"C": self._close, b"H": lambda _: self._flush(),
            b"S": lambda _: self._sync(),
        }
        while True:
            self._sock.settimeout(self._limits.idle_timeout or None)
            kind, payload = protocol.read_message(self._in, self._limits.max_message)
            if kind == b"X":
                return
            handler = handlers.get(kind)
            if kind in (b"Q", b"S"):
                self._skip_to_sync = False
            elif self._skip_to_sync:
                continue
            if handler is None:
                raise ProtocolError(f"unexpected message type {kind!r}")
            self._cancel_reason = None
            self.busy_since = time.monotonic()
            if self._on_busy is not None:
                self._on_busy(True)
            try:
                handler(Payload(payload))
            except (ProtocolError, ConnectionError):  # (the connection's, not the statement's)
                raise
            except Exception as err:
                self._failed(err)
                if kind == b"Q":
                    self._ready()
                else:
                    self._skip_to_sync = True
            finally:
                self.busy_since = None
                if self._on_busy is not None:
                    self._on_busy(False)

    def _close_portals(self, held_too: bool = True) -> None:
        for name, portal in list(self._portals.items()):
            if held_too or not portal.hold:
                portal.close()
                del self._portals[name]

    def _end_of_batch(self) -> None:
        """Outside a transaction block, the implicit transaction ends: its portals go."""
        if self._status == "I":
            self._close_portals(held_too=False)

    def _failed(self, err: BaseException) -> None:
        """Report ``err``; the transaction's portals go (DuckDB's result is unusable)."""
        self._send_error(err)
        self._close_portals(held_too=False)
        if self._status == "T":
            self._status = "E"

    # -- running statements ------------------------------------------------------------------

    def _free_connection(self, rolling_back: bool = False) -> None:
        """Read any suspended portal's rows into memory: DuckDB runs one result at a time.

        All the portals together hold at most ``Limits.max_held_rows_bytes``: past that the
        statement fails (PgError 54000), unless it rolls back, which drops the cursor that
        does not fit (as PostgreSQL drops a WITH HOLD cursor when its transaction aborts).
        """
        budget = self._limits.max_held_rows_bytes
        for name, portal in list(self._portals.items()):
            rows = portal.result.rows if portal.result is not None else None
            if rows is None:
                continue
            others = sum(p.result.rows.held_bytes for p in self._portals.values()
                         if p is not portal and p.result is not None and p.result.rows is not None)
            try:
                rows.detach(budget - others)
            except PgError:
                if not rolling_back:
                    raise
                portal.close()
                del self._portals[name]

    def _run(self, statement: Statement, parameters: Sequence[object]) -> Result:
        """Run one statement: rows to stream, or a tag."""
        if self._status == "E":
            return self._end_failed_transaction(statement)
        verb = transaction_verb(statement)
        if (verb == "BEGIN" and self._status == "T") or \
                (verb in ("COMMIT", "ROLLBACK") and self._status == "I"):
            return Result(command_tag(statement, None))  # PostgreSQL only warns (DuckDB fails)
        command = cursor_command(statement)
        if command is not None:
            return self._run_cursor_command(command, parameters)
        statement = duckdb_equivalent(statement, self._duckdb_settings) or statement
        if statement.kind == "SET" and self._con is not None:
            statement = duckdb_search_path(self._con.duckdb_connection, statement) or statement
        answer = postgres_answer(statement, self._settings, self._duckdb_settings)
        if answer is not None:
            if answer.column is None:
                return Result(answer.tag)
            table = pa.table({answer.column: pa.array([answer.value], pa.string())})
            return Result(answer.tag, RowStream(table.to_reader()))
        refuse_relation_names(statement)
        assert self._con is not None
        self._free_connection(rolling_back=verb == "ROLLBACK")
        copy = copy_out.parse(statement.sql) if statement.keyword == "COPY" else None
        if copy is not None:
            reader = self._con.sql(copy.query, params=list(parameters) or None).to_arrow_reader(BATCH_ROWS)
            return Result("COPY", RowStream(reader), copy)
        if len(statement.sql) > sql_text.MAX_TOKENIZED:
            return self._run_long(statement, parameters)
        relation = self._con.sql(statement.sql, params=list(parameters) or None)
        self._status = transaction_status(statement, self._status)
        if relation is None:
            return Result(command_tag(statement, None))
        if statement.kind != "SELECT" and relation.type == "MATERIALIZED_RELATION" \
                and relation.columns in (["Count"], ["Success"]):
            rows = relation.fetchall()
            count = rows[0][0] if rows and relation.columns == ["Count"] else None
            return Result(command_tag(statement, count))
        return Result("SELECT", RowStream(relation.to_arrow_reader(BATCH_ROWS), statement.sql))

    def _run_long(self, statement: Statement, parameters: Sequence[object]) -> Result:
        """Run a long statement without holding Python's GIL while DuckDB parses it (see
        :meth:`~vcfzarr_sql.engine.connection.Connection.rows`)."""
        assert self._con is not None
        reader = self._con.rows(statement.sql, list(parameters) or None, batch_rows=BATCH_ROWS)
        self._status = transaction_status(statement, self._status)
        columns = reader.schema.names if reader is not None else []
        if reader is None or (statement.kind != "SELECT" and columns in (["Count"], ["Success"])):
            rows = reader.read_all().to_pylist() if reader is not None else []
            count = rows[0]["Count"] if rows and columns == ["Count"] else None
            return Result(command_tag(statement, count))
        return Result("SELECT", RowStream(reader, statement.sql))

    def _end_failed_transaction(self, statement: Statement) -> Result:
        """In a failed transaction block only its end is accepted, and it rolls back."""
        if statement.keyword not in ("COMMIT", "END", "ROLLBACK", "ABORT"):
            raise PgError("25P02", "current transaction is aborted, "
                                   "commands ignored until end of transaction block")
        assert self._con is not None
        self._free_connection(rolling_back=True)
        with contextlib.suppress(duckdb.TransactionException):  # DuckDB already ended it
            self._con.sql("ROLLBACK")
        self._status = "I"
        return Result("ROLLBACK")

    def _run_cursor_command(self, command: CursorCommand, parameters: Sequence[object]) -> Result:
        if command.verb == "DECLARE":
            assert command.name is not None and command.query is not None
            if self._status == "I" and not command.hold:
                raise PgError("25P01", "DECLARE CURSOR can only be used in transaction blocks")
            result = self._run(command.query, parameters)
            if result.rows is None:
                raise PgError("42P11", "a cursor needs a query that returns rows")
            old = self._portals.pop(command.name, None)
            if old is not None:
                old.close()
            self._portals[command.name] = Portal(command.query, list(parameters), result, command.hold)
            return Result("DECLARE CURSOR")
        if command.verb == "CLOSE":
            if command.name is None:
                self._close_portals()
            elif (portal := self._portals.pop(command.name, None)) is not None:
                portal.close()
            else:
                raise PgError("34000", f'cursor "{command.name}" does not exist')
            return Result("CLOSE CURSOR")
        portal = None if command.name is None else self._portals.get(command.name)
        if portal is None or portal.result is None or portal.result.rows is None:
            raise PgError("34000", f'cursor "{command.name}" does not exist')
        rows = portal.result.rows
        batches = [] if command.count == 0 else list(rows.take(command.count or 0))
        return Result("FETCH", RowStream(pa.Table.from_batches(batches, rows.schema).to_reader()))

    def _send_rows(self, result: Result, limit: int = 0) -> None:
        """DataRows for up to ``limit`` rows (0: all); then CommandComplete, or PortalSuspended
        when rows are left."""
        rows = result.rows
        assert rows is not None
        count = 0
        for batch in rows.take(limit):
            self._send(data_rows(batch, rows.wire))
            count += batch.num_rows
        if limit and not rows.exhausted:
            self._send(protocol.PORTAL_SUSPENDED)
        else:
            self._send(protocol.command_complete(f"{result.tag} {count}"))

    def _send_copy(self, result: Result) -> None:
        """CopyOutResponse, a CopyData a row, CopyDone, CommandComplete."""
        rows, copy = result.rows, result.copy
        assert rows is not None and copy is not None
        self._send(copy_out.out_response(len(rows.schema)))
        if copy.header:
            self._send(copy_out.copy_data(pa.array([copy_out.header_line(rows.schema.names, copy)])))
        count = 0
        for batch in rows.take():
            self._send(copy_out.copy_data(copy_out.lines(batch, copy)))
            count += batch.num_rows
        self._send(protocol.message(b"c"))
        self._send(protocol.command_complete(f"COPY {count}"))

    def _send_result(self, result: Result, limit: int = 0) -> None:
        if result.copy is not None:
            self._send_copy(result)
        elif result.rows is None:
            self._send(protocol.command_complete(result.tag))
        else:
            self._send_rows(result, limit)

    # -- simple query protocol ---------------------------------------------------------------

    def _simple_query(self, payload: Payload) -> None:
        text = pg_catalog.rewrite(payload.cstring())
        assert self._con is not None
        statements = split(self._con.duckdb_connection, text)
        if not statements:
            self._send(protocol.EMPTY_QUERY_RESPONSE)
        for statement in statements:
            result = self._run(statement, ())
            if result.rows is None or result.copy is not None:
                try:
                    self._send_result(result)
                finally:
                    if result.rows is not None:
                        result.rows.close()
                continue
            try:
                self._send(protocol.row_description(result.rows.columns))
                self._send_result(result)
            finally:
                result.rows.close()
        self._end_of_batch()
        self._ready()

    # -- extended query protocol -------------------------------------------------------------

    def _parse(self, payload: Payload) -> None:
        name, text, oids = payload.cstring(), pg_catalog.rewrite(payload.cstring()), payload.int32s()
        assert self._con is not None
        statements = split(self._con.duckdb_connection, text)
        if len(statements) > 1:
            raise PgError("42601", "cannot insert multiple commands into a prepared statement")
        statement = statements[0] if statements else Statement("", "EMPTY")
        if statement.kind == UNPARSED and not self._answerable(statement):
            self._con.duckdb_connection.extract_statements(text)  # raises DuckDB's syntax error
        oids = oids + [0] * (statement.parameters - len(oids))
        self._prepared[name] = Prepared(statement, oids)
        self._send(protocol.PARSE_COMPLETE)

    def _answerable(self, statement: Statement) -> bool:
        """Whether a statement DuckDB cannot parse is one this server runs anyway."""
        return (statement.keyword in IGNORED or cursor_command(statement) is not None
                or duckdb_equivalent(statement, self._duckdb_settings) is not None
                or (statement.keyword == "COPY" and copy_out.parse(statement.sql) is not None))

    def _bind(self, payload: Payload) -> None:
        portal, name = payload.cstring(), payload.cstring()
        formats, values, result_formats = payload.int16s(), payload.values(), payload.int16s()
        prepared = self._prepared.get(name)
        if prepared is None:
            raise PgError("26000", f'prepared statement "{name}" does not exist')
        if len(formats) == 1:
            formats = formats * len(values)
        oids = prepared.parameter_oids + [0] * (len(values) - len(prepared.parameter_oids))
        parameters = [
            parameter_value(oid, bool(formats[i]) if formats else False, value)
            for i, (oid, value) in enumerate(zip(oids, values))
        ]
        old = self._portals.pop(portal, None)
        if old is not None:
            old.close()
        self._portals[portal] = Portal(prepared.statement, parameters, result_formats=result_formats)
        self._send(protocol.BIND_COMPLETE)

    def _started(self, portal: Portal) -> Result:
        if portal.result is None:
            if portal.statement.kind == "EMPTY":
                portal.result = Result("")
            else:
                portal.result = self._run(portal.statement, portal.parameters)
                if portal.result.rows is not None:
                    portal.result.rows.use_formats(portal.result_formats)
        return portal.result

    def _describe(self, payload: Payload) -> None:
        kind, name = payload.byte(), payload.cstring()
        if kind == b"S":
            prepared = self._prepared.get(name)
            if prepared is None:
                raise PgError("26000", f'prepared statement "{name}" does not exist')
            oids = [oid or TEXT.oid for oid in prepared.parameter_oids]
            self._send(protocol.parameter_description(oids))
            self._describe_statement(prepared)
            return
        portal = self._portals.get(name)
        if portal is None:
            raise PgError("34000", f'portal "{name}" does not exist')
        result = self._started(portal)
        if result.rows is None or result.copy is not None:
            self._send(protocol.NO_DATA)
        else:
            self._send(protocol.row_description(result.rows.columns))

    def _describe_statement(self, prepared: Prepared) -> None:
        """RowDescription of a statement before Bind: a query runs with NULL parameters and
        only its schema is read; any other statement answers NoData (it is not run)."""
        if prepared.statement.kind != "SELECT":
            self._send(protocol.NO_DATA)
            return
        result = self._run(prepared.statement, [None] * len(prepared.parameter_oids))
        if result.rows is None:
            self._send(protocol.NO_DATA)
            return
        result.rows.close()
        self._send(protocol.row_description(result.rows.columns))

    def _execute(self, payload: Payload) -> None:
        name, limit = payload.cstring(), payload.int32()
        portal = self._portals.get(name)
        if portal is None:
            raise PgError("34000", f'portal "{name}" does not exist')
        result = self._started(portal)
        if portal.statement.kind == "EMPTY":
            self._send(protocol.EMPTY_QUERY_RESPONSE)
            return
        self._send_result(result, max(limit, 0))

    def _close(self, payload: Payload) -> None:
        kind, name = payload.byte(), payload.cstring()
        if kind == b"S":
            self._prepared.pop(name, None)
        else:
            portal = self._portals.pop(name, None)
            if portal is not None:
                portal.close()
        self._send(protocol.CLOSE_COMPLETE)

    def _sync(self) -> None:
        self._end_of_batch()
        self._ready()
