"""Revalidating a remote store with the chunks its next scans will read already in flight.

Before a query an engine session revalidates each store it opened (one request for the root
metadata, :meth:`.VczStore.is_unchanged`), then the query's scans fetch their first windows
of chunks: two round trips one after the other before any row. A warm scan of a URL store
records the chunks of its first fetch (:func:`record_opening`); the session files them under
its query, and when the same query comes again, :func:`revalidate` requests those chunks in
the same moment as the root documents (an :class:`Advance`, in a thread of its own).

The chunks of an advance are speculative until the store is found unchanged: only then is the
advance offered to the store's scans (:func:`offered`, which
:class:`~vcfzarr_sql.store.fetch.FetchingSource` takes chunk bytes from before fetching), and
the query, which starts only after revalidation, cannot see them earlier. A store found
changed is handled as without an advance (the session opens it again), and the advance is
dropped: its bytes are never served, neither by the store object it was made for nor by the
store opened again. An advance stays offered until the store's next revalidation or the end
of a scan that read from it (its chunks are taken once each; one not taken is dropped then).

>>> class Store:
...     is_remote = True
...     def is_unchanged(self): return True
...     def read_chunks_bytes(self, keys): return {key: b"raw" for key in keys}
>>> store = Store()
>>> revalidate(store, [("call_genotype", (0, 0))])
True
>>> offered(store).take([("call_genotype", (0, 0)), ("variant_position", (0,))])
({('call_genotype', (0, 0)): b'raw'}, [('variant_position', (0,))])
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Protocol

#: One chunk of one array: (array name, chunk index along each axis).
Key = tuple[str, tuple[int, ...]]
#: Chunk bytes fetched in one batch, by (array, chunk) (None: a chunk not stored).
Fetched = dict[Key, bytes | None]
#: Chunks of first fetches recorded per store between two revalidations (a query's scans
#: open with at most ``fetch.AHEAD_PIECES`` pieces each; several scans of a query add up).
MOST_OPENING_KEYS = 4096


class Revalidated(Protocol):
    """What :func:`revalidate` uses of a store (a :class:`~vcfzarr_sql.store.vcz.VczStore` is
    one)."""

    @property
    def is_remote(self) -> bool: ...

    def is_unchanged(self) -> bool: ...

    def read_chunks_bytes(self, keys: list[Key]) -> Fetched: ...


_lock = threading.Lock()
#: The chunks warm scans of each store fetched first, since the store's openings were taken.
_openings: weakref.WeakKeyDictionary[Revalidated, dict[Key, None]] = weakref.WeakKeyDictionary()
#: The advance each store's scans may take chunk bytes from (its store found unchanged).
_offered: weakref.WeakKeyDictionary[Revalidated, Advance] = weakref.WeakKeyDictionary()


def _forget_after_fork() -> None:
    """In a forked child: no advance's thread was copied, so none may be waited for."""
    global _lock
    _lock = threading.Lock()
    _offered.clear()
    _openings.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


class Advance:
    """Chunk bytes of ``store`` requested in one batch (``read_chunks_bytes``), in a thread
    started now; :meth:`take` hands each chunk out once."""

    def __init__(self, store: Revalidated, keys: Sequence[Key]):
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._dropped = False
        self._fetched: Fetched = {}
        self._requested = frozenset(keys)
        threading.Thread(target=self._fetch, args=(store, list(keys)), daemon=True,
                         name="vcfzarr-advance").start()

    def _fetch(self, store: Revalidated, keys: list[Key]) -> None:
        # (a failed batch holds nothing: its chunks are fetched again by the scans that read
        # them, which then fail as they would have without it)
        fetched: Fetched = {}
        try:
            fetched = store.read_chunks_bytes(keys)
        except Exception:  # noqa: BLE001
            pass
        finally:
            with self._lock:
                if not self._dropped:
                    self._fetched = fetched
            self._done.set()

    def take(self, keys: Iterable[Key]) -> tuple[Fetched, list[Key]]:
        """(the bytes of those of ``keys`` this advance holds, now no longer held; the other
        keys), once its batch has arrived (at once when it requested none of them)."""
        keys = list(keys)
        if self._requested.isdisjoint(keys):
            return {}, keys
        self._done.wait()
        held: Fetched = {}
        rest = []
        with self._lock:
            for key in keys:
                if key in self._fetched:
                    held[key] = self._fetched.pop(key)
                else:
                    rest.append(key)
        return held, rest

    def drop(self) -> None:
        """Hold nothing (the batch still in flight is dropped when it arrives)."""
        with self._lock:
            self._fetched = {}
            self._dropped = True


def record_opening(store: Revalidated, keys: Iterable[Key]) -> None:
    """Chunks a warm scan of ``store`` fetched first (kept up to :data:`MOST_OPENING_KEYS`)."""
    with _lock:
        recorded = _openings.setdefault(store, {})
        for key in keys:
            if len(recorded) >= MOST_OPENING_KEYS:
                break
            recorded[key] = None


def take_openings(store: Revalidated) -> tuple[Key, ...]:
    """The chunks :func:`record_opening` recorded for ``store`` since the last call."""
    with _lock:
        return tuple(_openings.pop(store, {}))


def offered(store: Revalidated) -> Advance | None:
    """The advance whose chunks scans of ``store`` take before fetching, if any."""
    with _lock:
        return _offered.get(store)


def withdraw(store: Revalidated, advance: Advance | None = None) -> None:
    """Offer no advance for ``store`` any more (its chunks not taken are dropped); with
    ``advance``, only if that is the one offered."""
    with _lock:
        if advance is not None and _offered.get(store) is not advance:
            return
        advance = _offered.pop(store, None)
    if advance is not None:
        advance.drop()


def revalidate(store: Revalidated, keys: Sequence[Key] = ()) -> bool:
    """``store.is_unchanged()``, with ``keys`` (chunks of a remote store) requested at the same
    time and offered to its scans only when the store is unchanged (dropped otherwise). Any
    earlier advance of ``store`` is withdrawn first."""
    withdraw(store)
    if not keys or not store.is_remote:
        return store.is_unchanged()
    advance = Advance(store, keys)
    try:
        unchanged = store.is_unchanged()
    except BaseException:
        advance.drop()
        raise
    if not unchanged:
        advance.drop()
        return False
    with _lock:
        _offered[store] = advance
    return True
