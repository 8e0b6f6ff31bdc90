"""A byte range of a Blosc (1.x) LZ4 chunk, decompressed from only the Blosc blocks that hold
it: each block is an independent LZ4 block, so the records of a chunk that a region keeps cost
their share of its decompression, not the whole chunk's (a region of 1,000 records
overlapping two packed-genotype chunks by half each decompresses one chunk's worth, not two).

Only the frames vcfzarr-sql writes for its byte arrays are read so (LZ4, items of one byte, no
bit-shuffle: :data:`~vcfzarr_sql.store.packed_arrays.COMPRESSOR`); others give None and are
decoded whole by the caller. Every offset and size of the frame is checked against the
buffer before it is used, and each block goes through numcodecs' LZ4 ``decompress``
(``LZ4_decompress_safe``, bounded by the block's compressed and expected sizes): a damaged
frame raises :class:`~vcfzarr_sql.store.bounds.ChunkBoundsError`, as a whole decode would.

>>> from numcodecs import Blosc
>>> data = np.arange(100_000, dtype=np.uint32).view(np.uint8)
>>> raw = Blosc("lz4", 5, Blosc.NOSHUFFLE, blocksize=4096).encode(data)
>>> (decompress_range(raw, 10_000, 30_001, data.nbytes) == data[10_000:30_001]).all()
np.True_
>>> decompress_range(Blosc("zstd", 5).encode(data), 0, 10, data.nbytes) is None   # (not LZ4)
True
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
_MEMCPYED, _BITSHUFFLE = 0x2, 0x4
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
    ``nbytes`` bytes), as a new uint8 array; None when the frame is not an LZ4 frame of
    one-byte items this reads."""
    view = memoryview(raw).cast("B")
    if len(view) < _HEADER:
        return None
    version, stream_version, flags, typesize = view[0], view[1], view[2], view[3]
    total, blocksize, cbytes = struct.unpack_from("<iii", view, 4)
    if typesize != 1 or flags & _BITSHUFFLE or (flags >> 5) != _LZ4_FORMAT and not flags & _MEMCPYED:
        return None
    # (the header checks c-blosc's whole decode makes: a frame it refuses is refused here too)
    if version > _FORMAT_VERSION or not flags & _MEMCPYED and stream_version != _LZ4_VERSION:
        raise ChunkBoundsError(f"a Blosc frame of format {version}.{stream_version}")
    if total != nbytes or cbytes > len(view) or not 0 <= start <= stop <= total:
        raise ChunkBoundsError(f"a Blosc frame of {total} bytes ({cbytes} stored), expected {nbytes}")
    if total and not 0 < blocksize <= total:
        raise ChunkBoundsError(f"a Blosc frame of {total} bytes with blocks of {blocksize} bytes")
    out = memory.empty(stop - start, np.uint8)
    if flags & _MEMCPYED:
        if cbytes != _HEADER + total:
            raise ChunkBoundsError(f"a stored Blosc frame of {cbytes} bytes holds {total}")
        out[:] = np.frombuffer(view, np.uint8, stop - start, _HEADER + start)
        return out
    blocks = -(-total // blocksize)
    if _HEADER + 4 * blocks > cbytes:
        raise ChunkBoundsError(f"a Blosc frame of {blocks} blocks in {cbytes} bytes")
    starts = np.frombuffer(view, "<i4", blocks, _HEADER)
    for block in range(start // blocksize, -(-stop // blocksize)):
        lo = block * blocksize
        size = min(blocksize, total - lo)
        a, b = max(start, lo), min(stop, lo + size)
        whole = out[a - start : b - start] if b - a == size else None  # (decompressed in place)
        piece = _block(view, int(starts[block]), size, cbytes, whole)
        if whole is None:
            out[a - start : b - start] = piece[a - lo : b - lo]
    return out


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
