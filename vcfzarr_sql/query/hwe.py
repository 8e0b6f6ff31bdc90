"""The exact Hardy-Weinberg tests of ``bcftools +fill-tags`` (HWE and ExcHet), vectorised.

Wigginton, Cutler and Abecasis 2005 (PMID 15789306), computed the way ``calc_hwe`` of
bcftools' fill-tags plugin computes it: the same recurrence from the midpoint down and up, the
same floating-point operations in the same order, and the same sums (numpy's ``cumsum`` adds
sequentially, as the C loops do), so results agree to the last bit; in particular the HWE sum
over "no more likely than the observed" breaks ties exactly as bcftools does.

Each test is one row: ``nref`` and ``nalt`` allele counts and ``nhet`` heterozygotes. Rows
with no reference or no alternate allele are 1 (bcftools' rule). Rows bcftools rejects with an
error (odd allele total, or heterozygotes inconsistent with the rare-allele count: only
possible with polyploid or multiallelic genotypes) are NaN.

>>> hwe, exc_het = hwe_tests(np.array([8, 7]), np.array([2, 1]), np.array([0, 1]))
>>> np.float32(hwe).tolist(), np.float32(exc_het).tolist()
([0.1111111119389534, 1.0], [1.0, 1.0])
"""

from __future__ import annotations

import numpy as np

#: Rows are computed together in groups of at most this many probabilities (rows x widest
#: row): sorted by rare-allele count, so each group is about as wide as its rows need, and the
#: per-step Python overhead is paid once per group (32 MB of float64 at most).
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
    """:func:`hwe_tests` of rows that are all tested and valid, in groups of similar width."""
    hwe = np.ones(len(nref))
    exc_het = np.ones(len(nref))
    nrare = np.minimum(nref, nalt)
    rows = np.argsort(nrare, kind="stable")
    start = 0
    while start < len(rows):
        widths = nrare[rows[start:]] + 1  # ascending
        fits = np.arange(1, len(widths) + 1) * widths <= _GROUP_CELLS
        fits &= widths <= _GROUP_WIDENING * widths[0] + _GROUP_SLACK
        end = start + max(1, int(np.count_nonzero(fits)))
        group = rows[start:end]
        hwe[group], exc_het[group] = _tests(nref[group], nalt[group], nhet[group])
        start = end
    return hwe, exc_het


def _tests(nref: np.ndarray, nalt: np.ndarray, nhet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    total = nref + nalt
    ngt = total // 2
    nrare = np.minimum(nref, nalt)
    mid = ((nrare.astype(np.float64) * (total - nrare)) / total).astype(np.int64)
    mid += (nrare & 1) ^ (mid & 1)
    hom_r = (nrare - mid) // 2
    hom_c = ngt - mid - hom_r
    rows = np.arange(len(nref))
    probs = np.zeros((len(nref), int(nrare.max()) + 1))
    probs[rows, mid] = 1.0
    total_prob = np.ones(len(nref))
    # From the midpoint down, then up, two heterozygotes at a time.
    _walk(probs, total_prob, mid // 2, mid, hom_r, hom_c, down=True)
    _walk(probs, total_prob, (nrare - mid) // 2, mid, hom_r, hom_c, down=False)
    probs /= total_prob[:, None]
    observed = probs[rows, nhet]
    columns = np.arange(probs.shape[1])
    # Sums in bcftools' order; the zeros added in between change nothing.
    exc_het = np.cumsum(np.where(columns >= nhet[:, None], probs, 0.0), axis=1)[:, -1]
    hwe = np.cumsum(np.where(probs > observed[:, None], 0.0, probs), axis=1)[:, -1]
    return np.minimum(hwe, 1.0), exc_het


def _walk(
    probs: np.ndarray,
    total_prob: np.ndarray,
    steps: np.ndarray,
    mid: np.ndarray,
    hom_r: np.ndarray,
    hom_c: np.ndarray,
    down: bool,
) -> None:
    """One direction of the recurrence from ``probs[mid] = 1``, ``steps`` steps per row, each
    with bcftools' operations in its order: step ``k`` down (``het = mid - 2k``, homozygote
    counts ``+ k``) stores ``p * het * (het - 1.0) / (4.0 * (hom_r + 1.0) * (hom_c + 1.0))``
    at ``het - 2``; up (``het = mid + 2k``, ``- k``) ``p * 4.0 * hom_r * hom_c / ((het + 2.0)
    * (het + 1.0))`` at ``het + 2``; ``p`` is the previous step's value, each is added to
    ``total_prob``.

    Rows run longest first, so the rows still stepping are a prefix: a step is a few numpy
    operations over it (the factors of every step are computed at once, beforehand)."""
    order = np.argsort(-steps, kind="stable")
    longest = int(steps[order[0]]) if len(order) else 0
    if longest == 0:
        return
    k = np.arange(longest)[:, None]
    sign = -1 if down else 1
    het = mid[order][None, :] + 2 * sign * k
    hom_r, hom_c = (h[order][None, :] - sign * k for h in (hom_r, hom_c))
    with np.errstate(all="ignore"):  # (steps past a row's end give values never used)
        if down:
            factors = [het, het - 1.0]
            divisors = 4.0 * (hom_r + 1.0) * (hom_c + 1.0)
        else:
            factors = [np.full(het.shape, 4.0), hom_r, hom_c]
            divisors = (het + 2.0) * (het + 1.0)
    stepping = np.searchsorted(-steps[order], -np.arange(longest), side="right")
    values = np.empty(het.shape)
    p = np.ones(len(order))
    total = total_prob[order]
    for step, n in enumerate(stepping.tolist()):
        x = p[:n]
        for factor in factors:
            np.multiply(x, factor[step, :n], out=x)
        np.divide(x, divisors[step, :n], out=x)
        values[step, :n] = x
        total[:n] += x
    total_prob[order] = total
    done = k < steps[order][None, :]
    row = np.broadcast_to(order[None, :], het.shape)
    probs[row[done], (het + 2 * sign)[done]] = values[done]
