"""Table-function calls that a database file remembers, so views over them outlive the session.

DuckDB stores a view as SQL text, in which a call such as ``vcf_zarr('x.zarr')`` stands as the
name of the relation registered for it (a Python object, gone with the session). When a
``CREATE`` statement on a database file uses calls, :func:`save` writes them to the table
:data:`TABLE`; connecting to the file again registers them (:func:`load`), so the views work.
"""

from __future__ import annotations

import duckdb

from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS, ScanSpec, canonical_path

SCHEMA = "vcfzarr_sql"
TABLE = f"{SCHEMA}.table_function_calls"


def is_database_file(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s current database is a file it may write to."""
    try:
        rows = con.execute(
            "SELECT path IS NOT NULL AND path <> '' AND NOT readonly FROM duckdb_databases() "
            "WHERE database_name = current_database()"
        ).fetchall()
    except duckdb.Error:  # a DuckDB without these columns: remember nothing
        return False
    return bool(rows and rows[0][0])


def save(con: duckdb.DuckDBPyConnection, calls: dict[str, ScanSpec]) -> None:
    """Remember ``calls`` (relation name -> call) in the database."""
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} (name VARCHAR PRIMARY KEY, function VARCHAR, "
        "path VARCHAR, region VARCHAR, samples VARCHAR[])"
    )
    con.executemany(
        f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?, ?)",
        [
            [name, spec.function, canonical_path(spec.path), spec.region, _saved_samples(spec)]
            for name, spec in calls.items()
        ],
    )


def _saved_samples(spec: ScanSpec) -> list[str | None] | None:
    """A call's samples as saved: a NULL first marks samples left out (``exclude_samples``)."""
    if spec.samples is None:
        return None
    return [None, *spec.samples] if spec.exclude_samples else list(spec.samples)


def load(con: duckdb.DuckDBPyConnection) -> dict[str, ScanSpec]:
    """The calls the database remembers, by relation name: rows as :func:`save` writes them
    (a known function, and the name its relation is registered under); others are skipped."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?",
        [SCHEMA, TABLE.split(".")[1]],
    ).fetchall()[0][0]
    if not exists:
        return {}
    rows = con.execute(f"SELECT name, function, path, region, samples FROM {TABLE}").fetchall()
    calls = {}
    for name, function, path, region, samples in rows:
        if function not in TABLE_FUNCTIONS or path is None:
            continue  # (not a row save wrote: anyone who may write the database may add rows)
        excluded = bool(samples) and samples[0] is None
        if excluded:
            samples = samples[1:]
        spec = ScanSpec(function, path, region, None if samples is None else tuple(samples), excluded)
        if spec.relation_name == name:  # (else it would stand for a table of that name)
            calls[name] = spec
    return calls
