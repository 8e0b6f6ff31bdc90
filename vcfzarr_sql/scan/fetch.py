"""Chunk reads from a remote store, many in flight: a scan learns which chunks a piece reads,
then fetches those of the next pieces in one request batch (fsspec's concurrent ``cat``).

Over a URL each chunk read waits a round trip; a piece of a scan reads a handful of arrays,
and a task many pieces. :class:`FetchingSource` stands in for the store: it records the
arrays (and the chunk indexes along their other axes) that decoding reads, and
:meth:`FetchingSource.prefetch` gets the same chunks of further variant chunks with one
``get_many`` (concurrent in fsspec's async filesystems: s3, gcs, http). Prefetched chunks
are kept until the next prefetch (pieces of one variant chunk share its site arrays); any other
read goes to the store.

>>> class Store:
...     is_remote = True
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

import threading
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from vcfzarr_sql.store.derived import variant_length


class FetchingSource:
    """The store, with chunk bytes prefetched in batches (thread-safe)."""

    def __init__(self, store: Any):
        self._store = store
        self._lock = threading.Lock()
        #: (array, chunk indexes after the variants axis) read so far
        self._patterns: set[tuple[str, tuple[int, ...]]] = set()
        self._fetched: dict[tuple[str, tuple[int, ...]], bytes | None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def read_chunk_bytes(self, name: str, chunk: tuple[int, ...]) -> bytes | None:
        key = (name, tuple(chunk))
        with self._lock:
            self._patterns.add((name, key[1][1:]))
            if key in self._fetched:
                return self._fetched[key]
        return self._store.read_chunk_bytes(name, chunk)

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        return self._store.decode_chunk(name, self.read_chunk_bytes(name, chunk), chunk)

    def read_chunk_strings(self, name: str, chunk: tuple[int, ...]) -> pa.Array:
        return self._store.decode_chunk_strings(name, self.read_chunk_bytes(name, chunk), chunk)

    def variant_length(self, chunk_index: int) -> np.ndarray:
        return variant_length(self, chunk_index)

    def prefetch(self, variant_chunks: Iterable[int]) -> None:
        """Fetch, in one batch, the chunks of ``variant_chunks`` that pieces read so far read
        (forgetting those fetched before)."""
        with self._lock:
            patterns = list(self._patterns)
        keys = [
            (name, (int(c), *rest))
            for c in dict.fromkeys(int(c) for c in variant_chunks)
            for name, rest in patterns
        ]
        found = self._store.read_chunks_bytes(keys) if keys else {}
        with self._lock:
            self._fetched = found


def fetching(store: Any) -> Any:
    """``store`` wrapped in a :class:`FetchingSource` when it is remote, else ``store``."""
    return FetchingSource(store) if getattr(store, "is_remote", False) else store
