"""Dosages (ALT alleles per call, :data:`MISSING_DOSAGE` where an allele is missing) of a
batch's records from the packed genotypes (:mod:`vcfzarr_sql.format.packed_genotypes`): one
look-up per two bytes of eight calls. Records the codes do not hold exactly are decoded."""

from __future__ import annotations

from functools import cache

import numpy as np

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

    Two bytes (eight calls) a look-up; sample slots in order from the first are one slice, others
    one gather."""
    store = blocks.store
    if not packed_stored(store):
        return None
    rows = blocks.read(pg.PACKED)
    exact = blocks.read(pg.PACKED_EXACT).astype(bool)
    if keep is not None:
        rows, exact = rows[keep], exact[keep]
    if not exact.any():  # (nothing to look up: every record is decoded)
        return None
    samples = np.arange(store.num_samples) if blocks.samples is None else blocks.samples
    slots = pg.sample_slots(samples, store.samples_chunk_size)
    if len(slots) and slots[-1] == len(slots) - 1:  # (sorted, no gap: the first n slots)
        used = -(-len(slots) // 8) * 2  # (whole pairs of bytes)
        return _dosages(rows[:, :used])[:, : len(slots)], exact
    return np.take(_dosages(rows), slots, axis=1), exact


def _dosages(rows: np.ndarray) -> np.ndarray:
    """The dosages of every call of packed ``rows`` (records, an even number of bytes)."""
    pairs = np.ascontiguousarray(rows).view(np.uint16)
    out = np.empty(pairs.shape, dtype=np.uint64)
    step = max(1, _SLICE_PAIRS // max(pairs.shape[1], 1))
    for start in range(0, len(pairs), step):  # (indexes cast in cache-sized slices: 2x faster)
        part = pairs[start : start + step].astype(np.intp)
        np.take(_pair_dosages(), part, out=out[start : start + step])
    return out.view(np.int8).reshape(len(rows), 8 * pairs.shape[1])


#: Pairs of bytes :func:`_dosages` looks up at a time (64 KB of indexes).
_SLICE_PAIRS = 8192


@cache
def _pair_dosages() -> np.ndarray:
    """(65536,) uint64: the eight dosages (int8) of the calls of each pair of bytes (read as a
    uint16), in call order in memory (512 KB: it stays in the cache).

    >>> pair = np.array([0b11100100, 0b00000010], dtype=np.uint8).view(np.uint16)
    >>> _pair_dosages()[pair].view(np.int8).tolist()
    [0, 1, 2, -9, 2, 0, 0, 0]
    """
    dosages = pg.byte_codes().astype(np.int8)
    dosages[dosages == pg.MISSING] = MISSING_DOSAGE
    pairs = np.arange(1 << 16, dtype=np.uint16).view(np.uint8).reshape(-1, 2)
    both = np.concatenate([dosages[pairs[:, 0]], dosages[pairs[:, 1]]], axis=1)
    return np.ascontiguousarray(both).view(np.uint64).reshape(-1)
