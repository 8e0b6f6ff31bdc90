"""The exact Hardy-Weinberg tests of ``bcftools +fill-tags`` (HWE and ExcHet), vectorised.

Wigginton, Cutler and Abecasis 2005 (PMID 15789306), computed the way ``calc_hwe`` of
bcftools' fill-tags plugin computes it: the same recurrence from the midpoint down and up, the
same floating-point operations in the same order, and the same sums (numpy's ``cumsum`` adds
sequentially, as the C loops do), so results agree to the last bit; in particular the HWE sum
over "no more likely than the observed" breaks ties exactly as bcftools does.

Each test is one row: ``nref`` and ``nalt`` allele counts and ``nhet`` heterozygotes. Rows
with no reference or no alternate allele are 1 (bcftools' rule). Rows bcftools rejects with an
error (odd allele total, or heterozygotes inconsistent with the rare-allele count: only
possible with polyploid or multiallelic genotypes) are NaN, as are rows counting more alleles
of a kind than a C int holds (bcftools' type; stored counts are data: docs/security.md).

>>> hwe, exc_het = hwe_tests(np.array([8, 7]), np.array([2, 1]), np.array([0, 1]))
>>> np.float32(hwe).tolist(), np.float32(exc_het).tolist()
([0.1111111119389534, 1.0], [1.0, 1.0])

How the work is cut, each cut shown exact:

- each distinct (allele total, rare-allele count, heterozygotes) triple is tested once (the
  records of a cohort share a few), and the recurrence, which depends only on the first two (a
  *shape*), is walked once per shape;
- the walk of a shape stops, each way, where its values have fallen far below those of the
  heterozygote counts tested (:data:`_FAR`; for a common variant most of its range is further
  out), at a step whose next exact ratio is below 1, so that every value left out is below
  the last one walked (or below :data:`_TINY`);
- what is left out is then shown to change nothing, with the float operations bcftools does:
  added to the total of the walk, each value left out leaves it as it is; added at the end of
  an ExcHet or HWE sum, likewise; and an HWE sum, which adds the lowest heterozygote counts
  first, comes out the same whether the values left out there add up to 0 or to the most they
  can (float addition is monotone, so every sum in between gives that result too);
- a triple where any of this fails (a walk estimated too short, or a p-value so small that
  what was left out counts) is tested again with its shape's whole walk, as bcftools does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.kernels.hwe import HWE_TESTS, MOST_ALLELES

#: The walk of a shape is estimated to go until its values are this far below the least likely
#: heterozygote count tested (or the midpoint's 1), times this margin (these only set how long a
#: walk is tried: every cut is checked, see above).
_FAR = 2.0**-60
_MARGIN = 1.15
#: A value left out below it (with every value after it) is bounded by this instead of by the
#: last value walked (its rounding errors are absolute, not relative, there).
_TINY = 2.0**-1000
#: Shapes are walked, and their triples summed, in groups of shapes sorted by the length of
#: their walk (a Python step per step of the longest, numpy operations over the group), of at
#: most this many values (walks and triples x the longest walk: 16 MB of float64; the walks'
#: factors and the sums' terms take a few times that) ...
_GROUP_CELLS = 2_000_000
#: ... and at most this many values walked or summed in vain (past shorter walks' ends) per
#: step of the longest: about what a step costs in Python.
_GROUP_PADDING = 150
#: What the compiled tests save on a row, in ns (:mod:`vcfzarr_sql.kernels`' unit of work) per
#: square root of the largest allele total (numpy's walks' length grows so): numpy spends 0.9 us
#: a row of 1,000 samples, 3 us of 5,000 (20-30 ns a root), the kernel about a fifth of that
#: (docs/benchmarks.md, stop 37): 16-24 saved, counted as 25.
_SAVED_PER_ROOT = 25


def hwe_tests(nref: np.ndarray, nalt: np.ndarray, nhet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(HWE p-value, ExcHet p-value) of each row, float64 (compiled: :mod:`vcfzarr_sql.kernels.hwe`)."""
    # (contiguous: the one signature the kernel is compiled for)
    nref, nalt, nhet = (np.ascontiguousarray(a, dtype=np.int64) for a in (nref, nalt, nhet))
    most = int(nref.max(initial=0)) + int(nalt.max(initial=0))
    kernel = HWE_TESTS.compiled(work=int(_SAVED_PER_ROOT * np.sqrt(most) * len(nref)))
    if kernel is not None:
        hwe, exc_het = np.empty(len(nref)), np.empty(len(nref))  # (each row written)
        kernel(nref, nalt, nhet, _grouped(nref, nalt, nhet), hwe, exc_het)
        return hwe, exc_het
    hwe = np.ones(len(nref))
    exc_het = np.ones(len(nref))
    nrare = np.minimum(nref, nalt)
    tested = (nref > 0) & (nalt > 0)
    invalid = tested & (
        (((nrare & 1) ^ (nhet & 1)) != 0) | (nrare < nhet) | (nhet < 0) | (((nref + nalt) & 1) != 0)
        | (nref > MOST_ALLELES) | (nalt > MOST_ALLELES)
    )
    hwe[invalid] = exc_het[invalid] = np.nan
    rows = np.flatnonzero(tested & ~invalid)
    # Each distinct (total, nrare, nhet) once (the tests depend on nref and nalt through these).
    total, rare, het = (nref + nalt)[rows], nrare[rows], nhet[rows]
    order = np.lexsort((het, rare, total))
    total, rare, het = total[order], rare[order], het[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (total[1:] != total[:-1]) | (rare[1:] != rare[:-1]) | (het[1:] != het[:-1])
    distinct = np.cumsum(first) - 1
    distinct_hwe, distinct_exc_het = _distinct_tests(total[first], rare[first], het[first])
    hwe[rows[order]] = distinct_hwe[distinct]
    exc_het[rows[order]] = distinct_exc_het[distinct]
    return hwe, exc_het


def _grouped(nref: np.ndarray, nalt: np.ndarray, nhet: np.ndarray) -> np.ndarray:
    """The rows sorted by (allele total, rare-allele count, heterozygotes) where these fit in
    one integer (as they do below 2**20 samples: a row that does not, invalid, is only out of
    place), else as they are."""
    total = nref + nalt
    bits = max(int(total.max(initial=0)) // 2, 1).bit_length()  # (rare and het counts <= total / 2)
    if 3 * bits > 62:
        return np.arange(len(total))
    return np.argsort((total << bits | np.minimum(nref, nalt)) << bits | nhet)


def _distinct_tests(total: np.ndarray, nrare: np.ndarray, nhet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`hwe_tests` of distinct triples, all tested and valid, sorted by (total, nrare,
    nhet): with cut walks, then the triples whose cuts could not be shown exact with whole ones."""
    hwe, exc_het, exact = _triple_tests(total, nrare, nhet, cut=True)
    again = np.flatnonzero(~exact)
    if len(again):
        hwe[again], exc_het[again], _ = _triple_tests(total[again], nrare[again], nhet[again], cut=False)
    return hwe, exc_het


@dataclass(frozen=True)
class _Shapes:
    """The distinct (total, nrare) of a set of triples and bcftools' starting point of each
    walk: the midpoint ``mid`` (heterozygotes) and its ``hom_r`` (rare) and ``hom_c`` (common)
    homozygotes; ``down`` and ``up``: how many steps of two heterozygotes each way to walk."""

    mid: np.ndarray
    hom_r: np.ndarray
    hom_c: np.ndarray
    down: np.ndarray
    up: np.ndarray

    @staticmethod
    def of(total: np.ndarray, nrare: np.ndarray, lowest: np.ndarray, highest: np.ndarray,
           cut: bool) -> _Shapes:
        """The shapes of these (total, nrare) whose ``lowest`` and ``highest`` heterozygote
        counts tested are these: with ``cut``, walks that reach them and go on until about
        :data:`_FAR` below the least likely of them (estimated from the slopes of the log of
        the step ratios at the midpoint), else the whole walks."""
        mid = ((nrare.astype(np.float64) * (total - nrare)) / total).astype(np.int64)
        mid += (nrare & 1) ^ (mid & 1)
        hom_r = (nrare - mid) // 2
        hom_c = total // 2 - mid - hom_r
        down, up = mid // 2, hom_r.copy()  # the whole walks
        if cut:
            # ln(value) about -slope * steps**2 / 2 (the ratios fall faster further out)
            slopes = (4.0 / np.maximum(mid, 1) + 1.0 / (hom_r + 1) + 1.0 / (hom_c + 1),
                      4.0 / (mid + 2) + 1.0 / np.maximum(hom_r, 1) + 1.0 / np.maximum(hom_c, 1))
            reach = (np.maximum(mid - lowest, 0) // 2, np.maximum(highest - mid, 0) // 2)
            deepest = np.maximum(slopes[0] * reach[0] ** 2, slopes[1] * reach[1] ** 2) / 2
            nats = deepest - np.log(_FAR)
            for steps, slope, observed in zip((down, up), slopes, reach):
                far = np.ceil(_MARGIN * np.sqrt(2 * nats / slope)).astype(np.int64) + 2
                np.minimum(steps, np.maximum(far, observed), out=steps)
        return _Shapes(mid, hom_r, hom_c, down, up)


def _triple_tests(total: np.ndarray, nrare: np.ndarray, nhet: np.ndarray,
                  cut: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(HWE, ExcHet, exact) of distinct triples sorted by (total, nrare, nhet): ``exact`` is
    whether the cuts of the triple's walk (if ``cut``) are shown to change nothing."""
    new = np.ones(len(total), dtype=bool)
    new[1:] = (total[1:] != total[:-1]) | (nrare[1:] != nrare[:-1])
    shape_of = np.cumsum(new) - 1
    last = np.roll(new, -1)  # (new[0] is True)
    shapes = _Shapes.of(total[new], nrare[new], nhet[new], nhet[last], cut)
    # Groups of shapes of similar walk length, each with its triples.
    width = shapes.down + shapes.up + 1
    by_width = np.argsort(width, kind="stable")
    rows = 1 + np.bincount(shape_of)[by_width]  # a shape's walk and its triples' sums
    rows_before = np.concatenate([[0], np.cumsum(rows)])
    cells_before = np.concatenate([[0], np.cumsum(rows * width[by_width])])
    bounds = [0]
    while bounds[-1] < len(by_width):
        a = bounds[-1]
        widths = width[by_width[a:]]  # ascending
        group_rows = rows_before[a + 1:] - rows_before[a]
        padding = group_rows * widths - (cells_before[a + 1:] - cells_before[a])
        fits = (group_rows * widths <= _GROUP_CELLS) & (padding <= _GROUP_PADDING * widths)
        bounds.append(a + max(1, int(np.count_nonzero(fits))))
    group_of = np.empty(len(width), dtype=np.int64)
    place = np.empty(len(width), dtype=np.int64)
    for g, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        group_of[by_width[a:b]] = g
        place[by_width[a:b]] = np.arange(b - a)
    triples = np.argsort(group_of[shape_of], kind="stable")
    cuts = np.searchsorted(group_of[shape_of][triples], np.arange(len(bounds)))
    hwe, exc_het = np.empty(len(total)), np.empty(len(total))
    exact = np.empty(len(total), dtype=bool)
    for g, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        mine = triples[cuts[g]:cuts[g + 1]]
        walks = _walk(shapes, by_width[a:b])
        hwe[mine], exc_het[mine], exact[mine] = walks.tests(place[shape_of[mine]], nhet[mine])
    return hwe, exc_het, exact


@dataclass(frozen=True)
class _Walks:
    """The walks of a group of shapes: ``probs`` (heterozygote counts of the shapes' parity
    from ``down`` steps below each midpoint to ``up`` above, by columns), ``lowest`` (each
    shape's count of the first row), and per shape: ``below``, an upper bound of the HWE sum of
    the values left out below (0 if none), ``above``, one of each value left out above (0 if
    none), and ``fits``, whether the cuts change neither the total nor the shape's other
    values."""

    probs: np.ndarray
    lowest: np.ndarray
    below: np.ndarray
    above: np.ndarray
    fits: np.ndarray

    def tests(self, shape: np.ndarray, nhet: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(HWE, ExcHet, exact) of triples: their ``shape`` (column) and ``nhet``. The sums
        are in bcftools' order, a row (heterozygote count) at a time; rows of counts a shape
        does not have are 0s, and so are terms a sum leaves out: adding them changes nothing.
        The HWE sums of triples with values cut below are also done from the bound of those
        (they are put first, so that their terms are the first columns)."""
        first = np.argsort(self.below[shape] == 0, kind="stable")
        shape = shape[first]
        probs = self.probs[:, shape]
        n = len(shape)
        observed_at = (nhet[first] - self.lowest[shape]) // 2
        observed = probs[observed_at, np.arange(n)]
        terms = np.empty((len(probs), 2 * n))  # HWE, ExcHet
        np.multiply(probs, probs <= observed, out=terms[:, :n])
        np.multiply(probs, np.arange(len(probs))[:, None] >= observed_at, out=terms[:, n:])
        sums = np.zeros(2 * n)
        for row in terms:
            sums += row
        most = self.below[shape]
        cut = int(np.count_nonzero(most))
        most = most[:cut]  # (a copy: ``shape`` is an index array)
        for row in terms[:, :cut]:
            most += row
        hwe, exc_het = sums[:n], sums[n:]
        above = self.above[shape]
        exact = self.fits[shape] & (hwe + above == hwe) & (exc_het + above == exc_het)
        exact[:cut] &= most == hwe[:cut]
        hwe_out, exc_het_out, exact_out = np.empty(n), np.empty(n), np.empty(n, dtype=bool)
        hwe_out[first], exc_het_out[first], exact_out[first] = np.minimum(hwe, 1.0), exc_het, exact
        return hwe_out, exc_het_out, exact_out


def _walk(shapes: _Shapes, which: np.ndarray) -> _Walks:
    """The walks of shapes ``which``, ``probs[mid] = 1`` then down and up, each step with
    bcftools' operations in its order: step ``k`` down (``het = mid - 2k``, homozygote counts
    ``+ k``) gives ``p * het * (het - 1.0) / (4.0 * (hom_r + 1.0) * (hom_c + 1.0))`` for
    ``het - 2``; up (``het = mid + 2k``, ``- k``) ``p * 4.0 * hom_r * hom_c / ((het + 2.0) *
    (het + 1.0))`` for ``het + 2`` (``(p * 4.0) * hom_r`` is ``p * (4.0 * hom_r)``: both
    round the same exact product once); ``p`` is the previous step's value; each value is
    added to the shape's total as it comes (from 1, the midpoint's). All shapes step together
    for the group's longest walk each way: a shorter walk goes on (its values are bcftools'
    own, only further out), and past its end its values are 0 (its last step has a factor 0,
    and 0 times the later factors stays 0)."""
    mid, hom_r, hom_c = shapes.mid[which], shapes.hom_r[which], shapes.hom_c[which]
    down, up = int(shapes.down[which].max()), int(shapes.up[which].max())
    total = np.ones(len(which))
    probs = np.empty((down + 1 + up, len(which)))  # by heterozygote count: below, mid, above
    below, above = probs[down - 1::-1] if down else probs[:0], probs[down + 1:]
    probs[down] = 1.0
    k = np.arange(down, dtype=np.float64)[:, None]
    het = mid - 2.0 * k
    _steps(below, total, het, het - 1.0, (4.0 * (hom_r + 1.0) + 4.0 * k) * (hom_c + 1.0 + k))
    total_down = total.copy()
    k = np.arange(up, dtype=np.float64)[:, None]
    het = mid + 2.0 * k
    _steps(above, total, 4.0 * hom_r - 4.0 * k, hom_c - k, (het + 2.0) * (het + 1.0))
    # Where each walk was cut, the ratio of its next step (of integers, rounded up: it bounds
    # the float step too) must be below 1, so every value left out is below the last walked
    # (or _TINY, where rounding errors are absolute) ...
    het_end, hom_r_end, hom_c_end = mid - 2 * down, hom_r + down, hom_c + down
    down_ended = (het_end <= 1) | (below[-1] == 0 if down else False)
    down_ratio = het_end * (het_end - 1.0) / (4.0 * (hom_r_end + 1.0) * (hom_c_end + 1.0)) * (1 + 2.0**-40)
    het_end, hom_r_end, hom_c_end = mid + 2 * up, hom_r - up, hom_c - up
    up_ended = (hom_r_end <= 0) | (above[-1] == 0 if up else False)
    up_ratio = 4.0 * hom_r_end * hom_c_end / ((het_end + 2.0) * (het_end + 1.0)) * (1 + 2.0**-40)
    # ... and, added to the total, each must leave it as it was (the values below come after
    # the total is 1 + those walked down).
    last_below = np.maximum(below[-1] if down else 1.0, _TINY)
    last_above = np.maximum(above[-1] if up else 1.0, _TINY)
    fits = ((down_ended | ((down_ratio < 1) & (total_down + last_below == total_down)))
            & (up_ended | ((up_ratio < 1) & (total + last_above == total))))
    probs /= total
    # An HWE sum adds the values below first: their float sum is at most the first walked
    # value's times ratio / (1 - ratio) (they fall at least by the ratio each step), plus
    # rounding, or _TINY each.
    left_below = np.where(down_ended, 0, mid // 2 - down + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        geometric = np.where(down_ended | (down_ratio >= 1), 0.0, down_ratio / (1.0 - down_ratio))
    below_bound = np.where(down_ended, 0.0, probs[0] * geometric * (1.0 + 2.0**-20) + left_below * _TINY)
    above_bound = np.where(up_ended, 0.0, np.maximum(probs[-1], _TINY))
    return _Walks(probs, mid - 2 * down, below_bound, above_bound, fits)


def _steps(values: np.ndarray, total: np.ndarray, first: np.ndarray, second: np.ndarray,
           divisor: np.ndarray) -> None:
    """One direction of :func:`_walk`: ``values`` by step (row), ``previous * first * second /
    divisor``, each added to ``total``."""
    previous = np.ones(first.shape[1])
    for step in range(len(values)):
        x = values[step]
        np.multiply(previous, first[step], out=x)
        x *= second[step]
        x /= divisor[step]
        total += x
        previous = x
