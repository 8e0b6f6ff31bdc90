"""``vcfzarr-sql serve``: answer PostgreSQL clients (psql, JDBC, psycopg, BI tools), or Arrow
Flight SQL clients (ADBC, the Flight SQL JDBC driver) with ``--protocol flight-sql``."""

from __future__ import annotations

import logging
import signal
from types import FrameType
from typing import TypedDict

import click

from vcfzarr_sql.cli import options
from vcfzarr_sql.serve.memory import MemorySizeError, default_cap, parse_size
from vcfzarr_sql.serve.pg import DEFAULT_HOST, DEFAULT_PORT, Limits, make_server
from vcfzarr_sql.serve.pg.auth import PASSWORD_ENV, read_password
from vcfzarr_sql.serve.pg.lockdown import DEFAULT_MEMORY_LIMIT


class _Served(TypedDict):
    """What both protocols' servers are given."""

    data_dirs: tuple[str, ...] | None
    database: str
    writable: bool
    memory_limit: str
    password: str | None
    tls_cert: str | None
    tls_key: str | None
    insecure: bool


_LIMITS = Limits()


def _refuse_password_argument(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        raise click.BadParameter(
            f"a password on the command line shows in `ps`: use --password-file or ${PASSWORD_ENV}")


@click.command("serve")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Address to listen on. Any address other machines reach needs --tls-cert, "
                   "--tls-key and a password, or --insecure.")
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=None,
              help=f"TCP port (0: any free port) [default: {DEFAULT_PORT}; flight-sql: 32010].")
@click.option("--protocol", type=click.Choice(["postgres", "flight-sql"]), default="postgres",
              show_default=True,
              help="Wire protocol: PostgreSQL, or Arrow Flight SQL (needs vcfzarr-sql[flight]).")
@click.option("--data-dir", "data_dirs", multiple=True,
              type=click.Path(exists=True, file_okay=False), metavar="DIR",
              help="Serve the stores under DIR (repeatable; default: the current directory). "
                   "Relative store paths are taken from the first one.")
@options.database
@click.option("--writable", is_flag=True,
              help="Let clients change the --database file (otherwise it is read-only).")
@click.option("--password-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help=f"Require the password on this file's first line (SCRAM-SHA-256 for PostgreSQL "
                   f"clients); else ${PASSWORD_ENV} if set.")
@click.option("--password", hidden=True, expose_value=False, callback=_refuse_password_argument)
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None,
              help="PEM certificate (chain): clients must then connect with TLS.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None,
              help="PEM private key of --tls-cert.")
@click.option("--insecure", is_flag=True,
              help="Allow a --host other machines reach without TLS and a password.")
@click.option("--max-connections", type=click.IntRange(min=1), default=_LIMITS.max_connections,
              show_default=True,
              help="Clients connected at once (flight-sql: clients with open statements).")
@click.option("--memory-limit", default=DEFAULT_MEMORY_LIMIT, show_default=True,
              help="DuckDB memory limit of each session (of all, with --writable).")
@click.option("--max-memory", default=None, metavar="SIZE",
              help="Memory of the whole server process (the kernel refuses allocations past it; "
                   "a statement that needs more fails) [default: 3 x --memory-limit + 1GB, at "
                   "most 3/4 of the machine's memory].")
@click.option("--statement-timeout", type=click.FloatRange(min=0), default=_LIMITS.statement_timeout,
              show_default=True, help="Seconds a statement may run (0: no limit).")
@click.option("--idle-timeout", type=click.FloatRange(min=0), default=_LIMITS.idle_timeout,
              show_default=True, help="Seconds a client may stay silent (0: no limit; flight-sql: a statement unused).")
def command(host: str, port: int | None, protocol: str,
            data_dirs: tuple[str, ...], database: str, writable: bool, password_file: str | None,
            tls_cert: str | None, tls_key: str | None, insecure: bool, max_connections: int,
            memory_limit: str, max_memory: str | None, statement_timeout: float,
            idle_timeout: float) -> None:
    """Serve SQL over the VCF Zarr stores under --data-dir on the PostgreSQL wire protocol
    (or Arrow Flight SQL) until interrupted (Ctrl-C).

    \b
    vcfzarr-sql serve --data-dir /data --port 5433
    psql -h 127.0.0.1 -p 5433 -c "SELECT count(*) FROM vcf_zarr('calls.zarr')"
    vcfzarr-sql serve --protocol flight-sql --data-dir /data --tls-cert cert.pem --tls-key key.pem
    """
    _stop_on_signals()
    logging.basicConfig(format="%(asctime)s vcfzarr-sql serve: %(message)s")
    logging.getLogger("vcfzarr_sql.serve.pg").setLevel(logging.INFO)
    common = _Served(data_dirs=data_dirs or None, database=database, writable=writable,
                     memory_limit=memory_limit, password=read_password(password_file),
                     tls_cert=tls_cert, tls_key=tls_key, insecure=insecure)
    try:
        cap = default_cap(memory_limit) if max_memory is None else parse_size(max_memory)
    except MemorySizeError as err:
        raise click.BadParameter(str(err), param_hint="--max-memory") from None
    limits = Limits(max_connections=max_connections, statement_timeout=statement_timeout,
                    idle_timeout=idle_timeout, max_memory=cap)
    try:
        if protocol == "flight-sql":
            _serve_flight_sql(host, port, common, limits)
            return
        with make_server(host, DEFAULT_PORT if port is None else port, limits=limits,
                         **common) as server:
            roots = ", ".join(server.database.policy.data_dirs.roots)
            click.echo(f"vcfzarr-sql serving the stores under {roots} to PostgreSQL clients on "
                       f"{host}:{server.port} (Ctrl-C stops)", err=True)
            server.serve_forever()
    except KeyboardInterrupt:
        click.echo("vcfzarr-sql serve: stopped", err=True)


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """SIGINT and SIGTERM stop the server cleanly, even when it was started with them ignored
    (``serve &`` from a script inherits an ignored SIGINT)."""
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)


def _serve_flight_sql(host: str, port: int | None, common: _Served, limits: Limits) -> None:
    try:
        from vcfzarr_sql.serve.flight import DEFAULT_FLIGHT_PORT, make_flight_server
    except ImportError as err:
        raise click.ClickException(
            f"Flight SQL needs the flight extra: pip install 'vcfzarr-sql[flight]' ({err})") from err
    server = make_flight_server(host, DEFAULT_FLIGHT_PORT if port is None else port, limits=limits,
                                **common)
    roots = ", ".join(server.sessions.policy.data_dirs.roots)
    scheme = "grpc+tls" if common["tls_cert"] else "grpc"
    click.echo(f"vcfzarr-sql serving the stores under {roots} to Flight SQL clients on "
               f"{scheme}://{host}:{server.port} (Ctrl-C stops)", err=True)
    try:
        server.serve()
    finally:
        server.shutdown()
