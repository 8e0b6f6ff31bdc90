"""How many calls hold each allele pair, per record.

A call of ploidy at most 2 is its ``(first, second)`` allele pair (``second`` is the fill value
of a haploid call). :func:`pair_table` counts every pair per record: diploid records whose
alleles are all at most 1 (nearly all of a cohort) from the calls that are not ``0/0``, found
once per chunk (:mod:`vcfzarr_sql.format.diploid_calls`, shared with the per-sample classes,
the ``stats`` counts and the packed genotypes), the others (multiallelic records, haploid
calls) by one ``bincount`` over (record, pair) keys. The per-record statistics
(:mod:`.genotype_stats`) count through it.
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.diploid_calls import DiploidCalls, diploid_calls


def pair_table(genotypes: np.ndarray, num_alleles: int, calls: DiploidCalls | None = None) -> np.ndarray:
    """Calls per record of each allele pair (``calls``: :func:`~vcfzarr_sql.format.diploid_calls.diploid_calls`
    of ``genotypes`` when already found): ``table[r, first - FILL, second - FILL]`` (FILL
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
    if calls is not None:  # (every allele is in FILL .. 1)
        width = max(num_alleles, 2) - low
    else:
        highest = (genotypes.max(axis=tuple(range(1, genotypes.ndim))) if records and samples
                   else np.zeros(records, dtype=np.int64))
        width = max(num_alleles, int(highest.max(initial=0)) + 1, 2) - low
    table = np.zeros((records, width, width), dtype=np.int64)
    if records == 0 or samples == 0:
        return table
    rest = np.zeros(records, dtype=bool) if calls is not None else np.ones(records, dtype=bool)
    if calls is None and genotypes.shape[-1] == 2:
        simple = highest <= 1
        if simple.any():
            calls = diploid_calls(genotypes if simple.all() else genotypes[simple])
            if calls is not None:
                rest = ~simple
    if calls is not None:
        side = 2 - low  # (the values FILL .. 1)
        table[~rest, :side, :side] = calls.per_record.reshape(-1, side, side)
    if rest.any():
        _count_any(genotypes[rest], np.flatnonzero(rest), table, low)
    return table


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
