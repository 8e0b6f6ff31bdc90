"""Cheap checks of chunk contents against what the store already told: a damaged chunk is an
error naming the store, the array and the chunk, never silent rows.

The stored region index (loaded once when the store is opened for a query) gives each variant
chunk's record count and first and last POS per contig. The ``variant_position`` chunks a scan
reads must agree: a chunk swapped with another, a ``.zarray`` whose dtype or byte order was
changed, or a filter added over the stored bytes give other positions, which the query would
otherwise compare with a region and answer wrongly. (A region index the reader built itself
was computed from these very chunks: nothing to check against. Positions need not be in order
inside a chunk: a file whose records are not sorted converts as it is.)
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.vcz import VczStore


def check_positions(store: VczStore, chunks: range, positions: np.ndarray) -> None:
    """StoreError naming ``store``, ``variant_position`` and the chunk when the ``positions`` of
    variant chunks ``chunks`` (joined, as read) disagree with the stored region index: a chunk's
    record count, its smallest or its largest POS.

    ``validate`` recomputes the whole index from these arrays (:mod:`vcfzarr_sql.validation`).
    """
    if not store.has_array(spec.REGION_INDEX):
        return
    index = store.region_index
    first = np.searchsorted(index[:, spec.RI_CHUNK], np.arange(chunks.start, chunks.stop + 1))
    size = store.variants_chunk_size
    offset = 0
    for chunk, lo, hi in zip(chunks, first[:-1].tolist(), first[1:].tolist()):
        part = positions[offset : offset + min(size, store.num_variants - chunk * size)]
        offset += len(part)
        rows = index[lo:hi]
        count = int(rows[:, spec.RI_COUNT].sum())
        if count != len(part):
            problem = f"holds {len(part)} records, the region index {count}"
        elif not count:
            continue
        else:
            low, high = int(part.min()), int(part.max())
            start, end = int(rows[:, spec.RI_START].min()), int(rows[:, spec.RI_END].max())
            if (low, high) == (start, end):
                continue
            problem = f"holds POS {low}..{high}, the region index {start}..{end}"
        raise StoreError(f"{store.path}: chunk ({chunk},) of {spec.VARIANT_POSITION} {problem}: "
                         "the store is damaged (`vcfzarr-sql validate` tells more)")
