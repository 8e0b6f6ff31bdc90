"""Writing a ``region_index`` (and ``variant_length``, which the spec requires with it) and the
summary arrays into an existing local VCF Zarr store, in the store's own Zarr format, with
:mod:`.writer` (``vcfzarr-sql index``; ``convert`` writes them as it converts)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

import numpy as np

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.store.derived import build_region_index
from vcfzarr_sql.store.kvstore import is_url
from vcfzarr_sql.store.summary_arrays import COMPRESSOR, PER_RECORD, summary_arrays
from vcfzarr_sql.store.vcz import VczStore, open_store
from vcfzarr_sql.store.writer import NewArray, add_arrays, blosc_single_threaded, write_rows, write_whole


class ChunkSummary(Protocol):
    """The stored counts of one variant chunk, as blocks of the summary arrays."""

    def block(self, name: str) -> np.ndarray: ...


#: Computes the summary of variant chunk ``k`` from the store's genotype array.
Summariser = Callable[[VczStore, str, int], ChunkSummary]

_INT_DTYPES = (np.int8, np.int16, np.int32, np.int64)
_LENGTH_DESCRIPTION = "The length of the variant measured in bases"


def smallest_int_dtype(values: np.ndarray, at_least: np.dtype | type = np.int8) -> np.dtype:
    """The smallest signed integer dtype, no smaller than ``at_least``, that holds ``values``.

    >>> smallest_int_dtype(np.array([0, 300])), smallest_int_dtype(np.array([1]), np.int32)
    (dtype('int16'), dtype('int32'))
    """
    low, high = (int(values.min()), int(values.max())) if values.size else (0, 0)
    for dtype in _INT_DTYPES:
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max and np.dtype(dtype) >= np.dtype(at_least):
            return np.dtype(dtype)
    raise StoreError(f"values {low}..{high} do not fit in int64")


def _new_array(
    name: str, dtype: np.dtype, shape: tuple[int, ...], chunks: tuple[int, ...],
    dims: tuple[str, ...], description: str = "",
) -> NewArray:
    return NewArray(name, dtype.newbyteorder("<").str, dims, shape, chunks, COMPRESSOR, description)


def _local_directory(path: str) -> str:
    if is_url(path):
        raise StoreError(f"{path}: cannot write a region index into a remote store (URL); "
                         "index a local copy")
    if os.path.isfile(path):
        raise StoreError(f"{path}: cannot write a region index into a zip or other file; "
                         "index the store directory, then zip it")
    return path


def write_region_index(path: str | os.PathLike) -> np.ndarray:
    """Write ``region_index`` (replacing any) and, if absent, ``variant_length`` into the local
    directory store at ``path``. Returns the index written (int64)."""
    location = _local_directory(os.fspath(path))
    with open_store(location) as store:
        zarr_format = store.zarr_format
        needs_lengths = not store.has_array(spec.VARIANT_LENGTH)
        chunk_size = store.variants_chunk_size
        position_dtype = store.array_info(spec.VARIANT_POSITION).dtype.newbyteorder("=")
        if needs_lengths:
            parts = [store.variant_length(k) for k in range(store.num_variant_chunks)]
            lengths = np.concatenate(parts) if parts else np.empty(0, np.int64)
    if needs_lengths:
        length = _new_array(spec.VARIANT_LENGTH, smallest_int_dtype(lengths), lengths.shape,
                            (chunk_size,), (spec.DIM_VARIANTS,), _LENGTH_DESCRIPTION)
        _write_new(location, zarr_format, length, lengths)
    with open_store(location) as store:
        index = build_region_index(store)
    stored = _new_array(
        spec.REGION_INDEX, smallest_int_dtype(index, position_dtype), index.shape,
        (max(len(index), 1), spec.REGION_INDEX_FIELDS),
        (spec.DIM_REGION_INDEX_VALUES, spec.DIM_REGION_INDEX_FIELDS),
    )
    _write_new(location, zarr_format, stored, index)
    return index


def _write_new(location: str, zarr_format: int, array: NewArray, values: np.ndarray) -> None:
    add_arrays(location, zarr_format, [array])
    if len(values):
        write_whole(location, array, values, zarr_format)


def write_genotype_counts(path: str | os.PathLike, summarise_chunk: Summariser) -> bool:
    """Write the stored genotype counts (:mod:`vcfzarr_sql.format.summaries`, replacing any)
    into the local directory store at ``path``, one variant chunk at a time as
    ``summarise_chunk(store, genotype_array, chunk)`` computes them. Returns False (and writes
    nothing) when the store has no genotypes."""

    location = _local_directory(os.fspath(path))
    with open_store(location) as store:
        gt = store.format_fields.get("GT")
        if gt is None or not store.has_array(spec.VARIANT_ALLELE):
            return False
        size, num_chunks, zarr_format = store.variants_chunk_size, store.num_variant_chunks, store.zarr_format
        arrays = summary_arrays(
            store.num_variants, store.array_info(spec.VARIANT_ALLELE).shape[1], store.num_samples,
            size, store.samples_chunk_size,
        )
        add_arrays(location, zarr_format, list(arrays.values()))
        classes = arrays[sc.SAMPLE_CLASS_COUNTS]
        per_chunk = sc.variant_chunks_per_chunk(size)  # (per-record arrays: longer chunks)
        with blosc_single_threaded():
            for start in range(0, num_chunks, per_chunk):  # one chunk of the per-record arrays
                blocks: dict[str, list[np.ndarray]] = {name: [] for name in PER_RECORD}
                for k in range(start, min(start + per_chunk, num_chunks)):
                    summary = summarise_chunk(store, gt.array, k)
                    write_rows(location, classes, k, summary.block(classes.name), zarr_format)
                    for name in PER_RECORD:
                        blocks[name].append(summary.block(name))
                for name in PER_RECORD:
                    write_rows(location, arrays[name], start // per_chunk,
                               np.concatenate(blocks[name]), zarr_format)
    return True
