"""DuckDB's errors in the user's terms: about the SQL they typed, never the SQL we run.

The query DuckDB runs names each table-function call by an internal relation name; a syntax
error is reported on the text as typed, relation names become the calls they stand for, and a
syntax error at a keyword that is also a column name (``end``) says how to quote it.
"""

from __future__ import annotations

import re

import duckdb

from vcfzarr_sql.errors import QueryError

#: internal relation names (see ScanSpec.relation_name), with the alias the rewrite adds
_RELATION_NAME = re.compile(r"\b(vcf_zarr(?:_[a-z]+)?)_[0-9a-f]{12}\b(?: AS \1\b)?")
#: SQL keywords that are also column names of the tables
_KEYWORD_COLUMNS = ("end",)
#: How DuckDB reports an exception raised by our scan, while planning it ("exporting a stream
#: from the object registered as 'x' failed: E: message") or reading it ("reading the stream
#: registered as 'x' failed: E: message. Detail: Python exception: <traceback>").
_SCAN_ERROR = re.compile(
    r"registered as '[^']*' failed: \w+: (?P<message>.*?)(?:\. Detail: Python exception.*)?\Z", re.S
)


def _reparsed(sql: str) -> str | None:
    """DuckDB's parser error on the SQL as typed, if it has one."""
    try:
        duckdb.extract_statements(sql)
    except duckdb.Error as err:
        return str(err).strip()
    return None


def _keyword_hint(message: str) -> str:
    for word in _KEYWORD_COLUMNS:
        if re.search(rf'syntax error at or near "{word}"', message, re.IGNORECASE):
            return (f'\nhint: {word.upper()} is an SQL keyword; write the column as "{word}" '
                    "(in double quotes)")
    return ""


def user_message(err: duckdb.Error, sql: str, calls: dict[str, str] | None = None) -> str:
    """The message of ``err`` (raised running ``sql``) in the user's terms.

    ``calls`` maps internal relation names to the calls they stand for.

    >>> user_message(duckdb.CatalogException("Table vcf_zarr_0123456789ab does not exist"), "",
    ...              {"vcf_zarr_0123456789ab": "vcf_zarr('x.zarr')"})
    "Table vcf_zarr('x.zarr') does not exist"
    """
    message = str(err).strip()
    scan_error = _SCAN_ERROR.search(message)
    if scan_error:  # our one-line message (a damaged chunk, say), without DuckDB's traceback
        return scan_error["message"]
    if isinstance(err, duckdb.ParserException):
        message = _reparsed(sql) or message
    calls = calls or {}

    def call(match: re.Match) -> str:
        return calls.get(match.group(0).split(" ")[0], f"{match.group(1)}(...)")

    return _RELATION_NAME.sub(call, message) + _keyword_hint(message)


def query_error(err: duckdb.Error, sql: str, calls: dict[str, str] | None = None) -> QueryError:
    """A :class:`QueryError` carrying :func:`user_message`."""
    return QueryError(user_message(err, sql, calls))
