"""Encode one variant chunk of the store from spilled blocks (in a worker process).

A variant chunk's records may come from several blocks (of one or more partitions); each
block column is cut to the chunk's rows, padded to the final width, cast to the final dtype,
split into sample chunks, compressed and written. Returns the chunk's region index rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.converter.arrays import ArraySpec
from vcfzarr_sql.converter.masks import implied_mask
from vcfzarr_sql.converter.spill import read_block
from vcfzarr_sql.converter.workers import add_progress
from vcfzarr_sql.converter.zarr_v2 import fill_value, write_rows
from vcfzarr_sql.format import spec
from vcfzarr_sql.format.region_index import chunk_region_index


@dataclass(frozen=True)
class Piece:
    """Rows ``[start, stop)`` of the spilled block at ``path``."""

    path: str
    start: int
    stop: int


def _padded(values: np.ndarray, array: ArraySpec) -> np.ndarray:
    if array.squeeze:
        return values[..., 0]
    width = array.shape[-1]
    if not array.has_value_dim or values.shape[-1] == width:
        return values
    out = np.full(values.shape[:-1] + (width,), fill_value(array.kind), dtype=values.dtype)
    out[..., : values.shape[-1]] = values
    return out


def _filter_matrix(names: np.ndarray, filter_ids: dict[str, int]) -> np.ndarray:
    out = np.zeros((len(names), len(filter_ids)), dtype=bool)
    for i, text in enumerate(names):
        for name in text.split(";") if text else ():
            out[i, filter_ids[name]] = True
    return out


def _values(array: ArraySpec, column: np.ndarray, contig_ids, filter_ids) -> np.ndarray:
    if array.kind == "contig":
        return np.array([contig_ids[c] for c in column], dtype=array.dtype)
    if array.kind == "filter":
        return _filter_matrix(column, filter_ids)
    if array.kind == "char":
        return _padded(column, array).astype("S1")
    return _padded(column, array).astype(array.dtype, copy=False)


def _column(block: dict[str, np.ndarray], array: ArraySpec) -> np.ndarray:
    """The block column of ``array``; for a mask a block did not need, the one its values imply."""
    if array.kind == "mask" and array.column not in block:
        return implied_mask(block[array.column[len(spec.MASK_PREFIX) :]])
    return block[array.column]


def encode_variant_chunk(
    root: str,
    chunk_index: int,
    pieces: Sequence[Piece],
    arrays: Sequence[ArraySpec],
    contig_ids: dict[str, int],
    filter_ids: dict[str, int],
) -> np.ndarray:
    """Write variant chunk ``chunk_index`` of every array; its region index rows."""
    blocks: dict[str, dict[str, np.ndarray]] = {}
    for piece in pieces:
        if piece.path not in blocks:
            blocks[piece.path] = read_block(piece.path)
    kept = {spec.VARIANT_CONTIG, spec.VARIANT_POSITION, spec.VARIANT_LENGTH}
    by_name = {}
    for array in arrays:
        parts = [
            _values(array, _column(blocks[p.path], array)[p.start : p.stop], contig_ids, filter_ids)
            for p in pieces
        ]
        values = parts[0] if len(parts) == 1 else np.concatenate(parts)
        write_rows(root, array, chunk_index, values)
        if array.name in kept:
            by_name[array.name] = values
    add_progress(1)
    return chunk_region_index(
        chunk_index,
        by_name[spec.VARIANT_CONTIG],
        by_name[spec.VARIANT_POSITION],
        by_name[spec.VARIANT_LENGTH],
        dtype=by_name[spec.VARIANT_POSITION].dtype,
    )
