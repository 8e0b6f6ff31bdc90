"""One in-memory DuckDB database lent to the sessions of a process, one session at a time.

``duckdb.connect()`` costs ~20 ms of CPU (DuckDB builds its catalog of ~thousands of built-in
functions for every new database), and destroying the database another ~2 ms: more than a
small query costs (per-sample counts of 5,000 samples x 6,000 records: ~10 ms). A process
that opens a session per query (a script run per request, a notebook's ``connect().sql(...)``)
paid it every time. :func:`lend` gives a new in-memory session a ``cursor()`` of a database
an earlier session left exactly as DuckDB made it, and makes one otherwise.

A session may change its database in many ways (tables, macros, ``SET``, ``ATTACH``, ``LOAD``,
a relation's ``create``...). Every one of them moves DuckDB's catalog version, a counter of the
database (``_catalog_version()``; a ``SELECT`` does not move it, and neither does what dies
with the session's connection: its temporary objects, prepared statements, registered
objects, random seed). So a database goes back to the spare only when its counter moved by
exactly the session's own registrations of its relations (:meth:`Lease.changed`), once the
session's connection is gone (closed, or collected: every relation or result of it holds
it), and only if nothing could have reached the database around the session's accounting
(:meth:`Lease.keep`: the raw DuckDB connection handed out, a cursor of it made). Otherwise it
is left to be destroyed as before, when its last connection goes. Sessions that live at the same time have databases of their own (one
spare), and a database with a configuration, a file or ``read_only`` is never lent. A server's
sessions do not come here (:mod:`vcfzarr_sql.serve.pg.lockdown`: a locked-down database per
session, each in a process of its own).
"""

from __future__ import annotations

import os
import threading
import weakref

import duckdb

_lock = threading.Lock()
#: The database no session holds: its root connection (used for nothing but the counter).
_spare: duckdb.DuckDBPyConnection | None = None


def _version(root: duckdb.DuckDBPyConnection) -> int | None:
    """The database's catalog version (None: a DuckDB without it; nothing is lent then)."""
    read = getattr(root, "_catalog_version", None)
    return read() if read is not None else None


class Lease:
    """The database behind one session's connection, given back by :meth:`end`."""

    def __init__(self, root: duckdb.DuckDBPyConnection, version: int | None):
        self._root = root
        self._expected = version
        self._returnable = version is not None
        self._ended = False

    def changed(self) -> None:
        """The session moved the counter once, itself (registered or unregistered a relation)."""
        if self._expected is not None:
            self._expected += 1

    def keep(self) -> None:
        """Something may reach the database outside the session's accounting: never lend it."""
        self._returnable = False

    def end(self) -> None:
        """The session's connection is gone: lend the database again if it is as it was made
        (only the session's own registrations moved its counter); otherwise leave it to go."""
        global _spare
        with _lock:
            if self._ended:
                return
            self._ended = True
            if self._returnable and _spare is None and _version(self._root) == self._expected:
                _spare = self._root
        # (otherwise the root is dropped, not closed: a cursor made of the session's
        # connection keeps the database alive and working, as without lending)
        del self._root


def lend() -> tuple[duckdb.DuckDBPyConnection, Lease]:
    """A connection to a fresh in-memory database (the spare one, or a new one) and its lease,
    which ends when the connection is collected or :meth:`Lease.end` is called (once)."""
    global _spare
    with _lock:
        root, _spare = _spare, None
    if root is None:
        root = duckdb.connect()
        _progress_bar[0] = root.sql("SELECT current_setting('enable_progress_bar')").fetchall()[0][0]
    connection = root.cursor()
    lease = Lease(root, _version(root))
    weakref.finalize(connection, lease.end)
    # A cursor starts without the progress bar a new connection has (the one setting of
    # theirs that differs): a session must answer as over a new connection (~0.2 ms).
    connection.execute(f"SET enable_progress_bar = {str(_progress_bar[0]).lower()}")
    lease.changed()
    return connection, lease


#: ``enable_progress_bar`` of a new DuckDB connection, read from the last one made here.
_progress_bar: list[object] = [True]


def _drop_before_fork() -> None:
    """Before a fork, the spare database is destroyed (here, where its threads run): a child
    has none of DuckDB's threads, and destroying a database there crashes it."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    del spare


def _new_lock_after_fork() -> None:
    """In a forked child: a new lock (the parent's may have been held by another thread)."""
    global _lock
    _lock = threading.Lock()


os.register_at_fork(before=_drop_before_fork, after_in_child=_new_lock_after_fork)
