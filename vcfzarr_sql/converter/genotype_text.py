"""Genotypes of GT-only records read from their VCF text with numpy, whole blocks at a time.

The common shape of a cohort VCF: FORMAT is ``GT`` alone and every call of a line has the same
ploidy and one-digit alleles (``0|1``, ``1/1``, ``./.``, ``0``, ``.``). A line's sample columns
are then ``2 * ploidy * samples - 1`` bytes at fixed offsets, so the sample columns of a block
of such lines, joined with tabs, are a ``(lines, samples, 2 * ploidy)`` byte array: alleles at
even offsets, separators (``/`` or ``|``) at odd ones, a tab last. Every byte is checked against
that grammar; a block with anything else (an allele of two digits, calls of different ploidy
in a line, a VCF 4.4 phase prefix, a stray byte) is left to htslib.

The values are those :func:`vcfzarr_sql.converter.columns.decode_genotypes` gives for
htslib's encoding of the same text: a missing allele is -1, the padding of a line of lower
ploidy than the block's widest is -2, and a call is phased when every separator is ``|``
(a haploid call never is: it has no separator).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vcfzarr_sql.format import spec

_ZERO, _DOT, _BAR, _SLASH, _TAB = (ord(c) for c in "0.|/\t")


def parse_genotypes(calls: Sequence[bytes], n_samples: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lines, samples, ploidy)`` int8 alleles and ``(lines, samples)`` phasing of the sample
    columns ``calls`` (one bytes per line, without its newline) of GT-only lines; None unless
    every line has the shape of the module docstring.

    >>> alleles, phased = parse_genotypes([b"0|1\\t./.", b"1\\t0"], 2)
    >>> alleles.tolist(), phased.tolist()
    ([[[0, 1], [-1, -1]], [[1, -2], [0, -2]]], [[True, False], [False, False]])
    >>> parse_genotypes([b"0/10\\t0/1"], 2) is None
    True
    """
    if n_samples == 0:
        return None
    ploidy = np.empty(len(calls), dtype=np.int64)
    for i, text in enumerate(calls):
        size, rest = divmod(len(text) + 1, 2 * n_samples)
        if rest or not size:
            return None
        ploidy[i] = size
    width = int(ploidy.max()) if len(calls) else 1
    alleles = phased = None
    for p in np.unique(ploidy).tolist():
        rows = np.flatnonzero(ploidy == p)
        joined = b"\t".join([calls[i] for i in rows.tolist()]) + b"\t"
        raw = np.frombuffer(joined, dtype=np.uint8).reshape(len(rows), n_samples, 2 * p)
        codes = raw[..., 0::2] - np.uint8(_ZERO)  # digits 0..9; '.' wraps to 254
        digit = codes < 10
        separators = raw[..., 1:-1:2]
        bar = separators == _BAR
        if not (digit | (codes == np.uint8(_DOT - _ZERO + 256))).all() or not (raw[..., -1] == _TAB).all() \
                or not (bar | (separators == _SLASH)).all():
            return None
        codes += ~digit  # '.' (254) to -1 (255)
        values = codes.view(np.int8)
        calls_phased = bar.all(axis=-1) if p > 1 else np.zeros(values.shape[:2], dtype=bool)
        if len(rows) == len(calls):  # one ploidy: the block is this array
            return values, calls_phased
        if alleles is None or phased is None:
            alleles = np.full((len(calls), n_samples, width), spec.INT_FILL, dtype=np.int8)
            phased = np.zeros((len(calls), n_samples), dtype=bool)
        alleles[rows, :, :p] = values
        phased[rows] = calls_phased
    if alleles is None or phased is None:  # (no lines)
        return np.full((0, n_samples, width), spec.INT_FILL, dtype=np.int8), np.zeros((0, n_samples), dtype=bool)
    return alleles, phased
