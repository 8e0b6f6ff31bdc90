"""The record lines of a VCF text file (bgzipped or plain), read without htslib.

For the fast path of :mod:`.reader`: BGZF blocks are inflated with libdeflate when the
``fast`` extra is installed (the ``deflate`` package: 2.7x zlib's speed, with its CRC-32), else
with zlib, their CRC checked either way; a plain file is read as it is, and the lines after the header are given in blocks. Anything
this reader does not handle the way htslib would (another compression, a damaged or truncated
BGZF block, a line longer than :data:`MAX_LINE`) raises :class:`NotPlainText`: the caller then
reads the file with htslib, which says what is wrong in its own words.

A file can be cut into spans of bytes read in parallel (:func:`spans`): a span's cuts are
BGZF block starts (any byte of a plain file), and a span's lines are those that start after
its first byte and at or before its last cut (the first span's start at byte 0), which gives
each line to exactly one span.
"""

from __future__ import annotations

import itertools
import os
import struct
import zlib
from collections.abc import Callable, Iterator

#: Bytes read from the file at a time.
READ_SIZE = 1 << 22
#: A line longer than this is left to htslib (it bounds what this reader holds in memory).
MAX_LINE = 1 << 26
_BGZF_MAGIC = b"\x1f\x8b\x08\x04"
_BGZF_SUBFIELD = b"BC\x02\x00"
_PLAIN_MAGIC = b"##fileformat=VCF"
#: Blocks after a candidate cut checked to be BGZF blocks (a cut is never inside one).
_CHAIN = 4
#: The most bytes a BGZF block inflates to.
_BGZF_DATA = 1 << 16
#: BGZF blocks inflated to estimate a file's text size (:func:`text_size`).
_SAMPLED_BLOCKS = 16


def _zlib_inflate(raw: bytes, size: int) -> bytes | bytearray:
    """The raw DEFLATE data ``raw`` inflated (``size``: the length it should have); zlib.error
    when damaged."""
    return zlib.decompress(raw, -15)


#: The inflater (and its errors) and CRC-32 of BGZF blocks: libdeflate's when installed (the
#: ``fast`` extra), else zlib's. (libdeflate gives a bytearray: lines are joined into bytes.)
_inflate: Callable[[bytes, int], bytes | bytearray] = _zlib_inflate
_crc32: Callable[[bytes | bytearray], int] = zlib.crc32
_DAMAGED: tuple[type[Exception], ...] = (zlib.error,)
try:
    import deflate
except ImportError:  # pragma: no cover (the tests install the extra)
    pass
else:
    _inflate, _crc32, _DAMAGED = deflate.deflate_decompress, deflate.crc32, (zlib.error, deflate.DeflateError)

#: ``(first byte, cut)`` of the file: where a span starts, and where its last line may start
#: (None: the end of the file).
Span = tuple[int, int | None]


class NotPlainText(Exception):
    """The file (or a part of it) is not text this reader reads exactly as htslib would."""


def text_kind(path: str) -> str | None:
    """``"bgzf"`` or ``"plain"`` for a VCF this module reads, else None (BCF, gzip, ...)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_PLAIN_MAGIC))
    except OSError:
        return None
    if head.startswith(_BGZF_MAGIC) and head[12:16] == _BGZF_SUBFIELD:
        return "bgzf"
    return "plain" if head == _PLAIN_MAGIC else None


def _bgzf_block(buffer: bytes, offset: int) -> int | None:
    """The size of the BGZF block at ``offset`` of ``buffer`` (None: not a block header)."""
    if buffer[offset : offset + 4] != _BGZF_MAGIC or buffer[offset + 12 : offset + 16] != _BGZF_SUBFIELD:
        return None
    return int(struct.unpack_from("<H", buffer, offset + 16)[0]) + 1


def _bgzf_pieces(path: str, start: int) -> Iterator[tuple[int, bytes | bytearray]]:
    """``(file offset, inflated data)`` of each BGZF block from the one at ``start``."""
    with open(path, "rb") as f:
        f.seek(start)
        buffer, position = b"", start
        while True:
            more = f.read(READ_SIZE)
            buffer += more
            offset = 0
            while len(buffer) - offset >= 18:
                size = _bgzf_block(buffer, offset)
                if size is None:
                    raise NotPlainText("not a BGZF block")
                if len(buffer) - offset < size:
                    break
                crc, length = struct.unpack_from("<II", buffer, offset + size - 8)
                if length > _BGZF_DATA:
                    raise NotPlainText("a BGZF block fails its checks")
                try:
                    data = _inflate(buffer[offset + 18 : offset + size - 8], length)
                except _DAMAGED:
                    raise NotPlainText("a damaged BGZF block") from None
                if len(data) != length or _crc32(data) != crc:
                    raise NotPlainText("a BGZF block fails its checks")
                yield position + offset, data
                offset += size
            buffer, position = buffer[offset:], position + offset
            if not more:
                if buffer:
                    raise NotPlainText("a truncated BGZF block")
                return


def _plain_pieces(path: str, start: int, cut: int | None) -> Iterator[tuple[int, bytes]]:
    """``(file offset, bytes)`` of a plain file from ``start``; no piece spans ``cut``."""
    with open(path, "rb") as f:
        f.seek(start)
        position = start
        while True:
            size = READ_SIZE if cut is None or position >= cut else min(READ_SIZE, cut - position)
            data = f.read(size)
            if not data:
                return
            yield position, data
            position += len(data)


def _span_lines(pieces: Iterator[tuple[int, bytes | bytearray]], cut: int | None,
                discard: bool) -> Iterator[list[bytes]]:
    """The lines of a span, without newlines, a list at a time; ``discard``: the first line
    (up to the first newline) is not the span's (the span does not start the file)."""
    pending: list[bytes | bytearray] = []  # the start of a line, in pieces (a long line is joined once)
    held = 0
    for offset, data in pieces:
        last = cut is not None and offset >= cut  # the line running into the cut or starting at it
        end = data.find(b"\n") if last or discard else data.rfind(b"\n")
        if end < 0:
            if not discard:
                pending.append(data)
                held += len(data)
                if held > MAX_LINE:
                    raise NotPlainText("a line longer than this reader holds")
            continue
        if last:
            if not discard:
                yield [b"".join([*pending, data[:end]])]
            return
        if discard:
            data, discard = data[end + 1 :], False
            end = data.rfind(b"\n")
            if end < 0:
                pending, held = [data], len(data)
                continue
        lines = b"".join([*pending, data]).split(b"\n")  # (the last: what follows the last newline)
        pending = [lines.pop()]
        held = len(pending[0])
        yield lines
    if not discard and any(pending):
        yield [b"".join(pending)]


