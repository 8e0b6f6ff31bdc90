"""Flight SQL's catalog commands answered from DuckDB's ``information_schema``, as the Arrow
tables the Flight SQL specification lays down (column names, types and nullability).

>>> import duckdb
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE TABLE notes (id BIGINT, note VARCHAR)")
>>> tables(con, None, None, "not%", [], include_schema=False).to_pylist()
[{'catalog_name': 'memory', 'db_schema_name': 'main', 'table_name': 'notes', 'table_type': 'TABLE'}]
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa

from vcfzarr_sql.engine.saved_calls import SCHEMA as HIDDEN_SCHEMA

__all__ = ["CATALOGS", "DB_SCHEMAS", "PRIMARY_KEYS", "TABLE_TYPES", "catalogs", "db_schemas",
           "keys", "sql_info", "table_types", "tables"]

CATALOGS = pa.schema([pa.field("catalog_name", pa.string(), False)])
DB_SCHEMAS = pa.schema([pa.field("catalog_name", pa.string()),
                        pa.field("db_schema_name", pa.string(), False)])
TABLES = pa.schema([pa.field("catalog_name", pa.string()), pa.field("db_schema_name", pa.string()),
                    pa.field("table_name", pa.string(), False), pa.field("table_type", pa.string(), False)])
TABLES_WITH_SCHEMA = TABLES.append(pa.field("table_schema", pa.binary(), False))
TABLE_TYPES = pa.schema([pa.field("table_type", pa.string(), False)])
PRIMARY_KEYS = pa.schema([
    pa.field("catalog_name", pa.string()), pa.field("db_schema_name", pa.string()),
    pa.field("table_name", pa.string(), False), pa.field("column_name", pa.string(), False),
    pa.field("key_name", pa.string()), pa.field("key_sequence", pa.int32(), False)])
#: Exported, imported keys and cross references (DuckDB reports none through Flight SQL).
FOREIGN_KEYS = pa.schema([
    pa.field("pk_catalog_name", pa.string()), pa.field("pk_db_schema_name", pa.string()),
    pa.field("pk_table_name", pa.string(), False), pa.field("pk_column_name", pa.string(), False),
    pa.field("fk_catalog_name", pa.string()), pa.field("fk_db_schema_name", pa.string()),
    pa.field("fk_table_name", pa.string(), False), pa.field("fk_column_name", pa.string(), False),
    pa.field("key_sequence", pa.int32(), False), pa.field("fk_key_name", pa.string()),
    pa.field("pk_key_name", pa.string()), pa.field("update_rule", pa.uint8(), False),
    pa.field("delete_rule", pa.uint8(), False)])

_SQL_INFO_VALUE = pa.dense_union([
    pa.field("string_value", pa.string()), pa.field("bool_value", pa.bool_()),
    pa.field("bigint_value", pa.int64()), pa.field("int32_bitmask", pa.int32()),
    pa.field("string_list", pa.list_(pa.string())),
    pa.field("int32_to_int32_list_map", pa.map_(pa.int32(), pa.list_(pa.int32()))),
])
SQL_INFO = pa.schema([pa.field("info_name", pa.uint32(), False),
                      pa.field("value", _SQL_INFO_VALUE, False)])

#: DuckDB's table types as Flight SQL (and JDBC) name them.
_TABLE_TYPES = {"BASE TABLE": "TABLE", "VIEW": "VIEW", "LOCAL TEMPORARY": "LOCAL TEMPORARY"}


def _where(conditions: Sequence[tuple[str, str | None]]) -> tuple[str, list[str]]:
    """A WHERE clause of ``column LIKE pattern`` for each pattern given (None: no filter)."""
    used = [(column, pattern) for column, pattern in conditions if pattern is not None]
    clause = " AND ".join(f"{column} LIKE ? ESCAPE '\\'" for column, _ in used)
    return (f"WHERE {clause}" if clause else ""), [pattern for _, pattern in used]


def catalogs(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """CommandGetCatalogs: DuckDB's attached databases."""
    rows = con.sql("SELECT DISTINCT catalog_name FROM information_schema.schemata "
                   "WHERE catalog_name NOT IN ('system', 'temp') ORDER BY 1").fetchall()
    return pa.Table.from_pylist([{"catalog_name": name} for (name,) in rows], CATALOGS)


def db_schemas(con: duckdb.DuckDBPyConnection, catalog: str | None, pattern: str | None) -> pa.Table:
    """CommandGetDbSchemas: schemas of ``catalog`` (None: every one) named like ``pattern``."""
    where, params = _where([("catalog_name", catalog), ("schema_name", pattern)])
    rows = con.sql("SELECT catalog_name, schema_name FROM information_schema.schemata "
                   f"{where} ORDER BY 1, 2", params=params).fetchall()
    return pa.Table.from_pylist(
        [{"catalog_name": c, "db_schema_name": s} for c, s in rows
         if c not in ("system", "temp") and s != HIDDEN_SCHEMA],
        DB_SCHEMAS)


