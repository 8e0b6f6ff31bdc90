"""How result columns are written by ``query -f csv|tsv|json``, as a bcftools user reads them.

- CSV and TSV: a list is its values joined with ``,`` (bcftools ``query``: ``A,T`` and
  ``0.5,0.017``, not ``[A, T]``), a missing element and an empty list ``.``; a list of lists (a per-sample
  FORMAT value) joins the samples with a space (a sample's missing value: ``.``). A NULL value stays an empty field.
  A FLOAT, alone or in a list, is written as htslib prints it (``2``, ``1e+20``, ``123457``:
  six significant digits, :func:`~vcfzarr_sql.view.values.float_text`), not as DuckDB casts it
  (``2.0``, ``123456.7``).
- JSON: a FLOAT (VCF Float is 32-bit) is written with its shortest float32 digits (``0.059``,
  not DuckDB's widening to ``0.05900000035762787``).

The ``table`` format on standard output cuts long lists and strings (:func:`for_table`). The
rewriting is a projection of the result in SQL, so DuckDB still writes every row.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
from duckdb.sqltypes import DuckDBPyType

#: separators of list levels in text formats: values, then samples
TEXT_SEPARATORS = (",", " ")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _is_list(kind: DuckDBPyType) -> bool:
    return kind.id in ("list", "array")


def _child(kind: DuckDBPyType) -> DuckDBPyType:
    child = dict(kind.children)["child"]
    assert isinstance(child, DuckDBPyType)  # (a list's or array's element type)
    return child


def _depth(kind: DuckDBPyType) -> int:
    return 1 + _depth(_child(kind)) if _is_list(kind) else 0


#: the SQL macro :func:`for_format` defines: a FLOAT's text as htslib prints it
#: (:func:`~vcfzarr_sql.view.values.float_text_sql`)
FLOAT_TEXT = "vcfzarr_sql_float_text"


def _define_float_text(connection: duckdb.DuckDBPyConnection) -> None:
    from vcfzarr_sql.view.values import float_text_sql

    connection.execute(f"CREATE OR REPLACE TEMP MACRO {FLOAT_TEXT}(x) AS ({float_text_sql('x')})")


def _scalar_text(expr: str, kind: DuckDBPyType) -> str:
    """``expr`` of a scalar type as text (a FLOAT as htslib prints it)."""
    return f"{FLOAT_TEXT}({expr})" if kind.id == "float" else f"CAST({expr} AS VARCHAR)"


def _text(expr: str, kind: DuckDBPyType, level: int = 0) -> str:
    """``expr`` of a list type as bcftools-style text."""
    if not _is_list(kind):
        return f"coalesce({_scalar_text(expr, kind)}, '.')"
    var = f"vcfzarr_sql_x{level}"
    separator = TEXT_SEPARATORS[min(_depth(kind) - 1, len(TEXT_SEPARATORS) - 1)]
    inner = _text(var, _child(kind), level + 1)
    if _is_list(_child(kind)):
        inner = f"coalesce({inner}, '.')"
    joined = f"array_to_string(list_transform({expr}, lambda {var}: {inner}), '{separator}')"
    return f"CASE WHEN len({expr}) = 0 THEN '.' ELSE {joined} END"


def _shortest_floats(expr: str, kind: DuckDBPyType, level: int = 0) -> str | None:
    """``expr`` with every FLOAT as the DOUBLE of its shortest digits, or None: no FLOAT."""
    if kind.id == "float":
        return f"CAST(CAST({expr} AS VARCHAR) AS DOUBLE)"
    if not _is_list(kind):
        return None
    var = f"vcfzarr_sql_x{level}"
    inner = _shortest_floats(var, _child(kind), level + 1)
    return None if inner is None else f"list_transform({expr}, lambda {var}: {inner})"


#: the ``table`` format on standard output shows this many elements of a list ...
TABLE_LIST_ELEMENTS = 20
#: ... and this many characters of a string, then ``…``
TABLE_TEXT_CHARACTERS = 200


def _cut(expr: str, kind: DuckDBPyType, level: int = 0) -> str | None:
    """``expr`` with lists cut to their first elements and strings to their first characters
    (``…`` marks a cut string, and a cut list of strings), or None: nothing to cut."""
    if kind.id == "varchar":
        n = TABLE_TEXT_CHARACTERS
        return f"CASE WHEN length({expr}) > {n} THEN left({expr}, {n - 1}) || '…' ELSE {expr} END"
    if not _is_list(kind) or kind.id == "array":
        return None
    var = f"vcfzarr_sql_x{level}"
    inner = _cut(var, _child(kind), level + 1)
    listed = expr if inner is None else f"list_transform({expr}, lambda {var}: {inner})"
    n = TABLE_LIST_ELEMENTS
    mark = " || ['…']" if _child(kind).id == "varchar" else ""
    return f"CASE WHEN len({expr}) > {n} THEN {listed}[1:{n}]{mark} ELSE {listed} END"


def for_table(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """``relation`` as the ``table`` format shows it on a terminal: a list holds its first
    :data:`TABLE_LIST_ELEMENTS` elements, a string its first :data:`TABLE_TEXT_CHARACTERS`
    characters (DuckDB's box rendering wraps a long value over as many lines as rows it may
    show: one genotype list of 3,000 samples would fill the screen).

    >>> rel = duckdb.sql("SELECT range(25) AS n, ['A', 'T'] AS alt, repeat('x', 300) AS s")
    >>> n, alt, s = for_table(rel).fetchall()[0]
    >>> len(n), alt, len(s), s[-1]
    (20, ['A', 'T'], 200, '…')
    """
    return _projected(relation, lambda quoted, kind: _cut(quoted, kind))


def _projected(relation: duckdb.DuckDBPyRelation,
               rewrite: Callable[[str, DuckDBPyType], str | None]) -> duckdb.DuckDBPyRelation:
    """``relation`` with each column ``rewrite`` gives an expression for replaced by it."""
    columns, changed = [], False
    for name, kind in zip(relation.columns, relation.types):
        quoted = _quoted(name)
        expr = rewrite(quoted, kind)
        changed |= expr is not None
        columns.append(quoted if expr is None else f"{expr} AS {quoted}")
    return relation.project(", ".join(columns)) if changed else relation


def for_format(relation: duckdb.DuckDBPyRelation, fmt: str,
               connection: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """``relation`` (of ``connection``) with its columns as ``fmt`` (``csv``, ``tsv`` or
    ``json``) writes them.

    >>> con = duckdb.connect()
    >>> rel = con.sql("SELECT ['A', 'T'] AS alt, [0.059::FLOAT, NULL, 2] AS af, 2::FLOAT AS q, 2.0 AS d")
    >>> for_format(rel, "csv", con).fetchall()
    [('A,T', '0.059,.,2', '2', Decimal('2.0'))]
    >>> for_format(rel, "json", con).fetchall()
    [(['A', 'T'], [0.059, None, 2.0], 2.0, Decimal('2.0'))]
    """
    if fmt in ("csv", "tsv"):
        _define_float_text(connection)
        return _projected(relation, lambda quoted, kind: (
            _text(quoted, kind) if _is_list(kind) else _scalar_text(quoted, kind) if kind.id == "float" else None))
    if fmt == "json":
        return _projected(relation, _shortest_floats)
    return relation
