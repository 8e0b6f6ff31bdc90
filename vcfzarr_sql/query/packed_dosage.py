"""Dosages (ALT alleles per call, :data:`MISSING_DOSAGE` where an allele is missing) of a
batch's records from the packed genotypes (:mod:`vcfzarr_sql.format.packed_genotypes`): one
look-up per byte of four calls. Records the codes do not hold exactly are decoded."""

from __future__ import annotations

from functools import cache

import numpy as np

from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.packed_arrays import packed_stored

#: the dosage of a call with a missing allele (pgenlib's ``read_range`` gives the same)
MISSING_DOSAGE = -9


def packed_dosage(blocks: BatchBlocks) -> tuple[np.ndarray, np.ndarray] | None:
    """(dosages (records, the batch's samples) int8, exact (records,) bool) of the batch from
    its packed genotypes (the rows not exact are to be decoded: their dosages here are
    meaningless); None when the store has no packed genotypes laid out as written.

    Sample slots in order from the first: one slice, else one gather."""
    store = blocks.store
    if not packed_stored(store):
        return None
    rows = blocks.read(pg.PACKED)
    exact = blocks.read(pg.PACKED_EXACT).astype(bool)
    samples = np.arange(store.num_samples) if blocks.samples is None else blocks.samples
    slots = pg.sample_slots(samples, store.samples_chunk_size)
    if len(slots) and slots[-1] == len(slots) - 1:  # (sorted, no gap: the first n slots)
        used = -(-len(slots) // 4)
        calls = np.take(_byte_dosages(), rows[:, :used]).view(np.int8)
        return calls[:, : len(slots)], exact
    calls = np.take(_byte_dosages(), rows).view(np.int8)
    return np.take(calls, slots, axis=1), exact


@cache
def _byte_dosages() -> np.ndarray:
    """(256,) uint32: the four dosages (int8) of each byte's calls, in call order in memory.

    >>> _byte_dosages()[[0b11100100]].view(np.int8).tolist()
    [0, 1, 2, -9]
    """
    dosages = pg.byte_codes().astype(np.int8)
    dosages[dosages == pg.MISSING] = MISSING_DOSAGE
    return np.ascontiguousarray(dosages).view(np.uint32).reshape(256)
