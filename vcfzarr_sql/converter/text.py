"""The record lines of a VCF text file (bgzipped or plain), read without htslib.

For the fast path of :mod:`.reader`: BGZF blocks are inflated with zlib (their CRC checked),
a plain file is read as it is, and the lines after the header are given in blocks. Anything
this reader does not handle the way htslib would (another compression, a damaged or truncated
BGZF block, a line longer than :data:`MAX_LINE`) raises :class:`NotPlainText`: the caller then
reads the file with htslib, which says what is wrong in its own words.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

#: Bytes read from the file at a time.
READ_SIZE = 1 << 22
#: A line longer than this is left to htslib (it bounds what this reader holds in memory).
MAX_LINE = 1 << 26
_BGZF_MAGIC = b"\x1f\x8b\x08\x04"
_PLAIN_MAGIC = b"##fileformat=VCF"


class NotPlainText(Exception):
    """The file (or a part of it) is not text this reader reads exactly as htslib would."""


def text_kind(path: str) -> str | None:
    """``"bgzf"`` or ``"plain"`` for a VCF this module reads, else None (BCF, gzip, ...)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_PLAIN_MAGIC))
    except OSError:
        return None
    if head.startswith(_BGZF_MAGIC) and head[12:14] == b"BC":
        return "bgzf"
    return "plain" if head == _PLAIN_MAGIC else None


def _bgzf_data(path: str) -> Iterator[bytes]:
    """The inflated contents of a BGZF file, a few MB at a time."""
    with open(path, "rb") as f:
        buffer = b""
        while True:
            more = f.read(READ_SIZE)
            buffer += more
            out, offset = [], 0
            while len(buffer) - offset >= 18:
                if buffer[offset : offset + 4] != _BGZF_MAGIC or buffer[offset + 12 : offset + 16] != b"BC\x02\x00":
                    raise NotPlainText("not a BGZF block")
                size = struct.unpack_from("<H", buffer, offset + 16)[0] + 1
                if len(buffer) - offset < size:
                    break
                crc, length = struct.unpack_from("<II", buffer, offset + size - 8)
                try:
                    data = zlib.decompress(buffer[offset + 18 : offset + size - 8], -15)
                except zlib.error:
                    raise NotPlainText("a damaged BGZF block") from None
                if len(data) != length or zlib.crc32(data) != crc:
                    raise NotPlainText("a BGZF block fails its checks")
                out.append(data)
                offset += size
            buffer = buffer[offset:]
            if out:
                yield b"".join(out)
            if not more:
                if buffer:
                    raise NotPlainText("a truncated BGZF block")
                return


def _plain_data(path: str) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while data := f.read(READ_SIZE):
            yield data


def record_lines(path: str, kind: str, block_size: int) -> Iterator[list[bytes]]:
    """The lines after the header of the VCF text at ``path`` (``kind`` from :func:`text_kind`),
    without their newlines, ``block_size`` at a time (the last block may be shorter)."""
    data = _bgzf_data(path) if kind == "bgzf" else _plain_data(path)
    pending, block = b"", []
    in_header = True
    for piece in data:
        piece = pending + piece
        end = piece.rfind(b"\n")
        if end < 0:
            pending = piece
            if len(pending) > MAX_LINE:
                raise NotPlainText("a line longer than this reader holds")
            continue
        lines, pending = piece[:end].split(b"\n"), piece[end + 1 :]
        if in_header:
            skip = 0
            while skip < len(lines) and lines[skip].startswith(b"#"):
                skip += 1
            in_header = skip == len(lines)
            lines = lines[skip:]
        block.extend(lines)
        while len(block) >= block_size:
            yield block[:block_size]
            block = block[block_size:]
    if pending and not (in_header and pending.startswith(b"#")):
        block.append(pending)
    if block:
        yield block
