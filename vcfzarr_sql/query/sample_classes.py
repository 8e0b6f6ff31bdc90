"""Call classes of ``bcftools stats`` PSC lines, counted per sample from decoded genotypes.

The classes are :data:`vcfzarr_sql.format.summaries.CLASSES` (n_hom_ref ... n_missing); the
per-sample statistics table (:mod:`vcfzarr_sql.stats.sample_stats`) and the stored class
counts (:mod:`.summarise`) both count with :func:`class_counts`.
"""

from __future__ import annotations

import functools

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.diploid_calls import DiploidCalls, code, diploid_calls
from vcfzarr_sql.format.summaries import CLASSES

_NO_ALLELE = np.iinfo(np.int64).max


@functools.lru_cache(maxsize=4096)
def allele_kind(ref: str, alt: str) -> str:
    """htslib's variant type of ``alt`` against ``ref``, as far as bcftools stats needs it:
    ``"snp"``, ``"ref"`` (no variation: ``.``, ``<*>``, ``<NON_REF>``, ``<X>``, ``X``, equal
    alleles) or ``"other"``.

    >>> [allele_kind("A", a) for a in ("C", ".", "AT", "<NON_REF>", "*")]
    ['snp', 'ref', 'other', 'ref', 'other']
    >>> allele_kind("ATG", "AGG"), allele_kind("ATG", "CTA")
    ('snp', 'other')
    """
    if alt == "*":
        return "other"
    if len(ref) == 1 and len(alt) == 1:
        return "ref" if alt in (".", "X") or ref.upper() == alt.upper() else "snp"
    if alt.startswith("<"):
        return "ref" if alt in ("<X>", "<*>", "<NON_REF>") else "other"
    r, a = ref.upper(), alt.upper()
    prefix = 0
    while prefix < min(len(r), len(a)) and r[prefix] == a[prefix]:
        prefix += 1
    if prefix == len(r) and prefix == len(a):
        return "ref"
    if prefix == len(r) or prefix == len(a):
        return "other"  # an indel
    r, a = r[prefix:], a[prefix:]
    re, ae = len(r) - 1, len(a) - 1
    while re > 0 and ae > 0 and r[re] == a[ae]:
        re, ae = re - 1, ae - 1
    return "snp" if re == 0 and ae == 0 else "other"


#: Alleles of one base (and padding), whose kind is "snp" unless the REF's base.
_BASES = ["", "A", "C", "G", "T", "N"]


def allele_kinds(alleles: np.ndarray) -> np.ndarray:
    """The :func:`allele_kind` of each allele of ``alleles`` (records, REF then ALTs; ``""``
    is padding) as int8: 0 ref-like (REF itself too), 1 snp, 2 other. Records of one-base
    alleles are classed at once.

    >>> allele_kinds(np.array([["A", "G", ""], ["A", "A", "*"], ["a", "C", "."]], dtype=object)).tolist()
    [[0, 1, 0], [0, 0, 2], [0, 1, 0]]
    """
    kinds = np.zeros(alleles.shape, dtype=np.int8)  # 0: ref-like, 1: snp, 2: other
    if alleles.size == 0:
        return kinds
    text = alleles.astype(str)
    bases = np.isin(text, _BASES)
    single = bases.all(axis=1) & (text[:, 0] != "")  # (one base each: a SNP, or REF again)
    kinds[single] = (text[single] != "") & (text[single] != text[single, :1])
    for v in np.flatnonzero(~single).tolist():
        row = alleles[v]
        ref = str(row[0])
        for k in range(1, len(row)):
            alt = str(row[k])
            if alt:
                kind = allele_kind(ref, alt)
                kinds[v, k] = 0 if kind == "ref" else 1 if kind == "snp" else 2
    return kinds


