"""DuckDB sessions a network client may use: the table functions and plain SQL, nothing else.

What a client of a server gets (whatever the protocol: PostgreSQL wire, Flight SQL):

- the ``vcf_zarr(...)`` table functions over stores under the served data directories only
  (:class:`~vcfzarr_sql.store.confined.DataDirs`; paths are checked after resolving symlinks,
  URLs are refused, and every file of a store is read through
  :class:`~vcfzarr_sql.store.confined.ConfinedDirectory`, so a link inside a store cannot lead
  out of it);
- plain SQL over them and over tables of its own session; DuckDB's external access is off
  (no ``read_csv``/``read_text``/``glob``, ``COPY ... TO``, ``ATTACH``, ``INSTALL``/``LOAD``),
  no extension is installed or loaded automatically, Python objects are not scanned by name,
  nothing spills to disk, and the configuration is locked (no ``SET memory_limit``...);
- a shared DuckDB database file, attached read-only unless the server is ``writable``.

Each session of a read-only server is its own DuckDB instance, so ``memory_limit`` holds per
session; a writable server's sessions are connections to one instance (one limit for all).

>>> import tempfile
>>> sessions = LockedDatabase(SessionPolicy(DataDirs.of([tempfile.gettempdir()])))
>>> con = sessions.connect()
>>> con.sql("SELECT 42").fetchall()
[(42,)]
>>> try:
...     con.sql("SELECT * FROM read_text('/etc/hostname')")
... except duckdb.PermissionException as err:
...     print(err)
Permission Error: Cannot access file "/etc/hostname" - file system operations are disabled by configuration
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from vcfzarr_sql.engine import saved_calls
from vcfzarr_sql.engine.connection import Connection
from vcfzarr_sql.engine.scan_defaults import ScanDefaults
from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.serve.pg.config import ServerConfigError
from vcfzarr_sql.store.confined import DataDirs

if TYPE_CHECKING:
    from vcfzarr_sql.store import VczStore

#: DuckDB's memory limit per session unless the server is told otherwise.
DEFAULT_MEMORY_LIMIT = "1GB"

#: DuckDB configuration values, as ``duckdb.connect(config=...)`` takes them.
_Config = dict[str, str | bool | int | float | list[str]]

#: Set when the DuckDB instance is created.
_INSTANCE_CONFIG: _Config = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "temp_directory": "",  # no spilling: a query that needs more memory fails instead
    # no secrets written to, or read from, the server's home (~/.duckdb); and errors about
    # extensions name no directory of the server's
    "allow_persistent_secrets": False,
    "extension_directory": "/nonexistent/vcfzarr-sql-serves-no-extensions",
    # (and current_setting('secret_directory') shows no directory of the server's either)
    "secret_directory": "/nonexistent/vcfzarr-sql-keeps-no-secrets",
    # no scans of the server's Python objects by name (as a SET, cursors would not inherit it)
    "python_enable_replacements": False,
}
#: Set last, in this order (the lock must come last, external access off just before it).
_LOCK_STATEMENTS = (
    "SET enable_progress_bar = false",  # it would print on the server's terminal
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)
#: Names DuckDB keeps for its own catalogs (the attached database must not take one).
_RESERVED_CATALOGS = {"memory", "system", "temp", "main"}


@dataclass(frozen=True)
class SessionPolicy:
    """What sessions may read and use.

    ``database``: a DuckDB file every session sees (None: each session has only its own
    in-memory tables); ``writable``: sessions may change it (otherwise it is attached
    read-only and plain ``CREATE TABLE`` makes a table of the session's own).
    ``memory_limit``: DuckDB's limit per session (for the whole writable database).
    """

    data_dirs: DataDirs
    database: str | None = None
    writable: bool = False
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    threads: int | None = None


def _instance_config(policy: SessionPolicy) -> _Config:
    config: _Config = {**_INSTANCE_CONFIG, "memory_limit": policy.memory_limit}
    if policy.threads:
        config["threads"] = policy.threads
    return config


def _lock(con: duckdb.DuckDBPyConnection) -> None:
    for statement in _LOCK_STATEMENTS:
        con.execute(statement)


def _catalog_name(database: str) -> str:
    stem = os.path.splitext(os.path.basename(database))[0] or "shared"
    return f"{stem}_db" if stem.lower() in _RESERVED_CATALOGS else stem


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class LockedDatabase:
    """Opens locked-down sessions under a :class:`SessionPolicy` (one per client).

    A writable database is opened once, here; a read-only one is attached by each session.
    Opening checks the database once (unless ``check`` is False: a session's process whose
    server checked it), so a bad ``--database`` fails at start, not per client.
    """

    def __init__(self, policy: SessionPolicy, check: bool = True):
        self.policy = policy
        self._shared: duckdb.DuckDBPyConnection | None = None
        try:
            if policy.database is not None and policy.writable:
                self._shared = duckdb.connect(policy.database, config=_instance_config(policy))
                _lock(self._shared)
            elif check:
                self.connect().close()
        except duckdb.Error as err:
            first = str(err).strip().splitlines()[0]
            what = "DuckDB sessions" if policy.database is None else policy.database
            raise ServerConfigError(f"cannot open {what} ({first})") from None

    def connect(self) -> Connection:
        """A new session: a :class:`~vcfzarr_sql.engine.connection.Connection` whose table
        functions read only stores under the data directories."""
        if self._shared is not None:
            con = self._shared.cursor()
        else:
            con = duckdb.connect(":memory:", config=_instance_config(self.policy))
            try:
                self._attach(con)
                _lock(con)
            except BaseException:
                con.close()
                raise
        dirs = self.policy.data_dirs
        # the calls the file's views use, read as data and opened only under the data directories
        saved = saved_calls.load_beside(self.policy.database) \
            if self._shared is None and self.policy.database is not None else None
        return Connection(con, functools.partial(_open_store, dirs),
                          ScanDefaults(base=os.path.join(dirs.roots[0], ".")), expand=dirs.glob,
                          read_files=False, saved=saved)

    def _attach(self, con: duckdb.DuckDBPyConnection) -> None:
        if self.policy.database is None:
            return
        name = _catalog_name(self.policy.database)
        con.execute(f"ATTACH {_literal(self.policy.database)} AS {_quoted(name)} (READ_ONLY)")
        # the file's other schemas too, so that ``schema.table`` names reach them
        others = [schema for (schema,) in con.execute(
            "SELECT schema_name FROM duckdb_schemas() WHERE database_name = ? "
            "AND schema_name NOT IN ('main', ?) ORDER BY 1", [name, saved_calls.SCHEMA]).fetchall()]
        path = ",".join(["memory.main", *(f"{_quoted(name)}.{_quoted(s)}" for s in ["main", *others])])
        con.execute(f"SET search_path = {_literal(path)}")

    def close(self) -> None:
        if self._shared is not None:
            self._shared.close()
            self._shared = None


def _open_store(dirs: DataDirs, path: str) -> VczStore:
    """The store at ``path`` under ``dirs``. A relative path the client wrote is made
    ``ROOT/./path`` under the first data directory before it gets here (:class:`ScanDefaults`):
    its errors name it relative to that directory, never with the server's path of it."""
    try:
        return dirs.open_store(path)
    except VcfZarrError as err:
        root = dirs.roots[0].rstrip(os.sep) + os.sep
        if path.startswith(root + "." + os.sep):
            err.args = tuple(arg.replace(root + "." + os.sep, "").replace(root, "")
                             if isinstance(arg, str) else arg for arg in err.args)
        raise


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"

