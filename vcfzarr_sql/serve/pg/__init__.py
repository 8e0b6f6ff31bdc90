"""Serve SQL over VCF Zarr to PostgreSQL clients (psql, JDBC/ODBC, psycopg, BI tools).

A small server speaking the PostgreSQL frontend/backend protocol v3 (simple and extended
query protocols, text and binary results). Each client connection gets its own locked-down
session (:mod:`.lockdown`): ``vcf_zarr(...)`` and the other table functions over the stores
under the served data directories, ``region :=``, parameters and pushdown work as in Python;
files, URLs, extensions and settings are out of reach. TLS, SCRAM-SHA-256 passwords and the
limits of :class:`~.config.Limits` guard the door (see docs/security.md). Each session runs
in a process of its own (:mod:`.session_process`), so the server can end any of them; the
sessions of a ``writable`` database share one DuckDB instance, so they are threads of the
server's process.

>>> server = make_server(port=0, data_dirs=["/data"])            # doctest: +SKIP
>>> threading.Thread(target=server.serve_forever, daemon=True).start()   # doctest: +SKIP
>>> con = psycopg.connect(host="127.0.0.1", port=server.port, user="me")   # doctest: +SKIP
>>> con.execute("SELECT 1").fetchall()   # doctest: +SKIP
[(1,)]
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import os
import secrets
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Sequence
from typing import Any

from vcfzarr_sql.serve import memory, watchdog, workers
from vcfzarr_sql.serve.pg import protocol, rows, session_process, start_rate
from vcfzarr_sql.serve.pg.config import Limits, Security, ServerConfigError, check_exposure
from vcfzarr_sql.serve.pg.lockdown import DEFAULT_MEMORY_LIMIT, LockedDatabase, SessionPolicy
from vcfzarr_sql.serve.pg.session import ClientSession
from vcfzarr_sql.serve.pg.session_process import SessionProcess
from vcfzarr_sql.store.confined import DataDirs

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "Limits", "PgServer", "make_server", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5433
#: Seconds a stopping server waits for its sessions to end.
CLOSE_WAIT = 5.0

log = logging.getLogger("vcfzarr_sql.serve.pg")


#: A session as the server sees it: in a process of its own, or a thread of the server's.
Session = SessionProcess | ClientSession


class _Connection(socketserver.BaseRequestHandler):
    server: PgServer

    def handle(self) -> None:
        key = (next(self.server.process_ids), secrets.randbelow(1 << 31))
        session: Session
        if self.server.setup is not None:
            session = SessionProcess(self.request, key=key, peer=self.client_address[0],
                                     setup=self.server.setup)
        else:
            session = ClientSession(self.request, sessions=self.server.database,
                                    security=self.server.security, limits=self.server.limits,
                                    key=key, cancel=self.server.cancel, peer=self.client_address[0],
                                    signal=self.server.signal_backend,
                                    admit=lambda _user: self.server.admit(key))
        with self.server.sessions_lock:
            self.server.sessions[key] = session
        try:
            if isinstance(session, SessionProcess):
                session.serve(self.server)
            else:
                session.run()
        finally:
            with self.server.sessions_lock:
                del self.server.sessions[key]
                self.server.admitted.discard(key)


class PgServer(socketserver.ThreadingTCPServer):
    """A threaded TCP server, one :class:`~.session.ClientSession` per connection, in a
    process of its own (:class:`~.session_process.SessionProcess`) when ``setup`` says how to
    start one, else in a thread of this process.

    A CancelRequest interrupts the query of the session whose key it names. A watchdog
    thread enforces the auth and statement timeouts, cancels the statement of a client
    that hung up, and ends a session's process whose statement does not stop (:mod:`~vcfzarr_sql.serve.watchdog`). Logged-in clients beyond ``limits.max_connections`` are
    refused (at once when the server is full). Connections still logging in have slots of
    their own (``limits.max_logins``, ``limits.max_logins_per_address``): a new one past them
    ends the oldest, so idle sockets cannot lock real users out.
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    #: Refusals ("too many clients") in flight at once; beyond, connections are just closed.
    max_refusing = 64

    def __init__(self, host: str, port: int, *, database: LockedDatabase, security: Security,
                 limits: Limits, setup: session_process.Setup | None = None):
        self.database = database
        self.security = security
        self.limits = limits
        self.setup = setup
        self.process_ids = itertools.count(1)
        self.sessions: dict[tuple[int, int], Session] = {}
        self.sessions_lock = threading.Lock()
        #: The keys of the sessions logged in (counted against ``limits.max_connections``).
        self.admitted: set[tuple[int, int]] = set()
        self._refusing = threading.BoundedSemaphore(self.max_refusing)
        self._starts = start_rate.StartRate(limits.starts_per_address, limits.starts)
        self._stop_watching = threading.Event()
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _Connection)

    @property
    def port(self) -> int:
        """The port listened on (useful after binding port 0)."""
        return self.server_address[1]

    def cancel(self, key: tuple[int, int]) -> None:
        """Interrupt the running query of the session with this BackendKeyData (if any)."""
        with self.sessions_lock:
            session = self.sessions.get(key)
        if session is not None:
            session.interrupt()

    def signal_backend(self, caller_key: tuple[int, int], pid: int, terminate: bool) -> bool:
        """``pg_cancel_backend(pid)`` (or ``pg_terminate_backend``) from the session whose
        BackendKeyData is ``caller_key``: only a session of the same user name from the same
        address (user names are the client's claim, the password is shared), as PostgreSQL
        lets a role signal only its own."""
        with self.sessions_lock:
            caller = self.sessions.get(caller_key)
            targets = [s for (number, _), s in self.sessions.items() if number == pid]
        target = targets[0] if targets else None
        if caller is None or target is None or not target.logged_in or target.user != caller.user \
                or target.peer != caller.peer:
            log.warning("session %d may not signal session %d", caller_key[0], pid)
            return False
        if terminate:
            target.terminate()
        else:
            target.interrupt()
        return True

    def _sessions(self) -> list[Session]:
        with self.sessions_lock:
            return list(self.sessions.values())

    def memory_used(self) -> int:
        """Bytes the server takes now: this process's resident memory, and with sessions in
        processes, the memory of this process, of the sessions' parent and of each session's
        (:func:`.workers.server_bytes`)."""
        if self.setup is None:
            return memory.resident_bytes()
        return workers.server_bytes(
            [session for session in self._sessions() if isinstance(session, SessionProcess)],
            self.limits.max_memory)

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        watcher = threading.Thread(target=watchdog.watch, name="vcfzarr-sql watchdog", daemon=True,
                                   args=(self._sessions, self.limits, self._stop_watching,
                                         self.memory_used))
        watcher.start()
        try:
            super().serve_forever(poll_interval)
        finally:
            self._stop_watching.set()

    def admit(self, key: tuple[int, int]) -> bool:
        """Count the session ``key`` as logged in, unless ``limits.max_connections`` are."""
        with self.sessions_lock:
            if len(self.admitted) >= self.limits.max_connections:
                return False
            self.admitted.add(key)
            return True

    def _make_room_for_login(self, address: str) -> None:
        """End the oldest connections still logging in: from ``address`` (IPv6: its /64) when
        it has ``max_logins_per_address``, then of all when there are ``max_logins``."""
        with self.sessions_lock:
            waiting = [s for key, s in self.sessions.items() if key not in self.admitted]
        waiting.sort(key=lambda session: session.connected_at)
        same = [session for session in waiting
                if start_rate.address_key(session.peer) == start_rate.address_key(address)]
        ended = same[:len(same) - self.limits.max_logins_per_address + 1]
        rest = [session for session in waiting if session not in ended]
        for session in ended + rest[:len(rest) - self.limits.max_logins + 1]:
            session.drop()

    def process_request(self, request: socket.socket, client_address: tuple) -> None:  # type: ignore[override]
        with self.sessions_lock:
            full = len(self.admitted) >= self.limits.max_connections
        if not full:
            self._make_room_for_login(client_address[0])
        if full:
            log.warning("refused a connection from %s: %d clients already", client_address[0],
                        self.limits.max_connections)
            if self._refusing.acquire(blocking=False):
                threading.Thread(target=self._refuse, args=(request,), daemon=True).start()
            else:
                self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def start_refusal(self, address: str) -> str | None:
        """Why a session's process may not start now for a client at ``address`` (None: it
        may, and the start is counted; :mod:`.start_rate`)."""
        return self._starts.refusal(address)

    def _refuse(self, request: socket.socket) -> None:
        try:
            self.refuse(request, "sorry, too many clients already")
        finally:
            self._refusing.release()

    def refuse(self, request: socket.socket, message: str) -> None:
        """Tell a client FATAL 53300 ``message`` (after declining TLS, so libpq shows the
        reason) and hang up; a CancelRequest is still served."""
        with contextlib.suppress(OSError, protocol.ProtocolError):
            request.settimeout(1)
            stream = request.makefile("rb", buffering=0)
            code, payload = protocol.read_startup(stream, self.limits.max_startup_packet)
            while code in (protocol.SSL_REQUEST, protocol.GSSENC_REQUEST):
                request.sendall(b"N")
                code, payload = protocol.read_startup(stream, self.limits.max_startup_packet)
            stream.close()
            if code == protocol.CANCEL_REQUEST and len(payload) >= 8:  # still honoured when full
                self.cancel(struct.unpack(">ii", payload[:8]))
                raise protocol.ProtocolError("cancel request served")
            request.sendall(protocol.error_response("FATAL", "53300", message))
        self.shutdown_request(request)

    def server_close(self) -> None:
        """Stop listening, end every session (waiting up to :data:`CLOSE_WAIT` seconds for
        them: a process that exits while a session's thread is inside DuckDB aborts; a
        session's process still running then is ended, and killed a second later)."""
        super().server_close()
        self._stop_watching.set()
        for session in self._sessions():
            session.hang_up()
        deadline = time.monotonic() + CLOSE_WAIT
        while self._sessions() and time.monotonic() < deadline:
            time.sleep(0.05)
        for session in self._sessions():  # (a process whose statement does not stop)
            if isinstance(session, SessionProcess):
                session.end("57P01", "terminating connection due to server shutdown")
        deadline = time.monotonic() + workers.KILL_WAIT + 0.5
        while self._sessions() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.database.close()


