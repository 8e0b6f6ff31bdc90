"""What a scan read: chunks, arrays, bytes and time, counted at the store's chunk reads.

:class:`CountingSource` is the chunk source (:class:`~vcfzarr_sql.store.source.ChunkSource`) a
scan decodes through: it reads through the source it wraps and counts each ``read_chunk``,
``read_chunk_rows`` (a chunk decoded in part counts as read: its stored bytes were read) and
``read_chunk_strings``, including those that derive ``variant_length``. One is made per scan;
decode threads share it.

>>> from types import SimpleNamespace
>>> class Store:
...     variants_chunk_size, fetcher = 4, None
...     store = property(lambda self: self)
...     def array_info(self, name): return SimpleNamespace(chunks=(4,), dims=("variants",))
...     def read_chunk_bytes(self, name, chunk): return b"xy"
...     def decode_chunk(self, name, raw, chunk): return np.zeros(4, np.int8)
>>> source = CountingSource(Store())
>>> _ = source.read_chunk("variant_position", (3,))
>>> source.stats(variant_chunks_total=9, sample_chunks_total=1, wall_time_s=0.0)["bytes_read"]
2
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.store.alignment import records_per_chunk
from vcfzarr_sql.store.derived import variant_length
from vcfzarr_sql.store.fetch import FetchingSource
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore

if TYPE_CHECKING:  # (imported where Arrow is used: commands that read no strings never load it)
    import pyarrow as pa

#: The keys of ``last_stats``, in the order they are reported.
STATS_KEYS = (
    "variant_chunks_total",
    "variant_chunks_read",
    "sample_chunks_total",
    "sample_chunks_read",
    "arrays_read",
    "bytes_read",
    "bytes_decoded",
    "wall_time_s",
)


class CountingSource:
    """``source``, with every chunk it decodes counted (thread-safe)."""

    def __init__(self, source: ChunkSource):
        self._source = source
        self._lock = threading.Lock()
        self._variant_chunks: set[int] = set()
        self._sample_chunks: set[int] = set()
        self._arrays: set[str] = set()
        self._bytes_read = 0
        self._bytes_decoded = 0

    @property
    def store(self) -> VczStore:
        return self._source.store

    @property
    def fetcher(self) -> FetchingSource | None:
        return self._source.fetcher

    def read_chunk_bytes(self, name: str, chunk: tuple[int, ...]) -> bytes | None:
        """The source's bytes of the chunk, not counted (what is decoded is counted)."""
        return self._source.read_chunk_bytes(name, chunk)

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        """The decoded chunk ``chunk`` of array ``name`` (the source's raw read + decode)."""
        raw = self._source.read_chunk_bytes(name, chunk)
        values = self.store.decode_chunk(name, raw, chunk)
        self._count(name, chunk, raw, values.nbytes)
        return values

    def read_chunk_rows(self, name: str, chunk: tuple[int, ...], rows: slice) -> np.ndarray:
        """Records ``rows`` of the chunk (the source's raw read + ``decode_chunk_rows``), counted
        as a read of the chunk: its stored bytes, and the bytes decoded."""
        raw = self._source.read_chunk_bytes(name, chunk)
        values = self.store.decode_chunk_rows(name, raw, chunk, rows)
        self._count(name, chunk, raw, values.nbytes)
        return values

    def read_chunk_strings(self, name: str, chunk: tuple[int, ...]) -> pa.Array:
        """The chunk ``chunk`` of string array ``name`` as Arrow (the source's raw read +
        ``decode_chunk_strings``)."""
        raw = self._source.read_chunk_bytes(name, chunk)
        strings = self.store.decode_chunk_strings(name, raw, chunk)
        self._count(name, chunk, raw, strings.nbytes)
        return strings

    def _count(self, name: str, chunk: tuple[int, ...], raw: bytes | None, decoded: int) -> None:
        # (a chunk of an array chunked unlike the variant chunks stands for none of them)
        store = self.store
        per_variant_chunk = records_per_chunk(store, store.array_info(name)) is None
        with self._lock:
            self._arrays.add(name)
            if chunk and per_variant_chunk:
                self._variant_chunks.add(chunk[0])
            if name.startswith(spec.FORMAT_PREFIX) and len(chunk) > 1:
                self._sample_chunks.add(chunk[1])
            self._bytes_read += len(raw) if raw is not None else 0
            self._bytes_decoded += decoded

    def variant_length(self, chunk_index: int) -> np.ndarray:
        """``rlen`` of each record of a variant chunk, its chunk reads counted like any other."""
        return variant_length(self.read_chunk, self.store.has_array, chunk_index)

    def stats(self, *, variant_chunks_total: int, sample_chunks_total: int, wall_time_s: float) -> dict:
        """The counts so far, as ``last_stats`` reports them."""
        with self._lock:
            return {
                "variant_chunks_total": variant_chunks_total,
                "variant_chunks_read": len(self._variant_chunks),
                "sample_chunks_total": sample_chunks_total,
                "sample_chunks_read": len(self._sample_chunks),
                "arrays_read": len(self._arrays),
                "bytes_read": self._bytes_read,
                "bytes_decoded": self._bytes_decoded,
                "wall_time_s": wall_time_s,
            }


def nothing_read(*, variant_chunks_total: int, sample_chunks_total: int) -> dict:
    """The stats of a scan that has not read anything (yet)."""
    return dict.fromkeys(STATS_KEYS, 0) | {
        "variant_chunks_total": variant_chunks_total,
        "sample_chunks_total": sample_chunks_total,
        "wall_time_s": 0.0,
    }
