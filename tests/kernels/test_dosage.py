"""``kernels/dosage.expand_dosages``: compiled, it writes what the plain function writes, and
both write each call's code from the bytes' layout by hand (0, 1, 2; 3 as -9), in place, and
nothing outside the rows and columns they are given."""

from __future__ import annotations

import numpy as np
import pytest

from vcfzarr_sql.kernels.dosage import EXPAND, expand_dosages


def _by_hand(piece: np.ndarray) -> np.ndarray:
    """Every call of every row of ``piece``: four a byte, the first in the low bits."""
    codes = (piece[:, :, None] >> np.array([0, 2, 4, 6], np.uint8)) & 3
    return np.where(codes == 3, -9, codes).astype(np.int8).reshape(len(piece), -1)


@pytest.mark.parametrize(("first_byte", "calls", "slots"), [
    (0, 157, []), (3, 20, []), (2, 3, []), (0, 0, []), (0, 0, [0, 7, 8, 100, 159]),
    (0, 0, list(range(3, 150, 2))), (0, 0, [159])])
def test_compiled_writes_what_the_function_writes(monkeypatch, first_byte, calls, slots):
    pytest.importorskip("numba")
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "numba")
    compiled = EXPAND.compiled(work=1)
    assert compiled is not None
    piece = np.random.default_rng(calls).integers(0, 256, (30, 40), dtype=np.uint8)
    rows = np.array([29, 0, 7, 7, 12], np.int64)
    picks = np.array(slots, np.int64)
    width = len(slots) or calls
    expected = _by_hand(piece)[rows][:, picks if len(slots) else slice(4 * first_byte, 4 * first_byte + calls)]
    for run in (expand_dosages, compiled):
        out = np.full((len(rows) + 3, width + 5), 77, np.int8)
        run(piece, rows, first_byte, calls, picks, out, 2, 3)
        assert (out[2 : 2 + len(rows), 3 : 3 + width] == expected).all(), run
        out[2 : 2 + len(rows), 3 : 3 + width] = 77
        assert (out == 77).all(), run
