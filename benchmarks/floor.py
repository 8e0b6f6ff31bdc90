"""The floor: decode exactly the chunks a task needs with numcodecs, in a thread pool, and reduce in numpy.

No zarr-python and no SQL: read each chunk file's bytes, run the array's compressor and filters
from its ``.zarray`` (Zarr v2), reshape, reduce. This is how fast the task can go on this machine
from this store; vcfzarr-sql's time over this is its overhead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from itertools import product
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np

THREADS = os.cpu_count() or 2


class RawArray:
    """One Zarr v2 array of a store, read chunk by chunk straight from its files."""

    def __init__(self, store: Path, name: str) -> None:
        self.path = store / name
        meta_path = self.path / ".zarray"
        if not meta_path.exists():
            raise ValueError(f"{self.path}: not a Zarr v2 array (the floor reads Zarr v2 only)")
        meta = json.loads(meta_path.read_text())
        self.shape = tuple(meta["shape"])
        self.chunks = tuple(meta["chunks"])
        self.dtype = np.dtype(meta["dtype"]) if meta["dtype"] != "|O" else np.dtype(object)
        # A null fill value reads as zero in zarr-python (chunks of all zeros are not written).
        self.fill_value = meta["fill_value"] if meta["fill_value"] is not None else 0
        self.separator = meta.get("dimension_separator", ".")
        self.compressor = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
        self.filters = [numcodecs.get_codec(f) for f in meta["filters"] or []]

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunks))

    def chunk_keys(self) -> Iterator[tuple[int, ...]]:
        return product(*(range(n) for n in self.grid))

    def decode(self, key: tuple[int, ...]) -> np.ndarray:
        """The chunk at grid position ``key``, trimmed to the array bounds."""
        path = self.path / self.separator.join(map(str, key))
        bounds = tuple(slice(0, min(c, s - k * c)) for k, c, s in zip(key, self.chunks, self.shape))
        if not path.exists():
            return np.full(self.chunks, self.fill_value, dtype=self.dtype)[bounds]
        data: Any = path.read_bytes()
        if self.compressor is not None:
            data = self.compressor.decode(data)
        for codec in reversed(self.filters):
            data = codec.decode(data)
        array = np.frombuffer(data, dtype=self.dtype) if not isinstance(data, np.ndarray) else data
        return array.reshape(self.chunks)[bounds]


def map_reduce(array: RawArray, per_chunk: Callable[[tuple[int, ...], np.ndarray], Any], combine: Callable[[Any, Any], Any]) -> Any:
    """``combine`` over ``per_chunk(key, chunk)`` of every chunk, decoded in a thread pool."""
    with ThreadPoolExecutor(THREADS) as pool:
        parts = pool.map(lambda key: per_chunk(key, array.decode(key)), array.chunk_keys())
        return reduce(combine, parts)


def allele_counts(store: Path) -> tuple[int, int]:
    """(records, sum over records of non-reference called alleles) from ``call_genotype``."""
    genotypes = RawArray(store, "call_genotype")
    total = map_reduce(genotypes, lambda key, chunk: int(np.count_nonzero(chunk > 0)), lambda a, b: a + b)
    return genotypes.shape[0], total


def sample_missingness(store: Path) -> np.ndarray:
    """Missing calls per sample (first allele missing) from ``call_genotype``."""
    genotypes = RawArray(store, "call_genotype")
    samples_chunk = genotypes.chunks[1]

    def per_chunk(key: tuple[int, ...], chunk: np.ndarray) -> np.ndarray:
        counts = np.zeros(genotypes.shape[1], dtype=np.int64)
        start = key[1] * samples_chunk
        counts[start : start + chunk.shape[1]] = np.count_nonzero(chunk[:, :, 0] == -1, axis=0)
        return counts

    return map_reduce(genotypes, per_chunk, np.add)


def contig_counts(store: Path) -> dict[str, int]:
    """Records per contig name from ``variant_contig`` and ``contig_id``."""
    names = RawArray(store, "contig_id")
    contig_ids = np.concatenate([names.decode(key) for key in names.chunk_keys()])
    contigs = RawArray(store, "variant_contig")
    counts = map_reduce(
        contigs, lambda key, chunk: np.bincount(chunk, minlength=len(contig_ids)), np.add
    )
    return {str(name): int(n) for name, n in zip(contig_ids, counts) if n}
