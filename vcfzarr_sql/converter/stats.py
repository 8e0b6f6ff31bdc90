"""What the data says about each column: widest value dimension and integer range.

Collected per block while parsing, merged over blocks and partitions, and used to size the
store's dimensions and pick integer dtypes once every record has been seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ColumnStats:
    width: int = 1  # size of the trailing value dimension (1 for scalar columns)
    low: int = 0  # smallest integer value (sentinels included)
    high: int = 0  # largest integer value
    max_bytes: int = 0  # longest string, in UTF-8 bytes (Character fields only)

    def merge(self, other: ColumnStats) -> ColumnStats:
        return ColumnStats(
            width=max(self.width, other.width),
            low=min(self.low, other.low),
            high=max(self.high, other.high),
            max_bytes=max(self.max_bytes, other.max_bytes),
        )


def column_stats(values: np.ndarray, *, vector: bool, measure_strings: bool = False) -> ColumnStats:
    """Stats of one block column; ``vector``: the last dimension is the value dimension."""
    width = values.shape[-1] if vector else 1
    low = high = 0
    if values.dtype.kind == "i" and values.size:
        low, high = int(values.min()), int(values.max())
    max_bytes = 0
    if measure_strings and values.size:
        max_bytes = max(len(x.encode()) for x in values.ravel())
    return ColumnStats(width=width, low=low, high=high, max_bytes=max_bytes)


def merge_stats(into: dict[str, ColumnStats], more: dict[str, ColumnStats]) -> None:
    """Merge ``more`` into ``into`` (in place)."""
    for name, stats in more.items():
        into[name] = into[name].merge(stats) if name in into else stats
