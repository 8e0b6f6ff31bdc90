"""``vcfzarr-sql query SQL``: run one SQL text and print (or write) its result.

The SQL may call ``vcf_zarr(...)``, ``vcf_zarr_calls(...)`` and the metadata table functions;
several statements separated by ``;`` run in order and the last one's result is printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

import click
import duckdb

import vcfzarr_sql
from vcfzarr_sql.engine.connection import Connection
from vcfzarr_sql.errors import QueryError

FORMATS = ("table", "csv", "tsv", "json", "parquet", "vcf")
#: DuckDB COPY options of each file format
COPY_OPTIONS = {
    "csv": "FORMAT csv, HEADER true",
    "tsv": "FORMAT csv, HEADER true, DELIMITER '\t'",
    "json": "FORMAT json",
    "parquet": "FORMAT parquet",
}
#: rows shown by the ``table`` format unless --max-rows says otherwise
DEFAULT_MAX_ROWS = 1000


#: How DuckDB reports an exception raised by our scan: the traceback follows the message.
_SCAN_ERROR = re.compile(
    r"registered as '[^']*' failed: \w+: (?P<message>.*?)(?:\. Detail: Python exception.*)?\Z", re.S
)


def duckdb_error(err: duckdb.Error) -> QueryError:
    """DuckDB's error as a QueryError: DuckDB's message, or, when our scan raised the error
    (a damaged chunk, say), our one-line message without the traceback DuckDB appends."""
    text = str(err).strip()
    found = _SCAN_ERROR.search(text)
    return QueryError(found["message"] if found else text)


def run_sql(con: Connection, sql: str) -> duckdb.DuckDBPyRelation | None:
    """``con.sql(sql)``: the rows to show, or None for a statement without any (CREATE, SET...).

    DuckDB's own errors become a QueryError carrying DuckDB's message.
    """
    try:
        relation = con.sql(sql)
    except duckdb.Error as err:
        raise duckdb_error(err) from None
    if relation is None or _is_status(relation):
        return None
    return relation


def _is_status(relation: duckdb.DuckDBPyRelation) -> bool:
    """DuckDB's reply to a statement that returns no rows (``Count`` or ``Success``)."""
    return relation.type == "MATERIALIZED_RELATION" and relation.columns in (["Count"], ["Success"])


@contextlib.contextmanager
def _stdout_to(output: str | None) -> Iterator[None]:
    if output is None:
        yield
        return
    with open(output, "w") as f, contextlib.redirect_stdout(f):
        yield


def _copy_to_stdout(path: str, stream: IO[str]) -> None:
    with open(path) as f:
        shutil.copyfileobj(f, stream)


def write_relation(
    con: Connection,
    relation: duckdb.DuckDBPyRelation,
    fmt: str,
    output: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> None:
    """Write ``relation`` in ``fmt`` to ``output`` (a path) or to standard output.

    ``table`` is DuckDB's box rendering, ``csv`` has a header line, ``json`` is one object
    per line (NDJSON), ``parquet`` needs ``output``.
    """
    if fmt == "table":
        with _stdout_to(output):
            try:
                relation.show(max_rows=max_rows, max_width=10_000)
            except duckdb.Error as err:
                raise duckdb_error(err) from None
        return
    if fmt == "parquet" and output is None:
        raise QueryError("--format parquet needs -o FILE")
    with tempfile.TemporaryDirectory(prefix="vcfzarr-sql-") as tmp:
        target = output if output is not None else os.path.join(tmp, f"result.{fmt}")
        view = "__vcfzarr_sql_result"
        raw = con.duckdb_connection
        try:
            raw.register(view, relation)
            raw.execute(f"COPY {view} TO '{_quote(target)}' ({COPY_OPTIONS[fmt]})")
        except duckdb.Error as err:
            raise duckdb_error(err) from None
        finally:
            raw.unregister(view)
        if output is None:
            _copy_to_stdout(target, sys.stdout)


def _quote(path: str) -> str:
    return path.replace("'", "''")


def print_query(
    con: Connection, sql: str, fmt: str = "table", output: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> None:
    """Run ``sql`` and write its rows (if it returns any) like :func:`write_relation`."""
    relation = run_sql(con, sql)
    if relation is not None:
        write_relation(con, relation, fmt, output, max_rows)


def print_vcf(con: Connection, sql: str, output: str | None) -> None:
    """Run ``sql`` and write its rows as VCF, with the header of its first ``vcf_zarr`` store."""
    from vcfzarr_sql.view.output import open_output
    from vcfzarr_sql.view.table import table_vcf_lines

    scans = [s for s in con.rewrite(sql).relations.values() if s.table == "variants"]
    if not scans:
        raise QueryError("--format vcf needs a query over vcf_zarr(...) (its store gives the header)")
    relation = run_sql(con, sql)
    if relation is None:
        raise QueryError("--format vcf needs a query that returns rows")
    try:
        reader = relation.to_arrow_table()
    except duckdb.Error as err:
        raise QueryError(str(err).strip()) from None
    lines = table_vcf_lines(reader.to_batches(), reader.schema, con.store(scans[0].path), scans[0].samples)
    with open_output(output, "v", next(lines), sys.stdout) as out:
        for line in lines:
            out.write(line)


def print_stats(con: Connection) -> None:
    """The last query's scan statistics as one JSON object on standard error."""
    click.echo(json.dumps(con.last_stats), err=True)


def read_sql(sql: str | None, file: str | None) -> str:
    """The SQL text: the argument, or the contents of ``file`` (``-``: standard input)."""
    if (sql is None) == (file is None):
        raise click.UsageError("give the SQL either as an argument or with --file (not both)")
    if file is None:
        return sql
    if file == "-":
        return sys.stdin.read()
    try:
        with open(file) as f:
            return f.read()
    except OSError as err:
        raise QueryError(f"{file}: {err.strerror}") from None


@click.command("query")
@click.argument("sql", required=False)
@click.option("--file", "-F", "file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Read the SQL from FILE ('-': standard input).")
@click.option("--region", "-r", help="Region for every vcf_zarr(...) call without its own (bcftools -r).")
@click.option("--samples", "-s", help="Comma-separated samples for every call without its own.")
@click.option(
    "--format", "-f", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
    help="Output format (json: one object per line).",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the result to FILE.")
@click.option("--stats", is_flag=True, help="Print the scan statistics as JSON on stderr.")
@click.option(
    "--max-rows", type=click.IntRange(min=1), default=DEFAULT_MAX_ROWS, show_default=True,
    help="Rows shown by the table format.",
)
def command(sql: str | None, file: str | None, region: str | None, samples: str | None, fmt: str,
            output: str | None, stats: bool, max_rows: int) -> None:
    """Run SQL over VCF Zarr stores and print the result.

    \b
    vcfzarr-sql query "SELECT contig, count(*) FROM vcf_zarr('x.zarr') GROUP BY contig"
    vcfzarr-sql query -r 20:1-2000000 -s NA00001 -f tsv --file q.sql
    """
    from vcfzarr_sql.engine.rules import ScanDefaults

    defaults = None
    if region is not None or samples is not None:
        listed = None if samples is None else tuple(n for n in samples.split(",") if n)
        defaults = ScanDefaults(region=region, samples=listed)
    con = vcfzarr_sql.connect(defaults=defaults)
    text = read_sql(sql, file)
    if fmt == "vcf":
        print_vcf(con, text, output)
    else:
        print_query(con, text, fmt, output, max_rows)
    if stats:
        print_stats(con)
