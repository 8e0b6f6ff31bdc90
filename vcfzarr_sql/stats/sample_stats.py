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

Computed chunk by chunk from the genotypes (the region's edge chunks keep only the records
that overlap it), with vectorised numpy, a few chunks at a time in the scan's threads; chunks
the region covers whole read their counts from ``summary_sample_class_counts`` when the
store has it (:mod:`.stored_counts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from vcfzarr_sql.adapters.dataset import VczDataset
from vcfzarr_sql.format import spec
from vcfzarr_sql.format.summaries import CLASSES, SAMPLE_CLASS_COUNTS
from vcfzarr_sql.query import decode
from vcfzarr_sql.query.plan import ChunkTask, ScanPlan, batch_runs
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH, THREADS, prefetched
from vcfzarr_sql.query.sample_classes import allele_kinds, class_counts
from vcfzarr_sql.query.schema import GT
from vcfzarr_sql.query.stored_counts import class_counts_stored, stored_class_counts
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.vcz import VczStore

_SNP_GATED = 3  # the first three classes count only at SNP alleles

#: Bytes of stored class counts (uint16 per class and sample) one task adds up.
RUN_CLASS_BYTES = 16 << 20

_ROW = "__vcfzarr_sql_sample_stats_row"


def _rows_in_region(store: VczStore, task: ChunkTask) -> np.ndarray | None:
    """Indexes of the chunk's records that satisfy the task's filter (None: all)."""
    if task.filter is None:
        return None
    batch = decode.decode_variants(store, task.variant_chunk, ["contig", "pos", "end"])
    rows = pa.array(np.arange(batch.num_rows))
    table = pa.Table.from_batches([batch.append_column(_ROW, rows)])
    return table.filter(task.filter)[_ROW].to_numpy()


def count_tasks(plan: ScanPlan, stored_bytes: int | None) -> list[ChunkTask]:
    """The plan's tasks, consecutive whole chunks joined into runs when their counts are
    stored, ``stored_bytes`` per chunk (None: not stored) read for the selected samples
    (:func:`stored_class_bytes`; adding up a run's stored counts is one task, not one per
    chunk): runs of at most :data:`RUN_CLASS_BYTES` of counts, and enough of them to keep the
    pool's threads busy. Chunks whose genotypes are decoded stay one per task."""
    if stored_bytes is None:
        return list(plan.tasks)
    most = max(1, min(RUN_CLASS_BYTES // max(stored_bytes, 1), -(-len(plan) // THREADS)))
    tasks: list[ChunkTask] = []
    for run in batch_runs(plan, range(len(plan)), lambda: most):
        if plan.whole[run.start]:
            tasks.append(plan.run(run.start, run.stop))
        else:
            tasks.extend(plan.task(i) for i in run)
    return tasks


def stored_class_bytes(store: VczStore, samples: np.ndarray | None) -> int | None:
    """The bytes of stored class counts a variant chunk's sum reads for ``samples`` (indexes;
    None: all), whole sample chunks of them; None when the store has no counts to read."""
    if not class_counts_stored(store):
        return None
    info = store.array_info(SAMPLE_CLASS_COUNTS)
    size = max(info.chunks[2], 1)
    width = info.shape[2] if samples is None else len(np.unique(np.asarray(samples) // size)) * size
    return info.shape[1] * max(width, 1) * info.dtype.itemsize


def sample_stats_table(
    store: VczStore, region: str | None = None, samples: Sequence[str] | None = None
) -> pa.Table:
    """One row per selected sample (store order) with its counts over ``region`` (None: all)."""
    gt = store.format_fields.get(GT)
    variants = VczDataset(store, "variants", samples, region)
    selected = variants.sample_indexes
    scan = variants.scanner(columns=["pos"])
    counts = np.zeros((len(CLASSES), store.num_samples if selected is None else len(selected)),
                      dtype=np.int64)
    def chunk_counts(task: ChunkTask) -> tuple[np.ndarray, int]:
        blocks = BatchBlocks(store, task.variant_chunk, selected, task.chunk_count)
        if task.filter is None:  # whole chunks: their stored counts, if the store has them
            stored = stored_class_counts(blocks)
            if stored is not None:
                return stored, task.num_rows
        genotypes = blocks.read(gt.array)
        alleles = blocks.read(spec.VARIANT_ALLELE)
        rows = _rows_in_region(store, task)
        if rows is not None:
            genotypes, alleles = genotypes[rows], alleles[rows]
        return class_counts(genotypes, allele_kinds(alleles)), len(genotypes)

    records = 0
    # (no genotypes: nothing counts)
    tasks = count_tasks(scan.plan, stored_class_bytes(store, selected)) if gt is not None else ()
    for chunk, chunk_records in prefetched(chunk_counts, tasks, depth=PREFETCH_DEPTH):
        counts += chunk
        records += chunk_records
    names = np.asarray(store.samples, dtype=object)
    columns: dict[str, Any] = {
        "sample_id": pa.array(list(names if selected is None else names[selected]), pa.string())
    }
    columns.update({name: pa.array(counts[k]) for k, name in enumerate(CLASSES)})
    missing = counts[CLASSES.index("n_missing")]
    diploid = counts[:_SNP_GATED].sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_missing = missing / records if records else np.full(len(missing), np.nan)
        het_rate = counts[CLASSES.index("n_het")] / diploid
    columns["n_records"] = pa.array(np.full(len(missing), records, dtype=np.int64))
    columns["n_called"] = pa.array(records - missing)
    columns["f_missing"] = pa.array(f_missing, from_pandas=True)
    columns["call_rate"] = pa.array(1 - f_missing, from_pandas=True)
    columns["het_rate"] = pa.array(het_rate, from_pandas=True)
    return pa.table(columns)