def make_server(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
                data_dirs: Sequence[str | os.PathLike] | None = None, database: str | None = None,
                writable: bool = False, memory_limit: str = DEFAULT_MEMORY_LIMIT,
                password: str | None = None, tls_cert: str | None = None,
                tls_key: str | None = None, insecure: bool = False,
                limits: Limits | None = None, processes: bool = True) -> PgServer:
    """A bound server, not yet serving: call ``serve_forever()`` (and ``shutdown()`` from
    another thread to stop it). ``port=0`` picks a free port (see :attr:`PgServer.port`).

    ``data_dirs``: the directories whose stores clients may query (default: the current
    directory). ``database``: a DuckDB file every session sees, read-only unless ``writable``
    (None or ``:memory:``: each session has only tables of its own). ``memory_limit``:
    DuckDB's, per session. ``password``: required from clients (SCRAM-SHA-256);
    ``tls_cert``/``tls_key``: PEM files, TLS then required. A ``host`` other machines reach
    needs TLS and a password unless ``insecure``. ``limits``: :class:`~.config.Limits`.
    ``processes``: each session in a process of its own (:mod:`.session_process`; not for a
    ``writable`` database, whose sessions share one DuckDB instance: they are threads).
    """
    check_exposure(host, tls=tls_cert is not None, password=password is not None, insecure=insecure)
    security = Security.of(password=password, tls_cert=tls_cert, tls_key=tls_key)
    policy = SessionPolicy(DataDirs.of(data_dirs or [os.getcwd()]),
                           database=None if database in (None, ":memory:") else database,
                           writable=writable, memory_limit=memory_limit)
    sessions = LockedDatabase(policy)
    limits = limits or Limits()
    setup = None
    if processes and not (policy.writable and policy.database is not None):
        workers.start_forkserver()
        setup = session_process.Setup(policy, limits, security.secret, security.tls_files)
    else:
        rows.warm_up()
    try:
        return PgServer(host, port, database=sessions, security=security, limits=limits, setup=setup)
    except OSError as err:
        sessions.close()
        reason = "address already in use" if err.errno == errno.EADDRINUSE else err.strerror or str(err)
        raise ServerConfigError(f"cannot listen on {host}:{port}: {reason}") from None


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, **options: Any) -> None:
    """Serve PostgreSQL clients on ``host:port`` until interrupted (``options``: those of
    :func:`make_server`)."""
    with make_server(host, port, **options) as server:
        log.info("listening on %s:%d", host, server.port)
        server.serve_forever()
