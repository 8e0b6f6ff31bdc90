"""Writing a ``region_index`` (and ``variant_length``, which the spec requires with it) and the
summary arrays into an existing local VCF Zarr store, in the store's own Zarr format, with
:mod:`.writer` (``vcfzarr-sql index``; ``convert`` writes them as it converts)."""

from __future__ import annotations

import os
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


def local_directory(path: str) -> str:
    """``path`` if it is a local directory store this module can write into, else StoreError."""
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
    location = local_directory(os.fspath(path))
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


class GenotypeCountsWriter:
    """Writes the stored genotype counts (:mod:`vcfzarr_sql.format.summaries`, replacing any)
    of the local directory store ``location``, opened as ``store``: :meth:`add` takes the
    summary of each variant chunk in order; a chunk of the per-record arrays is written once
    the variant chunks it holds are all added."""

    def __init__(self, location: str, store: VczStore):
        self._location, self._format = location, store.zarr_format
        self._num_chunks = store.num_variant_chunks
        self._arrays = summary_arrays(
            store.num_variants, store.array_info(spec.VARIANT_ALLELE).shape[1], store.num_samples,
            store.variants_chunk_size, store.samples_chunk_size,
        )
        self._per_chunk = sc.variant_chunks_per_chunk(store.variants_chunk_size)
        self._blocks: dict[str, list[np.ndarray]] = {name: [] for name in PER_RECORD}
        self._added = 0
        add_arrays(location, self._format, list(self._arrays.values()))

    def add(self, summary: ChunkSummary) -> None:
        """The summary of the next variant chunk."""
        classes = self._arrays[sc.SAMPLE_CLASS_COUNTS]
        with blosc_single_threaded():
            write_rows(self._location, classes, self._added, summary.block(classes.name), self._format)
            for name in PER_RECORD:
                self._blocks[name].append(summary.block(name))
            self._added += 1
            if self._added % self._per_chunk == 0 or self._added == self._num_chunks:
                for name in PER_RECORD:  # (one chunk of the per-record arrays: longer chunks)
                    write_rows(self._location, self._arrays[name], (self._added - 1) // self._per_chunk,
                               np.concatenate(self._blocks[name]), self._format)
                    self._blocks[name] = []

    def close(self) -> None:
        """StoreError unless every variant chunk was added."""
        if self._added != self._num_chunks:
            raise StoreError(f"{self._location}: genotype counts of {self._added} of "
                             f"{self._num_chunks} variant chunks were written")
