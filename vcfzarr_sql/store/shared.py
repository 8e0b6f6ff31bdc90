"""Opened local stores shared by the engine sessions of one process.

Opening a store reads its metadata and small arrays: ~4.5 ms of CPU at 10,000 samples (the
consolidated JSON, the sample names), and the sample-name index and table schemas made from
them at the first query (:mod:`vcfzarr_sql.query.request`, per store object) another ~1 ms.
A process that opens a session per query (a notebook cell, a script run per request) paid
that every time. :func:`open_shared` hands a later opening the store object an earlier one
made, when nothing that opening read has changed on disk since.

"Nothing changed" is a ``stat`` (inode, size, mtime and ctime in ns) of every file opening
reads: the root metadata files and the region index (:func:`~.vcz.metadata_fingerprint`,
what a session already checks before each query) and the chunk files of the small arrays it
decodes (sample, contig and filter names, contig lengths), so a store replaced, re-converted,
re-indexed, or with its ``sample_id`` rewritten in place is opened again, and a damaged one
fails to open again (an opening that fails is not kept). URL stores, zip archives and cohorts
are opened each time (a URL's check is a round trip, and what a scan fetches first is filed
per store object: :mod:`.revalidation`).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

from vcfzarr_sql.format import spec
from vcfzarr_sql.store import vcz
from vcfzarr_sql.store.kvstore import is_url
from vcfzarr_sql.store.opening import open_store

#: Stores kept (the last ones opened): each holds its metadata and small arrays (the sample
#: names: ~1 MB at 10,000 samples).
MOST_SHARED = 16
#: The arrays opening decodes (:meth:`~.vcz.VczStore.load`), whose chunk files are checked.
_SMALL_ARRAYS = (spec.SAMPLE_ID, spec.CONTIG_ID, spec.CONTIG_LENGTH, spec.FILTER_ID,
                 spec.FILTER_DESCRIPTION)

_lock = threading.Lock()
_shared: OrderedDict[tuple[str, str], tuple[tuple, vcz.VczStore]] = OrderedDict()


def _files_state(directory: str) -> tuple:
    """(path, :func:`~.vcz.file_state`) of every file under ``directory`` (Zarr v3 and nested v2
    chunk keys are subdirectories), sorted."""
    found = []
    for where, dirs, files in os.walk(directory):
        dirs.sort()
        found += [(os.path.join(where, name), vcz.file_state(os.path.join(where, name)))
                  for name in sorted(files)]
    return tuple(found)


def opening_fingerprint(location: str) -> tuple | None:
    """The state of every file opening the local store directory at ``location`` reads, or
    None when it is not one (a URL, a zip archive, nothing there)."""
    if is_url(location) or not os.path.isdir(location):
        return None
    metadata = vcz.metadata_fingerprint(location)
    if metadata is None:
        return None
    return metadata, tuple(_files_state(os.path.join(location, name)) for name in _SMALL_ARRAYS)


def open_shared(path: str) -> vcz.VczStore:
    """:func:`~.opening.open_store` of ``path``, or the store object an earlier call opened
    there when every file opening reads is unchanged since (see the module's docstring)."""
    key = (path, os.path.abspath(path))  # (the path as given: errors name the store by it)
    fingerprint = opening_fingerprint(path)  # (before reading: a change while opening shows)
    if fingerprint is None:
        return open_store(path)
    with _lock:
        kept = _shared.get(key)
        if kept is not None and kept[0] == fingerprint:
            _shared.move_to_end(key)
            return kept[1]
    store = open_store(path)
    if type(store) is vcz.VczStore:  # (a cohort opens its batches lazily: not kept)
        with _lock:
            _shared[key] = (fingerprint, store)
            _shared.move_to_end(key)
            while len(_shared) > MOST_SHARED:
                _shared.popitem(last=False)
    return store


def _forget_after_fork() -> None:
    """In a forked child: a new lock (the parent's may have been held by another thread)."""
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
