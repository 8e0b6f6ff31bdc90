"""bcftools view's record filters besides ``-i/-e``: ``-c/-C``, ``-q/-Q``, ``-m/-M``,
``-v/-V``, ``-u/-U``, ``-k/-n``, ``-f``, ``-g``, ``-p/-P``, ``-x/-X`` (as ``vcfview.c``).

Allele counts are INFO/AC and INFO/AN when the store has them, else counted from GT; with
``-s`` they are counted from the selected samples' GT (bcftools recounts after subsetting).
``-a`` (trim ALT alleles) filters nothing: it is carried here and rewrites records
(:mod:`.trim`).

>>> SiteFilters.parse(min_ac="2:minor", types="snps,indels").min_ac
(2.0, 'minor')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.format import spec
from vcfzarr_sql.query.selection.rows import ValueReader
from vcfzarr_sql.store.source import ChunkSource

ALLELE_KINDS = ("nref", "alt1", "minor", "major", "nonmajor")
#: ``-v/-V`` names -> the TYPE names of :func:`.rows.allele_type`; ``ref`` is ``other``, as
#: bcftools (1.16 to 1.22) sets the same bit for both: ``-v ref`` keeps the records with an
#: ``other`` ALT, never one without ALT, and ``-V ref`` drops the ``other`` records
VARIANT_TYPES = {"snps": "snp", "indels": "indel", "mnps": "mnp", "other": "other",
                 "bnd": "bnd", "overlaps": "overlap", "ref": "other"}
GENOTYPES = ("hom", "het", "miss")

#: a bound and the allele it applies to (``-c 2:minor``)
Bound = tuple[float, str]


def _bound(text: str | None, option: str, integer: bool) -> Bound | None:
    if text is None:
        return None
    number, _, kind = text.partition(":")
    kind = kind or "nref"
    if kind not in ALLELE_KINDS:
        raise QueryError(f"{option} {text}: the allele is one of {', '.join(ALLELE_KINDS)}")
    try:
        value = float(int(number)) if integer else float(number)
    except ValueError:
        raise QueryError(f"{option} {text}: expected {'an integer' if integer else 'a number'}") from None
    return value, kind


def _types(text: str | None, option: str) -> frozenset[str] | None:
    if text is None:
        return None
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in VARIANT_TYPES]
    if unknown:
        raise QueryError(f"{option} {text}: unknown type {unknown[0]!r} (one of {', '.join(VARIANT_TYPES)})")
    return frozenset(VARIANT_TYPES[n] for n in names)


@dataclass(frozen=True)
class SiteFilters:
    """The record filters of bcftools view other than ``-i/-e`` (None/False: not given)."""

    min_ac: Bound | None = None  # -c
    max_ac: Bound | None = None  # -C
    min_af: Bound | None = None  # -q
    max_af: Bound | None = None  # -Q
    min_alleles: int | None = None  # -m
    max_alleles: int | None = None  # -M
    types: frozenset[str] | None = None  # -v
    exclude_types: frozenset[str] | None = None  # -V
    uncalled: bool = False  # -u: only sites without a called genotype
    exclude_uncalled: bool = False  # -U
    known: bool = False  # -k
    novel: bool = False  # -n
    apply_filters: tuple[str, ...] | None = None  # -f
    genotype: str | None = None  # -g hom|het|miss|^hom|^het|^miss
    phased: bool = False  # -p
    exclude_phased: bool = False  # -P
    private: bool = False  # -x
    exclude_private: bool = False  # -X
    trim_alt_alleles: bool = False  # -a (not a filter: view.trim rewrites the records)

    @classmethod
    def parse(cls, *, min_ac: str | None = None, max_ac: str | None = None,
              min_af: str | None = None, max_af: str | None = None,
              min_alleles: int | None = None, max_alleles: int | None = None,
              types: str | None = None, exclude_types: str | None = None,
              apply_filters: str | None = None, genotype: str | None = None,
              **flags: bool) -> SiteFilters:
        """The filters of bcftools' option texts (``-c 2:minor``, ``-v snps,indels``...)."""
        if genotype is not None and genotype.removeprefix("^") not in GENOTYPES:
            raise QueryError(f"-g {genotype}: expected one of hom, het, miss, optionally after ^")
        if types is not None and exclude_types is not None:
            raise QueryError("-v and -V cannot be used together")
        return cls(
            min_ac=_bound(min_ac, "-c", True), max_ac=_bound(max_ac, "-C", True),
            min_af=_bound(min_af, "-q", False), max_af=_bound(max_af, "-Q", False),
            min_alleles=min_alleles, max_alleles=max_alleles,
            types=_types(types, "-v"), exclude_types=_types(exclude_types, "-V"),
            apply_filters=None if apply_filters is None else tuple(n for n in apply_filters.split(",") if n),
            genotype=genotype, **flags,
        )

    def __bool__(self) -> bool:
        return self != SiteFilters(trim_alt_alleles=self.trim_alt_alleles)

    @property
    def counts_alleles(self) -> bool:
        """Whether bcftools counts alleles for these options (then it writes INFO/AC and
        INFO/AN into every record)."""
        return bool(self.min_ac or self.max_ac or self.min_af or self.max_af or self.uncalled
                    or self.exclude_uncalled or self.private or self.exclude_private
                    or self.trim_alt_alleles)

    def check(self, subsets: bool, has_gt: bool) -> None:
        """Refuse what cannot apply, before anything is written."""
        if (self.private or self.exclude_private) and not subsets:
            raise QueryError("-x/-X need -s or -S (private to the selected samples)")
        needs_gt = self.genotype or self.phased or self.exclude_phased or self.private or self.exclude_private
        if needs_gt and not has_gt:
            raise QueryError("-g, -p/-P and -x/-X need FORMAT/GT, which the store does not have")

    def mask(self, source: ChunkSource, chunk: int, samples: np.ndarray | None) -> np.ndarray:
        """Per record of variant chunk ``chunk``: whether every filter keeps it; ``samples``:
        the ``-s`` selection (store indexes; None: all)."""
        reader = ValueReader(source, chunk)
        keep = np.ones(reader.rows, bool)
        n_alleles = (reader.alleles() != spec.STR_FILL).sum(axis=1)
        if self.min_alleles is not None:
            keep &= n_alleles >= self.min_alleles
        if self.max_alleles is not None:
            keep &= n_alleles <= self.max_alleles
        if self.types is not None or self.exclude_types is not None:
            kinds = reader.types()
            if self.types is not None:
                keep &= np.array([bool(k & self.types) for k in kinds], bool)
            if self.exclude_types is not None:
                keep &= ~np.array([bool(k & self.exclude_types) for k in kinds], bool)
        if self.known or self.novel:
            ids = reader.read(spec.VARIANT_ID) if source.store.has_array(spec.VARIANT_ID) else np.full(reader.rows, ".")
            novel = ids == spec.STR_MISSING
            keep &= ~novel if self.known else novel
        if self.apply_filters is not None:
            keep &= self._has_filter(reader)
        counted = (self.min_ac, self.max_ac, self.min_af, self.max_af)
        if any(counted) or self.uncalled or self.exclude_uncalled or self.private or self.exclude_private:
            keep &= self._count_filters(reader, samples, n_alleles)
        if self.genotype is not None:
            wanted = self.genotype.removeprefix("^")
            classes = reader.gt_class({"miss": "mis"}.get(wanted, wanted), samples)
            if wanted == "hom":  # (a called haploid genotype is hom to -g, not to GT="hom")
                classes |= reader.gt_class("hap", samples)
            calls = classes.any(axis=1)
            keep &= ~calls if self.genotype.startswith("^") else calls
        if self.phased or self.exclude_phased:
            everyone = reader.phased(samples).all(axis=1)
            keep &= everyone if self.phased else ~everyone
        return keep

    def _has_filter(self, reader: ValueReader) -> np.ndarray:
        store = reader.store
        on = (reader.read(spec.VARIANT_FILTER).astype(bool) if store.has_array(spec.VARIANT_FILTER)
              else np.zeros((reader.rows, len(store.filters)), bool))
        names = list(store.filters)
        found = np.zeros(reader.rows, bool)
        for name in self.apply_filters or ():
            if name == ".":
                found |= ~on.any(axis=1)
            elif name in names:
                found |= on[:, names.index(name)]
        return found

    def _count_filters(self, reader: ValueReader, samples: np.ndarray | None,
                       n_alleles: np.ndarray) -> np.ndarray:
        alt_counts, an = reader.allele_counts(samples)
        present = np.arange(alt_counts.shape[1])[None, :] < (n_alleles - 1)[:, None]
        alt_counts = np.where(present, alt_counts, 0)
        counts = np.concatenate([(an - alt_counts.sum(axis=1))[:, None], alt_counts], axis=1)
        allele = np.arange(counts.shape[1])[None, :] < n_alleles[:, None]
        keep = np.ones(reader.rows, bool)
        bounds = ((self.min_ac, True, False), (self.max_ac, False, False),
                  (self.min_af, True, True), (self.max_af, False, True))
        for bound, low, fraction in bounds:
            if bound is None:
                continue
            value, kind = bound
            count = _allele_count(counts, allele, an, kind).astype(np.float64)
            if fraction:  # (no called allele: no frequency, and bcftools drops the record)
                keep &= an > 0
                with np.errstate(divide="ignore", invalid="ignore"):
                    count = count / an
            keep &= count >= value if low else count <= value
        if self.uncalled:
            keep &= an == 0
        if self.exclude_uncalled:
            keep &= an > 0
        if self.private or self.exclude_private:
            everyone, _ = reader.allele_counts(None)
            non_ref_all = np.where(present, everyone, 0).sum(axis=1)
            non_ref = alt_counts.sum(axis=1)
            private = (non_ref > 0) & (non_ref == non_ref_all)
            keep &= private if self.private else ~private
        return keep


def _allele_count(counts: np.ndarray, allele: np.ndarray, an: np.ndarray, kind: str) -> np.ndarray:
    """The count ``-c``/``-q`` compare: of the non-reference alleles (``nref``), the first
    ALT, the least or most frequent allele (REF included), or all but the most frequent."""
    if kind == "nref":
        return counts[:, 1:].sum(axis=1)
    if kind == "alt1":
        return counts[:, 1] if counts.shape[1] > 1 else np.zeros(len(counts), counts.dtype)
    big = np.iinfo(np.int64).max
    if kind == "minor":
        return np.where(allele, counts, big).min(axis=1)
    major = np.where(allele, counts, -1).max(axis=1)
    return major if kind == "major" else an - major
