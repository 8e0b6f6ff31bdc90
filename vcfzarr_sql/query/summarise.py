"""The counts :mod:`.stored_counts` stores, computed from the genotypes of one variant chunk,
one sample chunk at a time: per record counts add up over sample chunks
(:meth:`.GenotypeCounts.plus`), per sample counts are joined. :func:`summarise` works on blocks
in memory (``convert``, before they are compressed), :func:`summarise_chunk` reads them from a
store (``index``, ``validate``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.format import spec, summaries
from vcfzarr_sql.format.diploid_calls import DiploidCalls, diploid_calls
from vcfzarr_sql.query import stored_counts
from vcfzarr_sql.query.genotype_counts import GenotypeCounts, genotype_counts, hwe_per_allele
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


def summarise(
    alleles: np.ndarray,
    calls: Iterable[tuple[np.ndarray, np.ndarray | None]],
    num_samples: int,
    variants_chunk_size: int,
    diploid: DiploidCalls | None = None,
) -> ChunkSummary:
    """The :class:`ChunkSummary` of one variant chunk of a store with ``num_samples`` samples
    in variant chunks of ``variants_chunk_size`` records, from its ``variant_allele`` block and,
    one sample chunk at a time in sample order, its genotypes and their phasing (None when the
    store has none); ``diploid``: the :func:`~vcfzarr_sql.format.diploid_calls.diploid_calls`
    of all its samples' genotypes when already found (else each sample chunk's are found here,
    once for every count).

    >>> alleles = np.array([["A", "T"]], dtype=object)
    >>> genotypes = np.array([[[0, 1], [1, 1]]], dtype=np.int8)
    >>> s = summarise(alleles, [(genotypes[:, :1], None), (genotypes[:, 1:], None)], 2, 1)
    >>> s.call_counts.tolist(), s.class_counts[0, :3].tolist()
    ([[2, 0, 2]], [[0, 0], [0, 1], [1, 0]])
    """
    width = alleles.shape[1]
    kinds = allele_kinds(alleles)
    num_alleles = width - (alleles == spec.STR_FILL).sum(axis=1)  # ("" pads, as allele_kinds reads)
    total: GenotypeCounts | None = None
    classes = []
    start = 0
    for genotypes, phased in calls:
        found = (diploid_calls(genotypes) if diploid is None
                 else diploid.sample_slice(start, start + genotypes.shape[1]))
        start += genotypes.shape[1]
        counts = genotype_counts(genotypes, phased, width, found)
        total = counts if total is None else total.plus(counts)
        classes.append(class_counts(genotypes, kinds, found))
    if total is None:
        raise VcfZarrError("summarise: no sample chunk of genotypes")
    allele_counts, call_counts = stored_counts.packed(total, width, num_alleles)
    dtype = summaries.sample_class_dtype(variants_chunk_size)
    joined = np.concatenate(classes, axis=1)[:, :num_samples]
    hwe = hwe_per_allele(total.alleles)[:, :width]
    return ChunkSummary(allele_counts, call_counts, hwe, joined.astype(dtype)[None])


def sample_chunks(samples_chunk_size: int, num_samples: int) -> range:
    """The first sample of each sample chunk (one chunk, empty, when there are no samples)."""
    return range(0, max(num_samples, 1), samples_chunk_size)


def summarise_chunk(source: ChunkSource, gt_array: str, chunk_index: int) -> ChunkSummary:
    """The :class:`ChunkSummary` of variant chunk ``chunk_index`` of ``source``, from its
    genotypes (array ``gt_array``), read one sample chunk at a time (so it needs one genotype
    block of memory, whatever the samples)."""
    store = source.store
    samples, size = store.num_samples, store.samples_chunk_size
    phasing = store.has_array(spec.CALL_GENOTYPE_PHASED)

    def calls() -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        for lo in sample_chunks(size, samples):
            blocks = BatchBlocks(source, chunk_index, np.arange(lo, min(lo + size, samples)))
            phased = blocks.read(spec.CALL_GENOTYPE_PHASED) if phasing else None
            yield blocks.read(gt_array), phased

    alleles = BatchBlocks(source, chunk_index, None).read(spec.VARIANT_ALLELE)
    return summarise(alleles, calls(), samples, store.variants_chunk_size)
