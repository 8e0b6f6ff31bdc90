"""What a tabix (.tbi) or CSI (.csi) index says about where each contig's records are.

Only what partitioning needs: for each contig with records, the file offset of its first
record (file order of contigs), the record count (for progress), and the file offset of each
leaf bin (to cut a contig into position ranges of about equal size).
"""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IndexedContig:
    name: str
    first_offset: int  # BGZF virtual offset of the first record
    last_offset: int  # BGZF virtual offset past the last record
    num_records: int | None
    leaves: tuple[tuple[int, int], ...]  # (first position of leaf bin, virtual offset), by position


def index_path(path: str | Path) -> Path | None:
    """The .tbi or .csi index next to ``path``, if any."""
    for suffix in (".csi", ".tbi"):
        candidate = Path(str(path) + suffix)
        if candidate.exists():
            return candidate
    return None


class _Buffer:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def read(self, fmt: str) -> tuple[int, ...]:
        """The integers of little-endian struct format ``fmt`` at the read position."""
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def read_int(self, fmt: str) -> int:
        """The one integer of format ``fmt`` (``"i"``, ``"I"``...) at the read position."""
        (value,) = self.read(fmt)
        return value

    def skip(self, n: int) -> None:
        self.pos += n


def _names(blob: bytes) -> list[str]:
    return [n.decode() for n in blob.split(b"\0") if n]


def read_index(path: str | Path, header_contigs: list[str]) -> list[IndexedContig]:
    """The contigs with records in the index of ``path`` (a .tbi or .csi file), in file order."""
    buf = _Buffer(gzip.decompress(Path(path).read_bytes()))
    magic = buf.data[:4]
    buf.skip(4)
    if magic == b"TBI\1":
        n_ref = buf.read_int("i")
        buf.skip(24)
        l_nm = buf.read_int("i")
        names = _names(buf.data[buf.pos : buf.pos + l_nm])
        buf.skip(l_nm)
        min_shift, depth, csi = 14, 5, False
    elif magic == b"CSI\1":
        min_shift, depth, l_aux = buf.read("iii")
        aux = buf.data[buf.pos : buf.pos + l_aux]
        buf.skip(l_aux)
        names = _names(aux[28:]) if l_aux >= 28 else list(header_contigs)
        n_ref = buf.read_int("i")
        csi = True
    else:
        raise ValueError(f"{path}: not a TBI or CSI index")
    n_bins = ((1 << (3 * (depth + 1))) - 1) // 7
    first_leaf = ((1 << (3 * depth)) - 1) // 7
    contigs = []
    for ref in range(n_ref):
        first = last = None
        count = None
        leaves: dict[int, int] = {}
        for _ in range(buf.read_int("i")):
            bin_id = buf.read_int("I")
            if csi:
                buf.skip(8)
            n_chunk = buf.read_int("i")
            chunks = [buf.read("QQ") for _ in range(n_chunk)]
            if bin_id == n_bins + 1:  # pseudo-bin: (unmapped offsets), (mapped, unmapped counts)
                if len(chunks) >= 2:
                    count = chunks[1][0]
                continue
            begin = min(c[0] for c in chunks)
            end = max(c[1] for c in chunks)
            first = begin if first is None else min(first, begin)
            last = end if last is None else max(last, end)
            if bin_id >= first_leaf:
                leaves[(bin_id - first_leaf) << min_shift] = begin
        if not csi:
            buf.skip(8 * buf.read_int("i"))
        if first is not None and ref < len(names):
            assert last is not None  # set with first
            contigs.append(
                IndexedContig(names[ref], first, last, count, tuple(sorted(leaves.items())))
            )
    contigs.sort(key=lambda c: c.first_offset)
    return contigs
