"""How the chunks of an array line up with the store's variant chunks.

Most arrays with a ``variants`` axis are chunked like ``variant_position``: their chunk ``k``
along it is variant chunk ``k`` (and arrays with one row per variant chunk stand for it).
Arrays with one row per record chunked otherwise (the stored per-record counts:
:mod:`vcfzarr_sql.format.summaries`) hold several variant chunks, or part of one, per chunk.
"""

from __future__ import annotations

from vcfzarr_sql.store.metadata import ArrayInfo
from vcfzarr_sql.store.vcz import VczStore


def records_per_chunk(store: VczStore, info: ArrayInfo) -> int | None:
    """The records in a chunk of array ``info`` when it holds one row per record chunked
    unlike the store's variant chunks, else None: its chunk ``k`` along the first axis is
    variant chunk ``k`` (or, for arrays with a row per variant chunk, stands for it)."""
    if not info.chunks or info.chunks[0] == store.variants_chunk_size:
        return None
    return info.chunks[0] if info.shape[0] == store.num_variants else None


def array_chunk(store: VczStore, info: ArrayInfo, variant_chunk: int) -> int:
    """The chunk index along the first axis of array ``info`` that holds the first record of
    variant chunk ``variant_chunk``."""
    records = records_per_chunk(store, info)
    return variant_chunk if records is None else variant_chunk * store.variants_chunk_size // records
