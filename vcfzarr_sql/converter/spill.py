"""Spilled blocks: the columns of a block of records, kept on disk between parsing and encoding.

Parsing learns dimension widths only as it goes, so blocks are spilled with block-local
widths (fast LZ4 compression) and padded to the final widths when encoded.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
from numcodecs import LZ4

_CODEC = LZ4(acceleration=1)


def write_block(path: str | Path, columns: dict[str, np.ndarray]) -> None:
    """Write a block's columns to ``path``."""
    payload = pickle.dumps(columns, protocol=pickle.HIGHEST_PROTOCOL)
    Path(path).write_bytes(_CODEC.encode(payload))


def read_block(path: str | Path) -> dict[str, np.ndarray]:
    """The columns written by :func:`write_block`."""
    return pickle.loads(_CODEC.decode(Path(path).read_bytes()))
