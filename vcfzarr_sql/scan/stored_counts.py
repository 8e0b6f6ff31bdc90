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
  het, hom and hemi counts over all samples (:func:`.genotype_stats.allele_counts`);
* ``summary_gt_call_counts`` (summary_records, 3) int32: samples with a called allele (NS),
  samples F_MISSING counts as missing, and the record's alleles (REF and ALTs: so that the
  ``gt_`` lists, one value per ALT, need not decode ``variant_allele``); NS is -1 where a
  genotype names an allele beyond the ``alleles`` axis (those records are decoded);
* ``summary_gt_hwe`` (summary_records, alleles, 2) float32: per allele the ``gt_HWE`` and
  ``gt_ExcHet`` p-values over all samples (:func:`.genotype_stats.hwe_per_allele`: exact
  tests, the costliest columns to compute).

Per variant chunk and sample (:mod:`.sample_stats`' classes):

* ``summary_sample_class_counts`` (variant chunks, classes, samples), uint16 (uint32 for
  chunks of more than 65,535 records), chunked (1, classes, samples chunk): the calls of the
  chunk in each class of :data:`.sample_stats.CLASSES` (n_hom_ref ... n_missing) per sample.
  12 bytes per sample and chunk before compression (12 GB for 1e6 samples x 1e3 chunks, that
  is 1e6 records in chunks of 1000: 1/170 of the int8 diploid genotypes); classes no call
  has (haploid ones in a diploid store) compress to almost nothing.

:mod:`.summarise` computes them; the writer is :func:`vcfzarr_sql.store.write_genotype_counts`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vcfzarr_sql.scan.blocks import BatchBlocks
from vcfzarr_sql.scan.genotype_stats import AlleleCounts, GenotypeCounts

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


def packed(
    counts: GenotypeCounts, width: int, alleles: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``counts`` of records with ``alleles`` alleles each as the rows of the two stored arrays
    (alleles beyond ``width`` mark the record NOT_COUNTED)."""
    c = counts.alleles
    per_allele = np.stack([c.het, c.hom, c.hemi], axis=-1)
    beyond = per_allele[:, width:].reshape(len(per_allele), -1).any(axis=1)
    called = np.where(beyond, NOT_COUNTED, c.called)
    calls = np.stack([called, counts.missing, alleles], axis=-1).astype(np.int32)
    return per_allele[:, :width].astype(np.int32), calls


def stored(source: Any) -> bool:
    """Whether ``source`` has the per-record counts (``gt_`` columns over all samples)."""
    return all(source.has_array(name) for name in (ALLELE_COUNTS, CALL_COUNTS))


def stored_counts(blocks: BatchBlocks) -> GenotypeCounts | None:
    """The batch's counts over all samples read from the stored arrays (one per entry of the
    ``alleles`` axis); None when the store has none or a record is not counted."""
    source = blocks.source
    if blocks.samples is not None or not stored(source):
        return None
    calls = blocks.read(CALL_COUNTS)
    if (calls[:, CALLED] == NOT_COUNTED).any():
        return None
    per_allele = blocks.read(ALLELE_COUNTS)  # (int32: sums over records widen to int64)
    het, hom, hemi = (per_allele[..., k] for k in range(3))
    alleles = AlleleCounts(het, hom, hemi, calls[:, CALLED].astype(np.int64))
    return GenotypeCounts(alleles, calls[:, MISSING].astype(np.int64), source.num_samples)


def stored_hwe(blocks: BatchBlocks) -> np.ndarray | None:
    """The batch's (records, alleles, 2) HWE and ExcHet p-values over all samples, read from
    ``summary_gt_hwe``; None when the store has none. Valid where :func:`stored_counts` is."""
    return blocks.read(HWE) if blocks.source.has_array(HWE) else None


def stored_num_alleles(blocks: BatchBlocks) -> np.ndarray | None:
    """The alleles (REF and ALTs) of each record of the batch, from the stored call counts;
    None when the store has none (or counts written before they held alleles)."""
    if not blocks.source.has_array(CALL_COUNTS):
        return None
    if blocks.source.array_info(CALL_COUNTS).shape[1] <= ALLELES:
        return None
    return blocks.read(CALL_COUNTS)[:, ALLELES]


def class_counts_stored(store: Any) -> bool:
    """Whether ``store`` has ``summary_sample_class_counts`` laid out as they are written (a
    row and a chunk per variant chunk, every sample); other layouts (rechunked by another tool)
    are not read: the genotypes are decoded instead (``validate`` reports them)."""
    if not store.has_array(SAMPLE_CLASS_COUNTS):
        return False
    info = store.array_info(SAMPLE_CLASS_COUNTS)
    return (len(info.shape) == 3 and info.chunks[0] == 1
            and info.shape[0] == store.num_variant_chunks and info.shape[2] == store.num_samples)


def stored_class_counts(blocks: BatchBlocks) -> np.ndarray | None:
    """The (classes, samples) call counts of the batch's whole variant chunks for its samples,
    added up from ``summary_sample_class_counts``; None when the store has none to read
    (:func:`class_counts_stored`)."""
    if not class_counts_stored(blocks.source):
        return None
    return blocks.sum(SAMPLE_CLASS_COUNTS)
