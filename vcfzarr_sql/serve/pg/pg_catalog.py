"""PostgreSQL's catalog as clients query it, answered from DuckDB's own ``pg_catalog``.

DuckDB already has ``pg_class``, ``pg_namespace``, ``pg_attribute``, ``pg_type``,
``format_type`` and friends. What psql (``\\d``, ``\\dt``, ``\\l``, ``\\dn``), pgJDBC's
``DatabaseMetaData``, SQLAlchemy's PostgreSQL dialect and BI tools send on top of that is of
two kinds, handled here:

- syntax DuckDB does not parse or binds differently: ``pg_catalog.`` before a function,
  ``OPERATOR(pg_catalog.~)``, ``COLLATE pg_catalog.default``, ``'name'::regclass`` and casts
  to the ``reg*`` types: :func:`rewrite` turns the text into what DuckDB runs;
- functions and views DuckDB lacks (``pg_get_userbyid``, ``pg_roles``, ``array_upper``...):
  :func:`install` defines them as temporary macros and views of each session (they
  change nothing in the database file and no other session sees them).

Text inside string literals is left alone, except a literal cast to ``regclass``.

>>> print(rewrite("SELECT pg_catalog.version() WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' "
...               "COLLATE pg_catalog.default AND c.oid = 'main.t'::regclass"))
SELECT version() WHERE c.relname ~ '^(t)$' AND c.oid = regclass_oid('main.t')
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable

import duckdb
import duckdb.func
from duckdb import sqltypes

from vcfzarr_sql.engine import sql_text
from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS
from vcfzarr_sql.serve.pg import types as pg
from vcfzarr_sql.serve.pg.types import PgType

__all__ = ["install", "mentions_catalog", "rewrite", "session_setup"]

log = logging.getLogger("vcfzarr_sql.serve.pg")

#: The schema of the adapter's bookkeeping in database files written by older versions
#: (:mod:`vcfzarr_sql.engine.saved_calls`): never listed to clients.
HIDDEN_SCHEMA = "vcfzarr_sql"

#: The PostgreSQL version clients see (SQLAlchemy and pgJDBC parse ``version()``).
POSTGRES_VERSION = "PostgreSQL 15.0 (vcfzarr-sql) on DuckDB"

#: ``current_setting`` of PostgreSQL settings DuckDB lacks, in catalog queries (SQLAlchemy's
#: table reflection compares the access method with the default).
PG_SETTINGS = {"default_table_access_method": "art", "server_version_num": "150000"}

#: Statements each session runs once: macros and views for what DuckDB's pg_catalog lacks.
SESSION_SETUP: tuple[str, ...] = (
    f"CREATE OR REPLACE TEMP MACRO version() AS '{POSTGRES_VERSION}'",
    "CREATE OR REPLACE TEMP MACRO pg_get_userbyid(role) AS 'vcfzarr'",
    "CREATE OR REPLACE TEMP MACRO pg_encoding_to_char(encoding) AS 'UTF8'",
    # DuckDB's primary keys and unique constraints as the indexes PostgreSQL makes for them
    # (pg_index, pg_class: what pgJDBC's getPrimaryKeys and getIndexInfo read)
    ("CREATE OR REPLACE TEMP MACRO pg_key_indexes() AS TABLE SELECT "
     "table_oid * 1000000 + constraint_index AS oid, constraint_name AS relname, "
     "table_oid, schema_oid, constraint_type = 'PRIMARY KEY' AS is_primary, "
     "list_transform(constraint_column_indexes, lambda i: (i + 1)::INTEGER) AS indkey, "
     "constraint_column_names AS column_names, table_name FROM duckdb_constraints() "
     "WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE')"),
    ("CREATE OR REPLACE TEMP MACRO pg_get_indexdef(index_oid, column_no := 0, pretty := false) AS "
     "coalesce((SELECT CASE WHEN column_no > 0 THEN key_k.column_names[column_no] ELSE "
     "format('CREATE UNIQUE INDEX {} ON {} USING art ({})', key_k.relname, key_k.table_name, "
     "array_to_string(key_k.column_names, ', ')) END FROM pg_key_indexes() key_k "
     "WHERE key_k.oid = index_oid), '')"),
    "CREATE OR REPLACE TEMP MACRO to_regtype(name) AS (SELECT oid FROM pg_type WHERE typname = name)",
    "CREATE OR REPLACE TEMP MACRO pg_get_statisticsobjdef_columns(oid) AS NULL",
    "CREATE OR REPLACE TEMP MACRO pg_get_serial_sequence(table_name, column_name) AS NULL::VARCHAR",
    "CREATE OR REPLACE TEMP MACRO pg_relation_is_publishable(oid) AS false",
    "CREATE OR REPLACE TEMP MACRO pg_total_relation_size(oid) AS 0",
    "CREATE OR REPLACE TEMP MACRO pg_relation_size(oid) AS 0",
    "CREATE OR REPLACE TEMP MACRO array_upper(values, dimension) AS len(values)",
    ("CREATE OR REPLACE TEMP MACRO array_lower(values, dimension) AS "
     "CASE WHEN len(values) > 0 THEN 1 END"),
    ("CREATE OR REPLACE TEMP MACRO parse_ident_last(name) AS "
     "trim(string_split(name, '.')[-1], '\"')"),
    ("CREATE OR REPLACE TEMP MACRO parse_ident_schema(name) AS "
     "CASE WHEN len(string_split(name, '.')) > 1 THEN trim(string_split(name, '.')[-2], '\"') END"),
    ("CREATE OR REPLACE TEMP MACRO regclass_oid(name) AS (SELECT c.oid FROM pg_class c "
     "JOIN pg_namespace n ON n.oid = c.relnamespace "
     "WHERE c.relname = parse_ident_last(name) "
     "AND (parse_ident_schema(name) IS NULL OR n.nspname = parse_ident_schema(name)) LIMIT 1)"),
    # psql's \\df and \\d+, pgJDBC's getPrimaryKeys and getIndexInfo (a set-returning function
    # in the select list: DuckDB's UNNEST there is PostgreSQL's)
    ("CREATE OR REPLACE TEMP MACRO pg_get_function_result(proc_oid) AS (SELECT "
     "lower(coalesce(fn_f.return_type, CASE WHEN fn_f.function_type LIKE '%table%' THEN 'table' END)) "
     "FROM duckdb_functions() fn_f WHERE fn_f.function_oid = proc_oid LIMIT 1)"),
    ("CREATE OR REPLACE TEMP MACRO pg_get_function_arguments(proc_oid) AS (SELECT "
     "array_to_string(list_transform(range(1, len(fn_f.parameters) + 1), lambda i: fn_f.parameters[i] "
     "|| coalesce(' ' || lower(fn_f.parameter_types[i]), '')), ', ') "
     "FROM duckdb_functions() fn_f WHERE fn_f.function_oid = proc_oid LIMIT 1)"),
    ("CREATE OR REPLACE TEMP MACRO pg_get_function_identity_arguments(proc_oid) AS "
     "pg_get_function_arguments(proc_oid)"),
    ("CREATE OR REPLACE TEMP MACRO _pg_expandarray(items) AS "
     "unnest(list_transform(range(1, len(items) + 1), lambda i: {'x': items[i], 'n': i}))"),
    # The schemas clients see: the session's own (``memory``), its temporary objects and the
    # served database file's schemas under one name each (``main`` for all three ``main``:
    # unqualified and ``main.`` names reach them all, as the session's search path does);
    # DuckDB's system catalog and the adapter's bookkeeping schema are left out.
    ("CREATE OR REPLACE TEMP MACRO pg_schema_namespaces() AS TABLE SELECT s.oid AS schema_oid, "
     "first_value(s.oid) OVER (PARTITION BY s.schema_name ORDER BY CASE "
     "WHEN s.database_name = current_database() THEN 0 WHEN s.database_name = 'temp' THEN 1 "
     "ELSE 2 END, s.oid) AS oid, s.schema_name AS nspname FROM duckdb_schemas() s "
     f"WHERE s.database_name <> 'system' AND s.schema_name <> '{HIDDEN_SCHEMA}'"),
    ("CREATE OR REPLACE TEMP MACRO pg_namespace_of(nsp) AS coalesce((SELECT min(ns_map.oid) "
     "FROM pg_schema_namespaces() ns_map WHERE ns_map.schema_oid = nsp), nsp)"),
    # visible without a schema name: the relations of ``main`` (and DuckDB's own)
    ("CREATE OR REPLACE TEMP MACRO pg_table_is_visible(rel) AS coalesce((SELECT bool_or(vis_n.nspname = 'main') "
     "FROM pg_class vis_c JOIN pg_namespace vis_n ON vis_n.oid = vis_c.relnamespace "
     "WHERE vis_c.oid = rel), true)"),
    ("CREATE OR REPLACE TEMP VIEW pg_namespace AS SELECT DISTINCT oid, nspname, 10 AS nspowner, "
     "NULL::VARCHAR[] AS nspacl FROM pg_schema_namespaces()"),
    ("CREATE OR REPLACE TEMP VIEW pg_roles AS SELECT 10::BIGINT AS oid, 'vcfzarr' AS rolname, "
     "false AS rolsuper, false AS rolinherit, false AS rolcreaterole, false AS rolcreatedb, "
     "true AS rolcanlogin, -1 AS rolconnlimit, NULL::TIMESTAMP AS rolvaliduntil, "
     "false AS rolreplication, false AS rolbypassrls, NULL::VARCHAR[] AS rolconfig"),
    ("CREATE OR REPLACE TEMP VIEW pg_user AS SELECT rolname AS usename, oid AS usesysid "
     "FROM pg_roles"),
    ("CREATE OR REPLACE TEMP VIEW pg_inherits AS SELECT NULL::BIGINT AS inhrelid, "
     "NULL::BIGINT AS inhparent, NULL::INTEGER AS inhseqno, NULL::BOOLEAN AS inhdetachpending "
     "WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_opclass AS SELECT NULL::BIGINT AS oid, "
     "NULL::VARCHAR AS opcname, NULL::BOOLEAN AS opcdefault WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_foreign_table AS SELECT NULL::BIGINT AS ftrelid, "
     "NULL::BIGINT AS ftserver WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_partitioned_table AS SELECT NULL::BIGINT AS partrelid, "
     "NULL::VARCHAR AS partstrat WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_statistic_ext AS SELECT NULL::BIGINT AS oid, "
     "NULL::BIGINT AS stxrelid, NULL::BIGINT AS stxnamespace, NULL::VARCHAR AS stxname, "
     "NULL::VARCHAR[] AS stxkind, NULL::INTEGER AS stxstattarget WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_policy AS SELECT NULL::BIGINT AS polrelid, "
     "NULL::VARCHAR AS polname, NULL::BOOLEAN AS polpermissive, NULL::BIGINT[] AS polroles, "
     "NULL::VARCHAR AS polqual, NULL::VARCHAR AS polwithcheck, NULL::VARCHAR AS polcmd WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_publication AS SELECT NULL::BIGINT AS oid, "
     "NULL::VARCHAR AS pubname, NULL::BOOLEAN AS puballtables WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_publication_namespace AS SELECT NULL::BIGINT AS pnpubid, "
     "NULL::BIGINT AS pnnspid WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_publication_rel AS SELECT NULL::BIGINT AS prpubid, "
     "NULL::BIGINT AS prrelid, NULL::VARCHAR AS prqual, NULL::SMALLINT[] AS prattrs WHERE false"),
    ("CREATE OR REPLACE TEMP VIEW pg_trigger AS SELECT NULL::BIGINT AS oid, "
     "NULL::BIGINT AS tgrelid, NULL::VARCHAR AS tgname WHERE false"),
)

#: DuckDB column types (``duckdb_columns().data_type``) -> the PostgreSQL type results of that
#: type are described as (what :func:`.types.column_codec` picks for their Arrow type).
_SCALAR_TYPES: dict[str, PgType] = {
    "BOOLEAN": pg.BOOL, "TINYINT": pg.INT2, "SMALLINT": pg.INT2, "UTINYINT": pg.INT2,
    "INTEGER": pg.INT4, "USMALLINT": pg.INT4, "BIGINT": pg.INT8, "UINTEGER": pg.INT8,
    "UBIGINT": pg.NUMERIC, "HUGEINT": pg.NUMERIC, "UHUGEINT": pg.NUMERIC, "FLOAT": pg.FLOAT4,
    "DOUBLE": pg.FLOAT8, "VARCHAR": pg.TEXT, "BLOB": pg.BYTEA, "DATE": pg.DATE, "TIME": pg.TIME,
    "TIMESTAMP": pg.TIMESTAMP, "TIMESTAMP WITH TIME ZONE": pg.TIMESTAMPTZ,
    "INTERVAL": pg.INTERVAL,
}

#: What PostgreSQL's ``format_type`` calls each type (SQLAlchemy reads column types from it).
_FORMATTED = {
    pg.BOOL: "boolean", pg.BYTEA: "bytea", pg.INT8: "bigint", pg.INT2: "smallint",
    pg.INT4: "integer", pg.TEXT: "text", pg.JSON: "json", pg.FLOAT4: "real",
    pg.FLOAT8: "double precision", pg.VARCHAR: "character varying", pg.DATE: "date",
    pg.TIME: "time without time zone", pg.TIMESTAMP: "timestamp without time zone",
    pg.TIMESTAMPTZ: "timestamp with time zone", pg.INTERVAL: "interval", pg.NUMERIC: "numeric",
}


def _case(subject: str, cases: dict[str, str], otherwise: str) -> str:
    whens = " ".join(f"WHEN {key} THEN {value}" for key, value in cases.items())
    return f"CASE {subject} {whens} ELSE {otherwise} END"


def _extra_pg_types() -> str:
    """The ``pg_type`` rows column types map to that DuckDB's lacks (text, json, arrays), as
    a query (VALUES)."""
    rows = [(t.oid, t.name, t.size, 0, t.array_oid, "b") for t in _FORMATTED] + \
           [(t.array_oid, "_" + t.name, -1, t.oid, 0, "A") for t in _FORMATTED if t.array_oid]
    values = ", ".join(f"({oid}, '{name}', {size}, {elem}, {array_oid}, '{category}')"
                       for oid, name, size, elem, array_oid, category in rows)
    return f"SELECT * FROM (VALUES {values}) AS v(oid, typname, typlen, typelem, typarray, typcategory)"


def _type_macros() -> tuple[str, ...]:
    """``pg_type_oid(duckdb_type)`` and ``format_type(oid, typmod)``."""
    scalar = _case("regexp_replace(name, '^DECIMAL.*', 'HUGEINT')",
                   {f"'{name}'": str(t.oid) for name, t in _SCALAR_TYPES.items()}, str(pg.TEXT.oid))
    array = _case("scalar_oid", {str(t.oid): str(t.array_oid) for t in _FORMATTED if t.array_oid},
                  str(pg.TEXT.array_oid))
    formatted = {str(t.oid): f"'{name}'" for t, name in _FORMATTED.items()}
    formatted.update({str(t.array_oid): f"'{name}[]'" for t, name in _FORMATTED.items() if t.array_oid})
    return (
        f"CREATE OR REPLACE TEMP MACRO pg_scalar_oid(name) AS {scalar}",
        f"CREATE OR REPLACE TEMP MACRO pg_array_oid(scalar_oid) AS {array}",
        ("CREATE OR REPLACE TEMP MACRO pg_type_oid(name) AS CASE "
         f"WHEN name LIKE '%]%]' OR regexp_matches(name, '^(STRUCT|MAP|UNION)') THEN {pg.JSON.oid} "
         "WHEN regexp_matches(name, '\\[\\d*\\]$') "
         "THEN pg_array_oid(pg_scalar_oid(regexp_replace(name, '\\[\\d*\\]$', ''))) "
         "ELSE pg_scalar_oid(name) END"),
        "CREATE OR REPLACE TEMP MACRO format_type(type_oid, modifier) AS CASE "
        f"WHEN type_oid = {pg.NUMERIC.oid} AND modifier > 0 "  # DuckDB's: width * 1000 + scale
        "THEN format('numeric({},{})', modifier // 1000, modifier % 1000) ELSE "
        + _case("type_oid", formatted, "(SELECT typname FROM pg_catalog.pg_type WHERE oid = type_oid)")
        + " END",
    )


#: DuckDB's catalog views that clients need more of: columns DuckDB lacks (name: SQL value,
#: added only when missing), columns to replace, and rows to hide.
_VIEW_PATCHES: dict[str, tuple[dict[str, str], dict[str, str], str]] = {
    "pg_class": ({"relforcerowsecurity": "false", "relhasoids": "false"},
                 {"relnamespace": "pg_namespace_of(relnamespace)",
                  "reloptions": "NULL::VARCHAR[]", "relacl": "NULL::VARCHAR[]"},
                 ("oid NOT IN (SELECT view_oid FROM duckdb_views() WHERE database_name = 'temp' "
                 "AND (view_name IN ({emulated}) OR regexp_full_match(view_name, "
                 f"'({'|'.join(TABLE_FUNCTIONS)})_[0-9a-f]{{{{12}}}}'))) AND relnamespace NOT IN "
                 f"(SELECT oid FROM duckdb_schemas() WHERE schema_name = '{HIDDEN_SCHEMA}')")),
    "pg_proc": ({}, {"pronamespace": "pg_namespace_of(pronamespace)"},
                "pronamespace NOT IN (SELECT oid FROM duckdb_schemas() WHERE database_name = 'temp')"),
    # (keys: named as DuckDB names them, columns counted from 1 as attnum is, and their index)
    "pg_constraint": ({}, {"connamespace": "pg_namespace_of(connamespace)",
                           "conname": "coalesce((SELECT key_c.relname FROM pg_key_indexes() key_c "
                                      "WHERE key_c.oid = pg_catalog.pg_constraint.oid), conname)",
                           "conkey": "list_transform(conkey, lambda i: (i + 1)::SMALLINT)",
                           "conindid": "CASE WHEN contype IN ('p', 'u') THEN oid ELSE conindid END"},
                      "true"),
    "pg_database": ({
        "datdba": "10", "encoding": "6", "datcollate": "'C'", "datctype": "'C'",
        "daticulocale": "NULL::VARCHAR", "datlocprovider": "'c'", "datacl": "NULL::VARCHAR[]",
        "dattablespace": "0", "datconnlimit": "-1",
    }, {}, "datname NOT IN ('system', 'temp')"),
    "pg_type": ({}, {"typrelid": "coalesce(typrelid, 0)"}, "true"),
    "pg_attribute": ({}, {"atttypid": "coalesce((SELECT pg_type_oid(c.data_type) FROM duckdb_columns() c "
                                      "WHERE c.table_oid = attrelid AND c.column_index = attnum), "
                                      "atttypid)"}, "true"),
    "pg_collation": ({"collnamespace": "0"}, {}, "true"),
    "pg_index": ({"indnullsnotdistinct": "false"}, {}, "true"),
}


#: Rows DuckDB's catalog views lack, as a query whose columns are named as the view's (the
#: rest are NULL).
_VIEW_ROWS: dict[str, str] = {
    "pg_class": "SELECT oid, relname, pg_namespace_of(schema_oid) AS relnamespace, 'i' AS relkind, "
                "0 AS relam, 0 AS reltuples, 0 AS relpages, len(indkey) AS relnatts, "
                "'p' AS relpersistence, false AS relhasindex FROM pg_key_indexes()",
    "pg_index": "SELECT oid AS indexrelid, table_oid AS indrelid, len(indkey) AS indnatts, "
                "len(indkey) AS indnkeyatts, true AS indisunique, is_primary AS indisprimary, "
                "false AS indisclustered, true AS indisvalid, true AS indimmediate, "
                "true AS indisready, true AS indislive, false AS indisreplident, indkey, "
                "list_transform(indkey, lambda i: 0) AS indoption, false AS indnullsnotdistinct "
                "FROM pg_key_indexes()",
}

#: ``information_schema`` views clients read (Grafana's query builder, BI tools' table lists),
#: with what the session's emulation, the engine's relations and its bookkeeping add hidden
#: (``information_schema.tables`` in a query is read from ``information_schema_tables``).
_INFORMATION_SCHEMA = ("tables", "views", "columns", "schemata")

_TEMP_VIEW = re.compile(r"CREATE OR REPLACE TEMP VIEW (\w+)")


def session_setup(columns_of: Callable[[str], list[str] | None]) -> list[str]:
    """The statements a session runs once: :data:`SESSION_SETUP`, then temporary views that
    extend DuckDB's catalog views (``columns_of(view)``: the columns DuckDB's view has).

    >>> [s[:94] for s in session_setup(lambda view: ["oid", "relhasoids"]) if "VIEW pg_class" in s]
    ['CREATE OR REPLACE TEMP VIEW pg_class AS SELECT *, false AS relforcerowsecurity FROM pg_catalog']
    """
    statements = [*SESSION_SETUP, *_type_macros()]
    views = [m.group(1) for m in map(_TEMP_VIEW.match, SESSION_SETUP) if m] + list(_VIEW_PATCHES)
    views += [f"information_schema_{view}" for view in _INFORMATION_SCHEMA]
    emulated = ", ".join(f"'{view}'" for view in views)
    relations = (f"NOT (table_catalog = 'temp' AND (table_name IN ({emulated}) OR regexp_full_match("
                 f"table_name, '({'|'.join(TABLE_FUNCTIONS)})_[0-9a-f]{{12}}'))) "
                 f"AND table_schema <> '{HIDDEN_SCHEMA}'")
    statements += [f"CREATE OR REPLACE TEMP VIEW information_schema_{view} AS SELECT * FROM "
                   f"information_schema.{view} WHERE "
                   + (relations if view != "schemata" else f"schema_name <> '{HIDDEN_SCHEMA}'")
                   for view in _INFORMATION_SCHEMA]
    for view, (extra, replaced, where) in _VIEW_PATCHES.items():
        existing = set(columns_of(view) or ())
        added = "".join(f", {value} AS {name}" for name, value in extra.items() if name not in existing)
        replace = ", ".join(f"{value} AS {name}" for name, value in replaced.items() if name in existing)
        star = f"* REPLACE ({replace})" if replace else "*"
        rows = f" UNION ALL BY NAME {_VIEW_ROWS[view]}" if view in _VIEW_ROWS else ""
        statements.append(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT {star}{added} "
                          f"FROM pg_catalog.{view} WHERE {where.format(emulated=emulated)}{rows}")
    statements[-len(_VIEW_PATCHES) + list(_VIEW_PATCHES).index("pg_type")] += (
        " UNION ALL BY NAME SELECT *, 0 AS typrelid, 'b' AS typtype, ',' AS typdelim, "
        "(SELECT typnamespace FROM pg_catalog.pg_type WHERE oid = 20) AS typnamespace "
        f"FROM ({_extra_pg_types()}) WHERE oid NOT IN "
        "(SELECT oid FROM pg_catalog.pg_type WHERE oid IS NOT NULL)")
    return statements


#: Words showing that a statement reads the catalog (only those are rewritten).
_CATALOG_WORDS = re.compile(r"pg_catalog|information_schema|::\s*reg|\bISOLATION\b|OPERATOR\s*\(|\bCOLLATE\b|\bversion\s*\(|json_build",
                            re.IGNORECASE)
#: A literal cast to ``regclass``: ``'t'::regclass`` (what follows the literal), and
#: ``CAST('t' AS regclass)`` (what precedes it, and what follows). Literals are sqlglot's
#: tokens (:func:`~vcfzarr_sql.engine.sql_text.pieces`), found once, left to right.
_REGCLASS_SUFFIX = re.compile(r"\s*::\s*(?:pg_catalog\.)?regclass\b", re.IGNORECASE)
_CAST_OPEN = re.compile(r"\bCAST\s*\(\s*\Z", re.IGNORECASE)
_CAST_TO_REGCLASS = re.compile(r"\s+AS\s+(?:pg_catalog\.)?regclass\s*\)", re.IGNORECASE)

#: (pattern, replacement) applied, in order, to the text outside string literals.
_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bCAST\s*\(\s*(\$\d+)\s+AS\s+(?:pg_catalog\.)?regclass\s*\)", re.IGNORECASE),
     r"regclass_oid(\1)"),
    (re.compile(r"\bOPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?([~!<>=*+\-/%^|&#@]+)\s*\)",
                re.IGNORECASE), r"\1"),
    # (from the start of a run of white space only: tried at every space of a long run, the
    # pattern would scan the rest of the run each time)
    (re.compile(r"(?<!\s)\s*\bCOLLATE\s+(?:pg_catalog\s*\.\s*)?(?:\"default\"|\"C\"|(?:default|C)\b)",
                re.IGNORECASE), ""),
    (re.compile(r"(::|\bAS)\s*(?:pg_catalog\.)?reg(?:class|type|proc|procedure|namespace|role|oper|"
                r"operator|config|dictionary|collation)\b", re.IGNORECASE), r"\1 BIGINT"),
    (re.compile(r"\bjson_build_object\s*\(", re.IGNORECASE), "json_object("),
    (re.compile(r"\binformation_schema\s*\.\s*(?=_pg_expandarray\b)", re.IGNORECASE), ""),
    (re.compile(r"\binformation_schema\s*\.\s*(tables|views|columns|schemata)\b", re.IGNORECASE),
     r"information_schema_\1"),
    # (DuckDB's fails at binding for a name it does not know, even one a parameter brings)
    (re.compile(r"\b(?:pg_catalog\s*\.\s*)?current_setting\s*\(", re.IGNORECASE), "pg_current_setting("),
    # psql's third argument (pretty printing) to DuckDB's two-argument pg_get_expr
    (re.compile(r"\bpg_get_expr\s*\(([^(),]+),([^(),]+),\s*(?:true|false)\s*\)", re.IGNORECASE),
     r"pg_get_expr(\1,\2)"),
    (re.compile(r"^\s*SHOW\s+TRANSACTION\s+ISOLATION\s+LEVEL\b", re.IGNORECASE),
     "SHOW transaction_isolation"),
    (re.compile(r"\bpg_catalog\s*\.\s*(?=[\"\w])", re.IGNORECASE), ""),
)


#: ``signal(caller, pid, terminate)``: from the session whose BackendKeyData is ``caller``,
#: cancel the query of the session with that process id (or end the session when
#: ``terminate``) if the caller may; whether it did.
Signal = Callable[[tuple[int, int], int, bool], bool]


def install(con: duckdb.DuckDBPyConnection, key: tuple[int, int] = (0, 0),
            signal: Signal | None = None) -> None:
    """Run :func:`session_setup` on a session's connection; a statement this DuckDB version
    cannot run is skipped (what it defines stays missing). Run it when the session starts:
    made inside a client's transaction, the temporary objects would go with its rollback.

    ``pg_backend_pid()`` is the process id of ``key`` (the session's BackendKeyData);
    ``pg_cancel_backend(pid)`` and ``pg_terminate_backend(pid)`` call ``signal`` with ``key``
    (without ``signal`` they do nothing and are false). The Python functions behind them are
    the DuckDB instance's, shared by the sessions of a writable database: each session's
    temporary macros pass its own key, a secret no other session knows.
    """
    def columns_of(view: str) -> list[str]:
        return con.sql(f"SELECT * FROM pg_catalog.{view} LIMIT 0").columns

    for statement in session_setup(columns_of):
        try:
            con.execute(statement)
        except duckdb.Error as err:
            log.debug("catalog emulation skipped %r: %s", statement, err)
    settings = {name.lower(): value for name, value in
                con.execute("SELECT name, value FROM duckdb_settings()").fetchall()}
    settings.update(PG_SETTINGS)
    # (Python functions are the DuckDB instance's: the first session of a shared one makes them)
    with contextlib.suppress(duckdb.CatalogException):
        con.create_function("pg_current_setting", lambda name: settings.get(str(name).lower()),
                            [sqltypes.VARCHAR], sqltypes.VARCHAR)
    with contextlib.suppress(duckdb.CatalogException):
        con.create_function("vcfzarr_signal_backend", _signaller(signal),
                            [sqltypes.BIGINT, sqltypes.BIGINT, sqltypes.BIGINT, sqltypes.BOOLEAN],
                            sqltypes.BOOLEAN, null_handling=duckdb.func.SPECIAL, side_effects=True)
    pid, secret = (int(part) for part in key)
    con.execute(f"CREATE OR REPLACE TEMP MACRO pg_backend_pid() AS {pid}")
    for name, terminate in (("pg_cancel_backend", "false"), ("pg_terminate_backend", "true")):
        con.execute(f"CREATE OR REPLACE TEMP MACRO {name}(pid) AS "
                    f"vcfzarr_signal_backend({pid}, {secret}, pid, {terminate})")


def _signaller(signal: Signal | None) -> Callable[[int, int, int | None, bool], bool]:
    def signalled(caller_pid: int, caller_secret: int, pid: int | None, terminate: bool) -> bool:
        return signal is not None and pid is not None and \
            signal((int(caller_pid), int(caller_secret)), int(pid), bool(terminate))
    return signalled


def mentions_catalog(sql: str) -> bool:
    """Whether ``sql`` may need :func:`rewrite` (a cheap test, so other queries skip it)."""
    return _CATALOG_WORDS.search(sql) is not None


def _rewrite_code(code: str) -> str:
    for pattern, replacement in _REWRITES:
        code = pattern.sub(replacement, code)
    return code


def rewrite(sql: str) -> str:
    """``sql`` as DuckDB runs it with the session's catalog emulation (see module doc); a text
    longer than :data:`~vcfzarr_sql.engine.sql_text.MAX_TOKENIZED` is left as it is."""
    if len(sql) > sql_text.MAX_TOKENIZED or not mentions_catalog(sql):
        return sql
    out, code = [], ""
    parts = sql_text.pieces(sql)
    for text, literal in parts:
        if not literal:
            code += text
            continue
        cast = _CAST_OPEN.search(code)
        after = next(parts, ("", False))[0]  # the code after the literal (literals never touch)
        closed = cast and _CAST_TO_REGCLASS.match(after)
        suffix = None if closed else _REGCLASS_SUFFIX.match(after)
        if cast and closed:
            code, text, after = code[:cast.start()], f"regclass_oid({text})", after[closed.end():]
        elif suffix:
            text, after = f"regclass_oid({text})", after[suffix.end():]
        out += [_rewrite_code(code), text]
        code = after
    out.append(_rewrite_code(code))
    return "".join(out)
