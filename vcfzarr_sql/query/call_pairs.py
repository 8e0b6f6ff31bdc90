"""Diploid and haploid calls as one integer per call, and how many calls hold each allele pair.

A call of ploidy at most 2 is its ``(first, second)`` allele pair (``second`` is the fill value
of a haploid call). :func:`pair_values` gives one integer per call that tells the pairs apart:
for ``int8`` genotypes (what every writer stores) the two bytes of the call read as one
``int16``, a view of the genotypes (no pass over them); for wider integers a computed code.
:func:`count_pairs` then counts chosen pairs along an axis with one comparison each, and
:func:`pair_table` counts every pair per record: records whose alleles are all at most 1 (nearly
all of a cohort) by those comparisons, the others (multiallelic records) by one ``bincount``
over (record, pair) keys. Each genotype is read a fixed number of times, whatever the number of
alleles of the chunk. The per-record statistics (:mod:`.genotype_stats`) and the per-sample call
classes (:mod:`.sample_classes`) both count through these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec

#: The allele values a biallelic record's calls hold (the fill value only in haploid calls).
BIALLELIC = (spec.INT_FILL, spec.INT_MISSING, 0, 1)


@dataclass(frozen=True)
class PairValues:
    """One integer per call (records, samples) standing for its allele pair (:meth:`of`)."""

    values: np.ndarray
    #: allele values low .. low + width - 1 are told apart (others: no pair matches them)
    low: int
    width: int
    packed: bool  # the two int8 alleles read as one little-endian int16

    def of(self, first: int, second: int) -> int:
        """The value of the calls ``(first, second)``."""
        if self.packed:
            return int(np.array([first, second], dtype=np.int8).view("<i2")[0])
        return (first - self.low) * self.width + (second - self.low)


def pair_values(genotypes: np.ndarray) -> PairValues:
    """The :class:`PairValues` of ``genotypes`` (records, samples, ploidy 1 or 2).

    >>> g = np.array([[[0, 1], [1, -1], [-1, -1]]], dtype=np.int8)
    >>> p = pair_values(g)
    >>> (p.values == p.of(1, -1)).tolist()
    [[False, True, False]]
    """
    ploidy = genotypes.shape[-1]
    if ploidy == 2 and genotypes.dtype == np.int8:
        calls = np.ascontiguousarray(genotypes)
        return PairValues(calls.view("<i2")[..., 0], -128, 256, True)
    low = min(int(genotypes.min(initial=0)), spec.INT_FILL)  # (every pair compared is in range)
    width = max(int(genotypes.max(initial=1)), 1) + 1 - low
    first = genotypes[..., 0].astype(np.int64) - low
    second = genotypes[..., 1].astype(np.int64) - low if ploidy == 2 else spec.INT_FILL - low
    return PairValues(first * width + second, low, width, False)


def count_pairs(pairs: PairValues, wanted: list[tuple[int, int]], axis: int) -> np.ndarray:
    """Calls of each pair of ``wanted`` along ``axis`` (1: per record, 0: per sample), shape
    (len(wanted), the other axis), int64; one comparison and sum per pair.

    >>> g = np.array([[[0, 1], [1, 0], [0, 1]]], dtype=np.int8)
    >>> count_pairs(pair_values(g), [(0, 1), (1, 0)], axis=1).tolist()
    [[2], [1]]
    """
    values = pairs.values
    counts = np.empty((len(wanted), values.shape[1 - axis]), dtype=np.int64)
    for k, (first, second) in enumerate(wanted):
        # (int32 sums of the comparisons are several times faster than numpy's default)
        counts[k] = (values == pairs.of(first, second)).sum(axis=axis, dtype=np.int32)
    return counts


def pair_table(genotypes: np.ndarray, num_alleles: int) -> np.ndarray:
    """Calls per record of each allele pair: ``table[r, first - FILL, second - FILL]`` (FILL
    is -2), shape (records, width, width) over allele values ``FILL .. n - 1``, ``n`` the largest
    of 2, ``num_alleles`` and the largest allele called plus one. Calls holding a value below FILL
    are in no pair.

    >>> g = np.array([[[0, 1], [1, 1], [-1, -1]], [[2, 0], [0, -2], [2, 2]]], dtype=np.int8)
    >>> table = pair_table(g, 2)
    >>> table.shape, int(table[0, 2, 3]), int(table[0, 1, 1]), int(table[1, 4, 2])
    ((2, 5, 5), 1, 1, 1)
    """
    records, samples = genotypes.shape[:2]
    low = spec.INT_FILL
    highest = (genotypes.max(axis=tuple(range(1, genotypes.ndim))) if records and samples
               else np.zeros(records, dtype=np.int64))
    width = max(num_alleles, int(highest.max(initial=0)) + 1, 2) - low  # (0 and 1: the pairs compared)
    table = np.zeros((records, width, width), dtype=np.int64)
    if records == 0 or samples == 0:
        return table
    pairs = pair_values(genotypes)
    filled = genotypes.shape[-1] == 1 or int(genotypes.min()) <= spec.INT_FILL  # (haploid: second is the fill)
    simple = highest <= 1
    if simple.all():
        _count_biallelic(pairs, np.arange(records), table, low, filled)
    else:
        _count_biallelic(pairs, np.flatnonzero(simple), table, low, filled)
        _count_any(genotypes[~simple], np.flatnonzero(~simple), table, low)
    return table


def _count_biallelic(
    pairs: PairValues, rows: np.ndarray, table: np.ndarray, low: int, filled: bool
) -> None:
    """The pairs of ``rows`` (records whose alleles are all at most 1) into ``table``: every
    pair of :data:`BIALLELIC` (without the fill value unless ``filled``) compared but ``0/0``
    (the calls left over)."""
    if not len(rows):
        return
    if len(rows) < pairs.values.shape[0]:
        pairs = PairValues(pairs.values[rows], pairs.low, pairs.width, pairs.packed)
    values = BIALLELIC if filled else BIALLELIC[1:]
    wanted = [(x, y) for x in values for y in values if (x, y) != (0, 0)]
    counts = count_pairs(pairs, wanted, axis=1)
    for (x, y), count in zip(wanted, counts):
        table[rows, x - low, y - low] = count
    table[rows, -low, -low] = pairs.values.shape[1] - counts.sum(axis=0)


def _count_any(genotypes: np.ndarray, rows: np.ndarray, table: np.ndarray, low: int) -> None:
    """The pairs of ``rows`` (``genotypes`` are theirs) into ``table``: one bincount."""
    width = table.shape[1]
    first = genotypes[..., 0].astype(np.int64) - low
    second = (genotypes[..., 1].astype(np.int64) - low if genotypes.shape[-1] == 2
              else np.full_like(first, spec.INT_FILL - low))
    keep = (first >= 0) & (second >= 0)
    keys = (np.arange(len(rows))[:, None] * (width * width) + first * width + second)[keep]
    counts = np.bincount(keys, minlength=len(rows) * width * width)
    table[rows] = counts.reshape(len(rows), width, width)
