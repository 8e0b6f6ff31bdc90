"""Genotype counts stored in the store beside the genotypes, so that the ``gt_`` columns of a
query over all samples, and ``vcf_zarr_sample_stats`` over whole chunks, add up counts
instead of decoding ``call_genotype``.

Named ``summary_*`` so that VCF Zarr readers, which read ``variant_*`` and ``call_*``
arrays, ignore them. Per record, along their own dimension ``summary_records`` (as long as
``variants``, whose chunking the spec asks every array along it to share), in chunks of as many
whole variant chunks as :data:`SUMMARY_RECORDS` records hold (at least one: a scan over many
chunks reads few of these small arrays' chunks; a region query decodes a few more records than
it needs):

* ``summary_gt_allele_counts`` (summary_records, alleles, 3) int32: per allele (REF first) bcftools'
  het, hom and hemi counts over all samples (:func:`vcfzarr_sql.query.genotype_stats.allele_counts`);
* ``summary_gt_call_counts`` (summary_records, 3) int32: samples with a called allele (NS),
  samples F_MISSING counts as missing, and the record's alleles (REF and ALTs: so that the
  ``gt_`` lists, one value per ALT, need not decode ``variant_allele``); NS is -1 where a
  genotype names an allele beyond the ``alleles`` axis (those records are decoded);
* ``summary_gt_hwe`` (summary_records, alleles, 2) float32: per allele the ``gt_HWE`` and
  ``gt_ExcHet`` p-values over all samples (:func:`vcfzarr_sql.query.genotype_counts.hwe_per_allele`: exact
  tests, the costliest columns to compute).

Per variant chunk and sample (:data:`CLASSES`):

* ``summary_sample_class_counts`` (variant chunks, classes, samples), uint16 (uint32 for
  chunks of more than 65,535 records), chunked (1, classes, samples chunk): the calls of the
  chunk in each class of :data:`CLASSES` (n_hom_ref ... n_missing) per sample.
  12 bytes per sample and chunk before compression (12 GB for 1e6 samples x 1e3 chunks, that
  is 1e6 records in chunks of 1000: 1/170 of the int8 diploid genotypes); classes no call
  has (haploid ones in a diploid store) compress to almost nothing.

:mod:`vcfzarr_sql.query.summarise` computes them, :mod:`vcfzarr_sql.query.stored_counts` reads them.
"""

from __future__ import annotations

import numpy as np

#: Call classes of ``bcftools stats -s`` (PSC), in the order of the count columns.
CLASSES = ("n_hom_ref", "n_hom_alt", "n_het", "n_hap_ref", "n_hap_alt", "n_missing")
ALLELE_COUNTS = "summary_gt_allele_counts"
CALL_COUNTS = "summary_gt_call_counts"
HWE = "summary_gt_hwe"
SAMPLE_CLASS_COUNTS = "summary_sample_class_counts"
#: Dimension names: the per-record arrays' first axis, and the arrays' own last axes.
DIM_RECORDS = "summary_records"
DIM_ALLELE_COUNTS = "summary_gt_allele_count_kinds"
DIM_CALL_COUNTS = "summary_gt_call_count_kinds"
DIM_HWE_TESTS = "summary_gt_hwe_tests"
DIM_VARIANT_CHUNKS = "summary_variant_chunks"
DIM_SAMPLE_CLASSES = "summary_sample_classes"
NOT_COUNTED = -1
DESCRIPTIONS = {
    ALLELE_COUNTS: "vcfzarr-sql: per allele, bcftools' het, hom and hemi allele counts in the "
                   "genotypes of all samples",
    CALL_COUNTS: "vcfzarr-sql: samples with a called allele (-1: not counted), samples with "
                 "a missing genotype (F_MISSING), and alleles (REF and ALTs)",
    HWE: "vcfzarr-sql: per allele, bcftools' HWE and ExcHet p-values over all samples",
    SAMPLE_CLASS_COUNTS: "vcfzarr-sql: calls per variant chunk, class (bcftools stats -s) "
                         "and sample",
}


#: Records a chunk of the per-record arrays holds at most (unless one variant chunk is longer).
SUMMARY_RECORDS = 16_384


