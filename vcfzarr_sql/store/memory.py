"""Scratch and chunk buffers from Arrow's memory pool instead of malloc, in a process that uses Arrow.

A fresh multi-megabyte buffer from glibc's malloc is often handed back to the kernel when it
is freed, so the next one page-faults on every 4 KiB page: ~1000 faults per 2 MB genotype
chunk, measured at 39% of a single-threaded genotype scan's CPU time. Arrow's pool (mimalloc
or jemalloc) keeps freed pages for reuse, and its buffers can become Arrow arrays zero-copy.
A process that has not loaded pyarrow takes its buffers from numpy instead: a command that
does not use Arrow (``stats``, ``view`` without ``-r/-t``) would load it for the pool alone,
and there it saves nothing: ``view`` of 20,000 x 1,000 calls (GT:AD:DP:GQ:PL, 2-6 MB chunks)
made 36,000 page faults and took 2.6 CPU-s with the pool, 31,000 and 2.6 CPU-s without, and
``stats -s - -i 'QUAL>100'`` of the same store 1.1-1.2 CPU-s either way, while importing pyarrow costs
0.03 CPU-s, 6% of ``view`` of a 50 MB VCF (the glibc heap keeps reusing the pages of freed
chunks of one size: its mmap threshold rises to them).

>>> values = empty(4, np.int8)
>>> values[:] = [1, 2, 3, 4]
>>> values.tolist()
[1, 2, 3, 4]
"""

from __future__ import annotations

import sys

import numpy as np


def empty(count: int, dtype: np.dtype | type) -> np.ndarray:
    """An uninitialised, writable vector of ``count`` values of ``dtype``: in Arrow's pool
    once pyarrow is loaded, else from numpy."""
    if "pyarrow" not in sys.modules:
        return np.empty(count, dtype)
    import pyarrow as pa

    dtype = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(count * dtype.itemsize), dtype=dtype)