def record_lines(path: str, kind: str, block_size: int, span: Span = (0, None)) -> Iterator[list[bytes]]:
    """The record lines of ``span`` of the VCF text at ``path`` (``kind`` from :func:`text_kind`),
    without their newlines, ``block_size`` at a time (the last block may be shorter)."""
    start, cut = span
    pieces = _bgzf_pieces(path, start) if kind == "bgzf" else _plain_pieces(path, start, cut)
    block: list[bytes] = []
    in_header = start == 0
    for lines in _span_lines(pieces, cut, discard=start > 0):
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
    if block:
        yield block


def gt_only_start(path: str, kind: str) -> bool:
    """Whether the first record of the file has GT alone in FORMAT (the fast path is tried only
    then: a file of other records is read by htslib without a detour)."""
    for lines in record_lines(path, kind, 1):
        columns = lines[0].split(b"\t", 9)
        return len(columns) > 8 and columns[8] == b"GT"
    return False


def _body_start(path: str, kind: str) -> int | None:
    """The file offset of the BGZF block (the byte of a plain file) where the first record
    line starts; None when the header does not end in the first ``MAX_LINE`` bytes."""
    pieces = _bgzf_pieces(path, 0) if kind == "bgzf" else _plain_pieces(path, 0, None)
    seen = b""
    for offset, data in pieces:
        seen += data
        chrom = seen.find(b"\n#CHROM")
        end = seen.find(b"\n", chrom + 1) if chrom >= 0 else -1
        if end >= 0:
            return offset + (end + 1 - (len(seen) - len(data)) if kind == "plain" else 0)
        if len(seen) > MAX_LINE:
            return None
    return None


def text_size(path: str, kind: str) -> int:
    """About how many bytes of text the records of the file hold: the file's size, times the
    ratio of inflated to compressed bytes of its first :data:`_SAMPLED_BLOCKS` BGZF blocks of
    records (a bgzipped file); 0 when the end of its header cannot be found."""
    body = _body_start(path, kind)
    if body is None:
        return 0
    size = os.path.getsize(path) - body
    if kind == "plain":
        return size
    blocks = list(itertools.islice(_bgzf_pieces(path, body), _SAMPLED_BLOCKS + 1))
    if len(blocks) < 2:
        return sum(len(data) for _, data in blocks)
    inflated = sum(len(data) for _, data in blocks[:-1])
    return size * inflated // (blocks[-1][0] - body)


def _next_block(path: str, target: int, size: int) -> int | None:
    """The offset of the first BGZF block starting at or after ``target``: a match of the block
    header followed by :data:`_CHAIN` more blocks (or the end of the file)."""
    with open(path, "rb") as f:
        f.seek(target)
        window = f.read(1 << 20)
    found = window.find(_BGZF_MAGIC)
    while 0 <= found:
        offset, chained = target + found, 0
        with open(path, "rb") as f:
            while chained < _CHAIN and offset < size:
                f.seek(offset)
                block = _bgzf_block(f.read(18), 0)
                if block is None:
                    break
                offset, chained = offset + block, chained + 1
        if chained == _CHAIN or offset == size:
            return target + found
        found = window.find(_BGZF_MAGIC, found + 1)
    return None


def spans(path: str, kind: str, parts: int) -> list[Span] | None:
    """``parts`` spans (fewer for a small file) of about equal size covering the records of
    the file; None when the header cannot be found."""
    body = _body_start(path, kind)
    if body is None:
        return None
    size = os.path.getsize(path)
    cuts: list[int] = []
    for k in range(1, parts):
        target = body + (size - body) * k // parts
        cut = target if kind == "plain" else _next_block(path, target, size)
        if cut is not None and cut > max([body, *cuts]) and cut < size:
            cuts.append(cut)
    starts = [0, *cuts]
    return list(zip(starts, [*cuts, None]))
