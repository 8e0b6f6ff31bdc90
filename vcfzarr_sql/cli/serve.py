"""``vcfzarr-sql serve``: answer PostgreSQL clients (psql, JDBC, psycopg, BI tools), or Arrow
Flight SQL clients (ADBC, the Flight SQL JDBC driver) with ``--protocol flight-sql``."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options
from vcfzarr_sql.server import DEFAULT_HOST, DEFAULT_PORT, make_server


@click.command("serve")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Address to listen on (0.0.0.0: every interface; set --password then).")
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=None,
              help=f"TCP port (0: any free port) [default: {DEFAULT_PORT}; flight-sql: 32010].")
@options.database
@click.option("--password", envvar="VCFZARR_SQL_PASSWORD", default=None,
              help="Require this password (cleartext authentication; also $VCFZARR_SQL_PASSWORD).")
@click.option("--protocol", type=click.Choice(["postgres", "flight-sql"]), default="postgres",
              show_default=True,
              help="Wire protocol: PostgreSQL, or Arrow Flight SQL (needs vcfzarr-sql[flight]).")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None,
              help="flight-sql: PEM certificate to serve grpc+tls with (with --tls-key).")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None,
              help="flight-sql: PEM private key of --tls-cert.")
def command(host: str, port: int | None, database: str, password: str | None, protocol: str,
            tls_cert: str | None, tls_key: str | None) -> None:
    """Serve SQL over VCF Zarr on the PostgreSQL wire protocol (or Flight SQL) until interrupted.

    \b
    vcfzarr-sql serve --port 5433
    psql -h 127.0.0.1 -p 5433 -c "SELECT count(*) FROM vcf_zarr('calls.zarr')"
    vcfzarr-sql serve --protocol flight-sql --tls-cert cert.pem --tls-key key.pem --password s3cret
    """
    if protocol == "flight-sql":
        _serve_flight_sql(host, port, database, password, tls_cert, tls_key)
        return
    if tls_cert or tls_key:
        raise click.UsageError("--tls-cert/--tls-key are for --protocol flight-sql")
    with make_server(host, DEFAULT_PORT if port is None else port, database=database,
                     password=password) as server:
        click.echo(f"vcfzarr-sql serving PostgreSQL clients on {host}:{server.port} (Ctrl-C stops)",
                   err=True)
        server.serve_forever()


def _serve_flight_sql(host: str, port: int | None, database: str, password: str | None,
                      tls_cert: str | None, tls_key: str | None) -> None:
    try:
        from vcfzarr_sql.flight import DEFAULT_FLIGHT_PORT, make_flight_server
    except ImportError as err:
        raise click.ClickException(
            f"Flight SQL needs the flight extra: pip install 'vcfzarr-sql[flight]' ({err})") from err
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    server = make_flight_server(host, DEFAULT_FLIGHT_PORT if port is None else port,
                                database=database, password=password, tls_cert=tls_cert, tls_key=tls_key)
    scheme = "grpc+tls" if tls_cert else "grpc"
    click.echo(f"vcfzarr-sql serving Flight SQL clients on {scheme}://{host}:{server.port} "
               "(Ctrl-C stops)", err=True)
    try:
        server.serve()
    finally:
        server.shutdown()
