"""The record counts of ``bcftools stats`` (SN, TSTV, SiS, AF, QUAL, IDD, ST, DP of sites) for a
block of records, vectorised over records and alleles (``vcfstats.c``'s ``do_snp_stats``,
``do_indel_stats``, ``init_iaf``)."""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.query.stats_calls import Alleles
from vcfzarr_sql.query.stats_totals import MAX_INDEL, Totals, depth_bins
from vcfzarr_sql.query.variant_types import INDEL, MNP, OTHER, SNP


def af_bins(counts: np.ndarray, known: np.ndarray, m_af: int) -> np.ndarray:
    """The AF bin of each allele (``init_iaf``): ``counts`` (records, alleles) allele counts,
    REF first; ``known``: records whose counts are known (others: bin 0 throughout).

    >>> af_bins(np.array([[3, 1, 0], [0, 2, 2], [0, 0, 0]]), np.array([True, True, True]), 101).tolist()
    [[0, 0, 1], [0, 50, 50], [0, 1, 1]]
    """
    counts = counts.astype(np.int64)
    an = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        af = counts.astype(np.float32) / an.astype(np.float32)
    af = np.clip(np.nan_to_num(af, nan=0.0), 0, 1).astype(np.float32)
    bins = (af * np.float32(m_af - 2)).astype(np.int64) + 1
    bins = np.where(an == 0, 1, bins)
    bins = np.where(counts == 1, 0, bins)
    bins[:, 0] = 0
    bins[~known] = 0
    return bins


def quality_bins(quality: np.ndarray | None, records: int) -> np.ndarray:
    """``1 + int(QUAL * 10)`` in float32, 0 where QUAL is missing or negative."""
    if quality is None:
        return np.zeros(records, np.int64)
    q = quality.astype(np.float32)
    with np.errstate(invalid="ignore"):
        bad = np.isnan(q) | (q < 0)
        scaled = np.where(bad, 0, q * np.float32(10))
    return np.where(bad, 0, 1 + scaled.astype(np.int64))


def count_sites(totals: Totals, alleles: Alleles, iaf: np.ndarray, quality: np.ndarray | None,
                info_dp: np.ndarray | None) -> None:
    """Add the record counts of a block of records to ``totals``: ``iaf`` their
    :func:`af_bins`, ``quality`` QUAL (None: the store has none), ``info_dp`` the INFO/DP
    values of the records that have one (None: none)."""
    types, records = alleles.types, len(alleles.types)
    line = np.bitwise_or.reduce(types, axis=1) if types.shape[1] else np.zeros(records, np.int16)
    is_snp, is_indel = (line & SNP) != 0, (line & INDEL) != 0
    multi = alleles.count > 2
    totals.sn += [records, (line == 0).sum(), is_snp.sum(), ((line & MNP) != 0).sum(),
                  is_indel.sum(), ((line & OTHER) != 0).sum(), multi.sum(),
                  (multi & (line == SNP)).sum()]
    qual = quality_bins(quality, records)
    # SNPs: each SNP ALT of a record whose REF starts with A, C, G or T, unless its base is REF's
    ref = alleles.bases[:, :1].astype(np.int64)
    alt = alleles.bases.astype(np.int64)
    snp = ((types & SNP) != 0) & is_snp[:, None] & (ref >= 0) & (alt >= 0) & (alt != ref)
    snp[:, 0] = False
    transition = snp & (np.abs(ref - alt) == 2)
    transversion = snp & ~transition
    m_af = totals.m_af
    totals.af[0] += np.bincount(iaf[snp], minlength=m_af)
    totals.af[1] += np.bincount(iaf[transition], minlength=m_af)
    totals.af[2] += np.bincount(iaf[transversion], minlength=m_af)
    totals.substitutions += np.bincount((ref * 4 + alt)[snp], minlength=16)
    if types.shape[1] > 1:
        first_ts, first_tv = transition[:, 1], transversion[:, 1]
        totals.ts_tv_alt1 += [first_ts.sum(), first_tv.sum()]
        totals.quality_values[0].append(qual[first_ts])
        totals.quality_values[1].append(qual[first_tv])
    # indels: the record's QUAL once, each indel ALT's length
    totals.quality_values[2].append(qual[is_indel])
    indel = ((types & INDEL) != 0) & is_indel[:, None]
    totals.af[3] += np.bincount(iaf[indel], minlength=m_af)
    lengths = alleles.lengths[indel].astype(np.int64)
    capped = np.minimum(np.abs(lengths), MAX_INDEL) - 1
    totals.deletions += np.bincount(capped[lengths < 0], minlength=MAX_INDEL)
    totals.insertions += np.bincount(capped[lengths > 0], minlength=MAX_INDEL)
    if info_dp is not None:
        totals.dp_sites += np.bincount(depth_bins(info_dp.astype(np.int64)), minlength=len(totals.dp_sites))
