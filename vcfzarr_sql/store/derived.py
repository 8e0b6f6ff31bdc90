"""Arrays a reader can derive when a store lacks them: ``variant_length`` and ``region_index``.

``variant_length`` is htslib's ``rlen``: ``INFO/END - POS + 1`` when END is present and not
smaller than POS (htslib ignores a smaller END), else the length of REF.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.region_index import chunk_region_index

#: The INFO field whose value sets a record's end.
VARIANT_END = "variant_END"


#: Reads one chunk, decoded: (array name, chunk index) -> values (a chunk source's ``read_chunk``).
ReadChunk = Callable[[str, tuple[int, ...]], np.ndarray]
#: Whether the store has an array of that name (its ``has_array``).
HasArray = Callable[[str], bool]


class ArrayReader(Protocol):
    """What deriving the region index reads of a store (a VczStore is one)."""

    @property
    def num_variant_chunks(self) -> int: ...

    def has_array(self, name: str) -> bool: ...

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray: ...


def record_lengths(position: np.ndarray, ref: np.ndarray, end: np.ndarray | None) -> np.ndarray:
    """htslib's ``rlen`` of each record, as int64.

    >>> record_lengths(np.array([10, 10, 10, 10]), np.array(["A", "AT", "G", "C"], dtype=object),
    ...                np.array([20, -1, 5, 10])).tolist()
    [11, 2, 1, 1]
    """
    lengths = np.fromiter(map(len, ref), dtype=np.int64, count=len(ref))
    if end is None:
        return lengths
    end = end.astype(np.int64)
    position = position.astype(np.int64)
    present = (end != spec.INT_MISSING) & (end != spec.INT_FILL) & (end >= position)
    return np.where(present, end - position + 1, lengths)


def variant_length(read: ReadChunk, has_array: HasArray, chunk_index: int) -> np.ndarray:
    """``rlen`` of the records of one variant chunk, its chunks read with ``read``: the stored
    ``variant_length`` if there is one, else derived from ``variant_END``/REF."""
    if has_array(spec.VARIANT_LENGTH):
        return read(spec.VARIANT_LENGTH, (chunk_index,)).astype(np.int64)
    position = read(spec.VARIANT_POSITION, (chunk_index,))
    ref = read(spec.VARIANT_ALLELE, (chunk_index, 0))[:, 0]
    end = read(VARIANT_END, (chunk_index,)) if has_array(VARIANT_END) else None
    return record_lengths(position, ref, end)


def build_region_index(store: ArrayReader) -> np.ndarray:
    """The region index of a store computed from its contig, position and length arrays (int64)."""
    parts = [
        chunk_region_index(
            k,
            store.read_chunk(spec.VARIANT_CONTIG, (k,)),
            store.read_chunk(spec.VARIANT_POSITION, (k,)),
            variant_length(store.read_chunk, store.has_array, k),
        )
        for k in range(store.num_variant_chunks)
    ]
    if not parts:
        return np.empty((0, spec.REGION_INDEX_FIELDS), dtype=np.int64)
    return np.concatenate(parts)
