"""A BGZF writer (blocked gzip, what ``bgzip`` and ``bcftools -Oz`` write), with zlib only.

>>> import gzip, io
>>> out = io.BytesIO()
>>> with BgzfWriter(out) as w:
...     _ = w.write(b"hello\\n")
>>> gzip.decompress(out.getvalue())
b'hello\\n'
>>> out.getvalue().endswith(EOF_BLOCK)
True
"""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO

#: The empty block that ends every BGZF file.
EOF_BLOCK = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
#: Uncompressed bytes per block (bgzip's choice: the compressed block must fit 64 KiB).
BLOCK_DATA = 0xFF00


def compress_block(data: bytes, level: int = 6) -> bytes:
    """One BGZF block holding ``data`` (at most :data:`BLOCK_DATA` bytes)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, -15)
    deflated = compressor.compress(data) + compressor.flush()
    header = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\x06\x00BC\x02\x00"
    size = len(header) + 2 + len(deflated) + 8
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data))
    return header + struct.pack("<H", size - 1) + deflated + trailer


class BgzfWriter:
    """A binary file-like object that writes BGZF blocks to ``raw``."""

    def __init__(self, raw: BinaryIO, level: int = 6):
        self._raw = raw
        self._level = level
        self._buffer = bytearray()

    def write(self, data: bytes) -> int:
        self._buffer += data
        while len(self._buffer) >= BLOCK_DATA:
            self._raw.write(compress_block(bytes(self._buffer[:BLOCK_DATA]), self._level))
            del self._buffer[:BLOCK_DATA]
        return len(data)

    def close(self) -> None:
        if self._buffer:
            self._raw.write(compress_block(bytes(self._buffer), self._level))
            self._buffer.clear()
        self._raw.write(EOF_BLOCK)
        self._raw.flush()

    def __enter__(self) -> BgzfWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