def call_classes(genotypes: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """The class of each call (index into :data:`CLASSES`; -1: not counted at its alleles),
    shape (records, samples). ``kinds``: :func:`allele_kinds` of the records. bcftools gates
    the diploid classes on the OR of the call's ALT kinds: a SNP among them counts, and so do
    ALTs that show no variation; any other ALT alone blocks the call.

    >>> g = np.array([[[0, 0], [0, 1], [1, 1], [0, -1], [1, -2], [-1, -2]]], dtype=np.int8)
    >>> call_classes(g, np.array([[0, 1]], dtype=np.int8)).tolist()
    [[0, 2, 1, 5, 4, 5]]
    """
    records, samples, ploidy = genotypes.shape
    fill = genotypes == spec.INT_FILL
    before_end = np.cumsum(fill, axis=-1) == 0
    nals = before_end.sum(axis=-1)
    missing = ((genotypes == spec.INT_MISSING) & before_end).any(axis=-1) | (nals == 0)
    alleles = np.where(before_end & ~missing[..., None], genotypes, 0).astype(np.int64)
    has_ref = ((alleles == 0) & before_end).any(axis=-1)
    high = alleles.max(axis=-1)
    low = np.where(before_end & (alleles > 0), alleles, _NO_ALLELE).min(axis=-1)
    has_alt = high > 0
    two_alts = has_alt & (low != high)
    # The SNP gate: the kinds of the call's ALT alleles ORed (REF-only calls: ref-like).
    rows = np.arange(records)[:, None, None]
    allele_kinds = np.where(alleles > 0, kinds[rows, np.minimum(alleles, kinds.shape[1] - 1)], 0)
    allele_kinds = np.where(before_end, allele_kinds, 0)
    has_snp = (allele_kinds == 1).any(axis=-1)
    has_other = (allele_kinds == 2).any(axis=-1)
    counted = has_snp | ~has_other

    classes = np.full((records, samples), -1, dtype=np.int8)
    diploid = ~missing & (nals > 1)
    classes[diploid & counted & has_ref & ~has_alt] = 0
    classes[diploid & counted & ~has_ref & has_alt & ~two_alts] = 1
    classes[diploid & counted & ((has_ref & has_alt) | two_alts)] = 2
    haploid = ~missing & (nals == 1)
    classes[haploid & has_ref] = 3
    classes[haploid & ~has_ref] = 4
    classes[missing] = 5
    return classes


def class_counts(genotypes: np.ndarray, kinds: np.ndarray, calls: DiploidCalls | None = None) -> np.ndarray:
    """Calls of each class of :data:`CLASSES` per sample, shape (classes, samples).

    Diploid chunks whose ALTs are all SNPs (the common case) are counted straight from the
    allele pairs of the calls: those of alleles up to 1 from the calls that are not ``0/0``
    (``calls``, :func:`~vcfzarr_sql.format.diploid_calls.diploid_calls` of ``genotypes``, found
    here unless given); others through :func:`call_classes`.

    >>> g = np.array([[[0, 0], [0, 1], [1, 1], [0, -1], [1, -2], [-1, -2]]], dtype=np.int8)
    >>> class_counts(g, np.array([[0, 1]], dtype=np.int8))[:, :3].tolist()
    [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    """
    if genotypes.shape[-1] != 2 or (kinds == 2).any():
        classes = call_classes(genotypes, kinds)
        return np.stack([(classes == k).sum(axis=0, dtype=np.int64) for k in range(len(CLASSES))])
    calls = calls if calls is not None else diploid_calls(genotypes)
    if calls is not None:
        return _biallelic_counts(calls)
    first, second = genotypes[..., 0], genotypes[..., 1]
    called = (first >= 0) & (second >= 0)
    same = first == second
    haploid = (first >= 0) & (second == spec.INT_FILL)
    masks = (
        called & same & (first == 0),
        called & same & (first > 0),
        called & ~same,
        haploid & (first == 0),
        haploid & (first > 0),
        (first < 0) | (second == spec.INT_MISSING),
    )
    # (int32 sums of the masks are several times faster than numpy's default)
    return np.stack([m.sum(axis=0, dtype=np.int32) for m in masks]).astype(np.int64)


#: Biallelic diploid calls: the (first, second) allele pairs of each class but missing.
_PAIRS = (((0, 0),), ((1, 1),), ((0, 1), (1, 0)), ((0, spec.INT_FILL),), ((1, spec.INT_FILL),))


def _biallelic_counts(calls: DiploidCalls) -> np.ndarray:
    """:func:`class_counts` of diploid calls whose alleles are all in FILL .. 1, from the calls
    of each allele pair per sample; every call not in a pair of :data:`_PAIRS` is missing."""
    per_pair = calls.per_sample
    counts = np.zeros((len(CLASSES), calls.samples), dtype=np.int64)
    for k, pairs in enumerate(_PAIRS):
        counts[k] = per_pair[[code(*pair) for pair in pairs]].sum(axis=0)
    counts[-1] = calls.records - counts[:-1].sum(axis=0)
    return counts


_SNP_GATED = 3  # the first three classes count only at SNP alleles


def sample_columns(counts: np.ndarray, records: int) -> dict[str, np.ndarray]:
    """Each sample's statistics from its class counts (:func:`class_counts` added up over
    ``records`` records): the counts of :data:`CLASSES`, then ``n_records``, ``n_called``,
    ``f_missing`` (plink2's F_MISS), ``call_rate`` and ``het_rate`` (NaN where undefined).

    >>> columns = sample_columns(np.array([[2], [1], [1], [0], [0], [1]]), 5)
    >>> columns["n_called"].tolist(), columns["f_missing"].tolist(), columns["het_rate"].tolist()
    ([4], [0.2], [0.25])
    """
    columns = {name: counts[k] for k, name in enumerate(CLASSES)}
    missing = counts[CLASSES.index("n_missing")]
    diploid = counts[:_SNP_GATED].sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_missing = missing / records if records else np.full(len(missing), np.nan)
        het_rate = counts[CLASSES.index("n_het")] / diploid
    columns["n_records"] = np.full(len(missing), records, dtype=np.int64)
    columns["n_called"] = records - missing
    columns["f_missing"] = f_missing
    columns["call_rate"] = 1 - f_missing
    columns["het_rate"] = het_rate
    return columns