def variant_chunks_per_chunk(variants_chunk_size: int) -> int:
    """The variant chunks a chunk of the per-record arrays holds.

    >>> variant_chunks_per_chunk(1000), variant_chunks_per_chunk(10_000)
    (16, 1)
    """
    return max(1, SUMMARY_RECORDS // max(variants_chunk_size, 1))


def sample_class_dtype(variants_chunk_size: int) -> np.dtype:
    """The dtype of ``summary_sample_class_counts`` for chunks of that many records."""
    return np.dtype(np.uint16 if variants_chunk_size <= np.iinfo(np.uint16).max else np.uint32)


#: Columns of ``summary_gt_call_counts``.
CALLED, MISSING, ALLELES = range(3)


# -- The per-chunk counts of ``bcftools stats -s -`` beyond the call classes --------------------
#
# Per variant chunk, over every sample, so that the whole-cohort ``stats`` (PSC, PSI, DP, HWE,
# IDD's VAF) adds these up instead of decoding ``call_genotype`` (``call_DP`` and ``call_AD``):
#
# * ``summary_sample_call_stats`` (variant chunks, kinds, samples) int64, chunked
#   (1, kinds, samples chunk): per sample, the counts of :data:`SAMPLE_STATS` (PSC's
#   transitions ... PSI's deletions in homozygous calls, and the sum and number of its
#   FORMAT/DP values: the sum of AD where the store has no FORMAT/DP);
# * ``summary_call_depth_counts`` (variant chunks, :data:`DP_BINS`) int64: the calls' FORMAT/DP
#   values in the bins of bcftools' DP section;
# * ``summary_indel_vaf`` (variant chunks, 2, :data:`INDEL_VAF_BINS`) float64: the number and
#   the sum of the variant allele fractions of heterozygous indel calls by indel length
#   (IDD's mean VAF; -MAX_INDEL..MAX_INDEL);
# * ``summary_hwe_genotype_counts`` (variant chunks, records of a chunk, 3) int32: per record
#   (the last chunk padded with zeros) the homozygous-REF, REF/ALT heterozygous and other
#   diploid calls, as bcftools' HWE section counts them.
#
# :mod:`vcfzarr_sql.query.call_stats` computes them.

#: Longest indel length counted on its own (``vcfstats.c``'s ``m_indel``).
MAX_INDEL = 60
#: Depth bins: 0..500 by 1, plus one below and two above (as ``idist_init(0, 500, 1)``).
DP_MIN, DP_MAX = 0, 500
DP_BINS = 4 + DP_MAX - DP_MIN
#: IDD's VAF bins: by signed indel length, -MAX_INDEL..MAX_INDEL.
INDEL_VAF_BINS = 2 * MAX_INDEL + 1
SAMPLE_CALL_STATS = "summary_sample_call_stats"
CALL_DEPTH_COUNTS = "summary_call_depth_counts"
INDEL_VAF = "summary_indel_vaf"
HWE_GENOTYPE_COUNTS = "summary_hwe_genotype_counts"
CALL_STATS = (SAMPLE_CALL_STATS, CALL_DEPTH_COUNTS, INDEL_VAF, HWE_GENOTYPE_COUNTS)
#: Per-sample counters of ``summary_sample_call_stats``, named as :mod:`vcfzarr_sql.query.stats_totals` names them.
SAMPLE_STATS = ("ts", "tv", "indels", "singletons", "ins_hets", "del_hets", "ins_homs",
                "del_homs", "dp_sum", "dp_n")
DIM_SAMPLE_STATS = "summary_sample_call_stat_kinds"
DIM_DEPTH_BINS = "summary_call_depth_bins"
DIM_VAF_KINDS = "summary_indel_vaf_kinds"
DIM_VAF_BINS = "summary_indel_vaf_lengths"
DIM_CHUNK_RECORDS = "summary_chunk_records"
DIM_HWE_GENOTYPES = "summary_hwe_genotype_kinds"
CALL_STATS_DESCRIPTIONS = {
    SAMPLE_CALL_STATS: "vcfzarr-sql: per variant chunk and sample, bcftools stats -s counts "
                       "(ts, tv, indels, singletons, ins/del hets/homs, DP sum and count)",
    CALL_DEPTH_COUNTS: "vcfzarr-sql: per variant chunk, calls in each bcftools stats DP bin",
    INDEL_VAF: "vcfzarr-sql: per variant chunk, number and sum of heterozygous indel calls' "
               "VAF by indel length (bcftools stats IDD)",
    HWE_GENOTYPE_COUNTS: "vcfzarr-sql: per variant chunk and record, bcftools stats HWE's "
                         "hom-ref, het and hom-alt calls",
}
