"""Genotype counts stored in the store beside the genotypes, so that the ``gt_`` columns of a
query over all samples add up counts instead of decoding ``call_genotype``.

Two arrays, chunked like ``variants`` (named ``summary_*`` so that VCF Zarr readers, which
read ``variant_*`` and ``call_*`` arrays, ignore them):

* ``summary_gt_allele_counts`` (variants, alleles, 3) int32: per allele (REF first) bcftools'
  het, hom and hemi counts over all samples (:func:`.genotype_stats.allele_counts`);
* ``summary_gt_call_counts`` (variants, 2) int32: samples with a called allele (NS) and
  samples F_MISSING counts as missing; NS is -1 where a genotype names an allele beyond the
  ``alleles`` axis (those records are decoded).

The counts are computed one (variant chunk, sample chunk) block at a time and added up
(:meth:`.GenotypeCounts.plus`), so writing them needs one genotype block of memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vcfzarr_sql import spec
from vcfzarr_sql.scan.blocks import BatchBlocks
from vcfzarr_sql.scan.genotype_stats import AlleleCounts, GenotypeCounts, genotype_counts

ALLELE_COUNTS = "summary_gt_allele_counts"
CALL_COUNTS = "summary_gt_call_counts"
#: Dimension names of the last axes of the two arrays.
DIM_ALLELE_COUNTS = "summary_gt_allele_count_kinds"
DIM_CALL_COUNTS = "summary_gt_call_count_kinds"
NOT_COUNTED = -1
DESCRIPTIONS = {
    ALLELE_COUNTS: "vcfzarr-sql: per allele, bcftools' het, hom and hemi allele counts in the "
                   "genotypes of all samples",
    CALL_COUNTS: "vcfzarr-sql: samples with a called allele (-1: not counted) and samples with "
                 "a missing genotype (F_MISSING)",
}


def counts_of_chunk(source: Any, gt_array: str, chunk_index: int) -> tuple[np.ndarray, np.ndarray]:
    """The two stored arrays' rows for variant chunk ``chunk_index`` of ``source``, computed
    from its genotypes (array ``gt_array``), one sample chunk at a time."""
    width = source.array_info(spec.VARIANT_ALLELE).shape[1]
    size = source.samples_chunk_size
    total: GenotypeCounts | None = None
    for lo in range(0, max(source.num_samples, 1), size):
        samples = np.arange(lo, min(lo + size, source.num_samples))
        blocks = BatchBlocks(source, chunk_index, samples)
        phased = (blocks.read(spec.CALL_GENOTYPE_PHASED)
                  if source.has_array(spec.CALL_GENOTYPE_PHASED) else None)
        counts = genotype_counts(blocks.read(gt_array), phased, width)
        total = counts if total is None else total.plus(counts)
    return packed(total, width)


def packed(counts: GenotypeCounts, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``counts`` as the rows of the two stored arrays (alleles beyond ``width`` mark the
    record NOT_COUNTED)."""
    c = counts.alleles
    per_allele = np.stack([c.het, c.hom, c.hemi], axis=-1)
    beyond = per_allele[:, width:].reshape(len(per_allele), -1).any(axis=1)
    called = np.where(beyond, NOT_COUNTED, c.called)
    calls = np.stack([called, counts.missing], axis=-1).astype(np.int32)
    return per_allele[:, :width].astype(np.int32), calls


def stored_counts(blocks: BatchBlocks) -> GenotypeCounts | None:
    """The batch's counts over all samples read from the stored arrays (one per entry of the
    ``alleles`` axis); None when the store has none or a record is not counted."""
    source = blocks.source
    if blocks.samples is not None or not all(
        source.has_array(name) for name in (ALLELE_COUNTS, CALL_COUNTS)
    ):
        return None
    calls = blocks.read(CALL_COUNTS)
    if (calls[:, 0] == NOT_COUNTED).any():
        return None
    per_allele = blocks.read(ALLELE_COUNTS).astype(np.int64)
    het, hom, hemi = (per_allele[..., k] for k in range(3))
    alleles = AlleleCounts(het, hom, hemi, calls[:, 0].astype(np.int64))
    return GenotypeCounts(alleles, calls[:, 1].astype(np.int64), source.num_samples)

