"""Chunk reads from a remote store, many in flight: a scan learns which chunks a piece reads,
then fetches those of the next pieces in one request batch (fsspec's concurrent ``cat``).

Over a URL each chunk read waits a round trip; a piece of a scan reads a handful of arrays,
and a task many pieces. :class:`FetchingSource` is the chunk source
(:class:`~vcfzarr_sql.store.source.ChunkSource`) a scan of a remote store reads through: it records the
arrays (and the chunk indexes along their other axes) that decoding reads, and
:meth:`FetchingSource.fetch` gets the same chunks of further variant chunks with one
``get_many`` (concurrent in fsspec's async filesystems: s3, gcs, http). A scan fetches its
pieces in windows (:class:`WindowFetches`), a few windows ahead of the pieces it decodes, and
keeps a window's chunks until its last piece is decoded (pieces of one variant chunk share its
site arrays); any other read goes to the store.

What the pieces of a scan read is remembered per store and scan shape (:func:`scan_shape`:
the columns decoded and the sample chunks), so the next scan of that shape (a warm query)
fetches even its first window in one batch: a warm region query waits for two round trips
(revalidating the store, then its chunks) instead of one per array. What a warm scan fetches
first is recorded (:func:`.revalidation.record_opening`): a session asking the same query
again requests those chunks while it revalidates the store, and the scans take them from that
advance (:func:`.revalidation.offered`) once the store is found unchanged: one round trip.

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
>>> source.keep(source.fetch([1, 2]))
>>> source.read_chunk("pos", (2,)), source.read_chunk("pos", (3,))
(b'pos(2,)!', b'pos(3,)')
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from vcfzarr_sql.store.alignment import array_chunk
from vcfzarr_sql.store.derived import variant_length
from vcfzarr_sql.store.revalidation import Advance, Fetched, Key, offered, record_opening, withdraw
from vcfzarr_sql.store.threads import SharedPool
from vcfzarr_sql.store.vcz import VczStore

if TYPE_CHECKING:  # (imported where Arrow is used: commands that read no strings never load it)
    from concurrent.futures import Future  # (imported by a remote store's first fetch)

    import pyarrow as pa

#: (array, chunk indexes after the variants axis) that scans read, by store and scan shape
#: (the shapes used last; a shape forgotten is learned again by its next scan).
_learned: weakref.WeakKeyDictionary[VczStore, OrderedDict[tuple, set[tuple[str, tuple[int, ...]]]]] = (
    weakref.WeakKeyDictionary()
)
#: Scan shapes remembered per store.
LEARNED_SHAPES = 64
_learned_lock = threading.Lock()
#: Pieces a scan keeps fetched or in flight beyond the window it decodes: at least two windows
#: ahead, and more windows while their pieces add up to at most this (a scan's first windows
#: are short: fetched together, a short scan waits for one round trip, not one per window).
AHEAD_PIECES = 64
#: Threads that wait for background fetches (not decode threads: a fetch mostly waits), one
#: per window fetched at once, up to :data:`FETCH_THREADS` (started as needed).
FETCH_THREADS = 8
_FETCHERS = SharedPool(FETCH_THREADS, "vcfzarr-fetch")


def _forget_after_fork() -> None:
    """In a forked child: the parent's lock was not copied."""
    global _learned_lock
    _learned_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


class Scan(Protocol):
    """What :func:`scan_shape` reads of a scan's plan (a ``query.plan.ScanPlan`` is one)."""

    @property
    def table(self) -> str: ...

    @property
    def filtered_columns(self) -> tuple[str, ...]: ...

    @property
    def unfiltered_columns(self) -> tuple[str, ...]: ...

    @property
    def sample_groups(self) -> tuple[tuple[int | None, np.ndarray | None], ...]: ...


