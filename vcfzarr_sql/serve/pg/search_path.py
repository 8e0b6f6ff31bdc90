"""``SET search_path`` as PostgreSQL clients mean it, over the schemas a session lists.

Clients name the schemas the catalog lists (:mod:`.pg_catalog`): ``main`` stands for the
session's own ``memory.main`` and the served file's ``main``; another name for the schema of
that name. Superset runs ``SET search_path = "main"`` before each query of a dataset; passed to
DuckDB as it is, it would leave the file's tables out of reach. The schemas named come first,
in order, then every other one, so ``schema.table`` names keep working.
"""

from __future__ import annotations

import re

import duckdb

from vcfzarr_sql.engine.saved_calls import SCHEMA as HIDDEN_SCHEMA
from vcfzarr_sql.serve.pg.statements import Statement

__all__ = ["duckdb_search_path"]

_SET_PATH = re.compile(r"\s*SET\s+(?:SESSION\s+|LOCAL\s+)?search_path\s*(?:=|\s+TO\s)\s*(.*?)\s*;?\s*",
                       re.IGNORECASE | re.DOTALL)


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def duckdb_search_path(con: duckdb.DuckDBPyConnection, statement: Statement) -> Statement | None:
    """The DuckDB statement for a PostgreSQL ``SET search_path``, or None for another one.

    >>> con = duckdb.connect()
    >>> duckdb_search_path(con, Statement('SET search_path = "main", public', "SET")).sql
    'SET search_path = \\'"memory"."main"\\''
    """
    found = _SET_PATH.fullmatch(statement.sql)
    if found is None:
        return None
    wanted = [name.strip().strip("\"'") for name in found.group(1).split(",")]
    schemas = con.execute(
        "SELECT database_name, schema_name FROM duckdb_schemas() "
        "WHERE database_name NOT IN ('system', 'temp') AND schema_name <> ? "
        "ORDER BY database_name <> current_database(), database_name, schema_name",
        [HIDDEN_SCHEMA]).fetchall()
    first = [(db, schema) for name in wanted for db, schema in schemas if schema == name]
    path = first + [entry for entry in schemas if entry not in first]
    text = ",".join(f"{_quoted(db)}.{_quoted(schema)}" for db, schema in path).replace("'", "''")
    return Statement(f"SET search_path = '{text}'", "SET")
