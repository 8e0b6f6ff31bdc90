"""Rows encoded a batch at a time (``server/rows.py``) read back by psycopg as DuckDB has them:
several batches, NULLs in every column, non-finite floats, sliced batches (a portal's row
limit), in text and binary format."""

from __future__ import annotations

import threading

import duckdb
import psycopg
import pytest

from vcfzarr_sql.serve.pg import make_server

QUERY = ("SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE i * 1000003 - 5000000 END AS n, "
         "CASE WHEN i % 5 = 0 THEN NULL ELSE 'name ' || (i % 13) || repeat('é', i % 3) END AS s, "
         "CASE i % 11 WHEN 0 THEN NULL WHEN 1 THEN 'nan'::DOUBLE WHEN 2 THEN 'inf'::DOUBLE "
         "WHEN 3 THEN '-inf'::DOUBLE ELSE i / 7 END AS x, (i % 3 = 0) AS b, i::SMALLINT AS small "
         "FROM range(20000) t(i) ORDER BY i")


@pytest.fixture(scope="module")
def server():
    server = make_server("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _same(got: list[tuple], expected: list[tuple]) -> bool:
    """Row equality where NaN equals NaN."""
    return len(got) == len(expected) and all(
        g == e or (g != g and e != e) for row, other in zip(got, expected) for g, e in zip(row, other))


@pytest.mark.parametrize("binary", [False, True])
def test_many_batches_as_duckdb_has_them(server, binary) -> None:
    relation = duckdb.sql(QUERY)
    assert relation is not None
    expected = relation.fetchall()
    with psycopg.connect(host="127.0.0.1", port=server.port, user="t", autocommit=True) as con:
        assert _same(con.execute(QUERY, binary=binary).fetchall(), expected)
        with con.transaction(), con.cursor("slices", binary=binary) as cursor:  # FETCH 777 a time
            cursor.itersize = 777
            cursor.execute(QUERY)
            assert _same(list(cursor), expected)


#: No NULL: fields of one width (numbers in binary, strings of one length, empty strings) are
#: laid out by NumPy rather than Arrow's join; the second query's binary rows are nothing else.
FIXED_WIDTH_QUERIES = [
    (
        "SELECT i AS n, ''::VARCHAR AS empty, lpad((i % 1000)::VARCHAR, 3, '0') AS same_width, "
        "(i * 0.25)::DOUBLE AS x, i::INTEGER AS m, 'x' || i AS s FROM range(20000) t(i) ORDER BY i"
    ),
    "SELECT i AS n, i::DOUBLE / 3 AS x, i::SMALLINT AS small FROM range(20000) t(i) ORDER BY i",
]


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("query", FIXED_WIDTH_QUERIES)
def test_fields_of_one_width_as_duckdb_has_them(server, binary, query) -> None:
    relation = duckdb.sql(query)
    assert relation is not None
    expected = relation.fetchall()
    with psycopg.connect(host="127.0.0.1", port=server.port, user="t", autocommit=True) as con:
        assert con.execute(query, binary=binary).fetchall() == expected
        with con.transaction(), con.cursor("slices", binary=binary) as cursor:
            cursor.itersize = 777
            cursor.execute(query)
            assert list(cursor) == expected
