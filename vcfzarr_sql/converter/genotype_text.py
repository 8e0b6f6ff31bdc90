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

A block of diploid lines, the most common, is parsed with one ``uint32`` word per call
(:func:`_diploid`), and its lines are cut without copying their sample columns
(:func:`gt_only_lines`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vcfzarr_sql.converter.text import NotPlainText, gt_only_start, text_kind, text_size
from vcfzarr_sql.format import spec
from vcfzarr_sql.format.diploid_calls import SAVED_PER_CALL, diploid_calls
from vcfzarr_sql.kernels import kernel_mode
from vcfzarr_sql.kernels.diploid_text import DIPLOID_TEXT

_ZERO, _DOT, _BAR, _SLASH, _TAB, _NEWLINE = (ord(c) for c in "0.|/\t\n")
#: A diploid call's separator and tab as a little-endian word's bytes 1 and 3 (``a|b\t``, ``a/b\t``).
_MARKS = np.uint32(0xFF00FF00)
_PHASED_MARKS = np.uint32(_TAB << 24 | _BAR << 8)
_UNPHASED_MARKS = np.uint32(_TAB << 24 | _SLASH << 8)
#: A GT-only line's FORMAT column with the tabs around it.
_GT_COLUMN = b"\tGT\t"


def gt_only_lines(lines: Sequence[bytes], n_samples: int) -> tuple[list[bytes], list[bytes | memoryview]] | None:
    """The first eight columns and the sample columns of each line when every line has at
    least ten columns and FORMAT ``GT`` (else None), as ``line.split(b"\\t", 9)`` cuts them; the
    sample columns of a line of diploid width (``4 * n_samples - 1`` bytes after FORMAT) are a
    view of the line, not a copy.

    >>> heads, calls = gt_only_lines([b"1\\t5\\t.\\tA\\tC\\t.\\t.\\t.\\tGT\\t0/1\\t1|1", b"1\\t6\\t.\\tA\\tC\\t.\\t.\\t.\\tGT\\t0\\t1"], 2)
    >>> heads, [bytes(c) for c in calls]
    ([b'1\\t5\\t.\\tA\\tC\\t.\\t.\\t.', b'1\\t6\\t.\\tA\\tC\\t.\\t.\\t.'], [b'0/1\\t1|1', b'0\\t1'])
    >>> gt_only_lines([b"1\\t5\\t.\\tA\\tC\\t.\\t.\\t.\\tGT:DP\\t0/1:3"], 1) is None
    True
    """
    width = 4 * n_samples - 1
    heads: list[bytes] = []
    calls: list[bytes | memoryview] = []
    for line in lines:
        cut = len(line) - width
        if n_samples and cut >= 4 and line[cut - 4 : cut] == _GT_COLUMN and line.count(b"\t", 0, cut - 4) == 7:
            heads.append(line[: cut - 4])
            calls.append(memoryview(line)[cut:])
            continue
        columns = line.split(b"\t", 9)
        if len(columns) < 10 or columns[8] != b"GT":
            return None
        heads.append(line[: len(line) - len(columns[9]) - 4])
        calls.append(columns[9])
    return heads, calls


#: What the compiled parse saves against numpy's, in ns (:mod:`vcfzarr_sql.kernels`' unit of
#: work) per byte of GT-only text (both are bound by memory: numpy's passes fault in fresh
#: pages for their temporaries). Measured with
#: :data:`~vcfzarr_sql.format.diploid_calls.SAVED_PER_CALL` (docs/benchmarks.md): 0.87 ns a
#: byte together in the worker at 5,000 x 65,000 (1.3 GB), where loading the kernels costs
#: ~0.4 CPU-s, about what they save on 400 MB.
SAVED_PER_BYTE = 0.4


def warm_kernels(path: str) -> bool | None:
    """Decide, from the size of the text of the VCF at ``path``, whether this process and the
    workers it forks parse and count genotypes with the compiled kernels (``auto`` mode of
    :mod:`vcfzarr_sql.kernels`: when what they would save repays loading them), and if so
    load them now, once, before any worker is forked (a forked worker then neither imports
    numba nor loads the kernels' code again). Only a text file whose first record is GT-only
    counts: the fast path is the kernels' main user. True: the kernels are loaded; False:
    they would not repay loading, and the workers should keep to numpy
    (:func:`~vcfzarr_sql.kernels.keep_to_numpy`); None: no estimate (``numpy`` mode, or not
    a GT-only text file: the workers tier by the work they ask)."""
    kind = text_kind(path) if kernel_mode() != "numpy" else None
    try:
        if kind is None or not gt_only_start(path, kind):
            return None
        saved = int((SAVED_PER_BYTE + SAVED_PER_CALL / 4) * text_size(path, kind))  # (4 bytes a call)
    except NotPlainText:
        return None
    if DIPLOID_TEXT.compiled(work=saved) is None:
        return False
    _diploid(b"0|1\t", 1, 1)
    diploid_calls(np.zeros((1, 1, 2), dtype=np.int8))
    return True


#: Samples up to which a block's lines are cut with numpy (:func:`short_diploid_lines`).
SHORT_LINE_SAMPLES = 8


def short_diploid_lines(lines: Sequence[bytes], n_samples: int) -> tuple[list[bytes], tuple[np.ndarray, np.ndarray]] | None:
    """The first eight columns of each line, and the alleles and phasing of their calls, when
    every line is GT-only with diploid calls of one digit (else None), for lines of at most
    :data:`SHORT_LINE_SAMPLES` samples: such a line is short (a one-sample file that ``add``
    reads), and cutting it line by line (:func:`gt_only_lines`) cost more than parsing it.
    The same values as :func:`gt_only_lines` then :func:`parse_genotypes`.

    >>> heads, (alleles, phased) = short_diploid_lines([b"1\\t5\\t.\\tA\\tC\\t.\\t.\\t.\\tGT\\t0|1", b"1\\t6\\t.\\tA\\tC\\t.\\t.\\t.\\tGT\\t./1"], 1)
    >>> heads, alleles.tolist(), phased.tolist()
    ([b'1\\t5\\t.\\tA\\tC\\t.\\t.\\t.', b'1\\t6\\t.\\tA\\tC\\t.\\t.\\t.'], [[[0, 1]], [[-1, 1]]], [[True], [False]])
    >>> short_diploid_lines([b"1\\t5\\t.\\tA\\tC\\t.\\t.\\tX\\tY\\tGT\\t0|1"], 1) is None  # (ten columns before GT)
    True
    """
    if not 0 < n_samples <= SHORT_LINE_SAMPLES or not lines:
        return None
    width = len(_GT_COLUMN) + 4 * n_samples - 1
    tails = b"".join([line[-width:] for line in lines])
    if len(tails) != width * len(lines):
        return None
    table = np.frombuffer(tails, dtype=np.uint8).reshape(len(lines), width)
    if not (table[:, : len(_GT_COLUMN)] == np.frombuffer(_GT_COLUMN, dtype=np.uint8)).all():
        return None
    heads = [line[:-width] for line in lines]
    if not _eight_columns(np.frombuffer(b"\n".join(heads), dtype=np.uint8), len(heads)):
        return None
    calls = np.empty((len(lines), 4 * n_samples), dtype=np.uint8)
    calls[:, :-1] = table[:, len(_GT_COLUMN) :]
    calls[:, -1] = _TAB
    parsed = _diploid(calls.tobytes(), len(lines), n_samples)
    return None if parsed is None else (heads, parsed)


def _eight_columns(text: np.ndarray, lines: int) -> bool:
    """Whether each of the ``lines`` lines of ``text`` (joined by newlines) has eight columns:
    seven tabs, the k-th seven of the text's tabs between its (k-1)-th and k-th newlines
    (numbering each byte's line with a cumulative sum took 4 times as long).

    >>> text = lambda s: np.frombuffer(s, dtype=np.uint8)
    >>> _eight_columns(text(b"1\\t2\\t3\\t4\\t5\\t6\\t7\\t8\\n" * 2 + b"1\\t2\\t3\\t4\\t5\\t6\\t7\\t8"), 3)
    True
    >>> _eight_columns(text(b"1\\t2\\t3\\t4\\t5\\t6\\t7\\n8\\t1\\t2\\t3\\t4\\t5\\t6\\t7\\t8"), 2)  # (6 + 8 tabs)
    False
    """
    tabs, newlines = np.flatnonzero(text == _TAB), np.flatnonzero(text == _NEWLINE)
    if len(tabs) != 7 * lines or len(newlines) != lines - 1:
        return False
    first, last = tabs[::7], tabs[6::7]
    return not ((first[1:] < newlines).any() or (last[:-1] > newlines).any())


def _diploid(joined: bytes, lines: int, n_samples: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The alleles and phasing of ``lines`` lines of diploid calls, ``joined`` with a tab after
    each: every call a little-endian ``uint32`` of bytes allele, separator, allele, tab.

    >>> alleles, phased = _diploid(b"0|1\\t./.\\t", 1, 2)
    >>> alleles.tolist(), phased.tolist()
    ([[[0, 1], [-1, -1]]], [[True, False]])
    >>> _diploid(b"0/1\\t//0\\t", 1, 2) is None  # ('/' is no allele)
    True
    """
    kernel = DIPLOID_TEXT.compiled(work=int(SAVED_PER_BYTE * len(joined)))
    if kernel is not None:
        alleles = np.empty((lines, n_samples, 2), dtype=np.int8)
        phased = np.empty((lines, n_samples), dtype=bool)
        text = np.frombuffer(joined, dtype=np.uint8)
        if not kernel(text, alleles.reshape(-1, 2), phased.reshape(-1)):
            return None
        return alleles, phased
    words = np.frombuffer(joined, dtype="<u4").reshape(lines, n_samples)
    marks = words & _MARKS
    phased = marks == _PHASED_MARKS
    if np.count_nonzero(phased) + np.count_nonzero(marks == _UNPHASED_MARKS) != words.size:
        return None
    del marks
    # the low bytes of the two uint16 halves of each word are its alleles
    codes = np.frombuffer(joined, dtype="<u2").astype(np.uint8).reshape(lines, n_samples, 2)
    codes -= np.uint8(_ZERO)  # digits 0..9; '.' wraps to 254, '/' to 255
    shifted = codes + np.uint8(2)  # '.' 0, '/' 1, digits 2..11
    if shifted.max(initial=0) > 11 or (shifted == 1).any():
        return None
    del shifted
    codes |= codes >> np.uint8(7)  # '.' (254) to -1 (255)
    return codes.view(np.int8), phased


def parse_genotypes(calls: Sequence[bytes | memoryview], n_samples: int) -> tuple[np.ndarray, np.ndarray] | None:
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
    ploidy, rest = np.divmod(np.fromiter(map(len, calls), dtype=np.int64, count=len(calls)) + 1, 2 * n_samples)
    if rest.any() or not ploidy.all():
        return None
    width = int(ploidy.max()) if len(calls) else 1
    alleles = phased = None
    for p in sorted(set(ploidy.tolist())):  # (np.unique would import numpy.ma: ~0.03 CPU-s a worker)
        rows = np.flatnonzero(ploidy == p)
        joined = b"\t".join([*(calls[i] for i in rows.tolist()), b""])  # (a tab after each)
        parsed = _diploid(joined, len(rows), n_samples) if p == 2 else _any_ploidy(joined, len(rows), n_samples, p)
        if parsed is None:
            return None
        values, calls_phased = parsed
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


def _any_ploidy(joined: bytes, lines: int, n_samples: int, ploidy: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The alleles and phasing of ``lines`` lines of calls of ``ploidy`` alleles, ``joined``
    with a tab after each.

    >>> alleles, phased = _any_ploidy(b"0|1|1\\t./1/.\\t", 1, 2, 3)
    >>> alleles.tolist(), phased.tolist()
    ([[[0, 1, 1], [-1, 1, -1]]], [[True, False]])
    """
    raw = np.frombuffer(joined, dtype=np.uint8).reshape(lines, n_samples, 2 * ploidy)
    codes = raw[..., 0::2] - np.uint8(_ZERO)  # digits 0..9; '.' wraps to 254
    digit = codes < 10
    separators = raw[..., 1:-1:2]
    bar = separators == _BAR
    if not (digit | (codes == np.uint8(_DOT - _ZERO + 256))).all() or not (raw[..., -1] == _TAB).all() \
            or not (bar | (separators == _SLASH)).all():
        return None
    codes += ~digit  # '.' (254) to -1 (255)
    values = codes.view(np.int8)
    return values, bar.all(axis=-1) if ploidy > 1 else np.zeros(values.shape[:2], dtype=bool)
