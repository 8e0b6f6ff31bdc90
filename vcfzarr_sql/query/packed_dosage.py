"""Dosages (ALT alleles per call, :data:`MISSING_DOSAGE` where an allele is missing) of a
batch's records from the packed genotypes (:mod:`vcfzarr_sql.format.packed_genotypes`): one
look-up per two bytes of eight calls. Records the codes do not hold exactly are decoded."""

from __future__ import annotations

from functools import cache

import numpy as np
import pyarrow as pa

from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.packed_arrays import packed_stored

#: the dosage of a call with a missing allele (pgenlib's ``read_range`` gives the same)
MISSING_DOSAGE = -9


def packed_dosage(blocks: BatchBlocks, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """(dosages (records, the batch's samples) int8, exact (records,) bool) of the batch's
    records (those ``keep`` marks, when given) from its packed genotypes (the rows not exact
    are to be decoded: their dosages here are meaningless); None when the store has no packed
    genotypes laid out as written, or none of the records is exact.

    Only the byte pairs holding the batch's samples are read and looked up
    (:func:`pair_columns`)."""
    store = blocks.store
    if not packed_stored(store):
        return None
    exact = blocks.read(pg.PACKED_EXACT).astype(bool)
    exact = exact if keep is None else exact[keep]
    if not exact.any():  # (nothing to look up: every record is decoded)
        return None
    samples = np.arange(store.num_samples) if blocks.samples is None else blocks.samples
    columns, within = pair_columns(pg.sample_slots(samples, store.samples_chunk_size))
    pairs = blocks.columns(pg.PACKED, (columns[:, None] * 2 + np.arange(2)).reshape(-1), keep)
    dosages = _dosages(pairs.view(np.uint16))
    return (dosages[:, : len(samples)] if within is None else np.take(dosages, within, axis=1)), exact


def pair_columns(slots: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(the columns of a row's byte pairs (as uint16) holding the calls of ``slots`` (sorted),
    where in their eight calls each those calls are (None: the first ``len(slots)``, in
    order)).

    >>> pair_columns(np.r_[np.arange(16), np.arange(24, 36)])
    (array([0, 1, 3, 4]), None)
    >>> columns, within = pair_columns(np.array([3, 17, 18]))
    >>> columns.tolist(), within.tolist()
    ([0, 2], [3, 9, 10])
    """
    pairs = slots // 8
    columns = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
    calls = (columns[:, None] * 8 + np.arange(8)).reshape(-1)[: len(slots)]
    return columns, None if (calls == slots).all() else np.searchsorted(columns, pairs) * 8 + slots % 8


def _dosages(pairs: np.ndarray) -> np.ndarray:
    """The dosages (records, 8 x pairs) int8 of every call of the byte ``pairs`` (records,
    pairs) uint16: one look-up each, by Arrow's take (it reads uint16 indexes as they are:
    twice the speed of numpy's, which casts them to intp first)."""
    taken = _pair_dosages().take(pa.array(np.ascontiguousarray(pairs).reshape(-1)))
    looked_up = np.frombuffer(taken.buffers()[1], np.uint64, count=len(taken))  # (writable, unlike to_numpy)
    return looked_up.view(np.int8).reshape(len(pairs), 8 * pairs.shape[1])


@cache
def _pair_dosages() -> pa.UInt64Array:
    """(65536,) uint64: the eight dosages (int8) of the calls of each pair of bytes (read as a
    uint16), in call order in memory (512 KB: it stays in the cache).

    >>> pair = np.array([0b11100100, 0b00000010], dtype=np.uint8).view(np.uint16)
    >>> np.asarray(_pair_dosages())[pair].view(np.int8).tolist()
    [0, 1, 2, -9, 2, 0, 0, 0]
    """
    dosages = pg.byte_codes().astype(np.int8)
    dosages[dosages == pg.MISSING] = MISSING_DOSAGE
    pairs = np.arange(1 << 16, dtype=np.uint16).view(np.uint8).reshape(-1, 2)
    both = np.concatenate([dosages[pairs[:, 0]], dosages[pairs[:, 1]]], axis=1)
    return pa.array(np.ascontiguousarray(both).view(np.uint64).reshape(-1))
