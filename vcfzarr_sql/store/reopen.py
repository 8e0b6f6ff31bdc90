"""Stores opened again in another process, from what a pickled :class:`VczStore` carries.

A scan task sent to a worker (Spark, Ray, Daft, multiprocessing) carries its store as
(path, storage options, version token). :func:`reopen` opens each store once per process, so a
worker running many tasks over a store pays for opening it (metadata, samples, region index)
once; the task revalidates it before reading (:meth:`VczStore.is_unchanged`: a ``stat`` of its
metadata when local, one request for its root metadata documents at a URL). A store that
changed since the token was taken is a StoreError: the tasks were planned over another
version.
"""

from __future__ import annotations

import copyreg
import json
import os
import threading
from typing import Any

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.store.cohort import CohortStore
from vcfzarr_sql.store.opening import open_store
from vcfzarr_sql.store.vcz import VczStore

_opened: dict[tuple[str, str], VczStore] = {}
_lock = threading.Lock()


def _forget_after_fork() -> None:
    """In a forked child: open stores again (file handles must not be shared with the parent)."""
    global _lock
    _opened.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def _key(path: str, storage_options: dict[str, Any]) -> tuple[str, str]:
    return path, json.dumps(storage_options, sort_keys=True, default=repr)


def reopen(path: str, storage_options: dict[str, Any] | None, token: tuple) -> VczStore:
    """The store at ``path`` as it was when ``token`` was taken (its ``version_token``).

    Opened once per process and kept for later tasks of the same version (they revalidate it
    before reading). StoreError when the store at ``path`` now has another version.
    """
    key = _key(path, storage_options or {})
    with _lock:
        store = _opened.get(key)
        if store is None or store.version_token != token:
            store = _opened[key] = open_store(path, storage_options=storage_options)
    if store.version_token != token:
        raise StoreError(f"{path}: the store changed after the scan was planned; plan it again")
    return store


def _reduce(store: VczStore) -> tuple:
    return reopen, (store.path, store.storage_options, store.version_token)


copyreg.pickle(VczStore, _reduce)
copyreg.pickle(CohortStore, _reduce)
