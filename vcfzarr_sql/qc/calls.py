"""The per-sample counts of ``bcftools stats -s`` (PSC, PSI, HWE, DP of genotypes, IDD's VAF)
for a block of records, vectorised over records and samples (``vcfstats.c``'s
``do_sample_stats``, with htslib's ``bcf_gt_type``)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.qc.sites import Alleles
from vcfzarr_sql.qc.totals import HWE_BINS, MAX_INDEL, SAMPLE_ROW, Totals, depth_bins
from vcfzarr_sql.query.variant_types import INDEL, SNP

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


def _take(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[r, index[r, s]]`` for (records, alleles) values and (records, samples) indexes."""
    return np.take_along_axis(values, index, axis=1)


def count_calls(totals: Totals, alleles: Alleles, iaf1: np.ndarray, genotypes: np.ndarray | None,
                depth: np.ndarray | None, allele_depth: np.ndarray | None) -> None:
    """Add the per-sample counts of a block of records to ``totals``: ``genotypes`` (records,
    selected samples, ploidy; None: no GT, nothing but depth counted), ``iaf1`` the AF bin of
    each record's first ALT (-1: no ALT), ``depth`` FORMAT/DP (records, samples; None:
    absent), ``allele_depth`` FORMAT/AD (records, samples, alleles; None: absent)."""
    if genotypes is not None:
        _count_genotypes(totals, alleles, iaf1, genotypes, allele_depth)
    _count_depth(totals, depth, allele_depth)


def _count_genotypes(totals: Totals, alleles: Alleles, iaf1: np.ndarray, genotypes: np.ndarray,
                     allele_depth: np.ndarray | None) -> None:
    s = totals.samples
    kind, ial, jal = genotype_types(genotypes)
    s[SAMPLE_ROW["missing"]] += (kind == UNKNOWN).sum(axis=0)
    s[SAMPLE_ROW["hap_ref"]] += (kind == HAP_R).sum(axis=0)
    s[SAMPLE_ROW["hap_alt"]] += (kind == HAP_A).sum(axis=0)
    diploid = kind <= HET_AA
    nonref = diploid & (kind != HOM_RR)
    het = (kind == HET_RA) | (kind == HET_AA)
    # singletons: the one sample of a record with a non-reference call
    lonely = nonref.sum(axis=1) == 1
    s[SAMPLE_ROW["singletons"]] += (nonref & lonely[:, None]).sum(axis=0)
    # HWE: the fraction of heterozygous calls, by the first ALT's AF bin
    n_ref = (kind == HOM_RR).sum(axis=1)
    n_het = (kind == HET_RA).sum(axis=1)
    n_alt = ((kind == HOM_AA) | (kind == HET_AA)).sum(axis=1)
    total = n_ref + n_het + n_alt
    counted = total > 0
    fraction = n_het[counted].astype(np.float32) / total[counted].astype(np.float32)
    index = (fraction * np.float32(HWE_BINS - 1)).astype(np.int64)
    index += np.where(iaf1[counted] >= 0, HWE_BINS * iaf1[counted], 0)
    biallelic = counted & (alleles.count == 2)
    totals.genotype_counts.append(np.stack([n_ref, n_het, n_alt], axis=1)[biallelic])
    totals.hwe.update(Counter(dict(zip(*(v.tolist() for v in np.unique(index, return_counts=True))))))
    # SNP classes (and REF-only calls), their transitions and transversions
    type_i, type_j = _take(alleles.types, ial), _take(alleles.types, jal)
    var_type = type_i | type_j
    gate = diploid & (((var_type & SNP) != 0) | (var_type == 0))
    s[SAMPLE_ROW["het"]] += (gate & het).sum(axis=0)
    s[SAMPLE_ROW["hom_ref"]] += (gate & (kind == HOM_RR)).sum(axis=0)
    s[SAMPLE_ROW["hom_alt"]] += (gate & (kind == HOM_AA)).sum(axis=0)
    snp_alt = gate & nonref & ((type_i & SNP) != 0)
    base = _take(alleles.bases, ial).astype(np.int16)
    ref = alleles.bases[:, :1].astype(np.int16)
    skipped = snp_alt & (base < 0)  # (bcftools goes on to the next sample)
    change = snp_alt & ~skipped
    transition = change & (np.abs(ref - base) == 2)
    s[SAMPLE_ROW["ts"]] += transition.sum(axis=0)
    s[SAMPLE_ROW["tv"]] += (change & ~transition).sum(axis=0)
    # indels
    indel = diploid & ((var_type & INDEL) != 0) & ~skipped & nonref
    s[SAMPLE_ROW["indels"]] += indel.sum(axis=0)
    length_i, length_j = _take(alleles.lengths, ial), _take(alleles.lengths, jal)
    indel_i, indel_j = indel & het & ((type_i & INDEL) != 0), indel & het & ((type_j & INDEL) != 0)
    s[SAMPLE_ROW["del_hets"]] += ((indel_i & (length_i < 0)) | (indel_j & (length_j < 0))).sum(axis=0)
    s[SAMPLE_ROW["ins_hets"]] += ((indel_i & (length_i >= 0)) | (indel_j & (length_j >= 0))).sum(axis=0)
    hom = indel & (kind == HOM_AA)
    s[SAMPLE_ROW["del_homs"]] += (hom & (length_i < 0)).sum(axis=0)
    s[SAMPLE_ROW["ins_homs"]] += (hom & (length_i >= 0)).sum(axis=0)
    if allele_depth is not None and (indel_i.any() or indel_j.any()):
        _add_vaf(totals, allele_depth, indel_i, ial, jal, length_i)
        _add_vaf(totals, allele_depth, indel_j, jal, ial, length_j)


def _add_vaf(totals: Totals, allele_depth: np.ndarray, calls: np.ndarray, ial: np.ndarray,
             jal: np.ndarray, length: np.ndarray) -> None:
    """``update_dvaf``: the fraction of reads of allele ``ial`` against ``ial`` and ``jal``,
    by the indel length of ``ial``, for the ``calls`` selected."""
    r, smp = np.nonzero(calls)
    width = allele_depth.shape[2]
    i, j = ial[r, smp], jal[r, smp]
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
