"""The part of a VCF Zarr array that one batch needs: variant chunks, for some samples.

A batch covers one chunk along ``variants`` (or a run of consecutive ones, for plans whose
chunks are cheap to decode); along ``samples`` it covers the selected samples
(those of one sample chunk for ``calls``); every other axis is read whole. Each array is read
once per batch, from only the chunks that hold its part, with the ``read_chunk`` of a
:class:`~vcfzarr_sql.store.source.ChunkSource` (the store's raw-bytes-plus-numcodecs path, or
a source that counts or fetches ahead).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.store import memory
from vcfzarr_sql.store.alignment import records_per_chunk
from vcfzarr_sql.store.contents import check_positions
from vcfzarr_sql.store.metadata import ArrayInfo
from vcfzarr_sql.store.source import ChunkSource

#: Nested lists of chunks, as ``np.block`` joins them.
_Nested = np.ndarray | list["_Nested"]


class SpanningChunks:
    """The chunk last read of each array whose chunks hold the records of several variant
    chunks (the per-record summaries: :data:`~vcfzarr_sql.format.summaries.SUMMARY_RECORDS`
    records a chunk), shared by the batches of one scan over consecutive variant chunks, so
    that such a chunk is decoded once, not once per variant chunk it spans. Thread-safe:
    batches run in the scan threads, and one decodes while the others wait (these arrays'
    chunks are small). Kept chunks are read-only.

    >>> spans, decoded = SpanningChunks(), []
    >>> read = lambda: decoded.append(1) or np.arange(3)
    >>> [spans.get("a", (0,), read).tolist() for _ in range(2)], len(decoded)
    ([[0, 1, 2], [0, 1, 2]], 1)
    """

    def __init__(self) -> None:
        self._last: dict[str, tuple[tuple[int, ...], np.ndarray]] = {}
        self._lock = threading.Lock()

    def get(self, name: str, chunk: tuple[int, ...], read: Callable[[], np.ndarray]) -> np.ndarray:
        """Chunk ``chunk`` of ``name``: the one kept, else ``read()`` (then kept)."""
        with self._lock:
            kept = self._last.get(name)
            if kept is not None and kept[0] == chunk:
                return kept[1]
            values = read()
            values.flags.writeable = False
            self._last[name] = (chunk, values)
            return values


class BatchBlocks:
    """Reads the blocks of one batch: variant chunks ``chunk_index`` to ``chunk_index +
    chunk_count - 1``, samples ``samples``.

    ``samples`` are sorted global sample indexes (None: all samples); arrays with a
    ``samples`` axis come back with exactly those samples, in that order, read from only the
    sample chunks that hold them. ``store`` is ``source``'s (its metadata). ``rows``: the
    records of the batch :meth:`read` gives (a slice of its records; None: all of them). ``spans``: where
    the chunks of arrays chunked along records in longer chunks than the variant chunks are
    kept between the batches of one scan (None: read for each batch).
    """

    def __init__(
        self, source: ChunkSource, chunk_index: int, samples: np.ndarray | None, chunk_count: int = 1,
        spans: SpanningChunks | None = None,
    ):
        self.source = source
        self.spans = spans
        self.store = source.store
        self.chunk_index = chunk_index
        self.chunks = range(chunk_index, chunk_index + chunk_count)
        self.samples = None if samples is None else np.asarray(samples, dtype=np.int64)
        self.num_samples = self.store.num_samples if self.samples is None else len(self.samples)
        self.rows: slice | None = None
        self._cache: dict[str, np.ndarray] = {}

    def read(self, name: str) -> np.ndarray:
        """The block of array ``name``, of the :attr:`rows` kept (cached: each array is read
        once per batch); ``variant_position`` checked against the region index
        (:func:`~vcfzarr_sql.store.contents.check_positions`)."""
        block = self._cache.get(name)
        if block is None:
            if self._in_part(name):  # (already the rows kept)
                block = self._cache[name] = self._rows_of(name)
                return block
            block = self._read(name)
            if name == spec.VARIANT_POSITION:
                check_positions(self.store, self.chunks, block)
            self._cache[name] = block
        elif self._in_part(name):
            return block
        return self.kept(block)

    def _in_part(self, name: str) -> bool:
        """Whether array ``name`` is read for the :attr:`rows` kept alone: a per-call numeric
        array (genotypes: megabytes a chunk, of which a region's edge keeps a part) of a batch of
        one variant chunk, chunked like the variants."""
        if self.rows is None or len(self.chunks) != 1:
            return False
        info = self.store.array_info(name)
        return (info.dtype.kind in "biuf" and _sample_axis(name, info.dims) is not None
                and records_per_chunk(self.store, info) is None)

    def _rows_of(self, name: str) -> np.ndarray:
        """The :attr:`rows` of array ``name``, decompressed from only the blocks of its chunks
        holding them where the codec allows (:meth:`read_chunk_rows`)."""
        assert self.rows is not None
        rows = self.rows
        info = self.store.array_info(name)
        return self._samples_of(name, info, [self.chunks], read=lambda n, c: self.read_chunk_rows(n, c, rows))

    def kept(self, records: np.ndarray) -> np.ndarray:
        """``records`` (one entry per record of the batch's chunks, along the first axis) for
        the :attr:`rows` kept (a view)."""
        return records if self.rows is None else records[self.rows]

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        """One chunk of the blocks (the source's; a subclass may read them otherwise)."""
        return self.source.read_chunk(name, chunk)

    def _read(self, name: str) -> np.ndarray:
        info = self.store.array_info(name)
        records = records_per_chunk(self.store, info)
        if records is None:
            return self._samples_of(name, info, [self.chunks])
        # an array of records in longer chunks: those holding the batch's records
        size = self.store.variants_chunk_size
        lo, hi = self.chunks.start * size, min(self.chunks.stop * size, info.shape[0])
        first = range(lo // records, max(hi - 1, lo) // records + 1)
        whole = self.samples is None or _sample_axis(name, info.dims) is None  # (same for every batch)
        if self.spans is not None and whole and len(first) == 1:
            block = self.spans.get(name, (first.start,), lambda: self._samples_of(name, info, [first]))
        else:
            block = self._samples_of(name, info, [first])
        return block[lo - first.start * records : hi - first.start * records]

    def columns(self, name: str, columns: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The block of 2-D array ``name`` with only ``columns`` (sorted indexes along its
        second axis) and the records ``rows`` marks (a mask over the batch's; None: all),
        read from only the chunks holding them, each from its first to its last marked record
        (:meth:`read_chunk_rows`), and copied once into the result (:meth:`read` joins whole
        chunks first); a chunk's view, when one chunk holds them all."""
        info = self.store.array_info(name)
        if records_per_chunk(self.store, info) is not None:
            block = self.read(name)[:, columns]
            return block if rows is None else block[rows]
        chunk_of = columns // max(info.chunks[1], 1)
        bounds = [*np.flatnonzero(np.r_[True, chunk_of[1:] != chunk_of[:-1]]).tolist(), len(columns)]
        groups = [(lo, hi, int(chunk_of[lo]), _slice_or(columns[lo:hi] - chunk_of[lo] * info.chunks[1]))
                  for lo, hi in zip(bounds[:-1], bounds[1:])]
        kept = sum(self.chunk_rows(name)) if rows is None else int(np.count_nonzero(rows))
        out = memory.empty(kept * len(columns), info.decoded_dtype).reshape(kept, len(columns))
        start = 0
        for c, span, mine in self.row_spans(name, rows):
            pieces = [self.read_chunk_rows(name, (c, chunk), span) for _, _, chunk, _ in groups]
            if len(self.chunks) == 1 and len(groups) == 1 and mine is None:
                return pieces[0][:, groups[0][3]]
            count = len(pieces[0]) if mine is None else int(np.count_nonzero(mine))
            for (lo, hi, _, pick), piece in zip(groups, pieces):
                out[start : start + count, lo:hi] = piece[:, pick] if mine is None else piece[mine][:, pick]
            start += count
        return out

    def chunk_rows(self, name: str) -> list[int]:
        """The records of each of the batch's variant chunks in array ``name`` (chunked like them)."""
        info = self.store.array_info(name)
        size = max(info.chunks[0], 1)
        return [min(size, info.shape[0] - c * size) for c in self.chunks]

    def row_spans(self, name: str, rows: np.ndarray | None) -> Iterator[tuple[int, slice, np.ndarray | None]]:
        """For each of the batch's variant chunks holding a record ``rows`` marks (a mask over
        the batch's records; None: all): (the chunk, the span of its records from the first to
        the last marked, the mask of those marked in the span or None when all are).

        >>> from types import SimpleNamespace
        >>> info = SimpleNamespace(chunks=(4,), shape=(10,))
        >>> blocks = BatchBlocks.__new__(BatchBlocks)
        >>> blocks.store, blocks.chunks = SimpleNamespace(array_info=lambda name: info), range(0, 3)
        >>> rows = np.array([1, 0, 1, 0, 0, 1, 1, 0, 0, 0], bool)
        >>> [(c, (s.start, s.stop), m if m is None else m.tolist()) for c, s, m in blocks.row_spans("a", rows)]
        [(0, (0, 3), [True, False, True]), (1, (1, 3), None)]
        >>> [(c, s) for c, s, _ in blocks.row_spans("a", None)]
        [(0, slice(None, None, None)), (1, slice(None, None, None)), (2, slice(None, None, None))]
        """
        start = 0
        for c, count in zip(self.chunks, self.chunk_rows(name)):
            span, mine = slice(None), None if rows is None else rows[start : start + count]
            start += count
            if mine is not None:
                marked = np.flatnonzero(mine)
                if not len(marked):
                    continue
                span = slice(int(marked[0]), int(marked[-1]) + 1)
                mine = None if len(marked) == span.stop - span.start else mine[span]
            yield c, span, mine

    def read_chunk_rows(self, name: str, chunk: tuple[int, ...], rows: slice) -> np.ndarray:
        """Records ``rows`` of one chunk: :meth:`read_chunk` for all of them, else the source's
        ``read_chunk_rows`` (from only the compressed blocks holding them when the codec
        allows, counted as any read)."""
        if rows == slice(None):
            return self.read_chunk(name, chunk)
        return self.source.read_chunk_rows(name, chunk, rows)

    def sum(self, name: str) -> np.ndarray:
        """The block of array ``name``, one row per variant chunk, added up over the batch's
        chunks (int64), for its samples (picked out after the sum)."""
        info = self.store.array_info(name)
        return self._samples_of(name, info, [self.chunks], lambda b: b.sum(axis=0, dtype=np.int64))

    def _samples_of(
        self, name: str, info: ArrayInfo, grid: list[Sequence[int]],
        reduce: Callable[[np.ndarray], np.ndarray] | None = None,
        read: Callable[[str, tuple[int, ...]], np.ndarray] | None = None,
    ) -> np.ndarray:
        """The chunks ``grid`` (along ``variants``) of ``name`` joined, for the batch's samples
        (``reduce``: what to do to the joined chunks first, removing their first axis; ``read``:
        how to read a chunk, :meth:`read_chunk` when None)."""
        sample_axis = _sample_axis(name, info.dims)
        grid += [range(max(math.ceil(n / c), 1)) for n, c in zip(info.shape[1:], info.chunks[1:])]
        reduced = reduce or (lambda block: block)
        if sample_axis is None or self.samples is None:
            return reduced(_assemble(read or self.read_chunk, name, grid))
        size = info.chunks[sample_axis]
        chunk_of = self.samples // size
        needed = np.unique(chunk_of) if len(chunk_of) else np.zeros(1, dtype=np.int64)
        grid[sample_axis] = needed.tolist()  # (no sample selected: any chunk gives the shape)
        block = reduced(_assemble(read or self.read_chunk, name, grid))
        sample_axis -= reduce is not None
        # Position of each sample in the joined chunks (only the last one can be short).
        within = np.searchsorted(needed, chunk_of) * size + self.samples % size
        if len(within) == block.shape[sample_axis] and (within == np.arange(len(within))).all():
            return block
        return np.take(block, within, axis=sample_axis)


def _slice_or(indexes: np.ndarray) -> slice | np.ndarray:
    """``indexes`` (sorted, distinct) as a slice when they are a range (no copy to pick them)."""
    if len(indexes) and indexes[-1] - indexes[0] == len(indexes) - 1:
        return slice(int(indexes[0]), int(indexes[-1]) + 1)
    return indexes


def _sample_axis(name: str, dims: Sequence[str]) -> int | None:
    """The ``samples`` axis of array ``name`` (by its dimension names, else the spec's layout)."""
    if dims:
        return list(dims).index(spec.DIM_SAMPLES) if spec.DIM_SAMPLES in dims else None
    return 1 if name.startswith(spec.FORMAT_PREFIX) else None


def _assemble(read: Callable[[str, tuple[int, ...]], np.ndarray], name: str, grid: list[Sequence[int]]) -> np.ndarray:
    """The chunks ``itertools.product(*grid)`` of ``name`` joined into one array (each chunk
    ``read(name, chunk)``)."""
    if all(len(g) == 1 for g in grid):
        return read(name, tuple(g[0] for g in grid))
    if all(len(g) == 1 for g in grid[1:]):  # a run of variant chunks
        rest = tuple(g[0] for g in grid[1:])
        return np.concatenate([read(name, (c, *rest)) for c in grid[0]])
    chunks = {c: read(name, c) for c in itertools.product(*grid)}

    def nest(prefix: tuple[int, ...]) -> _Nested:
        axis = len(prefix)
        if axis == len(grid):
            return chunks[prefix]
        return [nest((*prefix, i)) for i in grid[axis]]

    return np.block(nest(()))
