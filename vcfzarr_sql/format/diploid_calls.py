"""The calls of a diploid chunk that are not ``0/0``, found in one pass over the genotypes and
shared by every count made of them (pure numpy).

In a cohort most calls are ``0/0``: :func:`diploid_calls` finds the others once (their record,
sample and allele pair) and every summary of the chunk is then a ``bincount`` over those few:
the calls of each allele pair per record (:attr:`DiploidCalls.per_record`) or per sample
(:attr:`DiploidCalls.per_sample`), the packed genotypes
(:mod:`vcfzarr_sql.format.packed_genotypes`). A pair ``(a, b)`` of alleles in ``-2 .. 1`` (fill,
missing, REF, first ALT) has the code ``4 (a + 2) + (b + 2)`` (:func:`code`); ``0/0`` is
:data:`HOM_REF`, the calls left over.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.kernels.diploid_calls import DIPLOID_CALLS

#: Codes per call: pairs of alleles in FILL .. 1.
CODES = 16
_LOW = spec.INT_FILL


def code(first: int, second: int) -> int:
    """The code of the allele pair ``(first, second)``.

    >>> code(0, 0), code(0, 1), code(-1, -1), code(1, -2)
    (10, 11, 5, 12)
    """
    return 4 * (first - _LOW) + (second - _LOW)


HOM_REF = code(0, 0)
#: What the compiled kernel saves against numpy's :func:`diploid_calls` and its counts, in ns
#: (:mod:`vcfzarr_sql.kernels`' unit of work) per call: ~2.3 in a conversion's worker at
#: 2,000 samples (0.39 -> 0.16 CPU-s for 100 M calls, 13 % not ``0/0``).
SAVED_PER_CALL = 2.0


def _pair_codes() -> np.ndarray:
    """The :func:`code` of each pair of int8 alleles in FILL .. 1, indexed by the pair's two
    bytes as a little-endian uint16; :data:`CODES` (out of range) for any other pair."""
    table = np.full(1 << 16, CODES, dtype=np.uint8)
    for first in range(_LOW, 2):
        for second in range(_LOW, 2):
            table[np.array([first, second], dtype=np.int8).view("<u2")[0]] = code(first, second)
    return table


_PAIR_CODES = _pair_codes()


@dataclass(frozen=True)
class DiploidCalls:
    """The calls of a (records, samples) chunk that are not ``0/0``: ``rows``, ``cols`` and
    ``codes`` (:func:`code`), intp, in no particular order."""

    records: int
    samples: int
    rows: np.ndarray
    cols: np.ndarray
    codes: np.ndarray

    @cached_property
    def per_record(self) -> np.ndarray:
        """Calls of each code per record, (records, :data:`CODES`) int64 (computed once: do not
        change it).

        >>> calls = diploid_calls(np.array([[[0, 1], [0, 0], [-1, -1]]], dtype=np.int8))
        >>> counts = calls.per_record
        >>> counts[0, [code(0, 1), HOM_REF, code(-1, -1)]].tolist(), int(counts.sum())
        ([1, 1, 1], 3)
        """
        counts = np.bincount(self.rows * CODES + self.codes, minlength=self.records * CODES)
        counts = counts.reshape(self.records, CODES)
        counts[:, HOM_REF] = self.samples - counts.sum(axis=1)
        return counts

    @cached_property
    def per_sample(self) -> np.ndarray:
        """Calls of each code per sample, (:data:`CODES`, samples) int64 (computed once: do not
        change it).

        >>> calls = diploid_calls(np.array([[[0, 1]], [[1, 1]]], dtype=np.int8))
        >>> calls.per_sample[[code(0, 1), code(1, 1), HOM_REF], 0].tolist()
        [1, 1, 0]
        """
        counts = np.bincount(self.codes * self.samples + self.cols, minlength=CODES * self.samples)
        counts = counts.reshape(CODES, self.samples)
        counts[HOM_REF] = self.records - counts.sum(axis=0)
        return counts

    def sample_slice(self, start: int, stop: int) -> DiploidCalls:
        """The calls of samples ``start .. stop - 1`` (numbered from 0 in the slice).

        >>> calls = diploid_calls(np.array([[[0, 1], [1, 1], [0, 0]]], dtype=np.int8))
        >>> part = calls.sample_slice(1, 3)
        >>> part.samples, part.cols.tolist(), part.codes.tolist()
        (2, [0], [15])
        """
        stop = min(stop, self.samples)
        if start == 0 and stop == self.samples:
            return self
        kept = (self.cols >= start) & (self.cols < stop)
        return DiploidCalls(self.records, stop - start, self.rows[kept], self.cols[kept] - start,
                            self.codes[kept])


def diploid_calls(genotypes: np.ndarray) -> DiploidCalls | None:
    """The :class:`DiploidCalls` of ``genotypes`` (records, samples, 2), integers; None when a
    call holds an allele outside ``-2 .. 1`` or the calls are not diploid.

    >>> calls = diploid_calls(np.array([[[0, 0], [1, 0]], [[0, 0], [0, -2]]], dtype=np.int8))
    >>> calls.rows.tolist(), calls.cols.tolist(), calls.codes.tolist()
    ([0, 1], [1, 1], [14, 8])
    >>> diploid_calls(np.array([[[0, 2]]], dtype=np.int8)) is None
    True
    """
    if genotypes.ndim != 3 or genotypes.shape[-1] != 2 or genotypes.dtype.kind not in "iu":
        return None
    records, samples = genotypes.shape[:2]
    if genotypes.dtype == np.int8:  # (a call's two bytes as one uint16: 0 is 0/0)
        pairs = np.ascontiguousarray(genotypes).view("<u2")[..., 0]
        kernel = DIPLOID_CALLS.compiled(work=int(SAVED_PER_CALL * pairs.size))
        if kernel is not None and pairs.dtype.isnative:  # (numba reads native byte order only)
            ok, rows, cols, codes, per_record, per_sample = kernel(pairs, _PAIR_CODES, CODES, HOM_REF)
            if not ok:
                return None
            calls = DiploidCalls(records, samples, rows, cols, codes)
            # (the counts, found in the same pass, are the cached properties' values)
            vars(calls).update(per_record=per_record, per_sample=per_sample)
            return calls
        found = pairs != 0
        where = np.flatnonzero(found)
        # (each record's calls are consecutive in ``where``: no division to find rows and
        # columns, and each record's number of them is a binary search away)
        ends = np.searchsorted(where, np.arange(1, records + 1, dtype=np.intp) * samples)
        rows = np.repeat(np.arange(records, dtype=np.intp), np.diff(ends, prepend=0))
        codes = _PAIR_CODES[pairs.ravel()[where]]
        if len(codes) and codes.max() >= CODES:
            return None
        return DiploidCalls(records, samples, rows, where - rows * samples, codes.astype(np.intp))
    flat = genotypes.reshape(-1, 2)
    where = np.flatnonzero((flat[:, 0] != 0) | (flat[:, 1] != 0))
    first, second = flat[where, 0].astype(np.intp), flat[where, 1].astype(np.intp)
    if len(where) and (min(first.min(), second.min()) < _LOW or max(first.max(), second.max()) > 1):
        return None
    rows, cols = np.divmod(where, max(samples, 1))
    return DiploidCalls(records, samples, rows, cols, 4 * (first - _LOW) + (second - _LOW))
