"""The ``vcfzarr-sql`` command line: thin commands over the library API.

Each command lives in its own module of this package and is added to :data:`cli` below.
Errors the library raises on purpose (:class:`~vcfzarr_sql.errors.VcfZarrError`) are printed
as one line ``error: <message>`` with exit code 1, never as a traceback.
"""

from __future__ import annotations

import importlib
import sys

import click

from vcfzarr_sql.errors import VcfZarrError

#: Command modules, each defining a click command named ``command``.
COMMAND_MODULES = (
    "convert",
    "validate",
    "index",
    "info",
    "query",
    "shell",
    "demo",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vcfzarr-sql")
def cli() -> None:
    """SQL over VCF Zarr: convert VCF/BCF to VCF Zarr and query it with DuckDB."""


def _add_commands() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"vcfzarr_sql.cli.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"vcfzarr_sql.cli.{name}":
                continue  # command not built yet
            raise
        cli.add_command(module.command)


_add_commands()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 error a user can act on, 2 usage)."""
    try:
        cli.main(args=argv, prog_name="vcfzarr-sql", standalone_mode=False)
    except VcfZarrError as err:
        click.echo(f"error: {err}", err=True)
        return 1
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        return 1
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
