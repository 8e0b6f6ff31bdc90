"""A byte range of a Blosc (1.x) chunk, decompressed from only the Blosc blocks that hold it:
each block is compressed (and shuffled) on its own, so the records of a chunk that a region
keeps cost their share of its decompression, not the whole chunk's (a 100 kb region keeping
300 of a 1000-record genotype chunk stored in two 1 MiB blocks decompresses one of them; a
region of 1,000 records overlapping two packed-genotype chunks by half each decompresses one
chunk's worth, not two).

Only frames of one-byte items (genotypes, packed genotypes) are read so: their blocks are
one stream each, never split; a frame of wider items, or with c-blosc's delta filter (each
block relative to the first), gives None (the caller decodes the
chunk whole). An LZ4 frame without bit-shuffle (the packed genotypes:
:data:`~vcfzarr_sql.store.packed_arrays.COMPRESSOR`) has each block decompressed in place
through numcodecs' bounded LZ4 ``decompress``. Any other (genotypes: zstd, bit-shuffled) has
the blocks holding the range copied into a smaller Blosc frame of their own (the header with
their size, their starts, their streams) that c-blosc decompresses as it would the whole
chunk, with its own (SIMD) shuffles; a block that is not one stream gives None. Every offset
of the frame is checked against the buffer, and each block's stream against the block,
before it is read; a damaged frame raises
:class:`~vcfzarr_sql.store.bounds.ChunkBoundsError`, as a whole decode would.

>>> from numcodecs.blosc import Blosc
>>> data = np.arange(100_000, dtype=np.uint32).view(np.uint8)
>>> raw = Blosc("zstd", 5, Blosc.BITSHUFFLE, blocksize=4096).encode(data)
>>> (decompress_range(raw, 10_000, 30_001, data.nbytes) == data[10_000:30_001]).all()
np.True_
"""

from __future__ import annotations

import functools
import importlib
import struct
from typing import Any

import numpy as np

from vcfzarr_sql.store import memory
from vcfzarr_sql.store.bounds import ChunkBoundsError

_HEADER = 16
_MEMCPYED, _BITSHUFFLE, _DELTA = 0x2, 0x4, 0x8
_LZ4_FORMAT = 1
#: The newest Blosc 1.x frame format, and the LZ4 stream format (c-blosc refuses others)
_FORMAT_VERSION, _LZ4_VERSION = 2, 1


def stored_as_is(raw: bytes, nbytes: int) -> memoryview | None:
    """The ``nbytes`` bytes of the Blosc frame ``raw`` when it holds them as they are (c-blosc's
    "memcpyed" frame: written at clevel 0, or bytes that did not compress), as a read-only view
    of ``raw``; None for any other frame (Blosc decompresses it, or says why it cannot).

    >>> from numcodecs import Blosc
    >>> data = np.arange(1000, dtype=np.uint8)
    >>> bytes(stored_as_is(Blosc("lz4", 0).encode(data), 1000)) == data.tobytes()
    True
    >>> stored_as_is(Blosc("lz4", 5).encode(data), 1000) is None
    True
    """
    view = memoryview(raw).cast("B")
    if len(view) < _HEADER or not view[2] & _MEMCPYED or view[0] > _FORMAT_VERSION:
        return None
    total, _, cbytes = struct.unpack_from("<iii", view, 4)
    if total != nbytes or cbytes != _HEADER + total or len(view) != cbytes:
        return None
    return view[_HEADER:].toreadonly()


