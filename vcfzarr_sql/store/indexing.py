"""Writing a ``region_index`` (and ``variant_length``, which the spec requires with it) into an
existing local VCF Zarr store, in the store's own Zarr format.

This is the only part of the store package that writes, and it uses zarr-python to do it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Protocol

import numcodecs
import numpy as np
import zarr
import zarr.codecs

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.format.summaries import CLASSES
from vcfzarr_sql.store.derived import build_region_index
from vcfzarr_sql.store.kvstore import is_url
from vcfzarr_sql.store.vcz import VczStore, open_store


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


def _create_array(
    group: zarr.Group, name: str, shape: tuple[int, ...], dtype: np.dtype,
    chunks: tuple[int, ...], dims: tuple[str, ...], attrs: dict,
) -> zarr.Array:
    if group.metadata.zarr_format == 2:
        compressor = numcodecs.Blosc(cname="zstd", clevel=7, shuffle=numcodecs.Blosc.SHUFFLE)
        layout = {"attributes": {**attrs, spec.ARRAY_DIMENSIONS: list(dims)}}
    else:
        compressor = zarr.codecs.BloscCodec(cname="zstd", clevel=7, shuffle="shuffle")
        layout = {"attributes": attrs, "dimension_names": dims}
    return group.create_array(
        name, shape=shape, chunks=chunks, dtype=dtype, compressors=compressor,
        fill_value=None if group.metadata.zarr_format == 2 else 0, overwrite=True,
        config={"write_empty_chunks": True}, **layout,  # (our reader wants every chunk)
    )


def _write_array(
    group: zarr.Group, name: str, data: np.ndarray, chunks: tuple[int, ...],
    dims: tuple[str, ...], attrs: dict,
) -> None:
    _create_array(group, name, data.shape, data.dtype, chunks, dims, attrs)[...] = data


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
        zarr_format, consolidated = store.zarr_format, store.consolidated is not None
        needs_lengths = not store.has_array(spec.VARIANT_LENGTH)
        chunk_size = store.variants_chunk_size
        position_dtype = store.array_info(spec.VARIANT_POSITION).dtype.newbyteorder("=")
        if needs_lengths:
            lengths = [store.variant_length(k) for k in range(store.num_variant_chunks)]
            lengths = np.concatenate(lengths) if lengths else np.empty(0, np.int64)
    group = zarr.open_group(location, mode="r+", zarr_format=zarr_format)
    if needs_lengths:
        _write_array(
            group, spec.VARIANT_LENGTH, lengths.astype(smallest_int_dtype(lengths)),
            (chunk_size,), (spec.DIM_VARIANTS,), {"description": _LENGTH_DESCRIPTION},
        )
    with open_store(location) as store:
        index = build_region_index(store)
    _write_array(
        group, spec.REGION_INDEX, index.astype(smallest_int_dtype(index, position_dtype)),
        (max(len(index), 1), spec.REGION_INDEX_FIELDS),
        (spec.DIM_REGION_INDEX_VALUES, spec.DIM_REGION_INDEX_FIELDS), {},
    )
    if consolidated:
        _consolidate(location, zarr_format)
    return index


def _consolidate(location: str, zarr_format: int) -> None:
    with warnings.catch_warnings():  # zarr-python: v3 consolidated metadata is not in the spec
        warnings.simplefilter("ignore", UserWarning)
        zarr.consolidate_metadata(location, zarr_format=zarr_format)


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
        zarr_format, consolidated = store.zarr_format, store.consolidated is not None
        variants, alleles = store.num_variants, store.array_info(spec.VARIANT_ALLELE).shape[1]
        size, samples = store.variants_chunk_size, store.num_samples
        num_chunks = store.num_variant_chunks
        group = zarr.open_group(location, mode="r+", zarr_format=zarr_format)
        per_chunk = sc.variant_chunks_per_chunk(size)  # (per-record arrays: longer chunks)
        records = size * per_chunk
        layouts = {  # name: (shape, dtype, chunks, dims)
            sc.ALLELE_COUNTS: ((variants, alleles, 3), np.int32, (records, alleles, 3),
                               (sc.DIM_RECORDS, spec.DIM_ALLELES, sc.DIM_ALLELE_COUNTS)),
            sc.CALL_COUNTS: ((variants, 3), np.int32, (records, 3),
                             (sc.DIM_RECORDS, sc.DIM_CALL_COUNTS)),
            sc.HWE: ((variants, alleles, 2), np.float32, (records, alleles, 2),
                     (sc.DIM_RECORDS, spec.DIM_ALLELES, sc.DIM_HWE_TESTS)),
            sc.SAMPLE_CLASS_COUNTS: (
                (num_chunks, len(CLASSES), samples), sc.sample_class_dtype(size),
                (1, len(CLASSES), max(store.samples_chunk_size, 1)),
                (sc.DIM_VARIANT_CHUNKS, sc.DIM_SAMPLE_CLASSES, spec.DIM_SAMPLES)),
        }
        arrays = {
            name: _create_array(group, name, shape, np.dtype(dtype), chunks, dims,
                                {"description": sc.DESCRIPTIONS[name]})
            for name, (shape, dtype, chunks, dims) in layouts.items()
        }
        classes = arrays.pop(sc.SAMPLE_CLASS_COUNTS)
        for start in range(0, num_chunks, per_chunk):  # one chunk of the per-record arrays
            blocks: dict[str, list[np.ndarray]] = {name: [] for name in arrays}
            for k in range(start, min(start + per_chunk, num_chunks)):
                summary = summarise_chunk(store, gt.array, k)
                classes[k : k + 1] = summary.block(sc.SAMPLE_CLASS_COUNTS)
                for name in arrays:
                    blocks[name].append(summary.block(name))
            for name, array in arrays.items():
                block = np.concatenate(blocks[name])
                array[start * size : start * size + len(block)] = block
    if consolidated:
        _consolidate(location, zarr_format)
    return True
