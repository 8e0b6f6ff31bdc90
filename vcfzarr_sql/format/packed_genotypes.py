"""Genotypes packed 2 bits per call, stored beside ``call_genotype`` (as PLINK 2's pgen keeps
its hardcalls), so that counts over a sample subset are popcounts of masked words and a dosage
matrix is one look-up per byte. Named ``summary_*`` so VCF Zarr readers ignore them. Pure numpy:
no I/O (the arrays' layout for the writer: :mod:`vcfzarr_sql.store.packed_arrays`; counting:
:mod:`vcfzarr_sql.query.packed_counts`).

* ``summary_gt_packed`` (summary_gt_packed_records, summary_gt_packed_bytes) uint8, one row per
  record (a dimension of its own, as long as ``variants``: readers of ``variants`` arrays, such as
  a cohort's, pass it by), chunked like the variant chunks along records and like the sample chunks along samples: each call's code
  (:data:`HOM_REF` 0, :data:`HET` 1, :data:`HOM_ALT` 2, :data:`MISSING` 3: the ALT allele count,
  3 missing, as pgen's hardcalls), 4 calls per byte, the first in the low bits. Each sample
  chunk takes a whole number of 32-call words (:func:`slots_per_chunk`, padding calls are 0), so
  a row reads as uint64 words and the calls of a sample chunk start a chunk of bytes.
* ``summary_gt_packed_exact`` (summary_gt_packed_records,) uint8, chunked like the variant chunks: 1 where every
  call of the record is ``0/0``, ``0/1``, ``1/0``, ``1/1`` or ``./.`` (diploid, alleles 0 and 1
  or both missing), that is where the codes say all bcftools counts; 0 elsewhere (haploid,
  half-missing, polyploid calls, a called second ALT, or a store whose genotypes are not
  diploid), where the genotypes are decoded instead and the codes are 3.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.format.diploid_calls import CODES, DiploidCalls, code, diploid_calls
from vcfzarr_sql.kernels.packed_calls import PACKED_CALLS

PACKED = "summary_gt_packed"
PACKED_EXACT = "summary_gt_packed_exact"
DIM_PACKED_RECORDS = "summary_gt_packed_records"
DIM_PACKED_BYTES = "summary_gt_packed_bytes"
DESCRIPTIONS = {
    PACKED: "vcfzarr-sql: each call's ALT allele count (3: missing), 2 bits per call, 4 calls "
            "per byte, each sample chunk padded to 32 calls",
    PACKED_EXACT: "vcfzarr-sql: 1 where every call of the record is 0/0, 0/1, 1/0, 1/1 or ./. "
                  "(summary_gt_packed holds it exactly)",
}
HOM_REF, HET, HOM_ALT, MISSING = range(4)
#: Calls per word: samples of a sample chunk are padded to a multiple of this.
WORD_CALLS = 32
#: Not exactly coded (a look-up table's value for pairs no code stands for).
_NOT_EXACT = 255


def slots_per_chunk(samples_chunk_size: int) -> int:
    """The calls (slots) a sample chunk takes in a row: its samples rounded up to whole words.

    >>> slots_per_chunk(10_000), slots_per_chunk(1000), slots_per_chunk(64)
    (10016, 1024, 64)
    """
    return -(-max(samples_chunk_size, 1) // WORD_CALLS) * WORD_CALLS


def packed_bytes(num_samples: int, samples_chunk_size: int) -> int:
    """The bytes of a row: whole sample chunks, the last one's samples rounded up to a word.

    >>> packed_bytes(2500, 1000), packed_bytes(0, 1000)
    (640, 0)
    """
    size = max(samples_chunk_size, 1)
    if num_samples == 0:
        return 0
    full, last = divmod(num_samples - 1, size)
    return (full * slots_per_chunk(size) + slots_per_chunk(last + 1)) // 4


def sample_slots(samples: np.ndarray, samples_chunk_size: int) -> np.ndarray:
    """The slot (call position in a row) of each sample index.

    >>> sample_slots(np.array([0, 999, 1000, 2001]), 1000).tolist()
    [0, 999, 1024, 2049]
    """
    size = max(samples_chunk_size, 1)
    samples = np.asarray(samples, dtype=np.int64)
    return samples // size * slots_per_chunk(size) + samples % size


def pack(genotypes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The packed rows of one sample chunk's ``genotypes`` (records, samples, ploidy) and
    whether each record is exact (bool): (records, slots_per_chunk(samples) // 4) uint8.

    >>> g = np.array([[[0, 0], [0, 1], [1, 1], [-1, -1], [1, 0]],
    ...               [[0, 0], [0, -1], [0, 0], [0, 0], [0, 0]]], dtype=np.int8)
    >>> rows, exact = pack(g)
    >>> rows.shape, rows[0, :2].tolist(), exact.tolist()
    ((2, 8), [228, 1], [True, False])
    """
    records, samples = genotypes.shape[:2]
    rows = np.empty((records, slots_per_chunk(samples) // 4), dtype=np.uint8)
    exact = np.zeros(records, dtype=bool)
    step = max(1, _SLICE_CALLS // max(samples, 1))
    for start in range(0, records, step):  # (slices that stay in the cache: 2x faster)
        part = slice(start, start + step)
        rows[part], exact[part] = _pack_slice(genotypes[part], rows.shape[1] * 4)
    return rows, exact


#: Calls :func:`pack` codes at a time.
_SLICE_CALLS = 1 << 16


def _pack_slice(genotypes: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pack` of a few records, into rows of ``slots`` calls."""
    records, samples = genotypes.shape[:2]
    codes = np.zeros((records, slots), dtype=np.uint8)
    if genotypes.shape[-1] != 2:
        codes[:, :samples] = MISSING
        return _packed(codes), np.zeros(records, dtype=bool)
    if genotypes.dtype == np.int8:  # one look-up per call: the pair's two bytes as a uint16
        pairs = np.ascontiguousarray(genotypes).view(np.uint16)[..., 0].astype(np.intp)
        coded = np.take(_pair_codes(), pairs)
    else:
        first, second = genotypes[..., 0], genotypes[..., 1]
        called = (first >= 0) & (first <= 1) & (second >= 0) & (second <= 1)
        missing = (first == spec.INT_MISSING) & (second == spec.INT_MISSING)
        coded = np.where(called, first + second, np.where(missing, MISSING, _NOT_EXACT)).astype(np.uint8)
    inexact = coded == _NOT_EXACT
    exact = ~inexact.any(axis=1)
    coded[inexact] = MISSING
    codes[:, :samples] = coded
    return _packed(codes), exact


def pack_rows(genotypes: np.ndarray, samples_chunk_size: int,
              calls: DiploidCalls | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pack_chunks` of ``genotypes`` (records, all samples, ploidy) cut into sample
    chunks; diploid calls of alleles up to 1 coded from those that are not ``0/0`` (``calls``,
    their :func:`~vcfzarr_sql.format.diploid_calls.diploid_calls`, found here unless given).

    >>> rows, exact = pack_rows(np.ones((1, 40, 2), dtype=np.int8), 33)
    >>> rows.shape, rows[0, [7, 8, 9, 16, 17]].tolist(), exact.tolist()
    ((1, 24), [170, 2, 0, 170, 42], [1])
    >>> g = np.array([[[0, 0], [0, 1], [1, 1], [-1, -1], [1, 0]]] * 2, dtype=np.int8)
    >>> g[1, 2] = (0, -1)
    >>> rows, exact = pack_rows(g, 3)
    >>> rows[:, [0, 8]].tolist(), exact.tolist()
    ([[36, 7], [52, 7]], [1, 0])
    """
    size = max(samples_chunk_size, 1)
    samples = genotypes.shape[1]
    calls = calls if calls is not None else diploid_calls(genotypes)
    if calls is not None:
        return _pack_calls(calls, size)
    chunks = (genotypes[:, lo : lo + size] for lo in range(0, max(samples, 1), size))
    return pack_chunks(chunks, samples, size)


def pack_chunks(
    chunks: Iterable[np.ndarray], num_samples: int, samples_chunk_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The packed rows (:func:`packed_bytes` bytes each) of a variant chunk from its genotypes,
    one sample chunk at a time in order (one, empty, when there are no samples), and whether
    each record is exact (uint8)."""
    parts = [pack(genotypes) for genotypes in chunks]
    rows = np.concatenate([p for p, _ in parts], axis=1)
    exact = np.logical_and.reduce([e for _, e in parts]).astype(np.uint8)
    return rows[:, : packed_bytes(num_samples, samples_chunk_size)], exact


#: What the compiled packing saves against numpy's, in ns (:mod:`vcfzarr_sql.kernels`' unit of
#: work) per call of the chunk, ``0/0`` included: numpy codes and packs every call, the kernel
#: writes those that are not ``0/0``. Measured on a chunk of 1,000 x 2,000 calls, 13 % not
#: ``0/0``: numpy 2.6-3.2 ns a call, the kernel 0.8 (load ~12; docs/benchmarks.md, stop 39).
SAVED_PER_PACKED_CALL = 1.7


def _pack_calls(calls: DiploidCalls, samples_chunk_size: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pack_rows` of diploid calls of alleles in FILL .. 1 from those not ``0/0``."""
    records, samples = calls.records, calls.samples
    chunks = -(-max(samples, 1) // samples_chunk_size)
    row_bytes = packed_bytes(samples, samples_chunk_size)
    kernel = PACKED_CALLS.compiled(work=int(SAVED_PER_PACKED_CALL * records * samples))
    if kernel is not None:  # (a DiploidCalls' rows, columns and codes are in range)
        packed = np.zeros((records, row_bytes), dtype=np.uint8)
        exact = np.ones(records, dtype=np.uint8)
        kernel(calls.rows, calls.cols, calls.codes, _CALL_CODES,
               sample_slots(np.arange(samples), samples_chunk_size), MISSING, _NOT_EXACT, packed, exact)
        return packed, exact
    # (the slots of the row's bytes only: a lone sample chunk's are its samples, not its size)
    width = 4 * row_bytes
    codes = np.zeros((records, width), dtype=np.uint8)
    coded = _CALL_CODES[calls.codes]
    exact = np.ones(records, dtype=np.uint8)
    if coded.max(initial=0) == _NOT_EXACT:
        inexact = coded == _NOT_EXACT
        coded[inexact] = MISSING
        exact[calls.rows[inexact]] = 0
    # (each call's place in the flat codes: one sample chunk's slots are its samples)
    place = calls.cols if chunks == 1 else sample_slots(np.arange(samples), samples_chunk_size)[calls.cols]
    place = place + calls.rows * width
    codes.ravel()[place] = coded
    return _packed(codes), exact


def _call_codes() -> np.ndarray:
    """The code of each :func:`~vcfzarr_sql.format.diploid_calls.code` of a pair."""
    codes = np.full(CODES, _NOT_EXACT, dtype=np.uint8)
    for first in (0, 1):
        for second in (0, 1):
            codes[code(first, second)] = first + second
    codes[code(spec.INT_MISSING, spec.INT_MISSING)] = MISSING
    return codes


_CALL_CODES = _call_codes()


#: Moves each byte's 2-bit code ``k`` of a little-endian word to bits ``24 + 2k`` (the other
#: products fall below bit 24 without overlapping, so nothing carries into the top byte).
_GATHER = np.uint32(1 << 24 | 1 << 18 | 1 << 12 | 1 << 6)


def _packed(codes: np.ndarray) -> np.ndarray:
    """Codes (records, slots: a multiple of 4, contiguous) 4 to a byte, the first in the low
    bits: one multiplication per 4 codes (5x faster than shifting and or-ing each).

    >>> _packed(np.array([[0, 1, 2, 3, 3, 3, 3, 3]], dtype=np.uint8)).tolist()
    [[228, 255]]
    """
    words = codes.view("<u4") * _GATHER
    words >>= np.uint32(24)
    return words.astype(np.uint8)


@cache
def _pair_codes() -> np.ndarray:
    """The code of every pair of int8 alleles, indexed by the pair's bytes as a uint16."""
    pairs = np.arange(1 << 16, dtype=np.uint16).view(np.int8).reshape(-1, 2)
    codes = np.full(len(pairs), _NOT_EXACT, dtype=np.uint8)
    called = ((pairs >= 0) & (pairs <= 1)).all(axis=1)
    codes[called] = pairs[called].sum(axis=1)
    codes[(pairs == spec.INT_MISSING).all(axis=1)] = MISSING
    return codes


@cache
def byte_codes() -> np.ndarray:
    """(256, 4) uint8: the four codes of each byte, the first call first.

    >>> byte_codes()[228].tolist()
    [0, 1, 2, 3]
    """
    values = np.arange(256, dtype=np.uint8)[:, None]
    return (values >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 3