#: Flight SQL's column metadata keys (what ADBC's ``get_objects`` reports as ``xdbc_*``).
TYPE_NAME = b"ARROW:FLIGHT:SQL:TYPE_NAME"
_WHERE_FROM = (b"ARROW:FLIGHT:SQL:CATALOG_NAME", b"ARROW:FLIGHT:SQL:SCHEMA_NAME",
               b"ARROW:FLIGHT:SQL:TABLE_NAME")


def _arrow_schema(con: duckdb.DuckDBPyConnection, catalog: str, schema: str, table: str) -> bytes:
    """The Arrow schema of a table or view (IPC-serialized), from a query reading no rows;
    each field's metadata names DuckDB's type of the column (``TYPE_NAME``) and where it is."""
    name = ".".join('"' + part.replace('"', '""') + '"' for part in (catalog, schema, table))
    arrow = con.sql(f"SELECT * FROM {name} LIMIT 0").to_arrow_table().schema
    types = dict(con.sql("SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = ? "
                         "AND schema_name = ? AND table_name = ?",
                         params=[catalog, schema, table]).fetchall())
    fields = [field.with_metadata({**dict(zip(_WHERE_FROM, (catalog, schema, table))),
                                   TYPE_NAME: types.get(field.name, str(field.type)).encode()})
              for field in arrow]
    return pa.schema(fields, arrow.metadata).serialize().to_pybytes()


def tables(con: duckdb.DuckDBPyConnection, catalog: str | None, schema_pattern: str | None,
           table_pattern: str | None, table_types: Sequence[str], *, include_schema: bool) -> pa.Table:
    """CommandGetTables: tables and views matching the filters, with each one's Arrow schema
    when ``include_schema``."""
    where, params = _where([("table_catalog", catalog), ("table_schema", schema_pattern),
                            ("table_name", table_pattern)])
    rows = con.sql("SELECT table_catalog, table_schema, table_name, table_type "
                   f"FROM information_schema.tables {where} ORDER BY 1, 2, 3", params=params).fetchall()
    out = []
    for catalog_name, schema_name, table_name, table_type in rows:
        kind = _TABLE_TYPES.get(table_type, table_type)
        if catalog_name in ("system", "temp") or schema_name == HIDDEN_SCHEMA \
                or (table_types and kind not in table_types):
            continue
        row = {"catalog_name": catalog_name, "db_schema_name": schema_name,
               "table_name": table_name, "table_type": kind}
        if include_schema:
            row["table_schema"] = _arrow_schema(con, catalog_name, schema_name, table_name)
        out.append(row)
    return pa.Table.from_pylist(out, TABLES_WITH_SCHEMA if include_schema else TABLES)


def table_types() -> pa.Table:
    """CommandGetTableTypes."""
    return pa.Table.from_pylist([{"table_type": kind} for kind in _TABLE_TYPES.values()], TABLE_TYPES)


def keys(schema: pa.Schema) -> pa.Table:
    """Primary and foreign keys: none (DuckDB's constraints are not reported)."""
    return schema.empty_table()


def sql_info(info: dict[int, str | bool | int], wanted: Sequence[int]) -> pa.Table:
    """CommandGetSqlInfo: the values of ``info`` asked for (all when ``wanted`` is empty)."""
    names = [name for name in (wanted or sorted(info)) if name in info]
    values = [info[name] for name in names]
    codes = [1 if isinstance(v, bool) else 2 if isinstance(v, int) else 0 for v in values]
    children = [pa.array([v for v, c in zip(values, codes) if c == 0], pa.string()),
                pa.array([v for v, c in zip(values, codes) if c == 1], pa.bool_()),
                pa.array([v for v, c in zip(values, codes) if c == 2], pa.int64()),
                pa.array([], pa.int32()), pa.array([], pa.list_(pa.string())),
                pa.array([], pa.map_(pa.int32(), pa.list_(pa.int32())))]
    seen = [0, 0, 0]
    offsets = []
    for code in codes:
        offsets.append(seen[code])
        seen[code] += 1
    value = pa.UnionArray.from_dense(pa.array(codes, pa.int8()), pa.array(offsets, pa.int32()),
                                     children, [f.name for f in _SQL_INFO_VALUE])
    return pa.Table.from_arrays([pa.array(names, pa.uint32()), value], schema=SQL_INFO)
