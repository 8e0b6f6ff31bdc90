"""Where each record of a batch is: its contig index, POS and END as numpy arrays, read from
the store's arrays and region index (no Arrow: ``view -r`` matches its edge chunks' records
with these, :func:`~vcfzarr_sql.query.execute.region_rows`; :mod:`.decode` makes the
``contig``, ``pos`` and ``end`` columns of them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.vcz import VczStore

if TYPE_CHECKING:
    from vcfzarr_sql.query.region_set import RegionSet


def chunk_records(store: VczStore, chunks: range) -> int:
    """Records in variant chunks ``chunks``."""
    start = chunks.start * store.variants_chunk_size
    return max(0, min(len(chunks) * store.variants_chunk_size, store.num_variants - start))


def contig_ids(blocks: BatchBlocks) -> np.ndarray:
    """The contig of each record of the batch: from the region index for a chunk it gives one
    contig and all the chunk's records (the usual chunk), else decoded."""
    index = blocks.store.region_index
    bounds = np.searchsorted(index[:, spec.RI_CHUNK], np.arange(blocks.chunks.start, blocks.chunks.stop + 1))
    parts = []
    for c, lo, hi in zip(blocks.chunks, bounds[:-1].tolist(), bounds[1:].tolist()):
        records = chunk_records(blocks.store, range(c, c + 1))
        if hi - lo == 1 and index[lo, spec.RI_COUNT] == records:
            parts.append(np.full(records, index[lo, spec.RI_CONTIG]))
        else:
            parts.append(blocks.source.read_chunk(spec.VARIANT_CONTIG, (c,)))
    return blocks.kept(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64))


def positions(blocks: BatchBlocks) -> np.ndarray:
    """POS of each record of the batch, int64."""
    return blocks.read(spec.VARIANT_POSITION).astype(np.int64)


def record_lengths(blocks: BatchBlocks) -> np.ndarray:
    """rlen of each record of the batch, int64."""
    lengths = [blocks.source.variant_length(c) for c in blocks.chunks]
    return blocks.kept(np.concatenate(lengths)).astype(np.int64, copy=False)


def record_ends(blocks: BatchBlocks, lengths: np.ndarray | None = None, pos: np.ndarray | None = None) -> np.ndarray:
    """END of each record of the batch (POS + rlen - 1), int64 (``lengths``, ``pos``: the
    records' :func:`record_lengths` and :func:`positions`, when read already)."""
    first = positions(blocks) if pos is None else pos
    return first + (record_lengths(blocks) if lengths is None else lengths) - 1


def all_overlap(blocks: BatchBlocks, regions: RegionSet, lengths: np.ndarray) -> bool:
    """Whether every record of the batch (all of its chunks' records) overlaps ``regions``
    (bcftools ``-r``), by the region index alone, given the records' ``lengths``
    (:func:`record_lengths`): when none is below 1, no record ends before its POS, so the
    least END of a region index row is its least POS, and a row whose POS span lies inside
    one interval matches whole. The planner cannot tell so (the index keeps no least END):
    a region's edge chunk that the interval covers is known whole from its lengths, without
    reading or matching its positions (as for the chunks inside the region)."""
    store = blocks.store
    if blocks.rows is not None or not len(lengths) or lengths.min() < 1:
        return False
    index = store.region_index
    chunk = index[:, spec.RI_CHUNK]
    rows = index[(chunk >= blocks.chunks.start) & (chunk < blocks.chunks.stop)]
    if int(rows[:, spec.RI_COUNT].sum()) != len(lengths):  # (rows for each record, as the planner trusts)
        return False
    _, must = regions.zones(store.contigs, rows[:, spec.RI_CONTIG], rows[:, spec.RI_START], rows[:, spec.RI_END],
                            rows[:, spec.RI_MAX_END], end_min=rows[:, spec.RI_START])
    return bool(must.all())
