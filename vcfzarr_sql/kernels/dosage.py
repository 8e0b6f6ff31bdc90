"""Dosages expanded from genotypes packed 2 bits per call (code 0, 1, 2: the ALT alleles of the
call; 3: missing, written -9, as pgenlib's ``read_range``), straight from the decompressed
packed chunk into the matrix: the rows kept, the calls of the samples selected, no gathered
copy and no look-up table (:data:`EXPAND`; the numpy way, and the layout of the bytes:
``vcfzarr_sql.query.packed_dosage``).

A byte's four calls become four dosages in one 32-bit word by arithmetic alone, which the
compiler turns into vector instructions: the byte ``v`` spread so that each call's two bits
start a byte of the word (``v | v << 6 | v << 12 | v << 18``, masked to ``0x03030303``), then
``0xF4`` added to each byte holding a 3 (3 + 0xF4 = 0xF7, -9 as int8; no carry between bytes).

>>> import numpy as np
>>> piece = np.array([[0b11100100, 0b00100111], [0, 0]], np.uint8)
>>> out = np.zeros((1, 8), np.int8)
>>> expand_dosages(piece, np.array([0]), 0, 7, np.empty(0, np.int64), out, 0, 0)
>>> out.tolist()
[[0, 1, 2, -9, -9, 1, 2, 0]]
>>> expand_dosages(piece, np.array([0]), 0, 2, np.array([6, 3]), out, 0, 5)
>>> out[0, 5:].tolist()
[2, -9, 0]
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.kernels import Kernel

__all__ = ["EXPAND", "expand_dosages"]


def expand_dosages(
    piece: np.ndarray, rows: np.ndarray, first_byte: int, calls: int, slots: np.ndarray,
    out: np.ndarray, out_row: int, out_col: int,
) -> None:
    """Write the dosages of rows ``rows`` (indexes) of ``piece`` ((records, bytes) uint8, four
    calls a byte, the first in the low bits) into ``out`` ((records, samples) int8) from row
    ``out_row`` and column ``out_col`` on: the ``calls`` calls from byte ``first_byte`` on when
    ``slots`` is empty, else the calls ``slots`` (int64 positions in the row, ``calls``
    unused). Many slots of a row (an eighth of its calls or more) are picked from the whole
    row expanded first (vectorised), a few one by one."""
    picked = slots.shape[0]
    if picked and picked * 8 < piece.shape[1] * 4:
        for i in range(rows.shape[0]):
            src, dst = piece[rows[i]], out[out_row + i, out_col : out_col + picked]
            for j in range(picked):
                s = slots[j]
                code = (src[s >> 2] >> ((s & 3) << 1)) & 3
                dst[j] = -9 if code == 3 else code
        return
    if picked:  # (the whole row, into a scratch row)
        first_byte, calls = 0, piece.shape[1] * 4
    whole = calls >> 2
    row = np.empty(4 * whole if picked else 0, np.int8)
    for i in range(rows.shape[0]):
        src = piece[rows[i]]
        dst = out[out_row + i, out_col : out_col + (picked or calls)]
        words = (row if picked else dst[: 4 * whole]).view(np.uint32)
        quads = src[first_byte : first_byte + whole]  # (slices, so that the loop vectorises)
        for b in range(whole):
            v = np.uint32(quads[b])
            x = (v | (v << 6) | (v << 12) | (v << 18)) & np.uint32(0x03030303)
            words[b] = x + (x & (x >> 1) & np.uint32(0x01010101)) * np.uint32(0xF4)
        if picked:
            for j in range(picked):
                dst[j] = row[slots[j]]
            continue
        for j in range(4 * whole, calls):  # (the last byte's calls)
            s = 4 * first_byte + j
            code = (src[s >> 2] >> ((s & 3) << 1)) & 3
            dst[j] = -9 if code == 3 else code


#: :func:`expand_dosages`, compiled when :meth:`~vcfzarr_sql.kernels.Kernel.compiled` says so
EXPAND = Kernel(expand_dosages)
