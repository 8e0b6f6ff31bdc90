"""Whether records come sorted, as tabix needs them: each contig's records together, POS never
decreasing within a contig. An unsorted input converts (the region index bounds each chunk's
records per contig, so pruning stays correct), but the user is told where it first goes wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SortCheck:
    """Fed the blocks of one partition in order; ``first`` names the first record out of order.

    >>> check = SortCheck()
    >>> check.feed(np.array(["1", "1", "2"], dtype=object), np.array([5, 9, 3]))
    >>> check.feed(np.array(["2", "1"], dtype=object), np.array([4, 1])); check.first
    '1:1 (after 2:4, and contig 1 came earlier)'
    >>> check = SortCheck(); check.feed(np.array(["1", "1"], dtype=object), np.array([9, 5]))
    >>> check.first
    '1:5 (after 1:9)'
    """

    first: str | None = None
    last: tuple[str, int] | None = None
    done: set[str] = field(default_factory=set)  # contigs whose records ended

    def feed(self, contigs: np.ndarray, positions: np.ndarray) -> None:
        if self.first is not None or len(contigs) == 0:
            return
        if self.last is not None:
            contigs = np.concatenate([np.array([self.last[0]], dtype=object), contigs])
            positions = np.concatenate([[self.last[1]], positions])
        same = contigs[1:] == contigs[:-1]
        backwards = np.flatnonzero(same & (positions[1:] < positions[:-1])) + 1
        changes = np.flatnonzero(~same) + 1
        for i in changes:
            self.done.add(contigs[i - 1])
            if contigs[i] in self.done and (not len(backwards) or i < backwards[0]):
                self.first = (f"{contigs[i]}:{positions[i]} (after {contigs[i - 1]}:"
                              f"{positions[i - 1]}, and contig {contigs[i]} came earlier)")
                return
        if len(backwards):
            i = backwards[0]
            self.first = f"{contigs[i]}:{positions[i]} (after {contigs[i - 1]}:{positions[i - 1]})"
            return
        self.last = (contigs[-1], int(positions[-1]))
