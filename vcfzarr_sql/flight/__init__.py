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

from pathlib import Path

import pyarrow.flight as flight

from vcfzarr_sql.flight.server import FlightSqlServer, SharedDatabase

__all__ = ["DEFAULT_FLIGHT_PORT", "FlightSqlServer", "SharedDatabase", "make_flight_server"]

#: Flight SQL's customary port.
DEFAULT_FLIGHT_PORT = 32010


def make_flight_server(host: str = "127.0.0.1", port: int = DEFAULT_FLIGHT_PORT, *,
                       database: str = ":memory:", password: str | None = None,
                       tls_cert: str | Path | None = None, tls_key: str | Path | None = None
                       ) -> FlightSqlServer:
    """A Flight SQL server listening on ``host:port`` (``port=0``: a free one, see ``.port``);
    ``serve()`` blocks until ``shutdown()``. With ``tls_cert`` and ``tls_key`` (PEM files) it
    speaks ``grpc+tls``; with ``password`` clients must log in."""
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("TLS needs both a certificate and its key")
    certificates = []
    scheme = "grpc"
    if tls_cert is not None and tls_key is not None:
        certificates = [flight.CertKeyPair(Path(tls_cert).read_bytes(), Path(tls_key).read_bytes())]
        scheme = "grpc+tls"
    return FlightSqlServer(f"{scheme}://{host}:{port}", SharedDatabase(database), password=password,
                           tls_certificates=certificates)
