"""``vcfzarr-sql shell``: an interactive SQL prompt (also reads a script from standard input).

Statements end with ``;`` and may span several lines. Lines starting with ``.`` are shell
commands (``.help`` lists them). On a terminal the prompt keeps a readline history in
``~/.vcfzarr_sql_history``; from a pipe it runs every statement and fails if one did.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import click

from vcfzarr_sql.cli import options
from vcfzarr_sql.cli.interrupt import Interrupted
from vcfzarr_sql.cli.query import FORMATS, RESULT_VIEW, print_query
from vcfzarr_sql.engine.connection import Connection, connect
from vcfzarr_sql.engine.sql_text import ends_statement
from vcfzarr_sql.errors import QueryError, VcfZarrError

HISTORY_FILE = os.path.join(os.path.expanduser("~"), ".vcfzarr_sql_history")
PROMPT = "vcfzarr-sql> "
CONTINUATION = "        ...> "

HELP = """\
SQL statements end with ';' and may span lines. Table functions:
  vcf_zarr(path, region := 'chr:start-end,...', samples := ['id', ...])   one row per variant
  vcf_zarr_calls(path, region := ..., samples := [...])                  one row per call
  vcf_zarr_samples(path), vcf_zarr_contigs(path), vcf_zarr_fields(path)   metadata
Shell commands:
  .help               this text
  .tables             tables and views of the database
  .stats              scan statistics of the last query (JSON)
  .timer on|off       print each statement's run time (default on)
  .mode FORMAT        output format: table, csv, tsv or json (default table)
  .quit, .exit        leave the shell (so does Ctrl-D)"""


@dataclass
class Session:
    """The state of one shell: the connection and the display settings."""

    con: Connection
    timer: bool = True
    mode: str = "table"
    failures: int = 0
    done: bool = False


def _help(session: Session, argument: str) -> None:
    click.echo(HELP)


def _quit(session: Session, argument: str) -> None:
    session.done = True


def _tables(session: Session, argument: str) -> None:
    # without the relations registered for table-function calls and results (internal names)
    print_query(session.con, "SELECT name FROM (SHOW TABLES) WHERE NOT regexp_matches(name, "
                f"'^vcf_zarr(_[a-z]+)?_[0-9a-f]{{12}}$|^{RESULT_VIEW}$')", session.mode)


def _stats(session: Session, argument: str) -> None:
    click.echo(json.dumps(session.con.last_stats))


def _timer(session: Session, argument: str) -> None:
    if argument not in ("on", "off"):
        raise QueryError(".timer takes on or off")
    session.timer = argument == "on"


def _mode(session: Session, argument: str) -> None:
    if argument not in FORMATS or argument == "parquet":
        raise QueryError(".mode takes table, csv, tsv or json")
    session.mode = argument


DOT_COMMANDS: dict[str, Callable[[Session, str], None]] = {
    ".help": _help,
    ".quit": _quit,
    ".exit": _quit,
    ".tables": _tables,
    ".stats": _stats,
    ".timer": _timer,
    ".mode": _mode,
}


def run_dot_command(session: Session, line: str) -> None:
    """Run one ``.command [argument]`` line."""
    name, _, argument = line.strip().partition(" ")
    action = DOT_COMMANDS.get(name.lower())
    if action is None:
        raise QueryError(f"unknown command {name} (try .help)")
    action(session, argument.strip())


def run_statement(session: Session, sql: str) -> None:
    """Run one SQL text and print its result (and its run time when the timer is on)."""
    start = time.perf_counter()
    print_query(session.con, sql, session.mode)
    if session.timer:
        click.echo(f"Run Time: {time.perf_counter() - start:.3f} s", err=True)


#: reads one line (the argument says whether a statement is pending); None at the end; raises
#: KeyboardInterrupt when Ctrl-C drops the line being typed
LineReader = Callable[[bool], "str | None"]


def statements(read_line: LineReader) -> Iterator[str]:
    """Dot commands (one line each) and SQL statements (up to a line ending in ';').

    Ctrl-C at a prompt drops the statement being typed.
    """
    buffer: list[str] = []
    while True:
        try:
            line = read_line(bool(buffer))
        except KeyboardInterrupt:
            buffer = []
            continue
        if line is None:
            break
        if not buffer and line.strip().startswith("."):
            yield line.strip()
        elif buffer or line.strip():
            buffer.append(line)
            if ends_statement("\n".join(buffer)):
                yield "\n".join(buffer)
                buffer = []
    if buffer:
        yield "\n".join(buffer)


def stream_reader(lines: Iterable[str]) -> LineReader:
    """A line reader over a script (no prompts)."""
    it = iter(lines)
    return lambda pending: next(it, None)


def terminal_reader() -> LineReader:
    """A line reader that prompts on the terminal (readline editing and history)."""

    def read_line(pending: bool) -> str | None:
        try:
            return input(CONTINUATION if pending else PROMPT)
        except EOFError:
            click.echo()
            return None
        except KeyboardInterrupt:
            click.echo("^C")
            raise

    return read_line


@contextlib.contextmanager
def readline_history() -> Iterator[None]:
    """Load the history file on entry, save it on exit (when readline is available)."""
    try:
        import readline
    except ImportError:  # pragma: no cover - platforms without readline
        yield
        return
    if os.path.exists(HISTORY_FILE):
        readline.read_history_file(HISTORY_FILE)
    try:
        yield
    finally:
        readline.write_history_file(HISTORY_FILE)


def run_shell(session: Session, read_line: LineReader, *, interactive: bool = False) -> None:
    """Run every statement read; errors are printed and the shell carries on.

    Ctrl-C cancels the running statement (:mod:`.interrupt`): at a terminal the shell goes
    back to the prompt with its tables intact; a script stops.
    """
    for text in statements(read_line):
        try:
            if text.startswith("."):
                run_dot_command(session, text)
            else:
                run_statement(session, text)
        except VcfZarrError as err:
            session.failures += 1
            click.echo(f"error: {err}", err=True)
        except (Interrupted, KeyboardInterrupt):
            if not interactive:
                raise Interrupted() from None
            click.echo("interrupted", err=True)
        if session.done:
            return


@click.command("shell")
@options.database
def command(database: str) -> None:
    """Interactive SQL prompt over VCF Zarr stores (reads a script when stdin is not a terminal)."""
    session = Session(connect(database))
    if sys.stdin.isatty():
        click.echo("vcfzarr-sql shell: SQL ends with ';', .help for commands, .quit to leave.")
        with readline_history():
            run_shell(session, terminal_reader(), interactive=True)
        return
    session.timer = False
    run_shell(session, stream_reader(line.rstrip("\n") for line in sys.stdin))
    if session.failures:
        raise QueryError(f"{session.failures} statement(s) failed")
