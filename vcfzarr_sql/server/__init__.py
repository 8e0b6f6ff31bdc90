"""Serve SQL over VCF Zarr to PostgreSQL clients (psql, JDBC/ODBC, psycopg, BI tools).

A small server speaking the PostgreSQL frontend/backend protocol v3 (simple and extended
query protocols, text format). Each client connection gets its own
:func:`vcfzarr_sql.connect` connection, so ``vcf_zarr(...)`` and the other table functions,
``region :=``, parameters and pushdown work exactly as in Python.

>>> server = make_server(port=0)            # doctest: +SKIP
>>> threading.Thread(target=server.serve_forever, daemon=True).start()   # doctest: +SKIP
>>> con = psycopg.connect(host="127.0.0.1", port=server.port, user="me")   # doctest: +SKIP
>>> con.execute("SELECT 1").fetchall()   # doctest: +SKIP
[(1,)]
"""

from __future__ import annotations

import itertools
import logging
import secrets
import socketserver
import threading

from vcfzarr_sql.server.session import ClientSession

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "PgServer", "make_server", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5433

log = logging.getLogger("vcfzarr_sql.server")


class _Connection(socketserver.StreamRequestHandler):
    server: PgServer

    def handle(self) -> None:
        key = (next(self.server.process_ids), secrets.randbelow(1 << 31))
        session = ClientSession(self.rfile, self.request, database=self.server.database,
                                password=self.server.password, key=key, cancel=self.server.cancel)
        with self.server.sessions_lock:
            self.server.sessions[key] = session
        try:
            session.run()
        finally:
            with self.server.sessions_lock:
                del self.server.sessions[key]


class PgServer(socketserver.ThreadingTCPServer):
    """A threaded TCP server, one :class:`~.session.ClientSession` per connection.

    A CancelRequest interrupts the query of the session whose key it names.
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, *, database: str = ":memory:", password: str | None = None):
        self.database = database
        self.password = password
        self.process_ids = itertools.count(1)
        self.sessions: dict[tuple[int, int], ClientSession] = {}
        self.sessions_lock = threading.Lock()
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


def make_server(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, database: str = ":memory:",
                password: str | None = None) -> PgServer:
    """A bound server, not yet serving: call ``serve_forever()`` (and ``shutdown()`` from
    another thread to stop it). ``port=0`` picks a free port (see :attr:`PgServer.port`)."""
    return PgServer(host, port, database=database, password=password)


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, database: str = ":memory:",
          password: str | None = None) -> None:
    """Serve PostgreSQL clients on ``host:port`` until interrupted.

    ``database``: the DuckDB database each session opens (``:memory:``: a private in-memory
    database per session; a file shares its tables and views). ``password``: when given,
    clients must send it (cleartext password authentication; use it on trusted networks only).
    """
    with make_server(host, port, database=database, password=password) as server:
        log.info("listening on %s:%d", host, server.port)
        server.serve_forever()
