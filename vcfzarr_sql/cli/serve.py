"""``vcfzarr-sql serve``: answer PostgreSQL clients (psql, JDBC, psycopg, BI tools)."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options
from vcfzarr_sql.server import DEFAULT_HOST, DEFAULT_PORT, make_server


@click.command("serve")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Address to listen on (0.0.0.0: every interface; set --password then).")
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="TCP port (0: any free port).")
@options.database
@click.option("--password", envvar="VCFZARR_SQL_PASSWORD", default=None,
              help="Require this password (cleartext authentication; also $VCFZARR_SQL_PASSWORD).")
def command(host: str, port: int, database: str, password: str | None) -> None:
    """Serve SQL over VCF Zarr on the PostgreSQL wire protocol until interrupted.

    \b
    vcfzarr-sql serve --port 5433
    psql -h 127.0.0.1 -p 5433 -c "SELECT count(*) FROM vcf_zarr('calls.zarr')"
    """
    with make_server(host, port, database=database, password=password) as server:
        click.echo(f"vcfzarr-sql serving PostgreSQL clients on {host}:{server.port} (Ctrl-C stops)",
                   err=True)
        server.serve_forever()
