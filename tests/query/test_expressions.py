"""Filters as DuckDB and Polars push them down, parsed and bound (vcfzarr_sql.query.expressions).

The filters are captured from the real engines through a logging pyarrow Dataset. Whatever an
engine sends must select exactly the rows the engine itself would (it does not re-check); the
exact shapes are recorded from DuckDB 2.0, so those tests fail if DuckDB changes what it sends.
"""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pytest

from vcfzarr_sql.adapters.dataset import PLAIN_STRINGS
from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query import expressions as ex
from vcfzarr_sql.query.residual import matching_rows

CONTIGS = pa.array(["1", "1", "2", "X"])
TABLE = pa.table(
    {
        # (typed as our scans type it: see vcfzarr_sql.adapters.dataset.PLAIN_STRINGS)
        "contig": CONTIGS if PLAIN_STRINGS else CONTIGS.dictionary_encode(),
        "pos": pa.array([1, 5, 9, 100], pa.int64()),
        "end": pa.array([1, 7, 9, 100], pa.int64()),
        "id": pa.array(["a", None, "c", 'q"uote']),
        "qual": pa.array([1.0, 2.0, None, 3.0], pa.float32()),
    }
)


class Recorder(pds.Dataset):
    """A Dataset that records the filters it is given and scans an in-memory table."""

    def __init__(self, table: pa.Table):
        self.table = table
        self.filters: list[pc.Expression | None] = []

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    def scanner(self, columns=None, filter=None, **kwargs):
        self.filters.append(filter)
        return pds.dataset(self.table).scanner(columns=columns, filter=filter)


def duckdb_filter(where: str) -> pc.Expression | None:
    recorder = Recorder(TABLE)
    relation = duckdb.sql(f"SELECT pos FROM recorder WHERE {where}")
    assert relation is not None
    relation.fetchall()
    (pushed,) = recorder.filters
    return pushed


def polars_filter(predicate: pl.Expr) -> pc.Expression | None:
    recorder = Recorder(TABLE)
    pl.scan_pyarrow_dataset(recorder).filter(predicate).select("pos").collect()
    return recorder.filters[-1]


def bound(expression: pc.Expression) -> ex.Predicate:
    return ex.bind(ex.parse(expression), TABLE.schema)


IN_GUARD = ex.IfElse  # DuckDB wraps IN lists as if_else(is_valid(col), is_in(...), null)

WHERE_CLAUSES = [
    "contig = '1'",
    "contig <> '1'",
    "pos < 9",
    "9 < pos",
    "pos BETWEEN 2 AND 9",
    "NOT (pos = 1)",
    "id IS NULL",
    "id IS NOT NULL",
    "id = 'q\"uote'",
    "pos = 1 OR pos = 9",
    "contig IN ('1', '2')",
    "pos NOT IN (1, 5)",
    "(contig = '1' AND pos < 9) OR contig = '2'",
    "id LIKE 'a%'",
    "qual > 1.5",
    "coalesce(id, 'z') = 'z'",
]


@pytest.mark.parametrize("where", WHERE_CLAUSES)
def test_what_duckdb_pushes_selects_what_duckdb_selects(where):
    plain = TABLE  # noqa: F841 (read by DuckDB's replacement scan)
    relation = duckdb.sql(f"SELECT pos FROM plain WHERE {where} ORDER BY pos")
    assert relation is not None
    expected = relation.fetchall()
    pushed = duckdb_filter(where)
    if pushed is None:
        return  # nothing pushed: DuckDB filters itself, as the query above did
    batch = TABLE.combine_chunks().to_batches()[0]
    kept = matching_rows(batch, ex.parse_or_none(pushed), pushed, ex.columns_of(pushed, TABLE.schema), ["pos"])
    assert sorted((p,) for p in kept.column(0).to_pylist()) == expected


