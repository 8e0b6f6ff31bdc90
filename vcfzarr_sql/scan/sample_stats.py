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

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from vcfzarr_sql import spec
from vcfzarr_sql.scan import decode
from vcfzarr_sql.scan.blocks import BatchBlocks
from vcfzarr_sql.scan.dataset import VczDataset
from vcfzarr_sql.scan.plan import ChunkTask, ScanPlan, batch_runs
from vcfzarr_sql.scan.prefetch import PREFETCH_DEPTH, THREADS, prefetched
from vcfzarr_sql.scan.schema import GT
from vcfzarr_sql.scan.stored_counts import (
    SAMPLE_CLASS_COUNTS,
    class_counts_stored,
    stored_class_counts,
)

#: Call classes, in the order of the count columns.
CLASSES = ("n_hom_ref", "n_hom_alt", "n_het", "n_hap_ref", "n_hap_alt", "n_missing")
_SNP_GATED = 3  # the first three count only at SNP alleles

#: Bytes of stored class counts (uint16 per class and sample) one task adds up.
RUN_CLASS_BYTES = 16 << 20

_ROW = "__vcfzarr_sql_sample_stats_row"
_NO_ALLELE = np.iinfo(np.int64).max


@functools.lru_cache(maxsize=4096)
def allele_kind(ref: str, alt: str) -> str:
    """htslib's variant type of ``alt`` against ``ref``, as far as bcftools stats needs it:
    ``"snp"``, ``"ref"`` (no variation: ``.``, ``<*>``, ``<NON_REF>``, ``<X>``, ``X``, equal
    alleles) or ``"other"``.

    >>> [allele_kind("A", a) for a in ("C", ".", "AT", "<NON_REF>", "*")]
    ['snp', 'ref', 'other', 'ref', 'other']
    >>> allele_kind("ATG", "AGG"), allele_kind("ATG", "CTA")
    ('snp', 'other')
    """
    if alt == "*":
        return "other"
    if len(ref) == 1 and len(alt) == 1:
        return "ref" if alt in (".", "X") or ref.upper() == alt.upper() else "snp"
    if alt.startswith("<"):
        return "ref" if alt in ("<X>", "<*>", "<NON_REF>") else "other"
    r, a = ref.upper(), alt.upper()
    prefix = 0
    while prefix < min(len(r), len(a)) and r[prefix] == a[prefix]:
        prefix += 1
    if prefix == len(r) and prefix == len(a):
        return "ref"
    if prefix == len(r) or prefix == len(a):
        return "other"  # an indel
    r, a = r[prefix:], a[prefix:]
    re, ae = len(r) - 1, len(a) - 1
    while re > 0 and ae > 0 and r[re] == a[ae]:
        re, ae = re - 1, ae - 1
    return "snp" if re == 0 and ae == 0 else "other"


def allele_kinds(alleles: np.ndarray) -> np.ndarray:
    """The :func:`allele_kind` of each allele of ``alleles`` (records, REF then ALTs; ``""``
    is padding) as int8: 0 ref-like (REF itself too), 1 snp, 2 other."""
    kinds = np.zeros(alleles.shape, dtype=np.int8)  # 0: ref-like, 1: snp, 2: other
    for v, row in enumerate(alleles):
        ref = str(row[0])
        for k in range(1, len(row)):
            alt = str(row[k])
            if alt:
                kind = allele_kind(ref, alt)
                kinds[v, k] = 0 if kind == "ref" else 1 if kind == "snp" else 2
    return kinds


