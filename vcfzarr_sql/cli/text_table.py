"""Every row of a result as an aligned text table, the ``table`` format of an output file.

DuckDB's box rendering stops at a row cap (10,000 rows in DuckDB 2.0); a file gets all rows.
"""

from __future__ import annotations

from typing import IO

import duckdb

#: how a NULL value is shown (as in DuckDB's box rendering)
NULL = "NULL"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def write_text_table(relation: duckdb.DuckDBPyRelation, stream: IO[str]) -> None:
    """Write the rows of ``relation`` to ``stream``: a header, a rule, then one line per row,
    columns separated by `` | `` and padded to their widest value.

    >>> import io
    >>> out = io.StringIO()
    >>> write_text_table(duckdb.sql("SELECT * FROM (VALUES (1, 'a'), (NULL, 'bcd')) t(n, s)"), out)
    >>> print(out.getvalue(), end="")
    n    | s
    -----+----
    1    | a
    NULL | bcd
    """
    names = relation.columns
    texts = relation.project(", ".join(f"CAST({_quoted(n)} AS VARCHAR)" for n in names))
    rows = [[NULL if v is None else v for v in row] for row in texts.fetchall()]
    widths = [max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(names)]

    def line(cells: list[str]) -> str:
        return " | ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip() + "\n"

    stream.write(line(names))
    stream.write("-+-".join("-" * width for width in widths) + "\n")
    for row in rows:
        stream.write(line(row))
