"""Dosages (ALT alleles per call, :data:`MISSING_DOSAGE` where an allele is missing) of records
from the packed genotypes (:mod:`vcfzarr_sql.format.packed_genotypes`). Two ways, the same
values bit for bit:

* compiled (:data:`~vcfzarr_sql.kernels.dosage.EXPAND`): each variant chunk's packed bytes, as
  decompressed (:func:`packed_rows`: only the Blosc blocks of its kept records), expanded
  straight into the matrix, the kept records and the selected samples' calls picked as it
  goes;
* numpy: the bytes holding the selected samples' calls gathered for every record first
  (:func:`packed_codes`, a quarter of the matrix's size), then looked up in one pass, four
  calls a byte, into the matrix itself (:func:`dosages`), the samples picked after.

Records the codes do not hold exactly are decoded by the caller (:class:`PackedPart`).

>>> rows = np.array([[0b11100100, 0b00000010]], dtype=np.uint8)
>>> dosages(rows).tolist()
[[0, 1, 2, -9, 2, 0, 0, 0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.query.arrays import elements_array
from vcfzarr_sql.store import memory
from vcfzarr_sql.store.blocks import BatchBlocks

#: the dosage of a call with a missing allele (pgenlib's ``read_range`` gives the same)
MISSING_DOSAGE = -9


@dataclass(frozen=True)
class PackedPiece:
    """The selected samples of one sample chunk: where their calls are in that chunk's packed
    bytes, and their columns in the matrix (the arguments of
    :func:`~vcfzarr_sql.kernels.dosage.expand_dosages`)."""

    #: the sample chunk (the packed array's chunk along its bytes)
    chunk: int
    #: the matrix column of its first selected sample
    out_col: int
    #: its ``calls`` selected samples' calls are those from byte ``first_byte`` on, when
    #: ``slots`` is empty; else they are the calls ``slots`` (int64 positions in the bytes)
    first_byte: int
    calls: int
    slots: np.ndarray


@dataclass(frozen=True)
class PackedColumns:
    """Where the calls of some samples are in a packed row.

    >>> layout = PackedColumns.of(np.array([3, 17, 18]), 1000)
    >>> layout.columns.tolist(), layout.within.tolist()
    ([0, 4], [3, 5, 6])
    >>> [(p.chunk, p.out_col, p.first_byte, p.calls, p.slots.tolist()) for p in layout.pieces]
    [(0, 0, 0, 3, [3, 17, 18])]
    >>> layout = PackedColumns.of(np.arange(10), 8)  # (sample chunks of 8, padded to 32 calls)
    >>> layout.columns.tolist(), layout.within
    ([0, 1, 8], None)
    >>> [(p.chunk, p.out_col, p.first_byte, p.calls, p.slots.tolist()) for p in layout.pieces]
    [(0, 0, 0, 8, []), (1, 8, 0, 2, [])]
    """

    #: the bytes (sorted column indexes of a packed row) holding the samples' calls
    columns: np.ndarray
    #: where each sample's call is among the calls of :attr:`columns` (four a byte, in order);
    #: None when they are the first ones, in order
    within: np.ndarray | None
    #: the samples of each sample chunk holding some, in order
    pieces: tuple[PackedPiece, ...]

    @classmethod
    def of(cls, samples: np.ndarray, samples_chunk_size: int) -> PackedColumns:
        """The bytes holding ``samples`` (sorted sample indexes)."""
        slots = pg.sample_slots(samples, samples_chunk_size)
        quads = slots // 4
        columns = quads[np.r_[True, quads[1:] != quads[:-1]]] if len(quads) else quads
        calls = (columns[:, None] * 4 + np.arange(4)).reshape(-1)[: len(slots)]
        within = None if (calls == slots).all() else np.searchsorted(columns, quads) * 4 + slots % 4
        return cls(columns, within, _pieces(np.asarray(samples, np.int64), max(samples_chunk_size, 1)))

    @staticmethod
    @lru_cache(maxsize=16)
    def every(samples: int, samples_chunk_size: int) -> PackedColumns:
        """:meth:`of` all ``samples`` (kept: it is the same for every matrix of a store)."""
        return PackedColumns.of(np.arange(samples), samples_chunk_size)


def _pieces(samples: np.ndarray, size: int) -> tuple[PackedPiece, ...]:
    """:attr:`PackedColumns.pieces` of ``samples`` (sorted) in sample chunks of ``size``: a
    run of samples from a multiple of 4 as a range of bytes, others by their slots."""
    chunk_of = samples // size
    starts = np.flatnonzero(np.r_[True, chunk_of[1:] != chunk_of[:-1]]).tolist() if len(samples) else []
    pieces = []
    for lo, hi in zip(starts, [*starts[1:], len(samples)]):
        local = samples[lo:hi] % size
        first = int(local[0])
        if first % 4 == 0 and local[-1] - first == hi - lo - 1:
            pieces.append(PackedPiece(int(chunk_of[lo]), lo, first // 4, hi - lo, np.empty(0, np.int64)))
        else:
            pieces.append(PackedPiece(int(chunk_of[lo]), lo, 0, hi - lo, local))
    return tuple(pieces)


def packed_exact(blocks: BatchBlocks, keep: np.ndarray | None = None) -> np.ndarray:
    """Whether each of the batch's records that ``keep`` marks (None: all) is exact (bool):
    where it is not, its codes are meaningless and it is to be decoded. The store must have
    the packed genotypes as written (:func:`~vcfzarr_sql.store.packed_arrays.packed_stored`)."""
    exact = blocks.read(pg.PACKED_EXACT).astype(bool)
    return exact if keep is None else exact[keep]


def packed_codes(blocks: BatchBlocks, columns: PackedColumns, keep: np.ndarray | None = None) -> np.ndarray:
    """The packed bytes ``columns`` of the batch's records that ``keep`` marks (None: all),
    (records, bytes) uint8 in one array (the numpy way)."""
    return blocks.columns(pg.PACKED, columns.columns, keep)


@dataclass(frozen=True)
class PackedRows:
    """One variant chunk's kept records, as the compiled way reads them."""

    #: the packed bytes of each of :attr:`PackedColumns.pieces`' sample chunks, (records from
    #: the first kept to the last, bytes) uint8, as decompressed
    pieces: tuple[np.ndarray, ...]
    #: the kept records: indexes into the pieces' rows (int64)
    rows: np.ndarray


