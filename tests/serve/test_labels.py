"""Column labels as PostgreSQL gives them (``FigureColname`` in PostgreSQL's
``src/backend/parser/parse_target.c``): each expected label is PostgreSQL 15's for the same
select-list item (from a real server), DuckDB's names are DuckDB's own."""

from __future__ import annotations

import duckdb
import pytest

from vcfzarr_sql.serve.pg.labels import postgres_labels

#: (select-list item over ``t(x INTEGER, s VARCHAR, arr INTEGER[])``, PostgreSQL's label)
ITEMS = [
    ("x", "x"), ("t.x", "x"), ("X", "x"), ('"x"', "x"), ("arr[1]", "arr"),
    ("lower(s)", "lower"), ("LOWER(s)", "lower"), ("now()", "now"), ("count(*)", "count"),
    ("count(DISTINCT x)", "count"), ("string_agg(s, ',')", "string_agg"), ("mod(x, 2)", "mod"),
    ("row_number() OVER ()", "row_number"), ("sum(x) FILTER (WHERE x > 0)", "sum"),
    ("coalesce(x, 1)", "coalesce"), ("nullif(x, 2)", "nullif"), ("greatest(x, 2)", "greatest"),
    ("trim(s)", "btrim"), ("trim(LEADING 'a' FROM s)", "ltrim"), ("ltrim(s)", "ltrim"),
    ("extract(year FROM now())", "extract"), ("substring(s FROM 1 FOR 2)", "substring"),
    ("position('a' IN s)", "position"), ("now() AT TIME ZONE 'utc'", "timezone"),
    ("current_date", "current_date"), ("EXISTS (SELECT 1)", "exists"), ("ARRAY[1]", "array"),
    ("(SELECT 2 AS y)", "y"), ("(SELECT 1)", "?column?"),
    ("x::int", "x"), ("x::int::text", "x"), ("CAST(s AS varchar)", "s"), ("1::int", "int4"),
    ("1::integer", "int4"), ("1::bigint", "int8"), ("1::smallint", "int2"), ("1::real", "float4"),
    ("1::float", "float8"), ("1::float(3)", "float4"), ("1::double precision", "float8"),
    ("1::numeric(3, 1)", "numeric"), ("1::decimal", "numeric"), ("true::boolean", "bool"),
    ("'a'::text", "text"), ("'a'::varchar(3)", "varchar"), ("'a'::character varying", "varchar"),
    ("'a'::char", "bpchar"), ("'2020-01-01'::date", "date"), ("'2020-01-01'::timestamp", "timestamp"),
    ("'2020-01-01'::timestamp with time zone", "timestamptz"), ("'1 day'::interval", "interval"),
    ("'{1}'::int[]", "int4"), ("(x + 1)::text", "text"), ("sum(x)::int", "sum"),
    ("CASE WHEN x = 1 THEN 1 END", "case"), ("CASE WHEN x = 1 THEN 1 ELSE 0 END", "case"),
    ("CASE WHEN x = 1 THEN 1 ELSE x END", "x"), ("CASE x WHEN 1 THEN 'a' ELSE upper(s) END", "upper"),
    ("1", "?column?"), ("'a'", "?column?"), ("true", "?column?"), ("NULL", "?column?"),
    ("x + 1", "?column?"), ("-x", "?column?"), ("(x)", "x"), ("x IS NULL", "?column?"),
    ("x = 1 AND true", "?column?"), ("NOT true", "?column?"), ("x BETWEEN 1 AND 2", "?column?"),
    ("x IN (1, 2)", "?column?"), ("s LIKE 'a%'", "?column?"), ("s || 'b'", "?column?"),
]


#: (query over ``t``, PostgreSQL's labels): aliases, ``*``, set operations, WITH.
QUERIES = [
    ('SELECT count(*) AS n, lower(s) AS "Lower", x AS "x + 1" FROM t GROUP BY s, x', ["n", "Lower", "x + 1"]),
    ("SELECT * FROM t", ["x", "s", "arr"]),
    ("SELECT *, lower(s) FROM t", ["x", "s", "arr", "lower"]),
    ("SELECT x + 1, t.* FROM t", ["?column?", "x", "s", "arr"]),
    ("SELECT * FROM (SELECT count(*), max(x) FROM t) q", ["count", "max"]),
    ("WITH c AS (SELECT lower(s), x + 1 FROM t) SELECT * FROM c", ["lower", "?column?"]),
    ("WITH c(a, b) AS (SELECT lower(s), x + 1 FROM t) SELECT * FROM c", ["a", "b"]),
    ("SELECT x + 1 FROM t UNION SELECT x FROM t", ["?column?"]),
    ("SELECT x FROM t UNION ALL SELECT x + 1 FROM t", ["x"]),
    ("(SELECT lower(s) FROM t)", ["lower"]),
    ("SELECT lower(s) FROM t WHERE s IN (" + ", ".join(f"'S{i}'" for i in range(100)) + ")", ["lower"]),
]


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (x INTEGER, s VARCHAR, arr INTEGER[])")
    return con


@pytest.mark.parametrize(("item", "label"), ITEMS, ids=[item for item, _ in ITEMS])
def test_each_kind_of_item_is_labelled_as_postgresql_labels_it(con, item, label) -> None:
    sql = f"SELECT {item} FROM t"
    assert postgres_labels(con.sql(sql).columns, sql) == [label]


@pytest.mark.parametrize(("sql", "labels"), QUERIES)
def test_aliases_stars_and_set_operations(con, sql, labels) -> None:
    assert postgres_labels(con.sql(sql).columns, sql) == labels


def test_a_text_it_cannot_read_keeps_duckdb_s_names_aggregates_renamed() -> None:
    assert postgres_labels(["count_star()", "lower(s)", "n"], "SELECT count(*), lower(s), n FROM t WHERE") == \
        ["count", "lower(s)", "n"]