def call_classes(genotypes: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """The class of each call (index into :data:`CLASSES`; -1: not counted at its alleles),
    shape (records, samples). ``kinds``: :func:`allele_kinds` of the records. bcftools gates
    the diploid classes on the OR of the call's ALT kinds: a SNP among them counts, and so do
    ALTs that show no variation; any other ALT alone blocks the call.

    >>> g = np.array([[[0, 0], [0, 1], [1, 1], [0, -1], [1, -2], [-1, -2]]], dtype=np.int8)
    >>> call_classes(g, np.array([[0, 1]], dtype=np.int8)).tolist()
    [[0, 2, 1, 5, 4, 5]]
    """
    records, samples, ploidy = genotypes.shape
    fill = genotypes == spec.INT_FILL
    before_end = np.cumsum(fill, axis=-1) == 0
    nals = before_end.sum(axis=-1)
    missing = ((genotypes == spec.INT_MISSING) & before_end).any(axis=-1) | (nals == 0)
    alleles = np.where(before_end & ~missing[..., None], genotypes, 0).astype(np.int64)
    has_ref = ((alleles == 0) & before_end).any(axis=-1)
    high = alleles.max(axis=-1)
    low = np.where(before_end & (alleles > 0), alleles, _NO_ALLELE).min(axis=-1)
    has_alt = high > 0
    two_alts = has_alt & (low != high)
    # The SNP gate: the kinds of the call's ALT alleles ORed (REF-only calls: ref-like).
    rows = np.arange(records)[:, None, None]
    allele_kinds = np.where(alleles > 0, kinds[rows, np.minimum(alleles, kinds.shape[1] - 1)], 0)
    allele_kinds = np.where(before_end, allele_kinds, 0)
    has_snp = (allele_kinds == 1).any(axis=-1)
    has_other = (allele_kinds == 2).any(axis=-1)
    counted = has_snp | ~has_other

    classes = np.full((records, samples), -1, dtype=np.int8)
    diploid = ~missing & (nals > 1)
    classes[diploid & counted & has_ref & ~has_alt] = 0
    classes[diploid & counted & ~has_ref & has_alt & ~two_alts] = 1
    classes[diploid & counted & ((has_ref & has_alt) | two_alts)] = 2
    haploid = ~missing & (nals == 1)
    classes[haploid & has_ref] = 3
    classes[haploid & ~has_ref] = 4
    classes[missing] = 5
    return classes


def class_counts(genotypes: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Calls of each class of :data:`CLASSES` per sample, shape (classes, samples).

    Diploid chunks whose ALTs are all SNPs (the common case) are counted straight from the
    two allele columns, in int8; others through :func:`call_classes`.

    >>> g = np.array([[[0, 0], [0, 1], [1, 1], [0, -1], [1, -2], [-1, -2]]], dtype=np.int8)
    >>> class_counts(g, np.array([[0, 1]], dtype=np.int8))[:, :3].tolist()
    [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    """
    if genotypes.shape[-1] != 2 or (kinds == 2).any():
        classes = call_classes(genotypes, kinds)
        return np.stack([(classes == k).sum(axis=0, dtype=np.int64) for k in range(len(CLASSES))])
    first, second = genotypes[..., 0], genotypes[..., 1]
    if int(genotypes.max(initial=0)) <= 1:
        return _biallelic_counts(first, second)
    called = (first >= 0) & (second >= 0)
    same = first == second
    haploid = (first >= 0) & (second == spec.INT_FILL)
    masks = (
        called & same & (first == 0),
        called & same & (first > 0),
        called & ~same,
        haploid & (first == 0),
        haploid & (first > 0),
        (first < 0) | (second == spec.INT_MISSING),
    )
    # (int32 sums of the masks are several times faster than numpy's default)
    return np.stack([m.sum(axis=0, dtype=np.int32) for m in masks]).astype(np.int64)


#: Biallelic diploid calls: the (first, second) allele pairs of each class but missing.
_PAIRS = (((0, 0),), ((1, 1),), ((0, 1), (1, 0)), ((0, spec.INT_FILL),), ((1, spec.INT_FILL),))


def _biallelic_counts(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """:func:`class_counts` when no allele is above 1: one int8 pair code per call, one
    comparison per pair; every call not in a pair is missing."""
    code = first * np.int8(4) + second  # alleles -2..1: distinct codes
    counts = np.zeros((len(CLASSES), first.shape[1]), dtype=np.int64)
    for k, pairs in enumerate(_PAIRS):
        for a, b in pairs:
            counts[k] += (code == np.int8(4 * a + b)).sum(axis=0, dtype=np.int32)
    counts[-1] = first.shape[0] - counts[:-1].sum(axis=0)
    return counts


def _rows_in_region(store: Any, task: Any) -> np.ndarray | None:
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


def stored_class_bytes(store: Any, samples: np.ndarray | None) -> int | None:
    """The bytes of stored class counts a variant chunk's sum reads for ``samples`` (indexes;
    None: all), whole sample chunks of them; None when the store has no counts to read."""
    if not class_counts_stored(store):
        return None
    info = store.array_info(SAMPLE_CLASS_COUNTS)
    size = max(info.chunks[2], 1)
    width = info.shape[2] if samples is None else len(np.unique(np.asarray(samples) // size)) * size
    return info.shape[1] * max(width, 1) * info.dtype.itemsize


def sample_stats_table(
    store: Any, region: str | None = None, samples: Sequence[str] | None = None
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
