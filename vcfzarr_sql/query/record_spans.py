"""Where each record of a batch is: its contig index, POS and END as numpy arrays, read from
the store's arrays and region index (no Arrow: ``view -r`` matches its edge chunks' records
with these, :func:`~vcfzarr_sql.query.execute.region_rows`; :mod:`.decode` makes the
``contig``, ``pos`` and ``end`` columns of them)."""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.vcz import VczStore


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


def record_ends(blocks: BatchBlocks) -> np.ndarray:
    """END of each record of the batch (POS + rlen - 1), int64."""
    lengths = [blocks.source.variant_length(c) for c in blocks.chunks]
    length = blocks.kept(np.concatenate(lengths)).astype(np.int64, copy=False)
    return positions(blocks) + length - 1
