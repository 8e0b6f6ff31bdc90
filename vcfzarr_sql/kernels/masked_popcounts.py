"""Masked popcounts over 2-bit packed genotypes, compiled: per row of 64-bit words, the calls
a mask selects whose low bit is set, whose high bit is set, and whose both bits are set, in one
pass over the words (the compiled twin of :func:`vcfzarr_sql.query.packed_counts._bit_counts`,
which does it in numpy slices; the caller keeps that path).

The popcount is the usual SWAR sum, which LLVM turns into the CPU's popcount instruction.

>>> import numpy as np
>>> words = np.array([[0b11_10_01_00, 0b11]], dtype=np.uint64)  # calls 0/0, het, hom-alt, ./.
>>> counts = np.zeros((3, 1), dtype=np.int64)
>>> masked_popcounts(words, np.array([0b01_01_01_01, 1], dtype=np.uint64), counts)
>>> counts.ravel().tolist()  # (low bit set, high bit set, both): 1+1+1, 1+1+1, 1+1
[3, 3, 2]
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.kernels import Kernel

__all__ = ["MASKED_POPCOUNTS", "masked_popcounts"]

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ONE, _TWO, _FOUR, _TOP = np.uint64(1), np.uint64(2), np.uint64(4), np.uint64(56)


def masked_popcounts(words: np.ndarray, mask: np.ndarray, counts: np.ndarray) -> None:
    """Add to ``counts`` (3, records) int64, per row of ``words`` (records, width) uint64, the
    calls of ``mask`` (width,) uint64, the low bit of each selected call set, whose low bit is
    set, whose high bit is set and whose both bits are set."""
    records, width = words.shape
    for r in range(records):
        low = np.uint64(0)
        high = np.uint64(0)
        both = np.uint64(0)
        for i in range(width):
            m = mask[i]
            if m == 0:
                continue
            w = words[r, i]
            lo = w & m
            hi = (w >> _ONE) & m
            for k in range(3):  # (unrolled by LLVM) the SWAR popcount of lo, hi, lo & hi
                x = lo if k == 0 else (hi if k == 1 else lo & hi)
                x = x - ((x >> _ONE) & _M1)
                x = (x & _M2) + ((x >> _TWO) & _M2)
                x = (x + (x >> _FOUR)) & _M4
                x = (x * _H01) >> _TOP
                if k == 0:
                    low += x
                elif k == 1:
                    high += x
                else:
                    both += x
        counts[0, r] += np.int64(low)
        counts[1, r] += np.int64(high)
        counts[2, r] += np.int64(both)


MASKED_POPCOUNTS = Kernel(masked_popcounts)
