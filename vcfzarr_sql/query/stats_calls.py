"""The per-sample counts of ``bcftools stats -s`` (PSC, PSI, HWE, DP of genotypes, IDD's VAF)
for a block of records, vectorised over records and samples (``vcfstats.c``'s
``do_sample_stats``, with htslib's ``bcf_gt_type``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.diploid_calls import CODES, DiploidCalls, code, diploid_calls
from vcfzarr_sql.query.stats_totals import HWE_BINS, MAX_INDEL, SAMPLE_ROW, Totals, depth_bins
from vcfzarr_sql.query.variant_types import INDEL, SNP, allele_types

#: A, C, G, T (either case) = 0..3 by code point, else -1.
_ACGT = np.full(128, -1, np.int8)
for _k, _base in enumerate("ACGT"):
    _ACGT[ord(_base)] = _ACGT[ord(_base.lower())] = _k


def first_bases(alleles: np.ndarray) -> np.ndarray:
    """The first base of each allele, A C G T = 0..3 (either case), else -1.

    >>> first_bases(np.array([["ACG", "t", ""], ["<DEL>", "*", "Nx"]], dtype=object)).tolist()
    [[0, 3, -1], [-1, -1, -1]]
    """
    points = alleles.astype("U1").view(np.uint32)
    return np.where(points < 128, _ACGT[np.minimum(points, 127)], np.int8(-1)).astype(np.int8)


@dataclass
class Alleles:
    """The alleles of a block of records, typed as htslib types them."""

    types: np.ndarray  # (records, alleles) int16 type bits (REF and padding: 0)
    lengths: np.ndarray  # (records, alleles) indel lengths
    bases: np.ndarray  # (records, alleles) first base, A C G T = 0..3, else -1
    count: np.ndarray  # (records,) alleles (REF and ALTs)

    def rows(self, mask: np.ndarray) -> Alleles:
        """The alleles of the records ``mask`` selects."""
        return Alleles(self.types[mask], self.lengths[mask], self.bases[mask], self.count[mask])

    @classmethod
    def of(cls, alleles: np.ndarray) -> Alleles:
        types, lengths = allele_types(alleles)
        bases = first_bases(alleles) if alleles.size else np.zeros(alleles.shape, np.int8)
        return cls(types, lengths, bases, (alleles != spec.STR_FILL).sum(axis=1))


#: ``bcf_gt_type``'s classes.
HOM_RR, HET_RA, HOM_AA, HET_AA, HAP_R, HAP_A, UNKNOWN = range(7)


def genotype_types(genotypes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(class, ial, jal) of each call of ``genotypes`` (records, samples, ploidy), as htslib's
    ``bcf_gt_type``: a call with any missing allele is unknown; ``ial`` the smallest ALT of the
    call (0: none), ``jal`` the other ALT of a call with two (for more, the last one seen
    above ``ial``), else 0.

    >>> g = np.array([[[0, 0], [0, 1], [1, 1], [2, 1], [0, -1], [1, -2], [-1, -2]]])
    >>> [a.tolist() for a in genotype_types(g)]
    [[[0, 1, 2, 3, 6, 5, 6]], [[0, 1, 1, 1, 0, 1, 0]], [[0, 0, 0, 2, 0, 0, 0]]]
    """
    if genotypes.shape[2] == 2:
        return _diploid_types(genotypes[..., 0], genotypes[..., 1])
    shape = genotypes.shape[:2]
    ial = np.zeros(shape, np.int32)
    jal = np.zeros(shape, np.int32)
    has_ref = np.zeros(shape, bool)
    alts = np.zeros(shape, np.int8)  # 0, 1 (one ALT), 2 (two distinct)
    nals = np.zeros(shape, np.int32)
    ended = np.zeros(shape, bool)
    missing = np.zeros(shape, bool)
    for k in range(genotypes.shape[2]):
        allele = genotypes[..., k].astype(np.int32)
        ended |= allele == spec.INT_FILL
        active = ~ended
        missing |= active & (allele < 0)
        called = active & (allele >= 0)
        has_ref |= called & (allele == 0)
        alt = called & (allele > 0)
        first = alt & (ial == 0)
        other = alt & (ial != 0) & (allele != ial)
        lower = other & (allele < ial)
        jal = np.where(lower, ial, np.where(other, allele, jal))
        ial = np.where(first | lower, allele, ial)
        alts = np.where(first, np.int8(1), np.where(other, np.int8(2), alts))
        nals += called
    kind = np.where(has_ref, np.where(alts > 0, HET_RA, HOM_RR), np.where(alts == 1, HOM_AA, HET_AA))
    kind = np.where(nals == 1, np.where(has_ref, HAP_R, HAP_A), kind)
    kind = np.where(missing | (nals == 0), UNKNOWN, kind)
    return kind.astype(np.int8), ial, jal


