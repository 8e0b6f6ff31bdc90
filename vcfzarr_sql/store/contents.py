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

import weakref

import numpy as np

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.format.region_index import chunk_bounds
from vcfzarr_sql.store.vcz import VczStore


def check_positions(store: VczStore, chunks: range, positions: np.ndarray) -> None:
    """StoreError naming ``store``, ``variant_position`` and the chunk when the ``positions`` of
    variant chunks ``chunks`` (joined, as read) disagree with the stored region index: a chunk's
    record count, its smallest or its largest POS.

    ``validate`` recomputes the whole index from these arrays (:mod:`vcfzarr_sql.validation`).
    """
    if not store.has_array(spec.REGION_INDEX):
        return
    expected = _chunk_bounds(store)
    size = store.variants_chunk_size
    offset = 0
    for chunk in chunks:
        part = positions[offset : offset + min(size, store.num_variants - chunk * size)]
        offset += len(part)
        count, start, end = expected[chunk]
        if count != len(part):
            problem = f"holds {len(part)} records, the region index {count}"
        elif not count or (part.min(), part.max()) == (start, end):
            continue
        else:
            problem = f"holds POS {part.min()}..{part.max()}, the region index {start}..{end}"
        raise StoreError(f"{store.path}: chunk ({chunk},) of {spec.VARIANT_POSITION} {problem}: "
                         "the store is damaged (`vcfzarr-sql validate` tells more)")


#: (record count, first POS, last POS) of each variant chunk by the region index, per store.
_BOUNDS: weakref.WeakKeyDictionary[VczStore, list[tuple[int, int, int]]] = weakref.WeakKeyDictionary()


def _chunk_bounds(store: VczStore) -> list[tuple[int, int, int]]:
    """:func:`~vcfzarr_sql.format.region_index.chunk_bounds` of ``store``, once per store."""
    bounds = _BOUNDS.get(store)
    if bounds is None:
        bounds = _BOUNDS[store] = chunk_bounds(store.region_index, store.num_variant_chunks)
    return bounds