def decompress_range(raw: bytes | memoryview, start: int, stop: int, nbytes: int) -> np.ndarray | None:
    """Bytes ``start`` to ``stop`` of the Blosc frame ``raw`` (which must decompress to
    ``nbytes`` bytes), as a uint8 array (a view into the blocks decompressed); None when the
    frame's blocks are not laid out as this reads them."""
    view = memoryview(raw).cast("B")
    if len(view) < _HEADER:
        return None
    version, flags, typesize = view[0], view[2], view[3]
    if typesize != 1 or flags & _DELTA:  # (blocks of wider items may be split into a stream per
        # byte; c-blosc's delta filter decodes every block against the frame's first one)
        return None
    total, blocksize, cbytes = struct.unpack_from("<iii", view, 4)
    # (the header checks c-blosc's whole decode makes: a frame it refuses is refused here too)
    if version > _FORMAT_VERSION:
        raise ChunkBoundsError(f"a Blosc frame of format {version}.{view[1]}")
    if total != nbytes or cbytes > len(view) or not 0 <= start <= stop <= total:
        raise ChunkBoundsError(f"a Blosc frame of {total} bytes ({cbytes} stored), expected {nbytes}")
    if total and not 0 < blocksize <= total:
        raise ChunkBoundsError(f"a Blosc frame of {total} bytes with blocks of {blocksize} bytes")
    if flags & _MEMCPYED:
        if cbytes != _HEADER + total:
            raise ChunkBoundsError(f"a stored Blosc frame of {cbytes} bytes holds {total}")
        out = memory.empty(stop - start, np.uint8)
        out[:] = np.frombuffer(view, np.uint8, stop - start, _HEADER + start)
        return out
    if start == stop:
        return memory.empty(0, np.uint8)
    blocks = -(-total // blocksize)
    if _HEADER + 4 * blocks > cbytes:
        raise ChunkBoundsError(f"a Blosc frame of {blocks} blocks in {cbytes} bytes")
    starts = np.frombuffer(view, "<i4", blocks, _HEADER).astype(np.int64)
    if starts.min() < _HEADER + 4 * blocks or starts.max() >= cbytes:
        bad = starts[(starts < _HEADER + 4 * blocks) | (starts >= cbytes)][0]
        raise ChunkBoundsError(f"a Blosc block at byte {bad} of {cbytes}")
    if (flags >> 5) == _LZ4_FORMAT and not flags & _BITSHUFFLE:
        if view[1] != _LZ4_VERSION:
            raise ChunkBoundsError(f"a Blosc frame of format {version}.{view[1]}")
        return _lz4_range(view, starts, start, stop, blocksize)
    return _blocks_range(view, starts, start, stop, blocksize)


def _lz4_range(view: memoryview, starts: np.ndarray, start: int, stop: int, blocksize: int) -> np.ndarray:
    """Bytes ``start`` to ``stop`` of an LZ4 frame without bit-shuffle (the packed genotypes),
    each block decompressed in place by numcodecs' bounded LZ4 ``decompress``: measured 1.1 ms
    for half a 2.5 MB packed chunk, against 1.3-1.5 through a frame of its blocks (c-blosc's
    threads and the copy of the blocks)."""
    total, cbytes = struct.unpack_from("<i", view, 4)[0], struct.unpack_from("<i", view, 12)[0]
    out = memory.empty(stop - start, np.uint8)
    for block in range(start // blocksize, -(-stop // blocksize)):
        lo = block * blocksize
        size = min(blocksize, total - lo)
        a, b = max(start, lo), min(stop, lo + size)
        whole = out[a - start : b - start] if b - a == size else None  # (decompressed in place)
        piece = _block(view, int(starts[block]), size, cbytes, whole)
        if whole is None:
            out[a - start : b - start] = piece[a - lo : b - lo]
    return out


def _blocks_range(view: memoryview, starts: np.ndarray, start: int, stop: int, blocksize: int) -> np.ndarray | None:
    """Bytes ``start`` to ``stop`` of any other frame (genotypes: zstd, bit-shuffled), from a
    frame of the blocks holding them that c-blosc decompresses; None when a block is not one
    stream."""
    total, cbytes = struct.unpack_from("<i", view, 4)[0], struct.unpack_from("<i", view, 12)[0]
    first, last = start // blocksize, -(-stop // blocksize)
    size = min(last * blocksize, total) - first * blocksize
    frame: bytes | memoryview = view[:cbytes]
    if size < total:  # (else the frame itself)
        ends = _block_ends(starts, cbytes)
        pieces = [view[starts[block] : ends[block]] for block in range(first, last)]
        if not all(map(_one_stream, pieces)):
            return None
        # (the last block alone, if shorter, is a frame of one block of its size: c-blosc refuses
        # a frame shorter than its block size; a block of one-byte items decodes the same either way)
        frame = _frame(view[:4], size, min(blocksize, size), pieces)
    out = memory.empty(size, np.uint8)
    try:
        _blosc().decompress(frame, out)
    except RuntimeError as error:
        raise ChunkBoundsError(f"Blosc blocks {first}-{last - 1} (at byte {starts[first]} of {cbytes}): "
                               f"{error}") from None
    lo = first * blocksize
    return out[start - lo : stop - lo]


def _block_ends(starts: np.ndarray, cbytes: int) -> np.ndarray:
    """Where each block's bytes end: at the next block's start (blocks are written one after
    another, in any order when c-blosc compresses in threads), the last at ``cbytes``."""
    order = np.unique(starts)
    following = np.append(order[1:], cbytes)
    return following[np.searchsorted(order, starts)]


def _one_stream(block: memoryview) -> bool:
    """Whether ``block`` is one stream (its length, then its bytes), exactly."""
    return len(block) > 4 and struct.unpack_from("<i", block)[0] == len(block) - 4


def _frame(head: memoryview, size: int, blocksize: int, pieces: list[memoryview]) -> bytes:
    """A Blosc frame of ``size`` bytes in ``pieces`` (the blocks' bytes, in order), with the
    first four header bytes (versions, flags, item size) of ``head``."""
    first = _HEADER + 4 * len(pieces)
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    starts = first + np.concatenate([[0], np.cumsum(lengths[:-1])])
    cbytes = first + int(lengths.sum())
    return b"".join([bytes(head), struct.pack("<iii", size, blocksize, cbytes),
                     starts.astype("<i4").tobytes(), *pieces])


@functools.cache
def _lz4() -> Any:
    """numcodecs' LZ4 module, taken from its module (not through the package, whose start-up a
    command may defer: :mod:`.codec_classes`), at the first LZ4 block (the codecs import this
    module to read frames stored as they are)."""
    return importlib.import_module("numcodecs.lz4")


def _block(view: memoryview, offset: int, size: int, cbytes: int, into: np.ndarray | None) -> np.ndarray:
    """The ``size`` bytes of the Blosc block at ``offset`` (a stream: its compressed length,
    then LZ4 data, or the bytes themselves when they did not compress), written ``into``
    that array when given."""
    if not _HEADER <= offset <= cbytes - 4:
        raise ChunkBoundsError(f"a Blosc block at byte {offset} of {cbytes}")
    (length,) = struct.unpack_from("<i", view, offset)
    if not 0 < length <= cbytes - offset - 4:
        raise ChunkBoundsError(f"a Blosc block of {length} bytes at byte {offset} of {cbytes}")
    data = view[offset + 4 : offset + 4 + length]
    out = np.empty(size, np.uint8) if into is None else into
    if length == size:  # (stored as it is)
        out[:] = np.frombuffer(data, np.uint8)
        return out
    try:
        _lz4().decompress(struct.pack("<i", size) + data, out)
    except RuntimeError as error:
        raise ChunkBoundsError(f"a Blosc block at byte {offset}: {error}") from None
    return out


@functools.cache
def _blosc() -> Any:
    """numcodecs' Blosc module, taken from its module (not through the package, whose start-up
    a command may defer: :mod:`.codec_classes`), at the first range read (the codecs import
    this module to read frames stored as they are)."""
    return importlib.import_module("numcodecs.blosc")
