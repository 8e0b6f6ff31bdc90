"""The per-chunk counts of ``bcftools stats -s -`` stored beside the genotypes (their layout:
:mod:`vcfzarr_sql.format.summaries`, :data:`~vcfzarr_sql.format.summaries.CALL_STATS`), so that a
whole-cohort ``stats`` over whole chunks adds them up instead of decoding genotypes, depths and
allele depths.

:func:`summarise_call_stats` counts them from a chunk's arrays in memory with the very code
``stats`` counts a decoded chunk with (:func:`~.stats_calls.count_calls`): ``convert`` calls it
before the arrays are compressed, :func:`summarise_call_stats_chunk` reads them from a store
(``index``, ``validate``). :func:`stored_call_stats` reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.format.diploid_calls import DiploidCalls
from vcfzarr_sql.query.stats_calls import Alleles, count_calls
from vcfzarr_sql.query.stats_totals import SAMPLE_ROW, Totals
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore

#: The FORMAT fields counted besides GT: FORMAT/DP (calls' depths) and FORMAT/AD.
DEPTH, ALLELE_DEPTH = spec.FORMAT_PREFIX + "DP", spec.FORMAT_PREFIX + "AD"
_ROWS = [SAMPLE_ROW[name] for name in sc.SAMPLE_STATS]


@dataclass(frozen=True)
class CallStats:
    """The blocks of the :data:`~vcfzarr_sql.format.summaries.CALL_STATS` arrays of one variant
    chunk (a leading axis of one variant chunk)."""

    sample_stats: np.ndarray  # (1, SAMPLE_STATS, samples) int64
    depth_counts: np.ndarray  # (1, DP_BINS) int64
    indel_vaf: np.ndarray  # (1, 2, INDEL_VAF_BINS) float64: number, sum
    hwe_counts: np.ndarray  # (1, variants chunk size, 3) int32

    def block(self, name: str) -> np.ndarray:
        """The block of stored array ``name``."""
        return {
            sc.SAMPLE_CALL_STATS: self.sample_stats,
            sc.CALL_DEPTH_COUNTS: self.depth_counts,
            sc.INDEL_VAF: self.indel_vaf,
            sc.HWE_GENOTYPE_COUNTS: self.hwe_counts,
        }[name]


def counted_shapes(genotypes: tuple[int, ...], depth: tuple[int, ...] | None,
                   allele_depth: tuple[int, ...] | None) -> bool:
    """Whether arrays of these shapes (None: absent) are counted and stored: genotypes
    (records, samples, ploidy), FORMAT/DP one value per call, FORMAT/AD values per call (what
    ``stats`` reads; other shapes are not summarised and ``stats`` decodes them).

    >>> counted_shapes((5, 2, 2), (5, 2), None), counted_shapes((5, 2, 2), (5, 2, 2), None)
    (True, False)
    """
    return (len(genotypes) == 3 and (depth is None or len(depth) == 2)
            and (allele_depth is None or len(allele_depth) == 3))


def summarise_call_stats(alleles: np.ndarray, genotypes: np.ndarray, depth: np.ndarray | None,
                         allele_depth: np.ndarray | None, variants_chunk_size: int,
                         calls: DiploidCalls | None = None) -> CallStats:
    """The :class:`CallStats` of one variant chunk: its ``variant_allele`` block, genotypes
    (records, samples, ploidy), integer FORMAT/DP (records, samples) and AD (records, samples,
    values), None where absent, of every sample (``calls``: the genotypes'
    :func:`~vcfzarr_sql.format.diploid_calls.diploid_calls` when already found).

    >>> alleles = np.array([["A", "G"], ["C", "A"]], dtype=object)
    >>> genotypes = np.array([[[0, 1], [0, 0]], [[1, 1], [0, 1]]], dtype=np.int8)
    >>> s = summarise_call_stats(alleles, genotypes, np.array([[7, 9], [3, -1]]), None, 3)
    >>> s.sample_stats[0].tolist()   # ts, tv, indels, singletons, ..., dp_sum, dp_n
    [[1, 0], [1, 1], [0, 0], [1, 0], [0, 0], [0, 0], [0, 0], [0, 0], [10, 9], [2, 1]]
    >>> s.hwe_counts[0].tolist()
    [[1, 1, 0], [0, 1, 1], [0, 0, 0]]
    """
    samples = genotypes.shape[1]
    totals = Totals(samples, samples)
    hwe = count_calls(totals, Alleles.of(alleles), genotypes, depth, allele_depth, calls)
    padded = np.zeros((variants_chunk_size, 3), np.int32)
    padded[: len(hwe)] = hwe
    return CallStats(totals.samples[_ROWS][None], totals.dp_calls[None],
                     np.stack([totals.vaf_n.astype(np.float64), totals.vaf_sum])[None], padded[None])


def _field(store: VczStore, name: str) -> str | None:
    """The array of integer FORMAT field ``name``, None when the store has none."""
    field = store.format_fields.get(name)
    return field.array if field is not None and field.vcf_type == "Integer" else None


#: The per-sample counters counted from FORMAT/DP (or AD): the others come from GT alone.
DEPTH_STATS = ("dp_sum", "dp_n")


def summarise_call_stats_chunk(source: ChunkSource, gt_array: str, chunk_index: int,
                               depths: bool = True) -> CallStats:
    """The :class:`CallStats` of variant chunk ``chunk_index`` of ``source``, from its
    genotypes (array ``gt_array``), FORMAT/DP and AD (``depths``; else as if the store had
    none), of every sample at once."""
    store = source.store
    blocks = BatchBlocks(source, chunk_index, None)
    depth, allele_depth = (_field(store, "DP"), _field(store, "AD")) if depths else (None, None)
    return summarise_call_stats(
        blocks.read(spec.VARIANT_ALLELE), blocks.read(gt_array),
        None if depth is None else blocks.read(depth),
        None if allele_depth is None else blocks.read(allele_depth), store.variants_chunk_size,
    )


def summarised_store(store: VczStore) -> bool:
    """Whether ``store`` has GT and FORMAT/DP and AD of the shapes :func:`counted_shapes` counts."""
    gt = store.format_fields.get("GT")
    if gt is None or not store.has_array(spec.VARIANT_ALLELE):
        return False
    shapes = [None if name is None else store.array_info(name).shape
              for name in (_field(store, "DP"), _field(store, "AD"))]
    return counted_shapes(store.array_info(gt.array).shape, *shapes)


def call_stats_stored(store: VczStore) -> bool:
    """Whether ``store`` has every :data:`~vcfzarr_sql.format.summaries.CALL_STATS` array, laid
    out as written (a row per variant chunk, every sample); other stores (older ones, cohorts,
    arrays rechunked by another tool) are decoded instead."""
    if not all(store.has_array(name) for name in sc.CALL_STATS):
        return False
    chunks = store.num_variant_chunks
    stats = store.array_info(sc.SAMPLE_CALL_STATS)
    hwe = store.array_info(sc.HWE_GENOTYPE_COUNTS)
    return (stats.shape == (chunks, len(sc.SAMPLE_STATS), store.num_samples)
            and stats.chunks[0] == 1
            and store.array_info(sc.CALL_DEPTH_COUNTS).shape == (chunks, sc.DP_BINS)
            and store.array_info(sc.INDEL_VAF).shape == (chunks, 2, sc.INDEL_VAF_BINS)
            and hwe.shape == (chunks, store.variants_chunk_size, 3))


def stored_call_stats(source: ChunkSource, chunk_index: int) -> CallStats:
    """The stored :class:`CallStats` of variant chunk ``chunk_index`` (the store has them:
    :func:`call_stats_stored`)."""
    blocks = BatchBlocks(source, chunk_index, None)
    return CallStats(*(blocks.read(name) for name in sc.CALL_STATS))
