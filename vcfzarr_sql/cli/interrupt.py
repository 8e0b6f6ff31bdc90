"""Ctrl-C during a query: cancel the query, never tear the process down mid-scan.

Python raises KeyboardInterrupt wherever the main thread happens to be, which may be inside a
scan that DuckDB is pulling batches from; the scan then fails in odd ways, sometimes long
after. While a query runs, :func:`cancelling` turns SIGINT into DuckDB's own interrupt of the
connection instead, and the query ends with :class:`Interrupted`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # DuckDB is not imported by the CLI's entry point
    import duckdb


class Interrupted(Exception):
    """The user pressed Ctrl-C while a query ran; the query was cancelled."""

    def __init__(self) -> None:
        super().__init__("interrupted")


@contextlib.contextmanager
def cancelling(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the block with Ctrl-C cancelling ``con``'s query; raises :class:`Interrupted` if it
    was pressed (whatever the block then raised, or after it finished)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []

    def interrupt(signum: int, frame: object) -> None:
        pressed.append(signum)
        con.interrupt()

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    except KeyboardInterrupt:  # raised by DuckDB itself, or before the handler took over
        pressed.append(signal.SIGINT)
    except Exception:
        if not pressed:
            raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise Interrupted()
