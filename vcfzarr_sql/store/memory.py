"""Scratch and chunk buffers from Arrow's memory pool instead of malloc, for large ones.

A fresh multi-megabyte buffer from glibc's malloc is often handed back to the kernel when it
is freed, so the next one page-faults on every 4 KiB page: ~1000 faults per 2 MB genotype
chunk, measured at 39% of a single-threaded genotype scan's CPU time. Arrow's pool (mimalloc
or jemalloc) keeps freed pages for reuse, and its buffers can become Arrow arrays zero-copy.
A process that has not loaded pyarrow takes buffers under :data:`POOLED_BYTES` from numpy
instead, so that a command decoding only small chunks, such as ``stats`` from stored counts,
does not load it for them: its import costs more than their page faults (``stats -s -`` of
10,000 samples x 30,000 records, 0.43 CPU-s with this, 0.46 with every buffer pooled).

>>> values = empty(4, np.int8)
>>> values[:] = [1, 2, 3, 4]
>>> values.tolist()
[1, 2, 3, 4]
"""

from __future__ import annotations

import sys

import numpy as np

#: Buffers of at least this many bytes come from Arrow's pool whether pyarrow is loaded or not.
POOLED_BYTES = 1 << 20


def empty(count: int, dtype: np.dtype | type) -> np.ndarray:
    """An uninitialised, writable vector of ``count`` values of ``dtype``: in Arrow's pool
    (under :data:`POOLED_BYTES`, only once pyarrow is loaded)."""
    dtype = np.dtype(dtype)
    if count * dtype.itemsize < POOLED_BYTES and "pyarrow" not in sys.modules:
        return np.empty(count, dtype)
    import pyarrow as pa

    return np.frombuffer(pa.allocate_buffer(count * dtype.itemsize), dtype=dtype)
