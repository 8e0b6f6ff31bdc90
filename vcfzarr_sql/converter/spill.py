"""Spilled blocks: the columns of a block of records, kept between parsing and encoding.

Parsing learns dimension widths only as it goes, so blocks are spilled with block-local
widths (fast LZ4 compression) and padded to the final widths when encoded. With one worker,
the process that parses is the one that encodes: a block written with ``hold`` is kept in
that process's memory instead (no compression, no file), up to :data:`HOLD_BYTES` and a
quarter of the process's memory bound (counted by :func:`block_bytes`: buffers and the objects
of object columns), and the rest spilled; it is dropped when read with
``release``.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
from numcodecs.lz4 import LZ4

from vcfzarr_sql.converter.workers import memory_limit

_CODEC = LZ4(acceleration=1)
#: The most bytes of blocks one process holds in memory (:func:`write_block` with ``hold``).
HOLD_BYTES = 1 << 29
_held: dict[str, tuple[dict[str, np.ndarray], int]] = {}  # path -> (columns, their bytes)
_held_total = 0  # the bytes of the blocks held in this process


def block_bytes(columns: dict[str, np.ndarray]) -> int:
    """The memory a block's columns keep alive: each array's buffer (a view's whole base)
    and the objects of object columns (IDs, alleles, filters: ~3x their pointers).

    >>> block_bytes({"pos": np.arange(4, dtype=np.int32), "id": np.array(["rs1", "rs2"], object)})
    136
    """
    total = 0
    for values in columns.values():
        base = values.base if isinstance(values.base, np.ndarray) else values
        total += base.nbytes
        if values.dtype == object:
            total += _objects_bytes(values.ravel().tolist())
    return total


_EMPTY_STR = sys.getsizeof("")  # (an ASCII string's size is this plus its length)


def _objects_bytes(objects: list[object]) -> int:
    """``sum(map(sys.getsizeof, objects))``; ASCII strings (nearly every object column) sized
    from their joined length: getsizeof per object took ~0.08 CPU-s of reading 100,000
    records of one sample (``add``), a tenth of it.

    >>> _objects_bytes(["rs1", ""]) == sys.getsizeof("rs1") + sys.getsizeof(""), _objects_bytes(["\u00e9", 1]) > 0
    (True, True)
    """
    try:
        joined = "".join(objects)  # type: ignore[arg-type]
    except TypeError:  # (not all strings)
        joined = None
    if joined is not None and joined.isascii():
        return len(joined) + _EMPTY_STR * len(objects)
    return sum(map(sys.getsizeof, objects))


def _room() -> int:
    """Bytes of blocks this process may still hold."""
    bound = memory_limit()
    return min(HOLD_BYTES, HOLD_BYTES if bound is None else bound // 4) - _held_total


def _forget(path: str) -> dict[str, np.ndarray] | None:
    """Stop holding the block at ``path``; its columns if it was held."""
    global _held_total
    held = _held.pop(path, None)
    if held is None:
        return None
    _held_total -= held[1]
    return held[0]


def write_block(path: str | Path, columns: dict[str, np.ndarray], hold: bool = False) -> None:
    """Write a block's columns to ``path``; ``hold``: keep them in this process's memory
    instead while there is room (see the module docstring)."""
    global _held_total
    _forget(str(path))  # (written again: the fast path's block read by htslib)
    size = block_bytes(columns) if hold else 0
    if hold and size <= _room():
        _held[str(path)] = (columns, size)
        _held_total += size
        return
    payload = pickle.dumps(columns, protocol=pickle.HIGHEST_PROTOCOL)
    Path(path).write_bytes(_CODEC.encode(payload))


def read_block(path: str | Path, release: bool = False) -> dict[str, np.ndarray]:
    """The columns written by :func:`write_block`; ``release``: the block is read for the last
    time (a held block is dropped)."""
    held = _forget(str(path)) if release else _held.get(str(path), (None, 0))[0]
    if held is not None:
        return held
    return pickle.loads(_CODEC.decode(Path(path).read_bytes()))


def drop_block(path: str | Path) -> None:
    """Forget the block at ``path``: held, or written to the file."""
    if _forget(str(path)) is None:
        Path(path).unlink(missing_ok=True)
