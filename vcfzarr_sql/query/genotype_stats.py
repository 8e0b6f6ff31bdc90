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
from functools import cached_property

import numpy as np
import pyarrow as pa

from vcfzarr_sql.query import arrays
from vcfzarr_sql.query.genotype_counts import AlleleCounts, hwe_per_allele

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

def _float32_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator in float32, as bcftools divides its float counts."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return numerator.astype(np.float32) / denominator.astype(np.float32)


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
        element_array = arrays.elements_array(elements, null, type_.value_type)
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
