"""Where argument values come from besides the call's own text: files and subqueries.

``regions_file := 'x.bed'`` and ``samples_file := 'x.txt'`` name files whose lines are read
(bcftools ``-R``/``-S`` formats); ``samples := (SELECT ...)`` and ``region := (SELECT ...)``
are subqueries evaluated first, in the same session. A DuckDB table function's parameters must
be constants, so both are bound here, before DuckDB sees the query. A server refuses files
(its clients may read only stores under its data directories).
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from dataclasses import dataclass

from vcfzarr_sql.errors import QueryError

#: the lines of the file at a path (QueryError when it cannot be read)
ReadLines = Callable[[str], list[str]]
#: the rows of a SQL query
Evaluate = Callable[[str], list[tuple]]

_GZIP_MAGIC = b"\x1f\x8b"


def local_lines(path: str) -> list[str]:
    """The lines of a local text file, gzip- or BGZF-compressed or not.

    >>> local_lines("/nonexistent/x.bed")
    Traceback (most recent call last):
    ...
    vcfzarr_sql.errors.QueryError: /nonexistent/x.bed: No such file or directory
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data.startswith(_GZIP_MAGIC):
            data = gzip.decompress(data)
    except OSError as err:
        raise QueryError(f"{path}: {err.strerror or err}") from None
    try:
        return data.decode().splitlines()
    except UnicodeDecodeError:
        raise QueryError(f"{path}: not a text file (UTF-8)") from None


@dataclass(frozen=True)
class ArgumentSources:
    """How a rewrite reads argument files (None: refused) and evaluates subqueries."""

    read_lines: ReadLines | None
    evaluate: Evaluate | None


class NeedsSources(QueryError):
    """A call has arguments from files or subqueries, and the rewrite was given no sources
    (or they refuse): its rewrite cannot be remembered."""
