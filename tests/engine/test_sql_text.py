"""Where SQL statements, literals and comments end (sqlglot's tokenizer, DuckDB's dialect):
facts of DuckDB's SQL, checked against what DuckDB itself runs."""

import duckdb
import pytest

from vcfzarr_sql.engine.sql_text import (
    MAX_TOKENIZED,
    SqlTextTooLong,
    ends_statement,
    pieces,
    statements,
    without_trailing_comments,
)

_TEXTS = [
    "SELECT 'a;b' AS x; SELECT 2 AS y",
    "SELECT $$dollar; quoted$$ AS x; SELECT 2 AS y",
    "SELECT E'it\\'s;' AS x; SELECT 2 AS y",
    'SELECT 1 AS "odd;name"; SELECT 2 AS y',
    "SELECT 1 AS x /* ; */; -- ;\nSELECT 2 AS y",
]


@pytest.mark.parametrize("text", _TEXTS)
def test_statements_split_where_duckdb_does(text) -> None:
    split = statements(text)
    assert len(split) == len(duckdb.connect().extract_statements(text)) == 2
    # each runs alone with the result DuckDB gives for it
    assert [duckdb.connect().execute(s).fetchall() for s in split][1] == [(2,)]


def test_literals_are_the_tokens_duckdb_reads_as_strings() -> None:
    text = "SELECT 'a''b' || $$c$$ || E'd\\'e' AS s -- 'not'"
    literals = [piece for piece, literal in pieces(text) if literal]
    assert literals == ["'a''b'", "$$c$$", "E'd\\'e'"]
    assert "".join(piece for piece, _ in pieces(text)) == text
    assert duckdb.connect().execute(text).fetchall() == [("a'bcd'e",)]


def test_unclosed_text_is_left_for_duckdb() -> None:
    assert statements("SELECT 'open; SELECT 2") == ["SELECT 'open; SELECT 2"]
    assert not ends_statement("SELECT ';")
    assert without_trailing_comments("SELECT 'open -- x") == "SELECT 'open -- x"


def test_a_long_text_is_split_only_when_nothing_could_split_it() -> None:
    long = "SELECT 1 WHERE 1 IN (" + ",".join(["1"] * MAX_TOKENIZED) + ")"
    assert statements(long + " ;\n") == [long]
    with pytest.raises(SqlTextTooLong, match="send statements one at a time"):
        statements(long + "; SELECT 2")
