"""Chunk reads from a remote store, many in flight: a scan learns which chunks a piece reads,
then fetches those of the next pieces in one request batch (fsspec's concurrent ``cat``).

Over a URL each chunk read waits a round trip; a piece of a scan reads a handful of arrays,
and a task many pieces. :class:`FetchingSource` stands in for the store: it records the
arrays (and the chunk indexes along their other axes) that decoding reads, and
:meth:`FetchingSource.prefetch` gets the same chunks of further variant chunks with one
``get_many`` (concurrent in fsspec's async filesystems: s3, gcs, http). Prefetched chunks
are kept until the next prefetch (pieces of one variant chunk share its site arrays); any other
read goes to the store.

What the pieces of a scan read is remembered per store and scan shape (:func:`scan_shape`:
the columns decoded and the sample chunks), so the next scan of that shape (a warm query)
fetches even its first window in one batch: a warm region query waits for two round trips
(revalidating the store, then its chunks) instead of one per array.

>>> from types import SimpleNamespace
>>> class Store:
...     is_remote, variants_chunk_size = True, 4
...     def array_info(self, name): return SimpleNamespace(chunks=(4,), dims=("variants",))
...     def read_chunk_bytes(self, name, chunk): return f"{name}{chunk}".encode()
...     def read_chunks_bytes(self, keys): return {k: f"{k[0]}{k[1]}!".encode() for k in keys}
...     def decode_chunk(self, name, raw, chunk): return raw
>>> source = FetchingSource(Store())
>>> source.read_chunk("pos", (0,))
b'pos(0,)'
>>> source.prefetch([1, 2])
>>> source.read_chunk("pos", (2,)), source.read_chunk("pos", (3,))
(b'pos(2,)!', b'pos(3,)')
"""

from __future__ import annotations

import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from vcfzarr_sql.scan.blocks import array_chunk
from vcfzarr_sql.store.derived import variant_length

#: (array, chunk indexes after the variants axis) that scans read, by store and scan shape.
_learned: weakref.WeakKeyDictionary[Any, dict[tuple, set[tuple[str, tuple[int, ...]]]]] = (
    weakref.WeakKeyDictionary()
)
_learned_lock = threading.Lock()
#: Threads that wait for background fetches (not decode threads: a fetch mostly waits), one
#: per scan fetching at once, up to four (started as needed).
_fetcher: ThreadPoolExecutor | None = None


def _fetch_thread() -> ThreadPoolExecutor:
    global _fetcher
    with _learned_lock:
        if _fetcher is None:
            _fetcher = ThreadPoolExecutor(max_workers=4, thread_name_prefix="vcfzarr-fetch")
        return _fetcher


def _forget_after_fork() -> None:
    """In a forked child: the parent's fetch threads and lock were not copied."""
    global _fetcher, _learned_lock
    _fetcher, _learned_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def scan_shape(store: Any, plan: Any) -> tuple:
    """What decides which chunks the pieces of ``plan`` read, beside their variant chunk: the
    columns decoded, and the sample chunks of each sample group."""
    size = store.samples_chunk_size
    groups = tuple(
        (chunk, None if samples is None else tuple(np.unique(samples // size).tolist()))
        for chunk, samples in plan.sample_groups
    )
    return plan.table, plan.filtered_columns, plan.unfiltered_columns, groups


def learned_patterns(store: Any, shape: tuple) -> set[tuple[str, tuple[int, ...]]]:
    """The (shared) set of what scans of ``shape`` over ``store`` were seen to read."""
    with _learned_lock:
        return _learned.setdefault(store, {}).setdefault(shape, set())


class FetchingSource:
    """The store, with chunk bytes prefetched in batches (thread-safe)."""

    def __init__(self, store: Any, patterns: set[tuple[str, tuple[int, ...]]] | None = None):
        self._store = store
        self._lock = threading.Lock()
        #: (array, chunk indexes after the variants axis) read so far (shared with earlier
        #: scans of the same shape: guarded by the module's lock)
        self._patterns = set() if patterns is None else patterns
        self._fetched: dict[tuple[str, tuple[int, ...]], bytes | None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def read_chunk_bytes(self, name: str, chunk: tuple[int, ...]) -> bytes | None:
        key = (name, tuple(chunk))
        with _learned_lock:
            self._patterns.add((name, key[1][1:]))
        with self._lock:
            if key in self._fetched:
                return self._fetched[key]
        return self._store.read_chunk_bytes(name, chunk)

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        return self._store.decode_chunk(name, self.read_chunk_bytes(name, chunk), chunk)

    def read_chunk_strings(self, name: str, chunk: tuple[int, ...]) -> pa.Array:
        return self._store.decode_chunk_strings(name, self.read_chunk_bytes(name, chunk), chunk)

    def variant_length(self, chunk_index: int) -> np.ndarray:
        return variant_length(self, chunk_index)

    @property
    def knows_reads(self) -> bool:
        """Whether pieces were seen to read any chunk (so :meth:`fetch` fetches something)."""
        with _learned_lock:
            return bool(self._patterns)

    def fetch(self, variant_chunks: Iterable[int]) -> dict:
        """In one batch, the bytes of the chunks of ``variant_chunks`` that pieces were seen
        to read (by (array, chunk)), for :meth:`use`."""
        with _learned_lock:
            patterns = list(self._patterns)
        chunks = list(dict.fromkeys(int(c) for c in variant_chunks))
        keys = dict.fromkeys(
            (name, (array_chunk(self._store, self._store.array_info(name), c), *rest))
            for c in chunks
            for name, rest in patterns
        )
        return self._store.read_chunks_bytes(list(keys)) if keys else {}

    def use(self, fetched: dict) -> None:
        """Serve reads from ``fetched`` (a :meth:`fetch`), forgetting what was fetched before."""
        with self._lock:
            self._fetched = fetched

    def prefetch(self, variant_chunks: Iterable[int]) -> None:
        """Fetch, in one batch, the chunks of ``variant_chunks`` that pieces read so far read
        (forgetting those fetched before)."""
        self.use(self.fetch(variant_chunks))


def fetching(store: Any, plan: Any = None) -> Any:
    """``store`` wrapped in a :class:`FetchingSource` when it is remote, else ``store``; with
    ``plan``, one that starts from what earlier scans of the same shape read."""
    if not getattr(store, "is_remote", False):
        return store
    return FetchingSource(store, None if plan is None else learned_patterns(store, scan_shape(store, plan)))


def fetched_windows(source: Any, variant_chunks: np.ndarray, window: int) -> Iterator[range]:
    """The pieces (of variant chunks ``variant_chunks``) in windows of ``window``, as ranges.

    Over a :class:`FetchingSource` (or a source forwarding to one), the chunks the pieces of
    a window read are fetched in one batch before it is yielded, and once the source knows
    what pieces read, the next window's are fetched meanwhile (in a fetch thread); a window
    whose fetch was abandoned (the consumer stopped) is cancelled, not waited for. Over any
    other source, one window of every piece.
    """
    count = len(variant_chunks)
    if not hasattr(source, "fetch"):
        yield range(count)
        return
    pending = None
    try:
        for start in range(0, count, window):
            stop = min(start + window, count)
            if pending is None:
                source.use(source.fetch(variant_chunks[start:stop].tolist()))
            else:
                source.use(pending.result())
            pending = None
            if stop < count and source.knows_reads:
                pending = _fetch_thread().submit(source.fetch, variant_chunks[stop : stop + window].tolist())
            yield range(start, stop)
    finally:
        if pending is not None:
            pending.cancel()
