"""The exact Hardy-Weinberg tests of ``bcftools +fill-tags`` (HWE and ExcHet), vectorised.

Wigginton, Cutler and Abecasis 2005 (PMID 15789306), computed the way ``calc_hwe`` of
bcftools' fill-tags plugin computes it: the same recurrence from the midpoint down and up, the
same floating-point operations in the same order, and the same sums (numpy's ``cumsum`` adds
sequentially, as the C loops do), so results agree to the last bit; in particular the HWE sum
over "no more likely than the observed" breaks ties exactly as bcftools does.

Each distinct (nref, nalt, nhet) triple of a call is tested once (the records of a cohort
share a few). Each test is one row: ``nref`` and ``nalt`` allele counts and ``nhet`` heterozygotes. Rows
with no reference or no alternate allele are 1 (bcftools' rule). Rows bcftools rejects with an
error (odd allele total, or heterozygotes inconsistent with the rare-allele count: only
possible with polyploid or multiallelic genotypes) are NaN.

>>> hwe, exc_het = hwe_tests(np.array([8, 7]), np.array([2, 1]), np.array([0, 1]))
>>> np.float32(hwe).tolist(), np.float32(exc_het).tolist()
([0.1111111119389534, 1.0], [1.0, 1.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The recurrence of every row is walked at once (the per-step Python overhead paid once per
#: batch, :func:`_walk`); the sums over each row's probabilities are computed in groups of at
#: most this many probabilities (rows x widest row): sorted by rare-allele count, so each
#: group is about as wide as its rows need (32 MB of float64 at most).
_GROUP_CELLS = 4_000_000
#: ... and at most this many times as wide (plus the slack) as its narrowest row: the matrix
#: of probabilities is then at most that many times the values it must hold.
_GROUP_WIDENING = 2
_GROUP_SLACK = 64


def hwe_tests(nref: np.ndarray, nalt: np.ndarray, nhet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(HWE p-value, ExcHet p-value) of each row, float64."""
    nref, nalt, nhet = (np.asarray(a, dtype=np.int64) for a in (nref, nalt, nhet))
    hwe = np.ones(len(nref))
    exc_het = np.ones(len(nref))
    nrare = np.minimum(nref, nalt)
    tested = (nref > 0) & (nalt > 0)
    invalid = tested & (
        (((nrare & 1) ^ (nhet & 1)) != 0) | (nrare < nhet) | (((nref + nalt) & 1) != 0)
    )
    hwe[invalid] = exc_het[invalid] = np.nan
    computed = tested & ~invalid
    # Each distinct (nref, nalt, nhet) once: most records of a cohort share a few.
    triples, inverse = np.unique(
        np.stack([nref, nalt, nhet], axis=1)[computed], axis=0, return_inverse=True
    )
    distinct_hwe, distinct_exc_het = _distinct_tests(*triples.T)
    hwe[computed] = distinct_hwe[inverse.reshape(-1)]
    exc_het[computed] = distinct_exc_het[inverse.reshape(-1)]
    return hwe, exc_het


