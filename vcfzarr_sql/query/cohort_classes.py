"""Per-sample call classes of a cohort (:class:`~vcfzarr_sql.store.cohort.CohortStore`) added up
from what each batch stores, instead of decoding the cohort's assembled genotypes.

A batch's samples' calls at the cohort's records of a run of variant chunks are: the batch's
own calls at its rows holding those records (:meth:`~.CohortStore.batch_rows_of`), counted
from its ``summary_sample_class_counts`` for the variant chunks of the batch those rows hold
whole (:mod:`.stored_counts`) and from its genotypes for the others; and one missing call
(class ``n_missing``, as ``bcftools stats -s`` counts ``./.``) at each record the batch lacks.
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.summaries import CLASSES, SAMPLE_CLASS_COUNTS
from vcfzarr_sql.query.sample_classes import allele_kinds, class_counts
from vcfzarr_sql.query.schema import GT
from vcfzarr_sql.query.stored_counts import class_counts_stored
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.cohort import CohortStore
from vcfzarr_sql.store.vcz import VczStore

_MISSING = CLASSES.index("n_missing")


def batched(store: VczStore) -> bool:
    """Whether ``store`` is a cohort whose class counts :func:`cohort_class_counts` adds up."""
    return isinstance(store, CohortStore) and all(
        store.lacking_is_missing(b) for b in range(len(store.batches)))


def cohort_class_counts(store: VczStore, chunk_index: int, chunk_count: int,
                        samples: np.ndarray | None) -> np.ndarray | None:
    """The (classes, samples) call counts of the cohort's variant chunks ``chunk_index`` to
    ``chunk_index + chunk_count - 1`` for ``samples`` (sorted cohort indexes; None: all), added
    up batch by batch; None when ``store`` is not such a cohort (:func:`batched`)."""
    if not isinstance(store, CohortStore) or not batched(store):
        return None
    records, rows = store.batch_rows_of(chunk_index, chunk_count)
    offsets = store.sample_offsets
    selected = np.arange(store.num_samples) if samples is None else np.asarray(samples, dtype=np.int64)
    out = np.zeros((len(CLASSES), len(selected)), dtype=np.int64)
    for b, (batch, held) in enumerate(zip(store.batches, rows)):
        lo, hi = np.searchsorted(selected, [offsets[b], offsets[b + 1]])
        if lo == hi:
            continue
        local = None if hi - lo == batch.num_samples else selected[lo:hi] - offsets[b]
        out[_MISSING, lo:hi] += records - len(held)
        if len(held):
            out[:, lo:hi] += _batch_counts(batch, held, local)
    return out


def _batch_counts(batch: VczStore, rows: np.ndarray, samples: np.ndarray | None) -> np.ndarray:
    """The class counts of ``batch``'s rows ``rows`` (sorted) for its ``samples`` (None: all):
    stored for its variant chunks they hold whole, decoded for the others."""
    size = batch.variants_chunk_size
    chunk_of = rows // size
    chunks, first, held = np.unique(chunk_of, return_index=True, return_counts=True)
    lengths = np.minimum(size, batch.num_variants - chunks * size)
    whole = held == lengths if class_counts_stored(batch) else np.zeros(len(chunks), dtype=bool)
    width = batch.num_samples if samples is None else len(samples)
    total = np.zeros((len(CLASSES), width), dtype=np.int64)
    k = 0
    while k < len(chunks):
        stop = k + 1
        if whole[k]:  # a run of consecutive whole chunks: their stored counts added up
            while stop < len(chunks) and whole[stop] and chunks[stop] == chunks[stop - 1] + 1:
                stop += 1
            total += BatchBlocks(batch, int(chunks[k]), samples, stop - k).sum(SAMPLE_CLASS_COUNTS)
        else:
            part = rows[first[k] : first[k] + held[k]] - chunks[k] * size
            total += _decoded(batch, int(chunks[k]), part, samples)
        k = stop
    return total


def _decoded(batch: VczStore, chunk: int, rows: np.ndarray, samples: np.ndarray | None) -> np.ndarray:
    """The class counts of rows ``rows`` of ``batch``'s variant chunk ``chunk`` from its
    genotypes (all missing when it has none)."""
    gt = batch.format_fields.get(GT)
    if gt is None:
        out = np.zeros((len(CLASSES), batch.num_samples if samples is None else len(samples)), dtype=np.int64)
        out[_MISSING] = len(rows)
        return out
    blocks = BatchBlocks(batch, chunk, samples)
    alleles = blocks.read(spec.VARIANT_ALLELE)[rows]
    return class_counts(blocks.read(gt.array)[rows], allele_kinds(alleles))
