"""INFO values htslib cannot hold: 2 GiB or more (:data:`LIMIT` bytes).

htslib encodes an INFO value's length as a C ``int``: a longer value is stored as garbage or
cut short, and the INFO fields after it are lost, with no error (measured: a 2 GiB + 5 byte
String value read back as 5 bytes of the next key's encoding; bcftools drops such a record).
cyvcf2 gives no record's line length, so the converter cannot see it record by record.

But reading such a line makes htslib hold all of it in memory: a process whose peak resident
memory stays under :data:`LIMIT` read none (:func:`may_have_read_one`; this holds while its
pages stay in memory, swap aside). Only a process past it reads the file's lines once more
(:func:`first_long_value`: a decompression pass, with a closer look only into lines of
1 MiB or more) to name the first such value.

>>> text = b"##fileformat=VCFv4.2\\n#CHROM\\n1\\t5\\t.\\tA\\tC\\t.\\t.\\tDP=3;NOTE=abcdefgh;X=1\\n"
>>> first_long_value([text[:40], text[40:]], limit=8)
('1:5', 'NOTE')
>>> first_long_value([text], limit=9) is None
True
"""

from __future__ import annotations

import functools
import gzip
import itertools
import re
import resource
import sys
from collections.abc import Iterable, Iterator

#: Bytes of an INFO value htslib cannot hold (its lengths are C ``int``).
LIMIT = 1 << 31
#: Bytes decompressed at a time.
_READ_SIZE = 1 << 22
#: Bytes of a record's CHROM and POS kept to name it (and of an INFO key).
_HEAD = 1 << 10
#: Bytes of a line held before its INFO values are looked into as they come.
_HOLD = 1 << 20
_KEY_END = re.compile(rb"[;=\t]")


def peak_resident_bytes() -> int:
    """This process's peak resident memory so far (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def may_have_read_one(limit: int = LIMIT) -> bool:
    """Whether this process may have read a line holding a value of ``limit`` bytes or more
    (its peak resident memory reached ``limit``)."""
    return peak_resident_bytes() >= limit


class _Line:
    """What one record line shows of its INFO values, fed piece by piece."""

    def __init__(self, limit: int):
        self.limit = limit
        self.column = 0
        self.head = bytearray()  # CHROM, tab, POS (cut at _HEAD bytes)
        self.key = bytearray()
        self.value: int | None = None  # bytes of the current INFO value (None: in its key)
        self.found: str | None = None  # the key of a value of ``limit`` bytes or more

    def feed(self, piece: bytes, at: int = 0, stop: int | None = None) -> None:
        """Take ``piece[at:stop]``, the next bytes of the line (no newline among them)."""
        stop = len(piece) if stop is None else stop
        while at < stop and self.column <= 7 and self.found is None:
            if self.column < 7:
                tab = piece.find(b"\t", at, stop)
                end = stop if tab < 0 else tab
                if self.column < 2:
                    self.head += piece[at:end][: _HEAD - len(self.head)]
                if tab < 0:
                    return
                self.column += 1
                if self.column == 1:
                    self.head += b":"
                at = tab + 1
            elif self.value is None:  # in a key
                match = _KEY_END.search(piece, at, stop)
                end = stop if match is None else match.start()
                self.key += piece[at:end][: _HEAD - len(self.key)]
                if match is None:
                    return
                self._end(piece[end : end + 1])
                at = end + 1
            else:  # in a value (an "=" is part of it)
                ends = [found for found in (piece.find(b";", at, stop), piece.find(b"\t", at, stop))
                        if found >= 0]
                end = min(ends, default=stop)
                self.value += end - at
                if self.value >= self.limit:
                    self.found = self.key.decode(errors="replace")
                    return
                if not ends:
                    return
                self._end(piece[end : end + 1])
                at = end + 1

    def _end(self, delimiter: bytes) -> None:
        if delimiter == b"=":
            self.value = 0
        elif delimiter == b";":
            self.key, self.value = bytearray(), None
        else:  # the end of INFO
            self.column = 8


def first_long_value(pieces: Iterable[bytes], limit: int = LIMIT) -> tuple[str, str] | None:
    """``(CHROM:POS, INFO key)`` of the first INFO value of ``limit`` bytes or more in
    the VCF text given in ``pieces`` (None: none). Only lines of ``limit`` bytes or more (or
    :data:`_HOLD`, which bounds what is held of a line) are looked into."""
    line: _Line | None = None  # the current line, once looked into
    held, length, header = bytearray(), 0, False
    for piece in pieces:
        at = 0
        while True:
            newline = piece.find(b"\n", at)
            end = len(piece) if newline < 0 else newline
            length += end - at
            if line is not None:
                line.feed(piece, at, end)
            elif not header:
                held += piece[at:end]
                if length >= min(limit, _HOLD):
                    header = held.startswith(b"#")
                    if not header:
                        line = _Line(limit)
                        line.feed(bytes(held))
                    held = bytearray()
            if line is not None and line.found is not None:
                return line.head.decode(errors="replace"), line.found
            if newline < 0:
                break
            line, held, length, header, at = None, bytearray(), 0, False, newline + 1
            if len(piece) - at < limit:  # (no whole line left in the piece can be that long)
                at = piece.rfind(b"\n", at) + 1 or at
    return None


def _pieces(path: str) -> Iterator[bytes]:
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
        while piece := f.read(_READ_SIZE):
            yield piece


@functools.cache
def long_value_in(path: str, limit: int = LIMIT) -> tuple[str, str] | None:
    """:func:`first_long_value` of the VCF text file ``path`` (plain, gzip or BGZF; a BCF
    holds no such value: None), read once per process."""
    pieces = _pieces(path)
    first = next(pieces, b"")
    if first.startswith(b"BCF"):
        return None
    return first_long_value(itertools.chain([first], pieces), limit)
