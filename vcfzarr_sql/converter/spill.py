"""Spilled blocks: the columns of a block of records, kept between parsing and encoding.

Parsing learns dimension widths only as it goes, so blocks are spilled with block-local
widths (fast LZ4 compression) and padded to the final widths when encoded. With one worker,
the process that parses is the one that encodes: a block written with ``hold`` is kept in
that process's memory instead (no compression, no file), up to :data:`HOLD_BYTES` and a
quarter of the process's memory bound, and the rest spilled; it is dropped when read with
``release``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
from numcodecs import LZ4

from vcfzarr_sql.converter.workers import memory_limit

_CODEC = LZ4(acceleration=1)
#: The most bytes of blocks one process holds in memory (:func:`write_block` with ``hold``).
HOLD_BYTES = 1 << 29
_held: dict[str, dict[str, np.ndarray]] = {}  # path -> columns, in this process


def _held_bytes() -> int:
    return sum(values.nbytes for columns in _held.values() for values in columns.values())


def _room() -> int:
    """Bytes of blocks this process may still hold."""
    bound = memory_limit()
    return min(HOLD_BYTES, HOLD_BYTES if bound is None else bound // 4) - _held_bytes()


def write_block(path: str | Path, columns: dict[str, np.ndarray], hold: bool = False) -> None:
    """Write a block's columns to ``path``; ``hold``: keep them in this process's memory
    instead while there is room (see the module docstring)."""
    _held.pop(str(path), None)  # (written again: the fast path's block read by htslib)
    if hold and sum(values.nbytes for values in columns.values()) <= _room():
        _held[str(path)] = columns
        return
    payload = pickle.dumps(columns, protocol=pickle.HIGHEST_PROTOCOL)
    Path(path).write_bytes(_CODEC.encode(payload))


def read_block(path: str | Path, release: bool = False) -> dict[str, np.ndarray]:
    """The columns written by :func:`write_block`; ``release``: the block is read for the last
    time (a held block is dropped)."""
    held = _held.pop(str(path), None) if release else _held.get(str(path))
    if held is not None:
        return held
    return pickle.loads(_CODEC.decode(Path(path).read_bytes()))


def drop_block(path: str | Path) -> None:
    """Forget the block at ``path``: held, or written to the file."""
    if _held.pop(str(path), None) is None:
        Path(path).unlink(missing_ok=True)
