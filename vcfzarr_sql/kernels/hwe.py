"""The exact HWE and ExcHet tests of ``bcftools +fill-tags``, compiled: ``calc_hwe`` of its
fill-tags.c, the same float64 operations in the same order, once per distinct (allele total,
rare-allele count, heterozygotes) triple of a batch, each walk once per (total, rare) shape.

What is left out of bcftools' loops changes no bit: the zeros of ``probs`` (counts of the other
parity, and every value past the first that underflows to 0: 0 times the next factors stays
0), since adding 0.0 to a sum of non-negative doubles leaves it as it is. The caller
(:mod:`vcfzarr_sql.query.hwe`) keeps the numpy way of computing the same values.

>>> import numpy as np
>>> hwe, exc_het = np.empty(3), np.empty(3)
>>> hwe_tests(np.array([8, 7, 10]), np.array([2, 1, 0]), np.array([0, 1, 0]), hwe, exc_het)
>>> np.float32(hwe).tolist(), exc_het.tolist()
([0.1111111119389534, 1.0, 1.0], [1.0, 1.0, 1.0])
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.kernels import Kernel

__all__ = ["HWE_TESTS", "hwe_tests"]


def hwe_tests(nref: np.ndarray, nalt: np.ndarray, nhet: np.ndarray,
              hwe: np.ndarray, exc_het: np.ndarray) -> None:
    """Fill ``hwe`` and ``exc_het`` (float64) with each row's tests: 1 where ``nref`` or
    ``nalt`` is 0, NaN where bcftools stops with an error (odd allele total, heterozygotes of
    the other parity than the rare allele's count, or more of them)."""
    n = len(nref)
    keys = np.empty(n, dtype=np.int64)
    rows = np.empty(n, dtype=np.int64)
    tested = 0
    most_total = 0
    for i in range(n):
        r, a, h = nref[i], nalt[i], nhet[i]
        if r <= 0 or a <= 0:
            hwe[i] = 1.0
            exc_het[i] = 1.0
            continue
        rare = min(r, a)
        if ((rare ^ h) & 1) != 0 or rare < h or h < 0 or ((r + a) & 1) != 0:
            hwe[i] = np.nan
            exc_het[i] = np.nan
            continue
        rows[tested] = i
        tested += 1
        most_total = max(most_total, r + a)
    # Rows sorted by (total, rare, het), packed in one integer where they fit (rare and het
    # are at most total / 2; else each row alone: the same values, walked once per row).
    bits = 1
    while (1 << bits) <= most_total // 2:
        bits += 1
    packed = 3 * bits <= 62
    for j in range(tested):
        i = rows[j]
        total = nref[i] + nalt[i]
        rare = min(nref[i], nalt[i])
        keys[j] = ((total << bits | rare) << bits | nhet[i]) if packed else j
    order = np.argsort(keys[:tested])
    probs = np.empty(most_total // 4 + 2)  # by het // 2 (rare <= total / 2)
    shape_total, shape_rare, lo, hi = -1, -1, 0, -1
    last_key, last_hwe, last_exc_het = -1, 0.0, 0.0
    for j in range(tested):
        i = rows[order[j]]
        if packed and keys[order[j]] == last_key:
            hwe[i] = last_hwe
            exc_het[i] = last_exc_het
            continue
        last_key = keys[order[j]]
        total = nref[i] + nalt[i]
        rare = min(nref[i], nalt[i])
        if total != shape_total or rare != shape_rare:
            # The walk of a new shape: probs[lo:hi + 1] are bcftools' normalised
            # probabilities of 2k + (rare & 1) heterozygotes at k, its non-zero ones.
            shape_total, shape_rare = total, rare
            ngt = total // 2
            mid = int(float(rare) * (total - rare) / total)
            if ((rare & 1) ^ (mid & 1)) != 0:
                mid += 1
            lo = hi = mid // 2
            probs[lo] = 1.0
            sum_ = 1.0
            het, hom_r = mid, (rare - mid) // 2
            hom_c = ngt - het - hom_r
            p = 1.0
            while het > 1:
                p = p * het * (het - 1.0) / (4.0 * (hom_r + 1.0) * (hom_c + 1.0))
                if p == 0.0:
                    break
                lo -= 1
                probs[lo] = p
                sum_ += p
                hom_r += 1
                hom_c += 1
                het -= 2
            het, hom_r = mid, (rare - mid) // 2
            hom_c = ngt - het - hom_r
            p = 1.0
            while het <= rare - 2:
                p = p * 4.0 * hom_r * hom_c / ((het + 2.0) * (het + 1.0))
                if p == 0.0:
                    break
                hi += 1
                probs[hi] = p
                sum_ += p
                hom_r -= 1
                hom_c -= 1
                het += 2
            for k in range(lo, hi + 1):
                probs[k] /= sum_
        # The sums of the observed count's place in probs, in bcftools' order.
        observed = nhet[i] // 2
        at = probs[observed] if lo <= observed <= hi else 0.0
        last_exc_het = at
        for k in range(max(observed + 1, lo), hi + 1):
            last_exc_het += probs[k]
        last_hwe = 0.0
        for k in range(lo, hi + 1):
            if probs[k] <= at:
                last_hwe += probs[k]
        last_hwe = min(last_hwe, 1.0)
        hwe[i] = last_hwe
        exc_het[i] = last_exc_het


HWE_TESTS = Kernel(hwe_tests)