def scan_shape(store: VczStore, plan: Scan) -> tuple:
    """What decides which chunks the pieces of ``plan`` read, beside their variant chunk: the
    columns decoded, and the sample chunks of each sample group."""
    size = store.samples_chunk_size
    groups = tuple(
        (chunk, None if samples is None else tuple(np.unique(samples // size).tolist()))
        for chunk, samples in plan.sample_groups
    )
    return plan.table, plan.filtered_columns, plan.unfiltered_columns, groups


def learned_patterns(store: VczStore, shape: tuple) -> set[tuple[str, tuple[int, ...]]]:
    """The (shared) set of what scans of ``shape`` over ``store`` were seen to read."""
    with _learned_lock:
        shapes = _learned.setdefault(store, OrderedDict())
        patterns = shapes.setdefault(shape, set())
        shapes.move_to_end(shape)
        while len(shapes) > LEARNED_SHAPES:
            shapes.popitem(last=False)
        return patterns


class FetchingSource:
    """The chunk source over ``store`` whose chunk bytes are prefetched in batches
    (thread-safe)."""

    def __init__(self, store: VczStore, patterns: set[tuple[str, tuple[int, ...]]] | None = None):
        self._store = store
        self._lock = threading.Lock()
        #: (array, chunk indexes after the variants axis) read so far (shared with earlier
        #: scans of the same shape: guarded by the module's lock)
        self._patterns = set() if patterns is None else patterns
        self._fetched: Fetched = {}
        self._holders: dict[tuple[str, tuple[int, ...]], int] = {}
        #: the store's advance this source took chunks from (see :meth:`fetch_keys`)
        self._advance: Advance | None = None

    @property
    def store(self) -> VczStore:
        return self._store

    @property
    def fetcher(self) -> FetchingSource:
        """This source: it fetches ahead."""
        return self

    def read_chunk_bytes(self, name: str, chunk: tuple[int, ...]) -> bytes | None:
        """The chunk's bytes: from a kept fetch when it holds them, else read from the store
        (either way, what pieces read is learned)."""
        key = (name, tuple(chunk))
        with _learned_lock:
            self._patterns.add((name, key[1][1:]))
        with self._lock:
            if key in self._fetched:
                return self._fetched[key]
        return self._store.read_chunk_bytes(name, chunk)

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        return self._store.decode_chunk(name, self.read_chunk_bytes(name, chunk), chunk)

    def read_chunk_rows(self, name: str, chunk: tuple[int, ...], rows: slice) -> np.ndarray:
        return self._store.decode_chunk_rows(name, self.read_chunk_bytes(name, chunk), chunk, rows)

    def read_chunk_strings(self, name: str, chunk: tuple[int, ...]) -> pa.Array:
        return self._store.decode_chunk_strings(name, self.read_chunk_bytes(name, chunk), chunk)

    def variant_length(self, chunk_index: int) -> np.ndarray:
        return variant_length(self.read_chunk, self._store.has_array, chunk_index)

    @property
    def knows_reads(self) -> bool:
        """Whether pieces were seen to read any chunk (so :meth:`fetch` fetches something)."""
        with _learned_lock:
            return bool(self._patterns)

    def keys(self, variant_chunks: Iterable[int]) -> list[Key]:
        """The chunks of ``variant_chunks`` that pieces were seen to read (as (array, chunk))."""
        with _learned_lock:
            patterns = list(self._patterns)
        chunks = list(dict.fromkeys(int(c) for c in variant_chunks))
        return list(dict.fromkeys(
            (name, (array_chunk(self._store, self._store.array_info(name), c), *rest))
            for c in chunks
            for name, rest in patterns
        ))

    def fetch(self, variant_chunks: Iterable[int]) -> Fetched:
        """In one batch, the bytes of the chunks of ``variant_chunks`` that pieces were seen
        to read (by (array, chunk)), for :meth:`keep`."""
        return self.fetch_keys(self.keys(variant_chunks))

    def fetch_keys(self, keys: list[Key]) -> Fetched:
        """The bytes of the chunks ``keys``: those the store's advance holds (requested while
        the store was revalidated, :mod:`.revalidation`) from it, the others in one batch."""
        advance = offered(self._store)
        if advance is not None:
            self._advance = advance
            held, keys = advance.take(keys)
            return {**held, **self._store.read_chunks_bytes(keys)} if keys else held
        return self._store.read_chunks_bytes(keys) if keys else {}

    def end(self) -> None:
        """The scan ended: the advance it took chunks from holds nothing more for anyone."""
        if self._advance is not None:
            withdraw(self._store, self._advance)

    def keep(self, fetched: Fetched) -> None:
        """Serve reads from ``fetched`` (a :meth:`fetch`) too, until as many :meth:`forget` of
        it (windows sharing a variant chunk fetch some chunks twice: each is kept until the
        last window holding it forgets it)."""
        with self._lock:
            for key, raw in fetched.items():
                self._fetched.setdefault(key, raw)
                self._holders[key] = self._holders.get(key, 0) + 1

    def forget(self, fetched: Fetched) -> None:
        """Stop serving the chunks of ``fetched`` no other kept window holds."""
        with self._lock:
            for key in fetched:
                held = self._holders.get(key, 0) - 1
                if held > 0:
                    self._holders[key] = held
                else:
                    self._holders.pop(key, None)
                    self._fetched.pop(key, None)


def fetching(store: VczStore, plan: Scan | None = None) -> VczStore | FetchingSource:
    """The chunk source a scan of ``store`` reads through: a :class:`FetchingSource` when the
    store is remote, else the store; with ``plan``, one that starts from what earlier scans
    of the same shape read."""
    if not store.is_remote:
        return store
    return FetchingSource(store, None if plan is None else learned_patterns(store, scan_shape(store, plan)))


def fetch_windows(count: int, first: int, most: int) -> list[range]:
    """``count`` pieces in one window when they are at most ``most``, else cut into windows of
    ``first`` pieces, doubling up to ``most``: decoding starts after little more than a round
    trip, and later batches are large.

    >>> [len(w) for w in fetch_windows(40, 2, 8)], [len(w) for w in fetch_windows(8, 2, 8)]
    ([2, 4, 8, 8, 8, 8, 2], [8])
    """
    windows, start, size = [], 0, max(first if count > most else most, 1)
    while start < count:
        windows.append(range(start, min(start + size, count)))
        start, size = windows[-1].stop, min(size * 2, max(most, 1))
    return windows


class WindowFetches:
    """The chunks of each window of pieces fetched in one batch, by the fetch threads, for the
    scan threads that decode them: a piece of window ``i`` calls :meth:`enter` (which starts
    the fetches of windows ``i`` to ``i + ahead``, then waits for window ``i``'s) before
    reading, and :meth:`leave` after; a window's bytes are dropped when the last of its pieces
    (:meth:`submitted` one by one, then :meth:`all_submitted`) leaves.

    ``ahead``: the windows fetched beyond window ``i``, at least, and as many more as fit in
    :data:`AHEAD_PIECES` pieces with them.

    A source that has not yet seen what pieces read fetches nothing (its pieces read chunk by
    chunk, and teach it); without a ``fetcher`` (a source's :attr:`.ChunkSource.fetcher`:
    a store read directly), nothing happens. ``opening``: record the chunks fetched at the
    first :meth:`enter` as the scan's opening (:func:`.revalidation.record_opening`; a warm
    scan, whose first windows are its first reads).
    """

    def __init__(self, fetcher: FetchingSource | None, variant_chunks: np.ndarray, windows: Sequence[range],
                 ahead: int = 2, *, opening: bool = False):
        self._source = fetcher
        self._opening = opening
        self._chunks = variant_chunks
        self._windows = windows
        self._ahead = ahead
        self._lock = threading.Lock()
        self._fetches: dict[int, Future[Fetched] | None] = {}
        self._running: dict[int, int] = {}
        self._submitting: set[int] = set(range(len(windows)))
        self._done: set[int] = set()
        #: the fetch of each window the source keeps (once per window, forgotten once when it ends)
        self._kept: dict[int, Fetched] = {}

    def _last_ahead(self, i: int) -> int:
        """The last window fetched while a piece of window ``i`` is decoded."""
        last, pieces = i, 0
        while last + 1 < len(self._windows):
            more = len(self._windows[last + 1])
            if last - i >= self._ahead and pieces + more > AHEAD_PIECES:
                break
            last, pieces = last + 1, pieces + more
        return last

    def _start(self, source: FetchingSource, i: int) -> None:
        opening, self._opening = self._opening and source.knows_reads, False
        for j in range(i, self._last_ahead(i) + 1):
            # (not started, or started before reads were known; a window already done, when a
            # late piece of an earlier one enters, is not fetched again)
            if j not in self._done and self._fetches.get(j) is None:
                chunks = self._chunks[self._windows[j].start : self._windows[j].stop].tolist()
                if not source.knows_reads:
                    self._fetches[j] = None
                    continue
                keys = source.keys(chunks)
                if opening:
                    record_opening(source.store, keys)
                self._fetches[j] = _FETCHERS.executor().submit(source.fetch_keys, keys)

    def submitted(self, i: int) -> None:
        """A piece of window ``i`` was handed to the scan threads."""
        with self._lock:
            self._running[i] = self._running.get(i, 0) + 1

    def all_submitted(self, i: int) -> None:
        """Every piece of window ``i`` was handed out."""
        with self._lock:
            self._submitting.discard(i)
        self._forget_if_done(i)

    def enter(self, i: int) -> None:
        """Before a piece of window ``i`` reads: its window's chunks are at hand."""
        source = self._source
        if source is None:
            return
        with self._lock:
            self._start(source, i)
            fetch = self._fetches[i]
        if fetch is None:
            return
        fetched = fetch.result()
        with self._lock:  # (kept before any piece of the window reads past here)
            if i not in self._kept:
                self._kept[i] = fetched
                source.keep(fetched)

    def leave(self, i: int) -> None:
        """After a piece of window ``i`` read (or failed)."""
        with self._lock:
            self._running[i] -= 1
        self._forget_if_done(i)

    def _forget_if_done(self, i: int) -> None:
        with self._lock:
            if i in self._submitting or self._running.get(i):
                return
            self._done.add(i)
            self._fetches.pop(i, None)
            # (kept only if a piece entered after the window's fetch started)
            kept = self._kept.pop(i, None)
        if kept is not None and self._source is not None:
            self._source.forget(kept)

    def close(self) -> None:
        """Cancel the fetches not started (the consumer stopped early); the store's advance
        that the scan took chunks from is withdrawn."""
        with self._lock:
            for fetch in self._fetches.values():
                if fetch is not None:
                    fetch.cancel()
        if self._source is not None:
            self._source.end()
