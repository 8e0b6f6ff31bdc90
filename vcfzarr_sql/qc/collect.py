"""Counting ``bcftools stats`` over a store: :func:`collect`.

The records are those ``view`` writes (``-r/-R``, ``-t/-T``, ``-i/-e``), given chunk by chunk by
:meth:`~vcfzarr_sql.query.selection.SelectedRecords.runs` (counting: ``-s -`` is every sample,
and the scan may read any sample). Without ``-s`` only site arrays are read
(bcftools then counts no genotype either: its AF bins come from INFO/AC and AN); with ``-s``
the genotypes of the selected samples, and those of every sample only where the allele
frequencies need them (no INFO/AC and AN), as ``bcf_calc_ac`` counts them.

With every sample in store order (``-s -``), a variant chunk the selection keeps whole decodes
no genotype where the store holds its counts (:mod:`vcfzarr_sql.query.call_stats`, the sample
class counts, and, without INFO/AC and AN, the allele counts): they are added up instead.
When the selection keeps every record, the chunks one chunk of the per-record summaries spans
are counted as one batch (:meth:`~vcfzarr_sql.query.selection.SelectedRecords.runs`'
``whole_runs``): a chunk counted so costs little more than its decoding, and the rest is paid
per batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.summaries import (
    CALL_DEPTH_COUNTS,
    CLASSES,
    HWE_GENOTYPE_COUNTS,
    INDEL_VAF,
    SAMPLE_CALL_STATS,
    SAMPLE_CLASS_COUNTS,
    SAMPLE_STATS,
)
from vcfzarr_sql.qc.sites import af_bins, count_sites
from vcfzarr_sql.query import call_stats
from vcfzarr_sql.query.execute import EveryChunk
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH
from vcfzarr_sql.query.selection import ChunkWork, RunWork, SelectedRecords, Selection
from vcfzarr_sql.query.stats_calls import Alleles, count_calls, count_hwe
from vcfzarr_sql.query.stats_totals import SAMPLE_ROW, Totals
from vcfzarr_sql.query.stored_counts import class_counts_stored, stored_counts
from vcfzarr_sql.store.blocks import BatchBlocks, SpanningChunks
from vcfzarr_sql.store.fields import GT, FieldInfo
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore


@dataclass(frozen=True)
class Counted:
    """What :func:`collect` counted: the totals, and the names of the ``-s`` samples."""

    totals: Totals
    sample_names: tuple[str, ...]


def collect(store: VczStore, selection: Selection | None = None) -> Counted:
    """The counts of ``bcftools stats`` (with the selection's ``-r/-R``, ``-t/-T``, ``-s/-S``,
    ``-i/-e``; None: none) over ``store``."""
    selected = SelectedRecords(store, selection or Selection(), counting=True)
    samples = selected.samples
    totals = Totals(store.num_samples, 0 if samples is None else len(samples))
    ahead = PREFETCH_DEPTH if samples is not None and GT in store.format_fields else 0
    work, whole_runs = _chunk_counts(store, totals, samples)
    for counted in selected.runs(work, ahead=ahead, whole_runs=whole_runs):
        totals.add(counted)
    names = () if samples is None else tuple(store.samples[k] for k in samples)
    return Counted(totals, names)


def _integer_field(store: VczStore, category: str, name: str) -> str | None:
    fields = store.info_fields if category == "INFO" else store.format_fields
    field = fields.get(name)
    return field.array if field is not None and field.vcf_type == "Integer" else None


def _present(blocks: BatchBlocks, field: FieldInfo, keep: np.ndarray) -> np.ndarray:
    """The first value of a field in the kept records that have one (its mask array, where
    the store has one, tells values equal to a sentinel from missing ones)."""
    values = blocks.read(field.array)[keep].reshape(int(keep.sum()), -1)[:, 0]
    if field.mask is not None:
        present = ~blocks.read(field.mask)[keep].reshape(len(values), -1)[:, 0]
    else:
        present = (values != spec.INT_MISSING) & (values != spec.INT_FILL)
    return values[present]


def _chunk_counts(store: VczStore, totals: Totals, samples: np.ndarray | None
                  ) -> tuple[ChunkWork[Totals], RunWork[Totals] | None]:
    """The work of :meth:`SelectedRecords.runs`: the counts of the kept records of one variant
    chunk; and, where the store holds the per-sample counts of every sample (``-s -``) in
    calls of at most two alleles, the ``whole_runs`` work of :meth:`SelectedRecords.runs`:
    the counts of a run of whole chunks, as one batch (the cost of a chunk counted from
    stored counts is mostly per batch)."""
    ac, an = _integer_field(store, "INFO", "AC"), _integer_field(store, "INFO", "AN")
    info_dp = store.info_fields.get("DP")
    if info_dp is not None and info_dp.vcf_type != "Integer":
        info_dp = None
    gt = store.format_fields.get(GT)
    dp, ad = _integer_field(store, "FORMAT", "DP"), _integer_field(store, "FORMAT", "AD")
    # (the -s samples are distinct; np.unique would import numpy.ma, 0.02 CPU-s)
    unique = None if samples is None else np.sort(samples)
    order = None if samples is None or unique is None else np.searchsorted(unique, samples)
    depth_samples = None if samples is None else np.arange(len(samples))
    stored = (samples is not None and gt is not None and np.array_equal(samples, np.arange(store.num_samples))
              and class_counts_stored(store) and call_stats.call_stats_stored(store))
    diploid = gt is not None and store.array_info(gt.array).shape[2] <= 2
    spans = SpanningChunks()
    records = EveryChunk.of(store).rows

    def work(source: ChunkSource, chunk: int, rows: np.ndarray) -> Totals:
        if not len(rows):
            return totals.empty()
        return count(BatchBlocks(source, chunk, None, spans=spans), rows)

    def whole_run(source: ChunkSource, chunks: range) -> Totals:
        blocks = BatchBlocks(source, chunks.start, None, len(chunks), spans=spans)
        if len(chunks) > 1 and stored_counts(blocks) is not None:  # (then every record is counted)
            return count(blocks, np.arange(len(blocks.read(spec.VARIANT_ALLELE))))
        counts = totals.empty()
        for chunk in chunks:
            counts.add(work(source, chunk, np.arange(records[chunk])))
        return counts

    def count(blocks: BatchBlocks, rows: np.ndarray) -> Totals:
        """The counts of records ``rows`` of ``blocks`` (of one variant chunk, or of several
        whose records are all counted in the store)."""
        counts = totals.empty()
        source, chunk = blocks.source, blocks.chunk_index
        chunk_rows = len(blocks.read(spec.VARIANT_ALLELE))
        keep = np.zeros(chunk_rows, bool)
        keep[rows] = True
        alleles = Alleles.of(blocks.read(spec.VARIANT_ALLELE)[keep])
        width = alleles.types.shape[1]
        allele_counts = np.zeros((int(keep.sum()), width), np.int64)
        known = np.zeros(len(allele_counts), bool)
        from_genotypes = np.ones(len(allele_counts), bool)
        if ac is not None and an is not None:
            # bcf_calc_ac: INFO/AN and AC when the record has both, unless AC has not one
            # value per ALT (then no counts at all)
            info_an = blocks.read(an)[keep].reshape(len(known), -1)[:, 0].astype(np.int64)
            info_ac = blocks.read(ac)[keep].reshape(len(known), -1).astype(np.int64)
            given = (info_an >= 0) & (info_ac >= 0).any(axis=1)
            from_genotypes = ~given
            known = given & ((info_ac != spec.INT_FILL).sum(axis=1) == alleles.count - 1)
            values = np.where(info_ac >= 0, info_ac, 0)[:, : width - 1]
            allele_counts[:, 1 : 1 + values.shape[1]] = values
            allele_counts[:, 0] = info_an - values.sum(axis=1)
            allele_counts[~known] = 0
        # (a record without ALT has no AF bin to count: its REF's is 0)
        from_genotypes &= alleles.count > 1
        genotypes = None
        whole = stored and len(rows) == chunk_rows
        if whole and from_genotypes.any():
            # the stored allele counts are bcf_calc_ac's for calls of at most two alleles
            counted = stored_counts(blocks) if diploid else None
            whole = counted is not None
            if counted is not None:
                allele_counts[from_genotypes] = counted.alleles.total[from_genotypes, :width]
                known |= from_genotypes
        if samples is not None and gt is not None and not whole:
            every = bool(from_genotypes.any())
            called = BatchBlocks(source, chunk, None if every else unique)
            genotypes = called.read(gt.array)[keep]
            if every:
                counted_calls = genotypes[from_genotypes] if not from_genotypes.all() else genotypes
                for k in range(width):
                    allele_counts[from_genotypes, k] = (counted_calls == k).reshape(len(counted_calls), -1).sum(axis=1, dtype=np.int64)
                known |= from_genotypes
                if not np.array_equal(samples, np.arange(genotypes.shape[1])):
                    genotypes = genotypes[:, samples]
            elif order is not None and not np.array_equal(order, np.arange(len(order))):
                genotypes = genotypes[:, order]
        quality = blocks.read(spec.VARIANT_QUALITY)[keep] if store.has_array(spec.VARIANT_QUALITY) else None
        site_dp = None if info_dp is None else _present(blocks, info_dp, keep)
        iaf = af_bins(allele_counts, known, counts.m_af)
        count_sites(counts, alleles, iaf, quality, site_dp)
        iaf1 = np.where(alleles.count > 1, iaf[:, 1] if width > 1 else 0, -1)
        if whole:
            _add_stored(counts, blocks, alleles.count, iaf1)
        elif samples is not None:
            # bcftools reads FORMAT/DP and AD of the first samples of the file, as many as -s
            # selects, not those of the -s samples (``do_sample_stats``, ``update_dvaf``)
            first = BatchBlocks(source, chunk, depth_samples)
            depth = first.read(dp)[keep] if dp else None
            allele_depth = first.read(ad)[keep] if ad else None
            hwe = count_calls(counts, alleles, genotypes, depth, allele_depth)
            if genotypes is not None:
                count_hwe(counts, alleles.count, iaf1, hwe)
        return counts

    return work, whole_run if stored and diploid else None


#: The rows of :attr:`Totals.samples` the stored class counts give, in the order of ``CLASSES``.
_CLASS_ROWS = [SAMPLE_ROW[name] for name in ("hom_ref", "hom_alt", "het", "hap_ref", "hap_alt", "missing")]
_STATS_ROWS = [SAMPLE_ROW[name] for name in SAMPLE_STATS]


def _add_stored(counts: Totals, blocks: BatchBlocks, num_alleles: np.ndarray, iaf1: np.ndarray) -> None:
    """The per-sample counts of the whole variant chunk of ``blocks`` over every sample, from
    the stored counts: the class counts, the counts of :mod:`vcfzarr_sql.query.call_stats`,
    HWE's per record (by ``iaf1``, the AF bins of the records' first ALTs)."""
    counts.add_samples(_CLASS_ROWS, _summed(blocks, SAMPLE_CLASS_COUNTS)[: len(CLASSES)])
    counts.add_samples(_STATS_ROWS, _summed(blocks, SAMPLE_CALL_STATS))
    counts.dp_calls += _summed(blocks, CALL_DEPTH_COUNTS)
    vaf = _summed(blocks, INDEL_VAF)
    counts.vaf_n += vaf[0].astype(np.int64)
    counts.vaf_sum += vaf[1]
    # (one row per record of a chunk: only the last chunk of the store is short)
    hwe = blocks.read(HWE_GENOTYPE_COUNTS).reshape(-1, 3)[: len(num_alleles)]
    count_hwe(counts, num_alleles, iaf1, hwe.astype(np.int64))


def _summed(blocks: BatchBlocks, name: str) -> np.ndarray:
    """The block of array ``name`` (one row per variant chunk, every sample) added up over the
    batch's chunks, chunk by chunk (not joined first: 13 MB of call stats for 16 chunks of
    10,000 samples); the chunk's own values for a batch of one."""
    if len(blocks.chunks) == 1:
        return blocks.read(name)[0]
    first, *others = (BatchBlocks(blocks.source, chunk, None) for chunk in blocks.chunks)
    values = first.read(name)[0]
    total = values.astype(np.result_type(values.dtype, np.int64))
    for chunk in others:
        total += chunk.read(name)[0]
    return total
