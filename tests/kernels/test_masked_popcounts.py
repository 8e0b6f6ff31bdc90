"""The compiled masked popcounts (vcfzarr_sql/kernels/masked_popcounts.py) against the numpy
path they replace (``packed_counts._bit_counts``), bit for bit, on random words and masks:
rows of 1 to 70 words, empty and full masks, words with the top bit set."""

from __future__ import annotations

import numpy as np
import pytest

from vcfzarr_sql.kernels.masked_popcounts import MASKED_POPCOUNTS
from vcfzarr_sql.query.packed_counts import _bit_counts, _scratch

EVEN_BITS = np.uint64(0x5555555555555555)


def test_masked_popcounts_equal_the_numpy_path(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "numba")
    kernel = MASKED_POPCOUNTS.compiled(work=0)
    assert kernel is not None
    rng = np.random.default_rng(3)
    for width in (1, 2, 7, 63, 70):
        words = rng.integers(0, 1 << 64, size=(41, width), dtype=np.uint64, endpoint=False)
        words[0] = np.uint64(0xFFFFFFFFFFFFFFFF)
        for mask in (np.zeros(width, dtype=np.uint64), np.full(width, EVEN_BITS),
                     rng.integers(0, 1 << 64, size=width, dtype=np.uint64) & EVEN_BITS):
            counts = np.full((3, 41), 5, dtype=np.int64)  # (the kernel adds to what is there)
            kernel(words, mask, counts)
            expected = _bit_counts(words, mask, _scratch(width)) + 5
            assert np.array_equal(counts, expected), (width, mask)
            if (mask == EVEN_BITS).all():  # a row of calls all 3: each bit set, 32 a word
                assert counts[:, 0].tolist() == [5 + 32 * width] * 3


def test_masked_popcounts_of_no_record_or_no_word(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "numba")
    kernel = MASKED_POPCOUNTS.compiled(work=0)
    assert kernel is not None
    for records, width in [(0, 3), (4, 0), (0, 0)]:
        counts = np.full((3, records), 2, dtype=np.int64)
        words, mask = np.ones((records, width), np.uint64), np.ones(width, np.uint64)
        kernel(words, mask, counts)
        assert np.array_equal(counts, _bit_counts(words, mask, _scratch(width)) + 2)
        assert (counts == 2).all()
