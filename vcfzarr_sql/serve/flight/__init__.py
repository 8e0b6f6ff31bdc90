"""Arrow Flight SQL for vcfzarr-sql (the ``flight`` extra: ``pip install vcfzarr-sql[flight]``).

``vcfzarr-sql serve --protocol flight-sql`` answers Flight SQL clients (ADBC's
``adbc-driver-flightsql``, the Flight SQL JDBC driver, Superset and DBeaver through them) with
Arrow record batches: statements, prepared statements with parameters, catalog commands
(ADBC's ``get_objects``, ``get_table_schema``), cancellation, TLS and user/password.

>>> server = make_flight_server(port=0)            # doctest: +SKIP
>>> import adbc_driver_flightsql.dbapi              # doctest: +SKIP
>>> con = adbc_driver_flightsql.dbapi.connect(f"grpc://127.0.0.1:{server.port}")   # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow.flight as flight

from vcfzarr_sql.serve.flight.server import FlightSqlServer
from vcfzarr_sql.serve.pg.config import Limits, ServerConfigError, check_exposure
from vcfzarr_sql.serve.pg.lockdown import DEFAULT_MEMORY_LIMIT, LockedDatabase, SessionPolicy
from vcfzarr_sql.store.confined import DataDirs

__all__ = ["DEFAULT_FLIGHT_PORT", "FlightSqlServer", "make_flight_server"]

#: Flight SQL's customary port.
DEFAULT_FLIGHT_PORT = 32010


def make_flight_server(host: str = "127.0.0.1", port: int = DEFAULT_FLIGHT_PORT, *,
                       data_dirs: Sequence[str | os.PathLike] | None = None,
                       database: str | None = None, writable: bool = False,
                       memory_limit: str = DEFAULT_MEMORY_LIMIT, password: str | None = None,
                       tls_cert: str | Path | None = None, tls_key: str | Path | None = None,
                       insecure: bool = False, limits: Limits | None = None,
                       processes: bool = True) -> FlightSqlServer:
    """A Flight SQL server listening on ``host:port`` (``port=0``: a free one, see ``.port``);
    ``serve()`` blocks until ``shutdown()``.

    The security model is ``serve``'s (:func:`vcfzarr_sql.serve.pg.make_server`): statements run
    in locked-down DuckDB sessions that read only the stores under ``data_dirs`` (default: the
    current directory); ``database`` is shared read-only unless ``writable`` (without it, each
    statement has only tables of its own); with ``tls_cert`` and ``tls_key`` (PEM files) it
    speaks ``grpc+tls``; with ``password`` clients must log in. A ``host`` other machines reach
    needs TLS and a password unless ``insecure``. ``limits``: the PostgreSQL server's
    :class:`~vcfzarr_sql.serve.pg.config.Limits` (``max_connections``: clients, addresses, with
    statements open). ``processes``: each statement in a worker process (:mod:`.worker`; not for a
    ``writable`` database, whose statements share one DuckDB instance: they are threads).
    """
    if (tls_cert is None) != (tls_key is None):
        raise ServerConfigError("TLS needs both a certificate and its key")
    check_exposure(host, tls=tls_cert is not None, password=password is not None, insecure=insecure)
    certificates = []
    scheme = "grpc"
    if tls_cert is not None and tls_key is not None:
        certificates = [flight.CertKeyPair(Path(tls_cert).read_bytes(), Path(tls_key).read_bytes())]
        scheme = "grpc+tls"
    policy = SessionPolicy(DataDirs.of(data_dirs or [os.getcwd()]),
                           database=None if database in (None, ":memory:") else database,
                           writable=writable, memory_limit=memory_limit)
    return FlightSqlServer(f"{scheme}://{host}:{port}", LockedDatabase(policy), password=password,
                           tls_certificates=certificates, limits=limits, processes=processes)
