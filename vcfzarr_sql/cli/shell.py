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
from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS
from vcfzarr_sql.engine.sql_text import ends_statement
from vcfzarr_sql.errors import QueryError, VcfZarrError

HISTORY_FILE = os.path.join(os.path.expanduser("~"), ".vcfzarr_sql_history")
PROMPT = "vcfzarr-sql> "
CONTINUATION = "        ...> "

#: the shell commands .help lists, with what each does
COMMAND_HELP = """\
  .help               this text
  .tables             tables and views of the database
  .stats              scan statistics of the last query (JSON)
  .timer on|off       print each statement's run time (default on)
  .mode FORMAT        output format: table, csv, tsv or json (default table)
  .quit, .exit        leave the shell (so does Ctrl-D)"""


def help_text() -> str:
    """What ``.help`` prints: every registered table function (from the registry, with its
    named parameters and summary), then the shell commands."""
    lines = ["SQL statements end with ';' and may span lines; a shell command typed inside one",
             "runs at once and the statement carries on. Table functions:"]
    for function in TABLE_FUNCTIONS.values():
        named = f", {{{' | '.join(function.parameters)}}} := ..." if function.parameters else ""
        lines += [f"  {function.name}(path{named})", f"      {function.summary}"]
    return "\n".join([*lines, "Shell commands:", COMMAND_HELP])


@dataclass
class Session:
    """The state of one shell: the connection and the display settings."""

    con: Connection
    timer: bool = True
    mode: str = "table"
    failures: int = 0
    done: bool = False


def _help(session: Session, argument: str) -> None:
    click.echo(help_text())


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


def _is_dot_command(line: str, pending: bool) -> bool:
    """Whether ``line`` is a shell command: any line starting with ``.`` between statements;
    inside a statement, only a known command (``.5`` may continue SQL)."""
    text = line.strip()
    if not pending:
        return text.startswith(".")
    return text.partition(" ")[0].lower() in DOT_COMMANDS


def statements(read_line: LineReader) -> Iterator[str]:
    """Dot commands (one line each) and SQL statements (up to a line ending in ';').

    A dot command typed inside a statement runs at once; the statement keeps its lines.
    Ctrl-C at a prompt drops the statement being typed.

    >>> list(statements(stream_reader(["SELECT 1", ".mode csv", "AS n;", ".quit"])))
    ['.mode csv', 'SELECT 1\\nAS n;', '.quit']
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
        if _is_dot_command(line, bool(buffer)):
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
