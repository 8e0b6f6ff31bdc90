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
from collections.abc import Collection, Iterator
from typing import IO, TYPE_CHECKING

import click
import duckdb

from vcfzarr_sql.cli.columns import for_format, for_table
from vcfzarr_sql.cli.interrupt import cancelling
from vcfzarr_sql.cli.messages import query_error
from vcfzarr_sql.cli.text_table import write_text_table
from vcfzarr_sql.engine.argument_sources import local_lines
from vcfzarr_sql.engine.connection import Connection, connect
from vcfzarr_sql.engine.sql_text import without_trailing_comments
from vcfzarr_sql.errors import QueryError

if TYPE_CHECKING:
    from vcfzarr_sql.engine.scan_defaults import ScanDefaults

FORMATS = ("table", "csv", "tsv", "json", "parquet", "vcf")
#: DuckDB COPY options of each file format
COPY_OPTIONS = {
    "csv": "FORMAT csv, HEADER true",
    "tsv": "FORMAT csv, HEADER true, DELIMITER '\t'",
    "json": "FORMAT json",
    "parquet": "FORMAT parquet",
}
#: the format an output file's extension implies (others: table)
EXTENSION_FORMATS = {
    ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".json": "json", ".ndjson": "json",
    ".jsonl": "json", ".parquet": "parquet", ".pq": "parquet",
}
#: rows shown by the ``table`` format on standard output unless --max-rows says otherwise
DEFAULT_MAX_ROWS = 1000
#: the width of the ``table`` format on standard output when it is not a terminal
TABLE_WIDTH = 120
#: the name under which a result is registered for DuckDB's COPY
RESULT_VIEW = "vcfzarr_sql_result"
#: the columns of DuckDB's EXPLAIN result
EXPLAIN_COLUMNS = ["explain_key", "explain_value"]


def output_format(fmt: str | None, output: str | None) -> str:
    """The format to write: ``fmt`` if given, else the one ``output``'s extension implies
    (a name ``view`` writes as VCF or BCF: ``vcf``, :func:`~vcfzarr_sql.view.output.named_type`).
    Another format is not written into such a name.

    >>> output_format(None, "x.parquet"), output_format("csv", "x.parquet"), output_format(None, None)
    ('parquet', 'csv', 'table')
    >>> output_format(None, "x.vcf.gz"), output_format(None, "x.BCF")
    ('vcf', 'vcf')
    """
    if output is not None:
        from vcfzarr_sql.view.output import named_type  # the view package: only for a file name

        if named_type(output) is not None:
            if fmt not in (None, "vcf"):
                raise QueryError(f"{output}: a VCF/BCF name; --format {fmt} writes another format (use another name)")
            return "vcf"
    if fmt is not None:
        return fmt
    return EXTENSION_FORMATS.get(os.path.splitext(output or "")[1].lower(), "table")


def run_sql(con: Connection, sql: str) -> duckdb.DuckDBPyRelation | None:
    """``con.sql(sql)``: the rows to show, or None for a statement without any (CREATE, SET...).

    DuckDB's own errors become a QueryError in the user's terms (:mod:`.messages`); Ctrl-C
    cancels the statement (:class:`~.interrupt.Interrupted`).
    """
    with _errors_as_query_errors(con, sql), cancelling(con.duckdb_connection):
        relation = con.sql(without_trailing_comments(sql))
    if relation is None or _is_status(relation):
        return None
    return relation


@contextlib.contextmanager
def _errors_as_query_errors(con: Connection, sql: str) -> Iterator[None]:
    try:
        yield
    except duckdb.Error as err:
        raise query_error(err, sql, con.table_function_calls()) from None


def _is_status(relation: duckdb.DuckDBPyRelation) -> bool:
    """DuckDB's reply to a statement that returns no rows (``Count`` or ``Success``)."""
    return relation.type == "MATERIALIZED_RELATION" and relation.columns in (["Count"], ["Success"])


def table_width() -> int:
    """The width the ``table`` format fits on standard output, as DuckDB's CLI does: the
    terminal's (or ``COLUMNS``), else :data:`TABLE_WIDTH`. Columns that do not fit are left
    out (``…``); long lists and strings are cut (:func:`~.columns.for_table`)."""
    return shutil.get_terminal_size((TABLE_WIDTH, 24)).columns


