"""The exact HWE and ExcHet tests of ``bcftools +fill-tags``, compiled: ``calc_hwe`` of its
fill-tags.c, the same float64 operations in the same order, once per distinct (allele total,
rare-allele count, heterozygotes) triple of a batch, each walk once per (total, rare) shape.
The caller (:mod:`vcfzarr_sql.query.hwe`) keeps the numpy way of computing the same values.

What is left out of bcftools' loops changes no bit:

- the zeros of its ``probs`` (counts of the other parity, and the values past the first that
  underflows to 0: 0 times the next factors stays 0): adding 0.0 to a sum of non-negative
  doubles leaves it as it is;
- the values past the first one below :data:`_FAR` each way (the midpoint's value is 1, so
  the total is at least 1), where every later step's ratio is below 1: each of them is at most
  that first one (ratios fall further out), which leaves the total as it is, so they all do
  (float addition is monotone). Normalised, the values left out above are added at the end of
  the HWE and ExcHet sums: each is at most the first (normalised), and where that one leaves a
  sum as it is, they all do. Those left out below come first in the HWE sum: their float sum
  is between 0 and a bound (a geometric series from the first, plus rounding), and the sum
  started from either gives the same result, so it does from what they sum to. A triple where
  a check fails (its count was left out, or its p-value is too small) is tested again with
  its shape's whole walk.

>>> import numpy as np
>>> hwe, exc_het = np.empty(3), np.empty(3)
>>> nref, nalt, nhet = np.array([8, 7, 10]), np.array([2, 1, 0]), np.array([0, 1, 0])
>>> hwe_tests(nref, nalt, nhet, np.arange(3), hwe, exc_het)
>>> np.float32(hwe).tolist(), exc_het.tolist()
([0.1111111119389534, 1.0, 1.0], [1.0, 1.0, 1.0])
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.kernels import Kernel

__all__ = ["HWE_TESTS", "MOST_ALLELES", "hwe_tests"]

#: The most alleles of either kind a row may count (bcftools' counts are C ints): a row with
#: more is NaN, so that no sum of counts overflows and no index passes the walk's array (the
#: kernel checks no bounds; stored counts are data, docs/security.md).
MOST_ALLELES = 2**31 - 1

#: A walk is cut (each way) at its first value below this (relative to the midpoint's 1): far
#: enough that what is left out changes the sums of only a few triples (walked again). At most
#: 2**-53, half an ulp of 1, so that a value left out leaves the total (>= 1) as it is.
_FAR = 2.0**-72
#: Below it a value's rounding error is absolute (subnormal), not relative: walks are not cut
#: there, and a bound of a sum of values left out gets it added.
_TINY = 2.0**-1000
#: Relative slack covering the rounding of a few float operations (ratios, bounds).
_SLACK = 2.0**-20


def hwe_tests(nref: np.ndarray, nalt: np.ndarray, nhet: np.ndarray, order: np.ndarray,
              hwe: np.ndarray, exc_het: np.ndarray) -> None:
    """Fill ``hwe`` and ``exc_het`` (float64) with each row's tests: 1 where ``nref`` or
    ``nalt`` is 0, NaN where bcftools stops with an error (odd allele total, heterozygotes of
    the other parity than the rare allele's count, or more of them) or a count is above
    :data:`MOST_ALLELES`. Rows are taken in
    ``order`` (a permutation of them), which should put equal triples next to each other (a
    run of them is tested once) and the triples of a shape too (walked once)."""
    most_rare = 0
    for i in range(len(nref)):  # (of the rows tested)
        if 0 < nref[i] <= MOST_ALLELES and 0 < nalt[i] <= MOST_ALLELES:
            most_rare = max(most_rare, min(nref[i], nalt[i]))
    probs = np.empty(most_rare // 2 + 2)  # by het // 2 (het <= rare: the midpoint too)
    shape_total, shape_rare, lo, hi = -1, -1, 0, -1
    cut_walk, below_most, above_most = False, 0.0, 0.0
    last_het, last_hwe, last_exc_het = -1, 0.0, 0.0
    for i in order:
        if nref[i] <= 0 or nalt[i] <= 0:
            hwe[i] = 1.0
            exc_het[i] = 1.0
            continue
        if nref[i] > MOST_ALLELES or nalt[i] > MOST_ALLELES:
            hwe[i] = np.nan
            exc_het[i] = np.nan
            continue
        total = nref[i] + nalt[i]
        rare = min(nref[i], nalt[i])
        if ((rare ^ nhet[i]) & 1) != 0 or rare < nhet[i] or nhet[i] < 0 or (total & 1) != 0:
            hwe[i] = np.nan
            exc_het[i] = np.nan
            continue
        if total == shape_total and rare == shape_rare and nhet[i] == last_het:
            hwe[i] = last_hwe
            exc_het[i] = last_exc_het
            continue
        last_het = nhet[i]
        observed = nhet[i] // 2
        new_shape = total != shape_total or rare != shape_rare
        shape_total, shape_rare = total, rare
        for attempt in range(2):
            if new_shape or (attempt == 1 and cut_walk):
                # The walk: probs[lo:hi + 1] are bcftools' normalised probabilities of
                # 2k + (rare & 1) heterozygotes at k, its non-zero ones (on the first attempt,
                # those kept by the cuts). Both ways in one loop (two chains of dependent
                # operations, run side by side); the total adds the values below as they come
                # and those above after them, as bcftools does.
                cut = attempt == 0
                ngt = total // 2
                mid = int(float(rare) * (total - rare) / total)
                if ((rare & 1) ^ (mid & 1)) != 0:
                    mid += 1
                lo = hi = mid // 2
                probs[lo] = 1.0
                below_first, below_ratio, above_first = 0.0, 0.0, 0.0
                down, down_r = mid, (rare - mid) // 2
                down_c = ngt - down - down_r
                up, up_r, up_c = down, down_r, down_c
                p_down = p_up = sum_ = 1.0
                going_down, going_up = down > 1, up <= rare - 2
                while going_down or going_up:
                    if going_down:
                        p_down = p_down * down * (down - 1.0) / (4.0 * (down_r + 1.0) * (down_c + 1.0))
                        down -= 2
                        down_r += 1
                        down_c += 1
                        kept = p_down != 0.0
                        if kept and cut and _TINY <= p_down < _FAR:
                            ratio = 0.0  # of the next step, with slack
                            if down > 1:
                                ratio = down * (down - 1.0) / (4.0 * (down_r + 1.0) * (down_c + 1.0))
                            ratio *= 1.0 + _SLACK
                            if ratio < 1.0:
                                below_first, below_ratio, kept = p_down, ratio, False
                        if kept:
                            lo -= 1
                            probs[lo] = p_down
                            sum_ += p_down
                        going_down = kept and down > 1
                    if going_up:
                        p_up = p_up * 4.0 * up_r * up_c / ((up + 2.0) * (up + 1.0))
                        up += 2
                        up_r -= 1
                        up_c -= 1
                        kept = p_up != 0.0
                        if kept and cut and _TINY <= p_up < _FAR:
                            ratio = 0.0
                            if up <= rare - 2:
                                ratio = 4.0 * up_r * up_c / ((up + 2.0) * (up + 1.0))
                            if ratio * (1.0 + _SLACK) < 1.0:
                                above_first, kept = p_up, False
                        if kept:
                            hi += 1
                            probs[hi] = p_up
                        going_up = kept and up <= rare - 2
                for k in range(mid // 2 + 1, hi + 1):
                    sum_ += probs[k]
                for k in range(lo, hi + 1):
                    probs[k] /= sum_
                # Bounds of what was left out, normalised: above, of each value; below, of
                # their float sum (of any of them: values falling at least by the ratio).
                cut_walk = below_first > 0.0 or above_first > 0.0
                above_most = above_first / sum_
                below_most = 0.0
                if below_first > 0.0:
                    below_most = below_first / sum_ / (1.0 - below_ratio) * (1.0 + _SLACK) + _TINY
            # The sums in bcftools' order: HWE from those left out below (from their least and
            # most sums, which must agree), ExcHet from the observed count's value.
            at = probs[observed] if lo <= observed <= hi else 0.0
            least, most, last_exc_het = 0.0, below_most, at
            for k in range(lo, hi + 1):
                value = probs[k]
                term = value if value <= at else 0.0
                least += term
                most += term
                last_exc_het += value if k > observed else 0.0
            last_hwe = min(least, 1.0)
            # (a count left out has ``at`` 0: ``most`` or the ExcHet check then fails)
            if not cut_walk or (
                least == most
                and least + min(at, above_most) == least
                and last_exc_het + above_most == last_exc_het
            ):
                break
        hwe[i] = last_hwe
        exc_het[i] = last_exc_het


HWE_TESTS = Kernel(hwe_tests)
