"""Per-sample genotype counts over the records of a region: ``vcf_zarr_sample_stats(...)``.

One row per selected sample, counted as ``bcftools stats -s -`` counts its PSC lines:

* ``n_missing`` (PSC nMissing): calls with any missing allele (``./.``, ``.``, and the
  half-missing ``0/.`` and ``0|.``: bcftools' ``bcf_gt_type`` makes them unknown).
* ``n_hap_ref``, ``n_hap_alt`` (nHapRef, nHapAlt): haploid calls of REF, of an ALT.
* ``n_hom_ref``, ``n_hom_alt``, ``n_het`` (nRefHom, nNonRefHom, nHets): diploid (or polyploid)
  calls, counted, as bcftools counts them, only when the ALT alleles of the call are SNPs (a
  ``0/0`` call always counts; a ``0/1`` call at an indel allele does not). A call with two
  distinct ALTs (``1/2``) is heterozygous.

and, as ``plink2 --missing`` / ``--sample-counts`` users expect:

* ``n_records``: records in the region (0 when the store has no genotypes); ``n_called`` = n_records - n_missing;
  ``f_missing`` = n_missing / n_records (plink2's F_MISS); ``call_rate`` = 1 - f_missing;
  ``het_rate`` = n_het / (n_hom_ref + n_hom_alt + n_het).

Computed over the plan of the region (:func:`~vcfzarr_sql.query.plan.plan_scan`) run by the
executor (:func:`~vcfzarr_sql.query.execute.run_plan`): chunk by chunk from the genotypes,
with vectorised numpy, a few chunks at a time in the scan's threads (the region's edge chunks
keep only the records its residual filter keeps); chunks the region covers whole read their
counts from ``summary_sample_class_counts`` when the store has it
(:mod:`~vcfzarr_sql.query.stored_counts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.summaries import CLASSES, SAMPLE_CLASS_COUNTS
from vcfzarr_sql.query.cohort_classes import batched, cohort_class_counts
from vcfzarr_sql.query.execute import one_per_task, residual_rows, run_plan, scan_source
from vcfzarr_sql.query.expressions import parse_or_none
from vcfzarr_sql.query.packed_counts import packed_class_counts
from vcfzarr_sql.query.plan import ScanPlan, batch_runs, plan_scan
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH, THREADS
from vcfzarr_sql.query.request import scan_request
from vcfzarr_sql.query.sample_classes import allele_kinds, class_counts, sample_columns
from vcfzarr_sql.query.schema import GT
from vcfzarr_sql.query.stored_counts import class_counts_stored, stored_class_counts
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.counting import CountingSource
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore

__all__ = ["SAMPLE_CLASS_COUNTS", "SCHEMA", "count_runs", "sample_stats_plan",
           "sample_stats_table", "stored_class_bytes"]

#: Bytes of stored class counts (uint16 per class and sample) one task adds up.
RUN_CLASS_BYTES = 16 << 20

#: The columns of the table, one row per sample.
SCHEMA = pa.schema(
    [("sample_id", pa.string())]
    + [(name, pa.int64()) for name in CLASSES]
    + [("n_records", pa.int64()), ("n_called", pa.int64()), ("f_missing", pa.float64()),
       ("call_rate", pa.float64()), ("het_rate", pa.float64())]
)


def sample_stats_plan(
    store: VczStore, region: str | None = None, samples: Sequence[str] | None = None
) -> ScanPlan:
    """The plan of the records of ``region`` (None: all) for ``samples`` (None: all): its
    tasks' residual filter keeps the records of an edge chunk that overlap the region."""
    return plan_scan(store, scan_request(store, "variants", columns=(), region=region, samples=samples))