def packed_rows(blocks: BatchBlocks, columns: PackedColumns, keep: np.ndarray | None = None,
                ) -> tuple[PackedRows, ...]:
    """The packed bytes of the sample chunks holding ``columns``' samples, for the records
    ``keep`` marks (None: all), a :class:`PackedRows` per variant chunk holding some: each
    chunk decompressed from its first kept record to its last only
    (:meth:`~vcfzarr_sql.store.blocks.BatchBlocks.read_chunk_rows`)."""
    chunks = []
    records = dict(zip(blocks.chunks, blocks.chunk_rows(pg.PACKED)))
    for c, span, mine in blocks.row_spans(pg.PACKED, keep):
        pieces = tuple(blocks.read_chunk_rows(pg.PACKED, (c, p.chunk), span) for p in columns.pieces)
        start, stop, _ = span.indices(records[c])
        for piece, values in zip(columns.pieces, pieces):  # (the compiled expansion checks no bounds)
            _check_piece(blocks, (c, piece.chunk), piece, values, stop - start)
        rows = np.arange(stop - start, dtype=np.int64) if mine is None else np.flatnonzero(mine).astype(np.int64)
        chunks.append(PackedRows(pieces, rows))
    return tuple(chunks)


def _check_piece(blocks: BatchBlocks, chunk: tuple[int, int], piece: PackedPiece, values: np.ndarray,
                 records: int) -> None:
    """StoreError unless ``values``, the packed bytes of ``chunk`` read for ``piece``, are
    ``records`` rows of uint8 holding the piece's calls."""
    needed = int(piece.slots.max()) + 1 if len(piece.slots) else 4 * piece.first_byte + piece.calls
    if values.dtype != np.uint8 or values.ndim != 2 or len(values) != records or 4 * values.shape[1] < needed:
        raise StoreError(f"{blocks.store.path}: {pg.PACKED} chunk {chunk} read as {values.shape} "
                         f"{values.dtype}, not {records} rows of uint8 holding {needed} calls")