def write_relation(
    con: Connection,
    relation: duckdb.DuckDBPyRelation,
    fmt: str,
    output: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    sql: str = "",
    max_width: int | None = None,
) -> None:
    """Write ``relation`` (the result of ``sql``) in ``fmt`` to ``output`` (a path) or to
    standard output.

    ``table`` is DuckDB's box rendering of at most ``max_rows`` rows on standard output, fitted
    to ``max_width`` (default :func:`table_width`), and an aligned text table of every row and column in a file; an EXPLAIN result is its plan text. ``csv`` and
    ``tsv`` have a header line and lists as bcftools query prints them, ``json`` is one object
    per line (NDJSON), ``parquet`` needs ``output`` (:mod:`.columns`). Files get every row.
    """
    with _errors_as_query_errors(con, sql), cancelling(con.duckdb_connection):
        if relation.columns == EXPLAIN_COLUMNS:
            with _text_output(output) as stream:
                for _, plan in relation.fetchall():
                    stream.write(plan.rstrip("\n") + "\n")
        elif fmt == "table" and output is None:
            for_table(relation).show(max_rows=max_rows, max_width=max_width or table_width())
        elif fmt == "table":
            with _text_output(output) as stream:
                write_text_table(relation, stream)
        elif fmt == "parquet" and output is None:
            raise QueryError("--format parquet needs -o FILE")
        else:
            _copy(con, relation, fmt, output)


@contextlib.contextmanager
def _text_output(output: str | None) -> Iterator[IO[str]]:
    if output is None:
        yield sys.stdout
        return
    with open(output, "w") as stream:
        yield stream


def _copy(con: Connection, relation: duckdb.DuckDBPyRelation, fmt: str, output: str | None) -> None:
    """DuckDB's COPY of ``relation`` to ``output`` (or, through a temporary file, stdout)."""
    with tempfile.TemporaryDirectory(prefix="vcfzarr-sql-") as tmp:
        target = output if output is not None else os.path.join(tmp, f"result.{fmt}")
        raw = con.duckdb_connection
        view = RESULT_VIEW
        try:
            raw.register(view, for_format(relation, fmt, raw))
            raw.execute(f"COPY {view} TO '{_quote(target)}' ({COPY_OPTIONS[fmt]})")
        except duckdb.Error as err:  # about the rows, not about our COPY statement's text
            message = re.split(r"\n+LINE \d+:", str(err))[0]
            raise type(err)(message.replace(target, output or "standard output")) from None
        finally:
            raw.unregister(view)
        if output is None:
            with open(target) as f:
                shutil.copyfileobj(f, sys.stdout)


def _quote(path: str) -> str:
    return path.replace("'", "''")


def print_query(
    con: Connection, sql: str, fmt: str = "table", output: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS, max_width: int | None = None,
) -> None:
    """Run ``sql`` and write its rows (if it returns any) like :func:`write_relation`."""
    relation = run_sql(con, sql)
    if relation is not None:
        write_relation(con, relation, fmt, output, max_rows, sql, max_width)


def print_vcf(con: Connection, sql: str, output: str | None) -> None:
    """Run ``sql`` and write its rows as VCF, with the header of its first ``vcf_zarr`` store."""
    from vcfzarr_sql.query.request import scan_samples
    from vcfzarr_sql.query.selection.regions import refuse_repeated
    from vcfzarr_sql.view.output import open_output
    from vcfzarr_sql.view.table import table_vcf_lines

    scans = [s for s in con.rewrite(sql).relations.values() if s.table == "variants"]
    if not scans:
        raise QueryError("--format vcf needs a query over vcf_zarr(...) (its store gives the header)")
    relation = run_sql(con, sql)
    if relation is None:
        raise QueryError("--format vcf needs a query that returns rows")
    with _errors_as_query_errors(con, sql), cancelling(con.duckdb_connection):
        reader = relation.to_arrow_table()
    store = con.store(scans[0].path)
    _warn_unplaced(sql, reader.schema.names, store.format_fields)
    samples = scan_samples(store, scans[0].samples, scans[0].exclude_samples)
    if samples is not None:
        refuse_repeated(samples, "samples")
    lines = table_vcf_lines(reader.to_batches(), reader.schema, store, samples)
    with open_output(output, None, next(lines), sys.stdout) as out:
        for line in lines:
            out.write(line.encode())


#: the columns ``--format vcf`` writes besides ``info_*`` and the store's ``fmt_*``
VCF_COLUMNS = ("contig", "pos", "id", "ref", "alt", "qual", "filters", "fmt_GT_phased")


