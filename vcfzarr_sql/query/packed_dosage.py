"""Dosages (ALT alleles per call, :data:`MISSING_DOSAGE` where an allele is missing) of records
from the packed genotypes (:mod:`vcfzarr_sql.format.packed_genotypes`): the bytes holding the
selected samples' calls are gathered for every record first (:func:`packed_codes`, a quarter
of the matrix's size), then looked up in one pass, four calls a byte, into the matrix itself
(:func:`dosages`). Records the codes do not hold exactly are decoded by the caller.

>>> rows = np.array([[0b11100100, 0b00000010]], dtype=np.uint8)
>>> dosages(rows).tolist()
[[0, 1, 2, -9, 2, 0, 0, 0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.query.arrays import elements_array
from vcfzarr_sql.store.blocks import BatchBlocks

#: the dosage of a call with a missing allele (pgenlib's ``read_range`` gives the same)
MISSING_DOSAGE = -9


@dataclass(frozen=True)
class PackedColumns:
    """Where the calls of some samples are in a packed row.

    >>> layout = PackedColumns.of(np.array([3, 17, 18]), 1000)
    >>> layout.columns.tolist(), layout.within.tolist()
    ([0, 4], [3, 5, 6])
    >>> layout = PackedColumns.of(np.arange(10), 8)  # (sample chunks of 8, padded to 32 calls)
    >>> layout.columns.tolist(), layout.within
    ([0, 1, 8], None)
    """

    #: the bytes (sorted column indexes of a packed row) holding the samples' calls
    columns: np.ndarray
    #: where each sample's call is among the calls of :attr:`columns` (four a byte, in order);
    #: None when they are the first ones, in order
    within: np.ndarray | None

    @classmethod
    def of(cls, samples: np.ndarray, samples_chunk_size: int) -> PackedColumns:
        """The bytes holding ``samples`` (sorted sample indexes)."""
        slots = pg.sample_slots(samples, samples_chunk_size)
        quads = slots // 4
        columns = quads[np.r_[True, quads[1:] != quads[:-1]]] if len(quads) else quads
        calls = (columns[:, None] * 4 + np.arange(4)).reshape(-1)[: len(slots)]
        within = None if (calls == slots).all() else np.searchsorted(columns, quads) * 4 + slots % 4
        return cls(columns, within)

    @staticmethod
    @lru_cache(maxsize=16)
    def every(samples: int, samples_chunk_size: int) -> PackedColumns:
        """:meth:`of` all ``samples`` (kept: it is the same for every matrix of a store)."""
        return PackedColumns.of(np.arange(samples), samples_chunk_size)


def packed_codes(blocks: BatchBlocks, columns: PackedColumns, keep: np.ndarray | None = None,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(the packed bytes ``columns`` of the batch's records that ``keep`` marks (None: all),
    (records, bytes) uint8 in one array; whether each of those records is exact (bool): where
    it is not, its codes are meaningless and it is to be decoded). The store must have the
    packed genotypes as written (:func:`~vcfzarr_sql.store.packed_arrays.packed_stored`)."""
    exact = blocks.read(pg.PACKED_EXACT).astype(bool)
    exact = exact if keep is None else exact[keep]
    if not exact.any():  # (nothing to look up: every record is decoded)
        return np.zeros((len(exact), len(columns.columns)), np.uint8), exact
    return blocks.columns(pg.PACKED, columns.columns, keep), exact


def dosages(codes: np.ndarray) -> np.ndarray:
    """The dosages (records, 4 x bytes) int8 of every call of the packed bytes ``codes``
    (records, bytes) uint8: one look-up of four calls a byte in a table of 1 KB (it stays in
    the first-level cache), by Arrow's take (numpy's would cast the bytes to intp first),
    into the returned array itself (writable). The bytes are wrapped, not converted by
    ``pa.array`` (which imports pandas, when it is installed: ~50 MiB)."""
    flat = np.ascontiguousarray(codes).reshape(-1)
    taken = pc.take(_byte_dosages(), elements_array(flat, None, pa.uint8()), boundscheck=False)  # (never out of range)
    looked_up = np.frombuffer(taken.buffers()[1], np.uint32, count=len(taken))  # (writable, unlike to_numpy)
    return looked_up.view(np.int8).reshape(len(codes), 4 * codes.shape[1])


@cache
def _byte_dosages() -> pa.UInt32Array:
    """(256,) uint32: the four dosages (int8) of the calls of each byte, in call order in memory.

    >>> np.asarray(_byte_dosages())[[0b11100100, 2]].view(np.int8).tolist()
    [0, 1, 2, -9, 2, 0, 0, 0]
    """
    codes = pg.byte_codes().astype(np.int8)
    codes[codes == pg.MISSING] = MISSING_DOSAGE
    return elements_array(np.ascontiguousarray(codes).view(np.uint32).reshape(-1), None, pa.uint32())


@dataclass(frozen=True)
class PackedPart:
    """A run's records for :func:`packed_matrix`: their packed bytes, and the dosages of
    those decoded instead (the records the codes do not hold exactly)."""

    #: (records, bytes) uint8, :func:`packed_codes`
    codes: np.ndarray
    #: the records (indexes into :attr:`codes`' rows) decoded
    decoded: np.ndarray
    #: their dosages, (decoded records, samples) int8
    values: np.ndarray


def packed_matrix(parts: Sequence[PackedPart], columns: PackedColumns, samples: int) -> np.ndarray:
    """The (records, ``samples``) int8 dosages of ``parts`` one after the other: their codes
    joined (a quarter of the matrix), looked up at once, the decoded records put in place.

    >>> layout = PackedColumns.of(np.arange(3), 1000)
    >>> part = PackedPart(np.array([[0b100100], [0b111111]], np.uint8), np.array([1]),
    ...                   np.array([[1, 0, 2]], np.int8))
    >>> packed_matrix([part, part], layout, 3).tolist()
    [[0, 1, 2], [1, 0, 2], [0, 1, 2], [1, 0, 2]]
    """
    codes = (parts[0].codes if len(parts) == 1 else
             np.concatenate([p.codes for p in parts]) if parts else np.zeros((0, len(columns.columns)), np.uint8))
    matrix = dosages(codes)
    if columns.within is not None:
        matrix = np.take(matrix, columns.within, axis=1)
    elif matrix.shape[1] != samples:  # (the last byte's calls past the samples: a contiguous copy)
        matrix = np.ascontiguousarray(matrix[:, :samples])
    start = 0
    for part in parts:
        if len(part.decoded):
            matrix[start + part.decoded] = part.values
        start += len(part.codes)
    return matrix
