"""The ``vcfzarr-sql`` command line: thin commands over the library API.

Each command lives in its own module of this package (named in :data:`COMMANDS`),
imported only when it runs.
Errors the library raises on purpose (:class:`~vcfzarr_sql.errors.VcfZarrError`) are printed
as one line ``error: <message>`` with exit code 1, never as a traceback.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any, TextIO

import click

from vcfzarr_sql.cli.interrupt import Interrupted
from vcfzarr_sql.cli.process import imported, process_start
from vcfzarr_sql.errors import VcfZarrError, VcfZarrWarning

#: Each command's module (defining a click command named ``command``) -> its one-line summary,
#: which ``--help`` lists without importing the module.
COMMANDS = {
    "convert": "Convert VCF/BCF to a VCF Zarr store.",
    "validate": "Check a store against the VCF Zarr spec.",
    "index": "Write a store's region_index (and variant_length).",
    "info": "Describe a store: samples, contigs, fields, chunks.",
    "query": "Run SQL over VCF Zarr stores and print the result.",
    "shell": "Interactive SQL prompt (or run a script from stdin).",
    "demo": "Convert a small VCF and query it, with pruning statistics.",
    "serve": "Serve SQL on the PostgreSQL wire protocol.",
    "view": "Write a store as VCF/BCF, as bcftools view would.",
    "stats": "Print bcftools stats sections (and an HTML report of their plots).",
    "add": "Add the samples of VCF/BCF files to a store (a cohort).",
    "compact": "Write a cohort of several batches as one plain store.",
    "export": "Write a selection as PLINK 1/2, BGEN or AnnData.",
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command runs.

    ``vcfzarr-sql --help`` and ``vcfzarr-sql convert`` then never pay for importing DuckDB and
    the SQL engine. Ctrl-C in a command becomes :class:`~.interrupt.Interrupted`, which
    :func:`main` reports in one line (click would print an empty line and abort with code 1).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        command = importlib.import_module(f"vcfzarr_sql.cli.{cmd_name}").command
        command.short_help = COMMANDS[cmd_name]
        imported()
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name]) for name in self.list_commands(ctx)])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted() from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vcfzarr-sql")
def cli() -> None:
    """SQL over VCF Zarr: convert VCF/BCF to VCF Zarr and query it with DuckDB."""


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
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
    except (Interrupted, KeyboardInterrupt):
        click.echo("error: interrupted", err=True)
        return 130
    return 0


def run() -> int:
    """The ``vcfzarr-sql`` process: :func:`main` started and ended as :mod:`.process` says
    (no pandas, no garbage collection while the command's modules are imported)."""
    with process_start():
        return main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
