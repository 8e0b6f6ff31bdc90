"""The ``vcfzarr-sql`` command line: thin commands over the library API.

Each command lives in its own module of this package (named in :data:`COMMAND_MODULES`),
imported only when it runs.
Errors the library raises on purpose (:class:`~vcfzarr_sql.errors.VcfZarrError`) are printed
as one line ``error: <message>`` with exit code 1, never as a traceback.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import click

from vcfzarr_sql.errors import VcfZarrError, VcfZarrWarning

#: Command modules, each defining a click command named ``command``.
COMMAND_MODULES = (
    "convert",
    "validate",
    "index",
    "info",
    "query",
    "shell",
    "demo",
    "serve",
    "view",
)


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command runs.

    ``vcfzarr-sql convert`` then never pays for importing DuckDB and the SQL engine.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMAND_MODULES:
            return None
        return importlib.import_module(f"vcfzarr_sql.cli.{cmd_name}").command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vcfzarr-sql")
def cli() -> None:
    """SQL over VCF Zarr: convert VCF/BCF to VCF Zarr and query it with DuckDB."""


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Our own warnings as one line ``warning: <message>``; others as Python prints them."""
    if issubclass(category, VcfZarrWarning):
        click.echo(f"warning: {message}", err=True)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 error a user can act on, 2 usage)."""
    warnings.showwarning = _show_warning
    # A library's deprecation (numcodecs' crc32c notice, say) is not the user's to act on.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
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