def _warn_unplaced(sql: str, columns: list[str], format_fields: Collection[str]) -> None:
    """A warning naming the columns the query names that VCF has no place for (``gt_AF``...):
    they are not written. (``SELECT *`` brings ``end``, ``gt_*``... unnamed: no warning.)"""
    unplaced = [
        c for c in columns
        if c not in VCF_COLUMNS and not c.startswith("info_")
        and not (c.startswith("fmt_") and c.removeprefix("fmt_") in format_fields)
        and re.search(rf"(?<![\w$]){re.escape(c)}(?![\w$])", sql, re.IGNORECASE)
    ]
    if unplaced:
        click.echo(f"warning: --format vcf does not write {', '.join(unplaced)}: VCF has no place "
                   "for them (select one AS info_<TAG> to write it as INFO/<TAG>, or use -f tsv)", err=True)


def print_stats(con: Connection) -> None:
    """The last query's scan statistics as one JSON object on standard error."""
    click.echo(json.dumps(con.last_stats), err=True)


def scan_defaults(region: str | None, regions_file: str | None, samples: str | None,
                  samples_file: str | None) -> ScanDefaults | None:
    """The region and samples of ``-r/-R`` and ``-s/-S`` (bcftools' meanings), or None."""
    if region is not None and regions_file is not None:
        raise click.UsageError("give -r/--region or -R/--regions-file, not both")
    if samples is not None and samples_file is not None:
        raise click.UsageError("give -s/--samples or -S/--samples-file, not both")
    if region is regions_file is samples is samples_file is None:
        return None
    from vcfzarr_sql.engine.scan_defaults import ScanDefaults
    from vcfzarr_sql.query.region import format_regions, parse_regions_file
    from vcfzarr_sql.query.request import parse_samples_file

    if regions_file is not None:
        region = format_regions(parse_regions_file(local_lines(regions_file), regions_file, "-R"))
    listed, exclude = None, False
    if samples_file is not None:
        exclude = samples_file.startswith("^")
        listed = parse_samples_file(local_lines(samples_file.removeprefix("^")))
    elif samples is not None:
        exclude = samples.startswith("^")
        listed = tuple(n for n in samples.removeprefix("^").split(",") if n)
    return ScanDefaults(region=region, samples=listed, exclude_samples=exclude)


def read_sql(sql: str | None, file: str | None) -> str:
    """The SQL text: the argument, or the contents of ``file`` (``-``: standard input)."""
    if (sql is None) == (file is None):
        raise click.UsageError("give the SQL either as an argument or with --file (not both)")
    if file is None:
        assert sql is not None  # exactly one of the two, checked above
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
@click.option("--regions-file", "-R", type=click.Path(dir_okay=False),
              help="Regions from a file (bcftools -R: BED, or tab-separated CHROM POS [END]).")
@click.option("--samples", "-s",
              help="Comma-separated samples for every call without its own ('^': all but these).")
@click.option("--samples-file", "-S", help="Samples from a file, one a line ('^FILE': all but these).")
@click.option(
    "--format", "-f", "fmt", type=click.Choice(FORMATS), default=None,
    help="Output format (json: one object per line). Default: table, or what -o FILE's "
    "extension says (.csv .tsv .json .parquet; .vcf .vcf.gz .vcf.bgz .bcf: vcf, written "
    "plain, BGZF or BCF as bcftools names them).",
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="Write the result (every row) to FILE."
)
@click.option("--stats", is_flag=True, help="Print the scan statistics as JSON on stderr.")
@click.option(
    "--max-rows", type=click.IntRange(min=1), default=DEFAULT_MAX_ROWS, show_default=True,
    help="Rows the table format shows on standard output.",
)
def command(sql: str | None, file: str | None, region: str | None, regions_file: str | None,
            samples: str | None, samples_file: str | None, fmt: str | None,
            output: str | None, stats: bool, max_rows: int) -> None:
    """Run SQL over VCF Zarr stores and print the result.

    \b
    vcfzarr-sql query "SELECT contig, count(*) FROM vcf_zarr('x.zarr') GROUP BY contig"
    vcfzarr-sql query -r 20:1-2000000 -s NA00001 -f tsv --file q.sql
    vcfzarr-sql query -R targets.bed -S ^excluded.txt "SELECT count(*) FROM vcf_zarr('x.zarr')"
    """
    con = connect(defaults=scan_defaults(region, regions_file, samples, samples_file))
    text = read_sql(sql, file)
    fmt = output_format(fmt, output)
    if fmt == "vcf":
        print_vcf(con, text, output)
    else:
        print_query(con, text, fmt, output, max_rows)
    if stats:
        print_stats(con)
