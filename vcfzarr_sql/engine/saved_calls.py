"""Table-function calls that a database file's views use, kept beside it so the views outlive
the session.

DuckDB stores a view as SQL text, in which a call such as ``vcf_zarr('x.zarr')`` stands as the
name of the relation registered for it (a Python object, gone with the session). When a
``CREATE`` statement on a database file uses calls, :func:`save` writes them to a small JSON
file next to the database (:func:`sidecar`: ``FILE.vcfzarr-calls.json``); connecting to the
database again registers them (:func:`load`), so the views work. Nothing is written into the
database itself: its catalog holds only what its user made, and no client of a server lists
the adapter's bookkeeping. A database written by an older version keeps its calls in the
table :data:`TABLE`, which is still read (never written).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile

import duckdb

from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS, ScanSpec, canonical_path

SCHEMA = "vcfzarr_sql"
#: Where older versions kept the calls, in the database itself.
TABLE = f"{SCHEMA}.table_function_calls"
#: The file of calls beside a database ``FILE``: ``FILE`` + this suffix.
SUFFIX = ".vcfzarr-calls.json"


def _database_path(con: duckdb.DuckDBPyConnection) -> tuple[str, bool] | None:
    """(path, read-only) of ``con``'s current database when it is a file."""
    try:
        rows = con.execute(
            "SELECT path, readonly FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
    except duckdb.Error:  # a DuckDB without these columns: remember nothing
        return None
    if not rows or not rows[0][0]:
        return None
    return str(rows[0][0]), bool(rows[0][1])


def is_database_file(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s current database is a file it may write to."""
    found = _database_path(con)
    return found is not None and not found[1]


def sidecar(database: str) -> str:
    """The file of calls of the database file ``database``.

    >>> sidecar("/work/team.duckdb")
    '/work/team.duckdb.vcfzarr-calls.json'
    """
    return database + SUFFIX


def _row(spec: ScanSpec) -> dict[str, object]:
    return {"function": spec.function, "path": canonical_path(spec.path), "region": spec.region,
            "samples": None if spec.samples is None else list(spec.samples),
            "exclude_samples": spec.exclude_samples}


def save(con: duckdb.DuckDBPyConnection, calls: dict[str, ScanSpec]) -> None:
    """Remember ``calls`` (relation name -> call) beside ``con``'s database file (replaced
    whole, atomically, so a reader never sees half of it)."""
    found = _database_path(con)
    if found is None:
        return
    path = sidecar(found[0])
    kept = _read(path)
    kept.update({name: _row(spec) for name, spec in calls.items()})
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".vcfzarr-calls-", dir=directory)
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(kept, out, indent=1, sort_keys=True)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _read(path: str) -> dict[str, dict[str, object]]:
    """The rows of a file of calls (none when it is missing or not such a file)."""
    try:
        with open(path) as stream:
            rows = json.load(stream)
    except (OSError, ValueError):
        return {}
    return {name: row for name, row in rows.items() if isinstance(row, dict)} \
        if isinstance(rows, dict) else {}


def _legacy_rows(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, object]]:
    """The rows of :data:`TABLE`, in a database an older version wrote."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = ? AND table_name = ?", [SCHEMA, TABLE.split(".")[1]],
    ).fetchall()[0][0]
    if not exists:
        return {}
    rows = con.execute(f"SELECT name, function, path, region, samples FROM {TABLE}").fetchall()
    return {name: {"function": function, "path": path, "region": region, "samples": samples}
            for name, function, path, region, samples in rows}


def load(con: duckdb.DuckDBPyConnection) -> dict[str, ScanSpec]:
    """The calls ``con``'s database file remembers, by relation name: rows as :func:`save`
    writes them (a known function, and the name its relation is registered under); others are
    skipped (anyone who may write the database or its directory may add rows)."""
    found = _database_path(con)
    if found is None:
        return {}
    return _calls({**_legacy_rows(con), **_read(sidecar(found[0]))})


def load_beside(database: str) -> dict[str, ScanSpec]:
    """The calls kept beside the database file ``database`` (one a server attaches read-only to
    each session, whose current database is its own): the views in it over the table functions
    work in those sessions. (A file an older version wrote keeps them in :data:`TABLE`: open it
    once with :func:`~vcfzarr_sql.connect` and make a view, and they are written beside it.)"""
    return _calls(_read(sidecar(database)))


def _calls(rows: dict[str, dict[str, object]]) -> dict[str, ScanSpec]:
    calls = {}
    for name, row in rows.items():
        function, path, region, samples = (row.get(key) for key in ("function", "path", "region", "samples"))
        excluded = row.get("exclude_samples", False)
        if function not in TABLE_FUNCTIONS or not isinstance(path, str) \
                or not isinstance(region, (str, type(None))) or not isinstance(excluded, bool) \
                or not (samples is None or (isinstance(samples, list)
                                            and all(isinstance(s, str) for s in samples))):
            continue
        spec = ScanSpec(str(function), path, region, None if samples is None else tuple(samples), excluded)
        if spec.relation_name == name:  # (else it would stand for a table of that name)
            calls[name] = spec
    return calls
