"""Genotype counts stored beside the genotypes (their layout: :mod:`vcfzarr_sql.format.summaries`),
read for the ``gt_`` columns over all samples and for ``vcf_zarr_sample_stats`` over whole chunks,
instead of decoding ``call_genotype``; :func:`packed` lays computed counts out as stored.
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format.spec import CALL_GENOTYPE
from vcfzarr_sql.format.summaries import (
    ALLELE_COUNTS,
    ALLELES,
    CALL_COUNTS,
    CALLED,
    HWE,
    MISSING,
    NOT_COUNTED,
    SAMPLE_CLASS_COUNTS,
)
from vcfzarr_sql.query.genotype_counts import AlleleCounts, GenotypeCounts
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.vcz import VczStore


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


def stored(store: VczStore) -> bool:
    """Whether ``store`` has the per-record counts (``gt_`` columns over all samples)."""
    return all(store.has_array(name) for name in (ALLELE_COUNTS, CALL_COUNTS))


def stored_counts(blocks: BatchBlocks) -> GenotypeCounts | None:
    """The batch's counts over all samples read from the stored arrays (one per entry of the
    ``alleles`` axis); None when the store has none or a record is not counted."""
    store = blocks.store
    if blocks.samples is not None or not stored(store):
        return None
    calls = blocks.read(CALL_COUNTS)
    if (calls[:, CALLED] == NOT_COUNTED).any():
        return None
    per_allele = blocks.read(ALLELE_COUNTS)  # (int32: sums over records widen to int64)
    _check_counts(store, blocks, per_allele)
    het, hom, hemi = (per_allele[..., k] for k in range(3))
    alleles = AlleleCounts(het, hom, hemi, calls[:, CALLED].astype(np.int64))
    return GenotypeCounts(alleles, calls[:, MISSING].astype(np.int64), store.num_samples)


def _check_counts(store: VczStore, blocks: BatchBlocks, per_allele: np.ndarray) -> None:
    """StoreError unless every stored allele count is an integer from 0 to the alleles the
    samples' calls hold (stored counts are data, docs/security.md: the HWE tests' walks are
    as long as the counts, in memory and in time)."""
    if per_allele.dtype.kind not in "iu":
        raise StoreError(f"{store.path}: {ALLELE_COUNTS} has dtype {per_allele.dtype}, not integers")
    ploidy = store.array_info(CALL_GENOTYPE).shape[-1] if store.has_array(CALL_GENOTYPE) else 1
    most = ploidy * store.num_samples
    if per_allele.size and not 0 <= per_allele.min() <= per_allele.max() <= most:
        raise StoreError(f"{store.path}: {ALLELE_COUNTS} of variant chunks {list(blocks.chunks)} holds "
                         f"counts from {per_allele.min()} to {per_allele.max()}, not within 0..{most} "
                         f"({store.num_samples} samples of ploidy {ploidy})")


def stored_hwe(blocks: BatchBlocks) -> np.ndarray | None:
    """The batch's (records, alleles, 2) HWE and ExcHet p-values over all samples, read from
    ``summary_gt_hwe``; None when the store has none. Valid where :func:`stored_counts` is."""
    return blocks.read(HWE) if blocks.store.has_array(HWE) else None


def stored_num_alleles(blocks: BatchBlocks) -> np.ndarray | None:
    """The alleles (REF and ALTs) of each record of the batch, from the stored call counts;
    None when the store has none (or counts written before they held alleles)."""
    if not blocks.store.has_array(CALL_COUNTS):
        return None
    if blocks.store.array_info(CALL_COUNTS).shape[1] <= ALLELES:
        return None
    return blocks.read(CALL_COUNTS)[:, ALLELES]


def class_counts_stored(store: VczStore) -> bool:
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
    if not class_counts_stored(blocks.store):
        return None
    return blocks.sum(SAMPLE_CLASS_COUNTS)