def _distinct_tests(nref: np.ndarray, nalt: np.ndarray, nhet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`hwe_tests` of rows that are all tested and valid: the recurrence of every row at
    once (:func:`_walk`), then the sums in groups of rows of similar width."""
    total = nref + nalt
    nrare = np.minimum(nref, nalt)
    mid = ((nrare.astype(np.float64) * (total - nrare)) / total).astype(np.int64)
    mid += (nrare & 1) ^ (mid & 1)
    hom_r = (nrare - mid) // 2
    hom_c = total // 2 - mid - hom_r
    walked = _walk(mid, hom_r, hom_c, nrare)
    rows = np.argsort(nrare, kind="stable")
    bounds = [0]
    while bounds[-1] < len(rows):
        widths = nrare[rows[bounds[-1]:]] + 1  # ascending
        fits = np.arange(1, len(widths) + 1) * widths <= _GROUP_CELLS
        fits &= widths <= _GROUP_WIDENING * widths[0] + _GROUP_SLACK
        bounds.append(bounds[-1] + max(1, int(np.count_nonzero(fits))))
    # Each row's group and place in it; the values of each group's rows, together.
    group_of = np.empty(len(nref), dtype=np.int16 if len(bounds) < 1 << 15 else np.int64)
    place = np.empty(len(nref), dtype=np.int64)
    for g, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        group_of[rows[a:b]] = g
        place[rows[a:b]] = np.arange(b - a)
    groups = group_of[walked.row]
    by_group = np.argsort(groups, kind="stable")
    cuts = np.searchsorted(groups[by_group], np.arange(len(bounds)))
    hwe = np.ones(len(nref))
    exc_het = np.ones(len(nref))
    for g, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        group, mine = rows[a:b], by_group[cuts[g]:cuts[g + 1]]
        hwe[group], exc_het[group] = _tests(
            nhet[group], nrare[group], mid[group], walked.total[group], walked.value[mine],
            place[walked.row[mine]], walked.step[mine], walked.down[mine])
    return hwe, exc_het


@dataclass(frozen=True)
class _Walked:
    """The recurrence of every row: ``total`` (the sum of its values, bcftools' ``sum``), and
    one entry per value: its ``value``, ``row``, ``step`` (0: the first two heterozygotes away
    from the midpoint) and whether it went ``down``."""

    total: np.ndarray
    value: np.ndarray
    row: np.ndarray
    step: np.ndarray
    down: np.ndarray


def _tests(nhet: np.ndarray, nrare: np.ndarray, mid: np.ndarray, total: np.ndarray, value: np.ndarray,
           at: np.ndarray, step: np.ndarray, down: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """HWE and ExcHet of a group of rows from their walk: ``total`` per row, and per value its
    row ``at`` (in the group), ``step`` and direction (:class:`_Walked`); over heterozygote
    counts of the rows' parity only (the others have probability 0: adding their zeros
    changes no sum)."""
    parity = nrare & 1
    middle = (mid - parity) // 2
    rows = np.arange(len(nhet))
    probs = np.zeros((len(nhet), int(nrare.max()) // 2 + 1))
    probs[rows, middle] = 1.0
    probs[at, middle[at] + np.where(down, -1, 1) * (step + 1)] = value
    probs /= total[:, None]
    observed_at = (nhet - parity) // 2
    observed = probs[rows, observed_at]
    columns = np.arange(probs.shape[1])
    # Sums in bcftools' order.
    exc_het = np.cumsum(np.where(columns >= observed_at[:, None], probs, 0.0), axis=1)[:, -1]
    hwe = np.cumsum(np.where(probs > observed[:, None], 0.0, probs), axis=1)[:, -1]
    return np.minimum(hwe, 1.0), exc_het


def _walk(mid: np.ndarray, hom_r: np.ndarray, hom_c: np.ndarray, nrare: np.ndarray) -> _Walked:
    """The recurrence of every row from ``probs[mid] = 1``, down then up, two heterozygotes a
    step, each step with bcftools' operations in its order: step ``k`` down (``het = mid -
    2k``, homozygote counts ``+ k``) gives ``p * het * (het - 1.0) / (4.0 * (hom_r + 1.0) *
    (hom_c + 1.0))`` for ``het - 2``; up (``het = mid + 2k``, ``- k``) ``p * 4.0 * hom_r *
    hom_c / ((het + 2.0) * (het + 1.0))`` for ``het + 2``; ``p`` is the previous step's value;
    each value is added to the row's total as it comes (from 1, the midpoint's).

    All rows step together, longest first, so the rows still stepping are a prefix: a step is
    a few numpy operations over it, and there are as many steps as the longest row's (the
    factors of every step are computed at once, beforehand, one entry per value)."""
    total = np.ones(len(mid))
    parts = [_direction(total, mid // 2, mid, hom_r, hom_c, down=True),
             _direction(total, (nrare - mid) // 2, mid, hom_r, hom_c, down=False)]
    value, row, step = (np.concatenate([part[k] for part in parts]) for k in range(3))
    down = np.arange(len(value)) < len(parts[0][0])
    return _Walked(total, value, row, step, down)


def _direction(total: np.ndarray, steps: np.ndarray, mid: np.ndarray, hom_r: np.ndarray,
               hom_c: np.ndarray, down: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One direction of :func:`_walk`: (value, row, step) of each value, added to ``total``."""
    order = np.argsort(-steps, kind="stable")
    longest = int(steps[order[0]]) if len(order) else 0
    stepping = np.searchsorted(-steps[order], -np.arange(longest), side="left")  # rows at each step
    offsets = np.concatenate([[0], np.cumsum(stepping)]).astype(np.int64)
    step = np.repeat(np.arange(longest), stepping)
    row = order[np.arange(offsets[-1]) - np.repeat(offsets[:-1], stepping)]
    sign = -1 if down else 1
    het = mid[row] + 2 * sign * step
    hr, hc = hom_r[row] - sign * step, hom_c[row] - sign * step
    if down:
        factors = [het.astype(np.float64), het - 1.0]
        divisors = 4.0 * (hr + 1.0) * (hc + 1.0)
    else:
        factors = [np.full(len(het), 4.0), hr.astype(np.float64), hc.astype(np.float64)]
        divisors = (het + 2.0) * (het + 1.0)
    value = np.empty(len(row))
    previous = np.ones(len(order))
    running = total[order]
    first, *others = factors
    bounds = offsets.tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        x = value[a:b]
        np.multiply(previous[:b - a], first[a:b], out=x)
        for factor in others:
            np.multiply(x, factor[a:b], out=x)
        np.divide(x, divisors[a:b], out=x)
        running[:b - a] += x
        previous = x
    total[order] = running
    return value, row, step