@pytest.mark.parametrize(
    "where, expected",
    [
        ("contig = '1'", ex.Compare("contig", "==", "1")),
        ("contig <> '1'", ex.Compare("contig", "!=", "1")),
        ("pos < 9", ex.Compare("pos", "<", 9)),
        ("pos <= 9", ex.Compare("pos", "<=", 9)),
        ("pos > 9", ex.Compare("pos", ">", 9)),
        ("pos >= 9", ex.Compare("pos", ">=", 9)),
        ("9 < pos", ex.Compare("pos", ">", 9)),
        ("pos BETWEEN 2 AND 9", ex.And((ex.Compare("pos", ">=", 2), ex.Compare("pos", "<=", 9)))),
        ("NOT (pos = 1)", ex.Compare("pos", "!=", 1)),
        ("id IS NULL", ex.IsNull("id")),
        ("id IS NOT NULL", ex.IsValid("id")),
        ("id = 'q\"uote'", ex.Compare("id", "==", 'q"uote')),
        ("pos = 1 OR pos = 9", ex.Or((ex.Compare("pos", "==", 1), ex.Compare("pos", "==", 9)))),
        (
            "contig IN ('1', '2')",
            ex.IfElse(
                ex.IsValid("contig"), ex.In("contig", frozenset({"1", "2"}), False), ex.Constant(None)
            ),
        ),
        (
            "pos NOT IN (1, 5)",
            ex.Not(ex.IfElse(ex.IsValid("pos"), ex.In("pos", frozenset({1, 5}), False), ex.Constant(None))),
        ),
    ],
)
def test_duckdb_filters_bind_to_typed_predicates(where, expected):
    assert bound(duckdb_filter(where)) == expected


def test_duckdb_or_across_columns_is_pushed_and_bound():
    predicate = bound(duckdb_filter("(contig = '1' AND pos < 9) OR contig = '2'"))
    assert isinstance(predicate, ex.And)  # DuckDB adds the implied (contig='1' OR contig='2')
    first, implied = predicate.operands
    assert first == ex.Or(
        (ex.And((ex.Compare("contig", "==", "1"), ex.Compare("pos", "<", 9))), ex.Compare("contig", "==", "2"))
    )
    assert implied == ex.Or((ex.Compare("contig", "==", "1"), ex.Compare("contig", "==", "2")))


@pytest.mark.parametrize("where", ["id LIKE 'a%'", "qual > 1.5", "coalesce(id, 'z') = 'z'"])
def test_duckdb_keeps_what_it_cannot_push(where):
    assert duckdb_filter(where) is None


@pytest.mark.parametrize(
    "predicate, expected",
    [
        (pl.col("contig") == "1", ex.Compare("contig", "==", "1")),
        (pl.col("pos").is_between(2, 9), ex.And((ex.Compare("pos", ">=", 2), ex.Compare("pos", "<=", 9)))),
        (pl.col("pos").is_in([1, 5]), ex.In("pos", frozenset({1, 5}), False)),
        (~(pl.col("pos") == 1), ex.Compare("pos", "!=", 1)),
        (pl.col("id").is_null(), ex.IsNull("id")),
        ((pl.col("contig") == "1") | (pl.col("pos") > 50), ex.Or((ex.Compare("contig", "==", "1"), ex.Compare("pos", ">", 50)))),
    ],
)
def test_polars_filters_bind_to_typed_predicates(predicate, expected):
    assert bound(polars_filter(predicate)) == expected


def test_unknown_functions_are_opaque_but_keep_their_columns():
    expression = pc.starts_with(pc.field("id"), "a") & (pc.field("pos").cast(pa.int32()) == 3)
    assert bound(expression) == ex.And((ex.Opaque("starts_with"), ex.Opaque("equal")))
    assert ex.columns_of(expression, TABLE.schema) == {"id", "pos"}


def test_unknown_column_is_a_query_error_naming_it():
    with pytest.raises(QueryError, match="'nope'"):
        bound(pc.field("nope") == 1)


def test_literals_are_exact_arrow_scalars():
    tricky = 'a", b == "c\n\u00e9'
    assert bound(pc.field("id") == tricky) == ex.Compare("id", "==", tricky)


def test_no_filter_is_always_true():
    assert ex.bind_filter(None, TABLE.schema) == ex.Constant(True)
    assert ex.columns_of(None, TABLE.schema) == frozenset()


def test_conjunction_skips_missing_filters():
    a, b = pc.field("pos") > 1, pc.field("pos") < 5
    assert ex.conjunction(None, None) is None
    only_a, both = ex.conjunction(a, None), ex.conjunction(a, b)
    assert only_a is not None and only_a.equals(a)
    assert both is not None and both.equals(a & b)
