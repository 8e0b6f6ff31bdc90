"""Thread pools a process shares, each started at its first use and forgotten in a forked child.

Starting a thread costs up to ~0.1 s while DuckDB holds the GIL, so the scan's decode threads
and a remote store's fetch threads are started once and shared by every scan; their sizes are
fixed, so scans never add threads. A process forked from one that used a pool (a Spark or
multiprocessing worker) starts its own: the parent's threads were not copied into it.
``concurrent.futures`` (and the logging it imports) is imported at the first pool, so a process
that never starts one (``view`` decodes inline) never loads it.

>>> pool = SharedPool(2, "doctest")
>>> pool.executor() is pool.executor()
True
>>> pool.executor().submit(sum, [1, 2]).result()
3
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor


class SharedPool:
    """A ``ThreadPoolExecutor`` of ``threads`` threads named ``prefix``, made at first use."""

    def __init__(self, threads: int, prefix: str):
        self.threads, self.prefix = threads, prefix
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def executor(self) -> ThreadPoolExecutor:
        """The pool, started by the first caller."""
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix=self.prefix)
            return self._executor

    def _forget(self) -> None:
        """In a forked child: drop the parent's pool (its threads were not copied) and lock."""
        self._executor, self._lock = None, threading.Lock()
