"""Per-variant genotype summaries computed from a decoded genotype chunk: the ``gt_`` columns.

The columns and what they mean are those of ``bcftools +fill-tags -- -t all,F_MISSING`` run
over the samples the scan selects (``samples :=``), named ``gt_<TAG>``:

==================  ========================  =================================================
column              type                      meaning (bcftools +fill-tags)
==================  ========================  =================================================
``gt_AN``           int32                     alleles in called genotypes
``gt_AC``           list<int32>, one per ALT  allele count in genotypes
``gt_AF``           list<float32>             AC / AN (NULL when AN is 0)
``gt_AC_Het``       list<int32>               allele counts in heterozygous genotypes
``gt_AC_Hom``       list<int32>               allele counts in homozygous genotypes
``gt_AC_Hemi``      list<int32>               allele counts in hemizygous genotypes
``gt_NS``           int32                     samples with data (at least one called allele)
``gt_MAF``          float32                   frequency of the second most common allele
``gt_F_MISSING``    float32                   fraction of samples with a missing genotype
``gt_HWE``          list<float32>             exact HWE test (PMID:15789306); 1=good, 0=bad
``gt_ExcHet``       list<float32>             excess heterozygosity test; 1=good, 0=bad
==================  ========================  =================================================

bcftools counts each *distinct* allele of a genotype once: a genotype with two or more
distinct called alleles is heterozygous (+1 to each allele's het count); one distinct allele
is homozygous (+2) when every allele is called and there are at least two, else hemizygous
(+1): a haploid call, or a half-missing call such as ``0/.`` (bcftools' default, without
``--drop-missing``). AC is het + hom + hemi, AN the sum of AC over all alleles, REF included.
``gt_F_MISSING`` counts a sample as missing when its first allele is missing or a later one is
missing and the call is unphased (``0/.`` is missing, ``0|.`` is not: bcftools' rule).
Records without ALT have NULL lists and MAF (bcftools writes no tag); a list of no present value
is NULL, like every ``info_`` list. Where bcftools stops with an error (an HWE test over
inconsistent counts, possible only with polyploid or multiallelic calls) the value is NULL.

Diploid and haploid chunks are counted from one table of allele pairs per record
(:mod:`.call_pairs`), F_MISSING too; other ploidies through a sort of each call's alleles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.diploid_calls import DiploidCalls
from vcfzarr_sql.query import arrays
from vcfzarr_sql.query.call_pairs import pair_table
from vcfzarr_sql.query.hwe import hwe_tests

PREFIX = "gt_"

#: Column -> (Arrow type, description).
COLUMNS: dict[str, tuple[pa.DataType, str]] = {
    "gt_AC": (pa.list_(pa.int32()), "Allele count in genotypes, per ALT (bcftools +fill-tags AC)"),
    "gt_AN": (pa.int32(), "Total number of alleles in called genotypes (AN)"),
    "gt_AF": (pa.list_(pa.float32()), "Allele frequency, per ALT (AF)"),
    "gt_AC_Het": (pa.list_(pa.int32()), "Allele counts in heterozygous genotypes (AC_Het)"),
    "gt_AC_Hom": (pa.list_(pa.int32()), "Allele counts in homozygous genotypes (AC_Hom)"),
    "gt_AC_Hemi": (pa.list_(pa.int32()), "Allele counts in hemizygous genotypes (AC_Hemi)"),
    "gt_NS": (pa.int32(), "Number of samples with data (NS)"),
    "gt_MAF": (pa.float32(), "Frequency of the second most common allele (MAF)"),
    "gt_F_MISSING": (pa.float32(), "Fraction of missing genotypes (F_MISSING)"),
    "gt_HWE": (pa.list_(pa.float32()), "HWE test (PMID:15789306), per ALT; 1=good, 0=bad (HWE)"),
    "gt_ExcHet": (pa.list_(pa.float32()), "Test excess heterozygosity, per ALT; 1=good, 0=bad"),
}

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


def _float32_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator in float32, as bcftools divides its float counts."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return numerator.astype(np.float32) / denominator.astype(np.float32)


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


class ChunkSummaries:
    """The ``gt_`` columns of one batch of records, computed on demand and each once.

    ``num_alleles``: () -> alleles (REF and ALTs) of each record; ``counts``: (that many
    alleles at least) -> the batch's :class:`AlleleCounts`; ``missing``: () -> samples per
    record F_MISSING counts as missing; ``samples``: samples counted. The counts come from
    decoded genotypes or from counts stored in the store.
    """

    def __init__(
        self,
        num_alleles: Callable[[], np.ndarray],
        counts: Callable[[int], AlleleCounts],
        missing: Callable[[], np.ndarray],
        samples: int,
        stored_hwe: Callable[[], np.ndarray | None] = lambda: None,
    ):
        self._num_alleles = num_alleles
        self._counts = counts
        self._missing = missing
        self._stored_hwe = stored_hwe
        self.samples = samples

    @cached_property
    def alleles(self) -> np.ndarray:
        return np.maximum(np.asarray(self._num_alleles(), dtype=np.int64), 1)

    @cached_property
    def counts(self) -> AlleleCounts:
        return self._counts(self.widest)

    @cached_property
    def an(self) -> np.ndarray:
        return self.counts.total.sum(axis=1)

    @cached_property
    def hwe(self) -> np.ndarray:
        """:func:`hwe_per_allele` of the batch (stored, or from its counts)."""
        stored = self._stored_hwe()
        return hwe_per_allele(self.counts) if stored is None else stored

    def column(self, name: str) -> pa.Array:
        """The Arrow array of ``gt_`` column ``name``."""
        build = _BUILDERS.get(name)
        if build is None:
            raise KeyError(name)
        return build(self)

    def per_alt(self, values: np.ndarray, type_: pa.DataType, valid: np.ndarray | None = None) -> pa.Array:
        """One list per record of ``values[:, 1:]`` (per-allele values, REF first), as many as
        the record has ALTs: NULL for a record without ALT (or not ``valid``, or with no
        present element); NaN -> NULL element."""
        alts = self.alleles - 1
        values = values[:, : self.widest]
        rows, width = values.shape
        if self._same_width:  # (the usual chunk: no slicing per record)
            elements = values[:, 1:].reshape(-1)
        else:
            elements = values[:, 1:][np.arange(1, width)[None, :] < self.alleles[:, None]]
        null = np.isnan(elements) if elements.dtype.kind == "f" else None
        if null is not None and not null.any():
            null = None
        row_valid = alts > 0 if valid is None else (alts > 0) & valid
        if null is not None:
            some = np.zeros(rows, dtype=bool)
            np.logical_or.at(some, np.repeat(np.arange(rows), alts), ~null)
            row_valid &= some
        element_array = pa.array(elements, type=type_.value_type, mask=null)
        if self._same_width:
            return arrays.fixed_lists(element_array, rows, width - 1, _none_if_none(~row_valid))
        return arrays.lists_array(element_array, alts, row_valid)

    @cached_property
    def widest(self) -> int:
        """The most alleles (REF included) any record has."""
        return int(self.alleles.max(initial=1))

    @cached_property
    def _same_width(self) -> bool:
        """Whether every record has the same number of alleles."""
        return bool((self.alleles == self.widest).all())


def _none_if_none(mask: np.ndarray) -> np.ndarray | None:
    return mask if mask.any() else None


def _per_allele_counts(attribute: str) -> Callable[[ChunkSummaries], pa.Array]:
    def build(s: ChunkSummaries) -> pa.Array:
        counts = s.counts.total if attribute == "total" else getattr(s.counts, attribute)
        return s.per_alt(_padded(counts, s), pa.list_(pa.int32()))

    return build


def _padded(per_allele: np.ndarray, s: ChunkSummaries) -> np.ndarray:
    """Per-allele values widened to the most alleles any record has (extra alleles count 0)."""
    width = s.widest
    if per_allele.shape[1] >= width:
        return per_allele
    return np.pad(per_allele, ((0, 0), (0, width - per_allele.shape[1])))


def _frequencies(s: ChunkSummaries) -> np.ndarray:
    return _float32_ratio(s.counts.total, s.an[:, None])


def _af(s: ChunkSummaries) -> pa.Array:
    return s.per_alt(_padded(_frequencies(s), s), pa.list_(pa.float32()), valid=s.an > 0)


def _maf(s: ChunkSummaries) -> pa.Array:
    freqs = _frequencies(s)
    second = -np.sort(-np.nan_to_num(freqs, nan=0.0), axis=1)
    maf = second[:, 1] if second.shape[1] > 1 else np.zeros(len(freqs), dtype=np.float32)
    valid = (s.an > 0) & (s.alleles > 1)
    return pa.array(maf.astype(np.float32), type=pa.float32(), mask=~valid)


def _int_scalar(values: np.ndarray) -> pa.Array:
    return pa.array(values.astype(np.int32), type=pa.int32())


def _f_missing(s: ChunkSummaries) -> pa.Array:
    samples, missing = s.samples, s._missing()
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = (missing / samples).astype(np.float32)
    return pa.array(fraction, type=pa.float32(), mask=np.full(len(fraction), samples == 0))


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


def _hwe_column(which: int) -> Callable[[ChunkSummaries], pa.Array]:
    def build(s: ChunkSummaries) -> pa.Array:
        return s.per_alt(_padded(s.hwe[..., which], s), pa.list_(pa.float32()))

    return build


_BUILDERS: dict[str, Callable[[ChunkSummaries], pa.Array]] = {
    "gt_AC": _per_allele_counts("total"),
    "gt_AN": lambda s: _int_scalar(s.an),
    "gt_AF": _af,
    "gt_AC_Het": _per_allele_counts("het"),
    "gt_AC_Hom": _per_allele_counts("hom"),
    "gt_AC_Hemi": _per_allele_counts("hemi"),
    "gt_NS": lambda s: _int_scalar(s.counts.called),
    "gt_MAF": _maf,
    "gt_F_MISSING": _f_missing,
    "gt_HWE": _hwe_column(0),
    "gt_ExcHet": _hwe_column(1),
}