def count_runs(plan: ScanPlan, stored_bytes: int | None) -> Callable[[range], Iterator[range]]:
    """How the executor cuts the tasks of ``plan`` into runs: consecutive whole chunks joined
    when their counts are stored, ``stored_bytes`` per chunk (None: not stored) read for the
    selected samples (:func:`stored_class_bytes`; adding up a run's stored counts is one
    task, not one per chunk): runs of at most :data:`RUN_CLASS_BYTES` of counts, and enough
    of them to keep the pool's threads busy. Chunks whose genotypes are decoded stay one per
    run."""
    if stored_bytes is None:
        return one_per_task
    most = max(1, min(RUN_CLASS_BYTES // max(stored_bytes, 1), -(-len(plan) // THREADS)))

    def cut(pieces: range) -> Iterator[range]:
        for run in batch_runs(plan, pieces, lambda: most):
            yield from [run] if plan.whole[run.start] else one_per_task(run)

    return cut


def stored_class_bytes(store: VczStore, samples: np.ndarray | None) -> int | None:
    """The bytes of stored class counts a variant chunk's sum reads for ``samples`` (indexes;
    None: all), whole sample chunks of them; None when the store has no counts to read. A
    cohort whose batches' counts add up (:func:`~vcfzarr_sql.query.cohort_classes.batched`):
    1 (its runs as long as the threads allow: each run's edges decode batch chunks)."""
    if batched(store):
        return 1
    if not class_counts_stored(store):
        return None
    info = store.array_info(SAMPLE_CLASS_COUNTS)
    size = max(info.chunks[2], 1)
    width = info.shape[2] if samples is None else len(np.unique(np.asarray(samples) // size)) * size
    return info.shape[1] * max(width, 1) * info.dtype.itemsize


def _class_counts(source: ChunkSource, plan: ScanPlan, gt_array: str) -> Callable[[range], tuple[np.ndarray, int]]:
    """The executor's work: (class counts per sample, records counted) of a run of tasks."""
    tree = None if plan.filter is None else parse_or_none(plan.filter)

    def work(run: range) -> tuple[np.ndarray, int]:
        task = plan.run(run.start, run.stop)
        blocks = BatchBlocks(source, task.variant_chunk, task.samples, task.chunk_count)
        if task.filter is None:  # whole chunks: their stored counts, if the store has them
            stored = stored_class_counts(blocks)
            if stored is None:
                stored = cohort_class_counts(source.store, task.variant_chunk, task.chunk_count, task.samples)
            if stored is not None:
                return stored, task.num_rows
        rows = residual_rows(source, plan, task, tree)  # (an edge chunk: the records it keeps)
        packed = packed_class_counts(blocks, rows)
        if packed is not None:
            return packed, task.num_rows if rows is None else int(np.count_nonzero(rows))
        genotypes = blocks.read(gt_array)
        alleles = blocks.read(spec.VARIANT_ALLELE)
        if rows is not None:
            genotypes, alleles = genotypes[rows], alleles[rows]
        return class_counts(genotypes, allele_kinds(alleles)), len(genotypes)

    return work


def counted_table(store: VczStore, plan: ScanPlan, source: CountingSource) -> pa.Table:
    """The table of ``plan`` (:func:`sample_stats_plan`), its chunks read through ``source``
    (:func:`~vcfzarr_sql.query.execute.scan_source`) by the executor."""
    selected = plan.sample_groups[0][1]
    counts = np.zeros((len(CLASSES), store.num_samples if selected is None else len(selected)),
                      dtype=np.int64)
    records = 0
    gt = store.format_fields.get(GT)
    if gt is not None:  # (no genotypes: nothing counts)
        cut = count_runs(plan, stored_class_bytes(store, selected))
        for chunk, chunk_records in run_plan(
            source, plan, _class_counts(source, plan, gt.array), cut=cut, ahead=PREFETCH_DEPTH
        ):
            counts += chunk
            records += chunk_records
    names = np.asarray(store.samples, dtype=object)
    columns: dict[str, Any] = {"sample_id": list(names if selected is None else names[selected])}
    columns.update(sample_columns(counts, records))
    return pa.table([pa.array(columns[f.name], f.type, from_pandas=True) for f in SCHEMA], schema=SCHEMA)


def sample_stats_table(
    store: VczStore, region: str | None = None, samples: Sequence[str] | None = None
) -> pa.Table:
    """One row per selected sample (store order) with its counts over ``region`` (None: all)."""
    plan = sample_stats_plan(store, region, samples)
    return counted_table(store, plan, scan_source(store, plan))
