"""The 2-bit packed rows of a diploid chunk written from its calls that are not ``0/0``, in one
pass over those calls (the compiled twin of
:func:`vcfzarr_sql.format.packed_genotypes.pack_rows`' numpy packing from them, which codes
every call of the chunk, ``0/0`` included, then packs the codes 4 to a byte).

>>> import numpy as np
>>> packed, exact = np.zeros((1, 1), dtype=np.uint8), np.ones(1, dtype=np.uint8)
>>> call_codes = np.array([1, 2, 3, 255], dtype=np.uint8)  # (codes of the calls' pair codes)
>>> packed_calls(np.array([0, 0]), np.array([1, 3]), np.array([0, 3]), call_codes,
...              np.arange(4), 3, 255, packed, exact)
>>> packed.tolist(), exact.tolist()  # (call 1: code 1; call 3: not exact, so missing, 3)
([[196]], [0])
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.kernels import Kernel

__all__ = ["PACKED_CALLS", "packed_calls"]


def packed_calls(rows: np.ndarray, cols: np.ndarray, codes: np.ndarray, call_codes: np.ndarray,
                 slots: np.ndarray, missing: int, not_exact: int, packed: np.ndarray,
                 exact: np.ndarray) -> None:
    """Or each call's 2-bit code into ``packed`` (records, bytes) uint8, zeros on entry: the call
    at row ``rows[i]``, sample ``cols[i]`` (slot ``slots[cols[i]]`` of its row, 4 slots a byte,
    the first in the low bits) has the code ``call_codes[codes[i]]``; one that is
    ``not_exact`` is written as ``missing`` and its row's ``exact`` set to 0. The caller checks
    that every index is in range (this loop does not)."""
    for i in range(rows.shape[0]):
        row = rows[i]
        value = call_codes[codes[i]]
        if value == not_exact:
            value = missing
            exact[row] = 0
        slot = slots[cols[i]]
        packed[row, slot >> 2] |= np.uint8(value << (2 * (slot & 3)))


PACKED_CALLS = Kernel(packed_calls)
