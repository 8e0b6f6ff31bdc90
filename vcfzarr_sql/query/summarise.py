"""The counts :mod:`.stored_counts` stores, computed from the genotypes of one variant chunk,
one sample chunk at a time (so it needs one genotype block of memory, whatever the samples):
per record counts add up over sample chunks (:meth:`.GenotypeCounts.plus`), per sample
counts are joined."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec, summaries
from vcfzarr_sql.query import stored_counts
from vcfzarr_sql.query.arrays import StringBlock
from vcfzarr_sql.query.genotype_stats import GenotypeCounts, genotype_counts, hwe_per_allele
from vcfzarr_sql.query.sample_classes import allele_kinds, class_counts
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.source import ChunkSource


@dataclass(frozen=True)
class ChunkSummary:
    """The stored arrays' blocks of one variant chunk: ``allele_counts``, ``call_counts`` and
    ``hwe`` (rows: records), ``class_counts`` (1, classes, samples)."""

    allele_counts: np.ndarray
    call_counts: np.ndarray
    hwe: np.ndarray
    class_counts: np.ndarray

    def block(self, name: str) -> np.ndarray:
        """The block of stored array ``name``."""
        return {
            summaries.ALLELE_COUNTS: self.allele_counts,
            summaries.CALL_COUNTS: self.call_counts,
            summaries.HWE: self.hwe,
            summaries.SAMPLE_CLASS_COUNTS: self.class_counts,
        }[name]


def summarise_chunk(source: ChunkSource, gt_array: str, chunk_index: int) -> ChunkSummary:
    """The :class:`ChunkSummary` of variant chunk ``chunk_index`` of ``source``, from its
    genotypes (array ``gt_array``)."""
    store = source.store
    width = store.array_info(spec.VARIANT_ALLELE).shape[1]
    size = store.samples_chunk_size
    alleles = BatchBlocks(source, chunk_index, None).read(spec.VARIANT_ALLELE)
    kinds = allele_kinds(alleles)
    num_alleles = width - StringBlock.of(alleles).fill.sum(axis=1)
    total: GenotypeCounts | None = None
    classes = []
    for lo in range(0, max(store.num_samples, 1), size):
        blocks = BatchBlocks(source, chunk_index, np.arange(lo, min(lo + size, store.num_samples)))
        phased = (blocks.read(spec.CALL_GENOTYPE_PHASED)
                  if store.has_array(spec.CALL_GENOTYPE_PHASED) else None)
        genotypes = blocks.read(gt_array)
        counts = genotype_counts(genotypes, phased, width)
        total = counts if total is None else total.plus(counts)
        classes.append(class_counts(genotypes, kinds))
    assert total is not None  # (the loop runs at least once)
    allele_counts, call_counts = stored_counts.packed(total, width, num_alleles)
    dtype = summaries.sample_class_dtype(store.variants_chunk_size)
    joined = np.concatenate(classes, axis=1)[:, : store.num_samples]
    hwe = hwe_per_allele(total.alleles)[:, :width]
    return ChunkSummary(allele_counts, call_counts, hwe, joined.astype(dtype)[None])