def dosages(codes: np.ndarray) -> np.ndarray:
    """The dosages (records, 4 x bytes) int8 of every call of the packed bytes ``codes``
    (records, bytes) uint8: one look-up of four calls a byte in a table of 1 KB (it stays in
    the first-level cache), by Arrow's take (numpy's would cast the bytes to intp first),
    into the returned array itself (writable). The bytes are wrapped, not converted by
    ``pa.array`` (which imports pandas, when it is installed: ~50 MiB)."""
    flat = np.ascontiguousarray(codes).reshape(-1)
    taken = pc.take(_byte_dosages(), elements_array(flat, None, pa.uint8()), boundscheck=False)  # (never out of range)
    looked_up = np.frombuffer(taken.buffers()[1], np.uint32, count=len(taken))  # (writable, unlike to_numpy)
    return looked_up.view(np.int8).reshape(len(codes), 4 * codes.shape[1])


@cache
def _byte_dosages() -> pa.UInt32Array:
    """(256,) uint32: the four dosages (int8) of the calls of each byte, in call order in memory.

    >>> np.asarray(_byte_dosages())[[0b11100100, 2]].view(np.int8).tolist()
    [0, 1, 2, -9, 2, 0, 0, 0]
    """
    codes = pg.byte_codes().astype(np.int8)
    codes[codes == pg.MISSING] = MISSING_DOSAGE
    return elements_array(np.ascontiguousarray(codes).view(np.uint32).reshape(-1), None, pa.uint32())


@dataclass(frozen=True)
class PackedPart:
    """A run's records for :func:`packed_matrix`: their packed bytes (:attr:`codes` the numpy
    way, :attr:`chunks` the compiled way), and the dosages of those decoded instead (the
    records the codes do not hold exactly; all of them when none is: no bytes then)."""

    #: the run's records
    records: int
    #: the records (indexes among them) decoded
    decoded: np.ndarray
    #: their dosages, (decoded records, samples) int8
    values: np.ndarray
    #: (records, bytes) uint8, :func:`packed_codes` (None: the compiled way, or no bytes)
    codes: np.ndarray | None = None
    #: :func:`packed_rows`
    chunks: tuple[PackedRows, ...] = ()


def packed_matrix(parts: Sequence[PackedPart], columns: PackedColumns, samples: int,
                  expand: Callable[..., None] | None = None) -> np.ndarray:
    """The (records, ``samples``) int8 dosages of ``parts`` one after the other, the decoded
    records put in place: each chunk's bytes expanded into the matrix by ``expand`` (the
    compiled :data:`~vcfzarr_sql.kernels.dosage.EXPAND`), or, without it, their codes joined
    (a quarter of the matrix) and looked up at once.

    >>> layout = PackedColumns.of(np.arange(3), 1000)
    >>> part = PackedPart(2, np.array([1]), np.array([[1, 0, 2]], np.int8),
    ...                   codes=np.array([[0b100100], [0b111111]], np.uint8))
    >>> packed_matrix([part, part], layout, 3).tolist()
    [[0, 1, 2], [1, 0, 2], [0, 1, 2], [1, 0, 2]]
    """
    if expand is not None:
        total = sum(p.records for p in parts)
        matrix = memory.empty(total * samples, np.int8).reshape(total, samples)
        start = 0
        for part in parts:
            at = start
            for chunk in part.chunks:
                for piece, values in zip(columns.pieces, chunk.pieces):  # (C order: one compiled signature)
                    expand(np.ascontiguousarray(values), chunk.rows, piece.first_byte, piece.calls, piece.slots, matrix, at, piece.out_col)
                at += len(chunk.rows)
            start += part.records
    else:
        matrix = dosages(_joined_codes(parts, columns))
        if columns.within is not None:
            matrix = np.take(matrix, columns.within, axis=1)
        elif matrix.shape[1] != samples:  # (the last byte's calls past the samples: a contiguous copy)
            matrix = np.ascontiguousarray(matrix[:, :samples])
    start = 0
    for part in parts:
        if len(part.decoded):
            matrix[start + part.decoded] = part.values
        start += part.records
    return matrix


def _joined_codes(parts: Sequence[PackedPart], columns: PackedColumns) -> np.ndarray:
    """The :attr:`PackedPart.codes` of ``parts`` one after the other (zeros for a part with none)."""
    codes = [p.codes if p.codes is not None else np.zeros((p.records, len(columns.columns)), np.uint8)
             for p in parts]
    return codes[0] if len(codes) == 1 else np.concatenate(codes) if codes else np.zeros((0, len(columns.columns)), np.uint8)
