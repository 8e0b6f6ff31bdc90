"""Run scan tasks a few ahead of the consumer in a small thread pool, yielding results in order.

numcodecs releases the GIL while it decompresses, so decoding the next chunks overlaps
DuckDB's work on the current batch. The pool is shared by all scans and started once
(:class:`~vcfzarr_sql.store.threads.SharedPool`: fixed size, a forked child starts its own).
Each scan keeps at most ``depth`` tasks queued or running; when the consumer
stops early (a LIMIT: the reader is closed or dropped), its pending tasks are cancelled and its
running ones waited for before the generator returns. A scan of one task, or with ``depth``
0, runs inline.

>>> list(prefetched(lambda x: x * x, range(5)))
[0, 1, 4, 9, 16]
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import TYPE_CHECKING, TypeVar

from vcfzarr_sql.store.threads import SharedPool

if TYPE_CHECKING:  # (imported at the first pool: a process that scans inline, as view does, never loads
    # concurrent.futures nor the logging it imports)
    from concurrent.futures import Future

T = TypeVar("T")
R = TypeVar("R")

#: Decode threads: 2 to 4, by the machine's cores.
THREADS = min(4, max(2, os.cpu_count() or 2))
#: Tasks a scan keeps queued or running.
PREFETCH_DEPTH = 2 * THREADS

_POOL = SharedPool(THREADS, "vcfzarr-scan")


def prefetched(
    work: Callable[[T], R], items: Iterable[T], *, depth: int = PREFETCH_DEPTH
) -> Iterator[R]:
    """``work(item)`` for each item, in order, computed up to ``depth`` items ahead (items
    taken from ``items`` as they are submitted)."""
    if depth == 0 or (isinstance(items, Sized) and len(items) <= 1):
        yield from map(work, items)
        return
    from concurrent.futures import wait

    remaining = iter(items)
    executor = _POOL.executor()
    pending: deque[Future[R]] = deque()
    try:
        for item in itertools.islice(remaining, depth):
            pending.append(executor.submit(work, item))
        while pending:
            result = pending.popleft().result()
            for item in itertools.islice(remaining, 1):
                pending.append(executor.submit(work, item))
            yield result
    finally:
        for future in pending:
            future.cancel()
        wait(pending)
