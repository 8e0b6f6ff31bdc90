"""bcftools' genotype counts of a batch of decoded genotypes (records, samples, ploidy): per
record and allele the het, hom and hemi counts and the called samples (:class:`AlleleCounts`),
the samples F_MISSING counts as missing, and the HWE tests; what the ``gt_`` columns
(:mod:`.genotype_stats`) and the stored counts (:mod:`.stored_counts`) are made of. numpy only:
``stats`` counting from stored counts loads no Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.diploid_calls import DiploidCalls
from vcfzarr_sql.query.call_pairs import pair_table
from vcfzarr_sql.query.hwe import hwe_tests


@dataclass(frozen=True)
class AlleleCounts:
    """Per record (rows) and allele (columns, REF first): bcftools' het, hom and hemi counts;
    ``called``: samples with at least one called allele."""

    het: np.ndarray
    hom: np.ndarray
    hemi: np.ndarray
    called: np.ndarray

    @cached_property
    def total(self) -> np.ndarray:
        return self.het + self.hom + self.hemi


class CallCounts:
    """bcftools' counts of one batch of genotypes (records, samples, ploidy) over at least
    ``num_alleles`` alleles, each computed once and when first asked for: diploid and haploid
    calls from one table of allele pairs per record (:func:`~.call_pairs.pair_table`: every
    genotype read a fixed number of times, whatever the alleles), other ploidies through a sort
    of each call's alleles.

    >>> g = np.array([[[0, 1], [1, 1], [0, 0], [-1, -1], [0, -1]]], dtype=np.int8)
    >>> c = CallCounts(g, 2).alleles
    >>> c.het.tolist(), c.hom.tolist(), c.hemi.tolist(), c.called.tolist()
    ([[1, 1]], [[2, 2]], [[1, 0]], [4])
    """

    def __init__(self, genotypes: np.ndarray, num_alleles: int, calls: DiploidCalls | None = None):
        """``calls``: :func:`~vcfzarr_sql.format.diploid_calls.diploid_calls` of ``genotypes``
        when already found."""
        self.genotypes = genotypes
        self.num_alleles = num_alleles
        self.calls = calls

    @cached_property
    def _table(self) -> np.ndarray | None:
        """The pair table (None: ploidy above 2)."""
        if self.genotypes.shape[-1] > 2:
            return None
        return pair_table(self.genotypes, self.num_alleles, self.calls)

    @cached_property
    def alleles(self) -> AlleleCounts:
        table = self._table
        if table is None:
            widest = max(self.num_alleles, int(self.genotypes.max(initial=-1)) + 1, 1)
            return _sorted_counts(self.genotypes, widest)
        return _table_counts(table)

    def missing(self, phased: np.ndarray | None) -> np.ndarray:
        """:func:`missing_calls` of the genotypes."""
        table = self._table
        if table is None:
            return missing_calls(self.genotypes, phased)
        m = spec.INT_MISSING - _LOW
        half = table[:, :, m].sum(axis=1) - table[:, m, m]  # called first, missing second
        missing = table[:, m, :].sum(axis=1) + half
        rows = np.flatnonzero(half)
        if phased is not None and len(rows):  # 0|. is not missing: the half-missing calls' phasing
            g = self.genotypes[rows]
            half_phased = (g[..., 0] != spec.INT_MISSING) & (g[..., 1] == spec.INT_MISSING) & phased[rows]
            missing[rows] -= half_phased.sum(axis=1)
        return missing


#: The lowest allele value of a pair table: the fill value.
_LOW = spec.INT_FILL


def _table_counts(table: np.ndarray) -> AlleleCounts:
    """bcftools' counts from a pair table (:func:`~.call_pairs.pair_table`): both alleles called
    and equal: homozygous (2 to the allele); called and different: heterozygous (1 to each);
    one allele called and the other missing or the fill (a half-missing or haploid call):
    hemizygous (1); a first allele that is the fill, or no allele called: nothing."""
    a, m = -_LOW, spec.INT_MISSING - _LOW  # the indexes of allele 0 and of missing
    called_pairs = table[:, a:, a:]
    same = np.diagonal(called_pairs, axis1=1, axis2=2)
    het = called_pairs.sum(axis=2) + called_pairs.sum(axis=1) - 2 * same
    hemi = table[:, a:, :a].sum(axis=2) + table[:, m, a:]
    called = table[:, a:, :].sum(axis=(1, 2)) + table[:, m, a:].sum(axis=1)
    return AlleleCounts(het, 2 * same, hemi, called)


def _sorted_counts(genotypes: np.ndarray, num_alleles: int) -> AlleleCounts:
    records = genotypes.shape[0]
    before_end = np.cumsum(genotypes == spec.INT_FILL, axis=-1) == 0
    called_alleles = (genotypes >= 0) & before_end
    nals = called_alleles.sum(axis=-1)
    ial = before_end.sum(axis=-1)
    alleles = np.sort(np.where(called_alleles, genotypes, -1).astype(np.int64), axis=-1)
    previous = np.concatenate([np.full(alleles.shape[:-1] + (1,), -1), alleles[..., :-1]], axis=-1)
    distinct = (alleles >= 0) & (alleles != previous)
    nbits = distinct.sum(axis=-1)
    homozygous = nbits == 1
    hemizygous = homozygous & ((nals != ial) | (nals == 1))
    kinds = {"het": nbits >= 2, "hom": homozygous & ~hemizygous, "hemi": hemizygous}
    weights = {"het": 1, "hom": 2, "hemi": 1}
    rows = np.broadcast_to(np.arange(records)[:, None, None], alleles.shape)
    counts = {}
    for kind, calls in kinds.items():
        chosen = distinct & calls[..., None]
        index = rows[chosen] * num_alleles + alleles[chosen]
        counts[kind] = weights[kind] * np.bincount(index, minlength=records * num_alleles).reshape(
            records, num_alleles
        )
    return AlleleCounts(counts["het"], counts["hom"], counts["hemi"], (nals > 0).sum(axis=1))


def missing_calls(genotypes: np.ndarray, phased: np.ndarray | None) -> np.ndarray:
    """Samples per record that bcftools' F_MISSING counts as missing: the first allele is
    missing, or a later allele is missing and the call is not phased.

    >>> g = np.array([[[0, -1], [0, -1], [-1, 0], [0, 0]]], dtype=np.int8)
    >>> missing_calls(g, np.array([[False, True, True, False]])).tolist()
    [2]
    """
    missing = genotypes[..., 0] == spec.INT_MISSING
    if genotypes.shape[-1] > 1:
        later = (genotypes[..., 1:] == spec.INT_MISSING).any(axis=-1)
        missing |= later if phased is None else later & ~phased
    return missing.sum(axis=1)


@dataclass(frozen=True)
class GenotypeCounts:
    """Everything the ``gt_`` columns of a batch are computed from: bcftools' allele counts,
    ``missing`` (samples per record F_MISSING counts as missing) and ``samples`` (how many).
    Every count adds up over disjoint sets of samples (:meth:`plus`)."""

    alleles: AlleleCounts
    missing: np.ndarray
    samples: int

    def plus(self, other: GenotypeCounts) -> GenotypeCounts:
        """The counts over the samples of both (per-allele counts widened to the wider)."""
        width = max(self.alleles.het.shape[1], other.alleles.het.shape[1])
        mine, theirs = (_widened(c.alleles, width) for c in (self, other))
        summed = AlleleCounts(*(getattr(mine, f) + getattr(theirs, f) for f in _COUNT_FIELDS))
        return GenotypeCounts(summed, self.missing + other.missing, self.samples + other.samples)

    def widened(self, width: int) -> GenotypeCounts:
        """The counts over at least ``width`` alleles (the alleles added count 0)."""
        if self.alleles.het.shape[1] >= width:
            return self
        return GenotypeCounts(_widened(self.alleles, width), self.missing, self.samples)


_COUNT_FIELDS = ("het", "hom", "hemi", "called")


def _widened(counts: AlleleCounts, width: int) -> AlleleCounts:
    pad = ((0, 0), (0, width - counts.het.shape[1]))
    return AlleleCounts(np.pad(counts.het, pad), np.pad(counts.hom, pad),
                        np.pad(counts.hemi, pad), counts.called)


def genotype_counts(
    genotypes: np.ndarray, phased: np.ndarray | None, num_alleles: int,
    calls: DiploidCalls | None = None,
) -> GenotypeCounts:
    """The :class:`GenotypeCounts` of ``genotypes`` (records, samples, ploidy), ``phased``
    (records, samples) or None, over at least ``num_alleles`` alleles (``calls``: as
    :class:`CallCounts` takes them)."""
    counts = CallCounts(genotypes, num_alleles, calls)
    return GenotypeCounts(counts.alleles, counts.missing(phased), genotypes.shape[1])


def hwe_per_allele(counts: AlleleCounts) -> np.ndarray:
    """(records, alleles, 2) float32: each ALT's HWE and ExcHet p-values (bcftools' tests of
    the REF/ALT genotypes, :mod:`.hwe`), 1 for REF."""
    c = counts
    values = np.ones((*c.het.shape, 2), dtype=np.float32)
    if c.het.shape[1] > 1:
        nref_total = c.hom[:, 0] + c.het.sum(axis=1)
        nref = nref_total[:, None] - c.het[:, 1:]  # bcftools neglects multiallelic genotypes
        nalt = c.het[:, 1:] + c.hom[:, 1:]
        tests = hwe_tests(nref.reshape(-1), nalt.reshape(-1), c.het[:, 1:].reshape(-1))
        for which, p in enumerate(tests):
            values[:, 1:, which] = p.reshape(nref.shape)
    return values
