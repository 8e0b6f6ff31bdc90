"""The calls of a diploid chunk that are not ``0/0`` and their counts per record and per sample,
in one pass over the calls (the compiled twin of
:func:`vcfzarr_sql.format.diploid_calls.diploid_calls` for int8 genotypes).
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.kernels import Kernel


def _diploid_calls(pairs: np.ndarray, pair_codes: np.ndarray, codes_count: int, hom_ref: int
                   ) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``pairs``: (records, samples) uint16, a call's two int8 alleles each (0: ``0/0``);
    ``pair_codes``: the code of each pair (``codes_count`` or more: outside the codes).

    Returns ok (False: a pair outside the codes), then the rows, columns and codes (intp) of
    the calls that are not ``0/0`` in row-major order, and the calls of each code per record
    (records, codes_count) and per sample (codes_count, samples), int64, ``0/0`` included."""
    records, samples = pairs.shape
    found = 0
    for r in range(records):
        for c in range(samples):
            if pairs[r, c] != 0:
                found += 1
    rows = np.empty(found, dtype=np.intp)
    cols = np.empty(found, dtype=np.intp)
    codes = np.empty(found, dtype=np.intp)
    per_record = np.zeros((records, codes_count), dtype=np.int64)
    per_sample = np.zeros((codes_count, samples), dtype=np.int64)
    at = 0
    for r in range(records):
        for c in range(samples):
            pair = pairs[r, c]
            if pair != 0:
                value = pair_codes[pair]
                if value >= codes_count:
                    return False, rows, cols, codes, per_record, per_sample
                rows[at] = r
                cols[at] = c
                codes[at] = value
                at += 1
                per_record[r, value] += 1
                per_sample[value, c] += 1
    for r in range(records):
        total = 0
        for value in range(codes_count):
            total += per_record[r, value]
        per_record[r, hom_ref] = samples - total
    for c in range(samples):
        total = 0
        for value in range(codes_count):
            total += per_sample[value, c]
        per_sample[hom_ref, c] = records - total
    return True, rows, cols, codes, per_record, per_sample


DIPLOID_CALLS = Kernel(_diploid_calls)