def _diploid_types(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`genotype_types` of calls of at most two alleles (``a``, ``b``: the first and
    second of each), in the genotypes' own integer type."""
    low, high = np.minimum(a, b), np.maximum(a, b)
    zero = np.zeros((), a.dtype)
    diploid = (a >= 0) & (b >= 0)
    kind = np.full(a.shape, UNKNOWN, np.int8)
    kind[diploid & (high == 0)] = HOM_RR
    kind[diploid & (low == 0) & (high > 0)] = HET_RA
    kind[diploid & (low > 0) & (low == high)] = HOM_AA
    kind[diploid & (low > 0) & (low != high)] = HET_AA
    haploid = (a >= 0) & (b == spec.INT_FILL)
    kind[haploid & (a == 0)] = HAP_R
    kind[haploid & (a > 0)] = HAP_A
    ial = np.where(diploid, np.where(low > 0, low, high), np.where(haploid, a, zero))
    jal = np.where(diploid & (low > 0) & (low != high), high, zero)
    return kind, ial, jal


def _take(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[r, index[r, s]]`` for (records, alleles) values and (records, samples) indexes
    (a few alleles: one pass per allele, without an index array of machine integers)."""
    if values.shape[1] > 4:
        return np.take_along_axis(values, index.astype(np.intp), axis=1)
    out = np.zeros(index.shape, values.dtype)
    for k in range(values.shape[1]):
        column = values[:, k : k + 1]
        if column.any():
            out = np.where(index == k, column, out)
    return out


def _sum(mask: np.ndarray) -> np.ndarray:
    """Per sample: the calls ``mask`` selects (int32 sums: several times faster than numpy's
    default for booleans)."""
    return mask.sum(axis=0, dtype=np.int32)


def count_calls(totals: Totals, alleles: Alleles, genotypes: np.ndarray | None,
                depth: np.ndarray | None, allele_depth: np.ndarray | None,
                calls: DiploidCalls | None = None) -> np.ndarray:
    """Add the per-sample counts of a block of records to ``totals``: ``genotypes`` (records,
    selected samples, ploidy; None: no GT, nothing but depth counted), ``depth`` FORMAT/DP
    (records, samples; None: absent), ``allele_depth`` FORMAT/AD (records, samples, alleles;
    None: absent). Returns each record's (hom REF, REF/ALT het, other diploid) calls, HWE's
    counts (:func:`count_hwe`; (records, 3) int64, zeros without genotypes). ``calls``: the
    :func:`~vcfzarr_sql.format.diploid_calls.diploid_calls` of ``genotypes`` when already found."""
    records = len(alleles.count)
    hwe = np.zeros((records, 3), np.int64)
    if genotypes is not None:
        simple = _simple_records(alleles, genotypes, calls is not None)
        if simple.any():
            if calls is None or not simple.all():
                calls = diploid_calls(genotypes if simple.all() else genotypes[simple])
            if calls is None:  # (an allele below the fill value: counted as any call)
                simple[:] = False
            else:
                hwe[simple] = _count_simple(totals, alleles.rows(simple), calls)
        if not simple.all():
            other = ~simple
            hwe[other] = _count_genotypes(totals, alleles.rows(other), genotypes[other],
                                          None if allele_depth is None else allele_depth[other])
    _count_depth(totals, depth, allele_depth)
    return hwe


def count_hwe(totals: Totals, num_alleles: np.ndarray, iaf1: np.ndarray, hwe: np.ndarray) -> None:
    """Add records to HWE's bins, by the fraction of heterozygous calls and the AF bin of the
    first ALT (``iaf1``, -1: no ALT): ``hwe`` their (hom REF, het, hom ALT) calls
    (:func:`count_calls`), ``num_alleles`` their alleles (REF and ALTs; the report's HWE tests
    keep the biallelic ones)."""
    total = hwe.sum(axis=1)
    counted = total > 0
    n_het = hwe[counted, 1]
    fraction = n_het.astype(np.float32) / total[counted].astype(np.float32)
    index = (fraction * np.float32(HWE_BINS - 1)).astype(np.int64)
    index += np.where(iaf1[counted] >= 0, HWE_BINS * iaf1[counted], 0)
    totals.genotype_counts.append(hwe[counted & (num_alleles == 2)])
    totals.hwe_index.append(index)


def _simple_records(alleles: Alleles, genotypes: np.ndarray, diploid: bool) -> np.ndarray:
    """Records counted by :func:`_count_simple`: at most one ALT, a SNP or one without
    variation, in a store of at most two alleles per call whose genotypes name no other
    allele (``diploid``: known already, from their :func:`~vcfzarr_sql.format.diploid_calls.diploid_calls`)."""
    if genotypes.shape[2] != 2 or len(genotypes) == 0:
        return np.zeros(len(genotypes), bool)
    simple = (alleles.count <= 2) & ((alleles.types & ~SNP) == 0).all(axis=1)
    if simple.any() and not diploid:
        simple &= genotypes.reshape(len(genotypes), -1).max(axis=1) <= 1
    return simple


#: Each kind's allele pairs (a haploid call is (allele, -2); every pair not listed is a
#: missing call), as :func:`~vcfzarr_sql.format.diploid_calls.code` codes them.
_CODES = {HOM_RR: (code(0, 0),), HET_RA: (code(0, 1), code(1, 0)), HOM_AA: (code(1, 1),),
          HAP_R: (code(0, -2),), HAP_A: (code(1, -2),)}

#: Whether each code is a non-reference call (het or hom ALT).
_NONREF = np.isin(np.arange(CODES), _CODES[HET_RA] + _CODES[HOM_AA])


def _count_simple(totals: Totals, alleles: Alleles, calls: DiploidCalls) -> np.ndarray:
    """The counts of records of :func:`_simple_records`, from their calls that are not ``0/0``
    (``calls``): each kind's per sample and per record; singletons, transitions and
    transversions by record. Returns HWE's counts."""
    s = totals.samples
    per_sample, per_record = calls.per_sample, calls.per_record
    counted = np.zeros(calls.samples, np.int64)
    for kind, row in ((HOM_RR, "hom_ref"), (HET_RA, "het"), (HOM_AA, "hom_alt"), (HAP_R, "hap_ref"), (HAP_A, "hap_alt")):
        sums = per_sample[list(_CODES[kind])].sum(axis=0)
        s[SAMPLE_ROW[row]] += sums
        counted += sums
    s[SAMPLE_ROW["missing"]] += calls.records - counted
    n_ref, n_alt = per_record[:, _CODES[HOM_RR][0]], per_record[:, _CODES[HOM_AA][0]]
    n_het = per_record[:, list(_CODES[HET_RA])].sum(axis=1)
    hwe = np.stack([n_ref, n_het, n_alt], axis=1)
    # Each record's class: 1 + (the one sample with a non-reference call) + 2 (transition) or
    # 4 (transversion); the non-reference calls per sample and class in one bincount.
    lonely = n_het + n_alt == 1
    group = 1 + lonely.astype(np.intp)
    if alleles.types.shape[1] >= 2:
        ref, base = alleles.bases[:, 0].astype(np.int16), alleles.bases[:, 1].astype(np.int16)
        snp = ((alleles.types[:, 1] & SNP) != 0) & (base >= 0)
        transition = snp & (np.abs(ref - base) == 2)
        group += 2 * transition + 4 * (snp & ~transition)
    if not (group > 1).any():
        return hwe
    # (0: a call that is not non-reference, or of a record counted nowhere)
    group[group == 1] = 0
    index = group[calls.rows]
    index *= _NONREF[calls.codes]
    index *= calls.samples
    index += calls.cols
    counts = np.bincount(index, minlength=_GROUPS * calls.samples).reshape(_GROUPS, calls.samples)
    s[SAMPLE_ROW["singletons"]] += counts[2] + counts[4] + counts[6]
    s[SAMPLE_ROW["ts"]] += counts[3] + counts[4]
    s[SAMPLE_ROW["tv"]] += counts[5] + counts[6]
    return hwe


#: The record classes of :func:`_count_simple`'s non-reference calls (0: not counted).
_GROUPS = 7


def _count_records(totals: Totals, nonref: np.ndarray, n_ref: np.ndarray, n_het: np.ndarray,
                   n_alt: np.ndarray) -> np.ndarray:
    """Singletons (the one sample of a record with a non-reference call); HWE's counts."""
    lonely = nonref.sum(axis=1, dtype=np.int32) == 1
    if lonely.any():
        totals.samples[SAMPLE_ROW["singletons"]] += _sum(nonref[lonely])
    return np.stack([n_ref, n_het, n_alt], axis=1)


def _count_genotypes(totals: Totals, alleles: Alleles, genotypes: np.ndarray,
                     allele_depth: np.ndarray | None) -> np.ndarray:
    s = totals.samples
    kind, ial, jal = genotype_types(genotypes)
    of_kind = {k: kind == k for k in range(UNKNOWN + 1)}
    s[SAMPLE_ROW["missing"]] += _sum(of_kind[UNKNOWN])
    s[SAMPLE_ROW["hap_ref"]] += _sum(of_kind[HAP_R])
    s[SAMPLE_ROW["hap_alt"]] += _sum(of_kind[HAP_A])
    het = of_kind[HET_RA] | of_kind[HET_AA]
    hom_alt = of_kind[HOM_AA] | of_kind[HET_AA]  # (bcftools' HWE "alt" calls)
    nonref = het | of_kind[HOM_AA]
    n_ref = of_kind[HOM_RR].sum(axis=1, dtype=np.int64)
    n_het = of_kind[HET_RA].sum(axis=1, dtype=np.int64)
    hwe = _count_records(totals, nonref, n_ref, n_het, hom_alt.sum(axis=1, dtype=np.int64))
    # SNP classes (and REF-only calls), their transitions and transversions; a chunk whose
    # ALTs are all SNPs (or show no variation) gates nothing
    types = alleles.types
    plain = bool(((types & ~SNP) == 0).all())
    type_i = _take(types, ial)
    if plain:
        gate = None
        var_type = type_i
    else:
        var_type = type_i | _take(types, jal)
        gate = ((var_type & SNP) != 0) | (var_type == 0)
    s[SAMPLE_ROW["het"]] += _sum(het if gate is None else gate & het)
    s[SAMPLE_ROW["hom_ref"]] += _sum(of_kind[HOM_RR] if gate is None else gate & of_kind[HOM_RR])
    s[SAMPLE_ROW["hom_alt"]] += _sum(of_kind[HOM_AA] if gate is None else gate & of_kind[HOM_AA])
    snp_alt = nonref & ((type_i & SNP) != 0)
    if gate is not None:
        snp_alt &= gate
    base = _take(alleles.bases, ial)
    ref = alleles.bases[:, :1]
    skipped = snp_alt & (base < 0)  # (bcftools goes on to the next sample)
    change = snp_alt & ~skipped
    transition = change & (np.abs(ref - base) == 2)
    s[SAMPLE_ROW["ts"]] += _sum(transition)
    s[SAMPLE_ROW["tv"]] += _sum(change & ~transition)
    if not (types & INDEL).any():
        return hwe
    # indels
    indel = ((var_type & INDEL) != 0) & ~skipped & nonref
    s[SAMPLE_ROW["indels"]] += _sum(indel)
    type_j = _take(types, jal)
    length_i, length_j = _take(alleles.lengths, ial), _take(alleles.lengths, jal)
    indel_i, indel_j = indel & het & ((type_i & INDEL) != 0), indel & het & ((type_j & INDEL) != 0)
    s[SAMPLE_ROW["del_hets"]] += _sum((indel_i & (length_i < 0)) | (indel_j & (length_j < 0)))
    s[SAMPLE_ROW["ins_hets"]] += _sum((indel_i & (length_i >= 0)) | (indel_j & (length_j >= 0)))
    hom = indel & of_kind[HOM_AA]
    s[SAMPLE_ROW["del_homs"]] += _sum(hom & (length_i < 0))
    s[SAMPLE_ROW["ins_homs"]] += _sum(hom & (length_i >= 0))
    if allele_depth is not None and (indel_i.any() or indel_j.any()):
        _add_vaf(totals, allele_depth, indel_i, ial, jal, length_i)
        _add_vaf(totals, allele_depth, indel_j, jal, ial, length_j)
    return hwe


def _add_vaf(totals: Totals, allele_depth: np.ndarray, calls: np.ndarray, ial: np.ndarray,
             jal: np.ndarray, length: np.ndarray) -> None:
    """``update_dvaf``: the fraction of reads of allele ``ial`` against ``ial`` and ``jal``,
    by the indel length of ``ial``, for the ``calls`` selected."""
    r, smp = np.nonzero(calls)
    width = allele_depth.shape[2]
    i, j = ial[r, smp].astype(np.intp), jal[r, smp].astype(np.intp)
    inside = (i < width) & (j < width)
    r, smp, i, j = r[inside], smp[inside], i[inside], j[inside]
    a = allele_depth[r, smp, i].astype(np.int64)
    b = allele_depth[r, smp, j].astype(np.int64)
    ok = (a >= 0) & (b >= 0) & ((a != 0) | (b != 0))
    vaf = a[ok].astype(np.float32) / (a[ok] + b[ok]).astype(np.float32)
    bins = MAX_INDEL + np.clip(length[r, smp][ok].astype(np.int64), -MAX_INDEL, MAX_INDEL)
    totals.vaf_n += np.bincount(bins, minlength=len(totals.vaf_n))
    totals.vaf_sum += np.bincount(bins, weights=vaf.astype(np.float64), minlength=len(totals.vaf_sum))


def _count_depth(totals: Totals, depth: np.ndarray | None, allele_depth: np.ndarray | None) -> None:
    """FORMAT/DP of each call (in a store without FORMAT/DP: the sum of its AD, as bcftools
    sums AD for a record without DP) into the DP bins and the samples' mean depth."""
    s = totals.samples
    if depth is not None:
        values = depth.astype(np.int64)
        present = (values != spec.INT_MISSING) & (values != spec.INT_FILL)
    elif allele_depth is not None:
        ad = allele_depth.astype(np.int64)
        ended = np.cumsum(ad == spec.INT_FILL, axis=2) > 0
        valid = ~ended & (ad != spec.INT_MISSING)
        present = valid.any(axis=2)
        values = np.where(valid, ad, 0).sum(axis=2)
    else:
        return
    totals.dp_calls += np.bincount(depth_bins(values[present]), minlength=len(totals.dp_calls))
    s[SAMPLE_ROW["dp_n"]] += present.sum(axis=0)
    s[SAMPLE_ROW["dp_sum"]] += np.where(present, values, 0).sum(axis=0)

