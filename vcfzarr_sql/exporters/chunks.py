"""What every export shares: the selected calls, chunk by chunk, and what an export wrote."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.exporters.calls import ChunkCalls, chunk_calls
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH
from vcfzarr_sql.query.selection import SelectedRecords
from vcfzarr_sql.store.source import ChunkSource


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote: the files, the records written and those the format could not
    hold (left out: multi-allelic records in a .bed), the samples."""

    files: tuple[str, ...]
    records: int
    left_out: int
    samples: int


#: glibc's ``mallopt`` parameters: the free memory at the heap's top returned to the system
#: beyond this many bytes, and the size from which an allocation is a mapping of its own
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: (a chunk's arrays, up to 1000 records x 10,000 diploid samples of int8, are kept on the heap)
TRIM_THRESHOLD, MMAP_THRESHOLD = 128 << 20, 32 << 20


@functools.cache
def reuse_freed_memory() -> bool:
    """Make glibc's ``malloc`` keep the memory of freed chunk arrays for the next chunk's, from
    now on in this process (False: not glibc).

    By default an array of a few MB is a mapping of its own, or is handed back when freed:
    each chunk's arrays came in as fresh pages, one page fault each 4 kB (on 2,000 samples,
    about a quarter of a .pgen export's CPU, in the kernel). The process keeps up to
    :data:`TRIM_THRESHOLD` bytes of freed memory instead.
    """
    try:
        libc = ctypes.CDLL(None)  # (the process's symbols, libc's among them: no ldconfig run)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                    and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    except (OSError, AttributeError):
        return False


class Writer(Protocol):
    written: int
    left_out: int

    def write(self, calls: ChunkCalls) -> None: ...

    def close(self) -> None: ...


def selected_calls(selected: SelectedRecords) -> Iterator[ChunkCalls]:
    """The calls of each variant chunk of the selection that keeps some record, in output
    order, read a few chunks ahead in the scan threads; a store without genotypes is refused
    here, before anything is written."""
    if "GT" not in selected.store.format_fields:
        raise NotSupportedError(f"{selected.store.path}: the store has no genotypes (FORMAT/GT) to export")
    return _calls(selected)


def _calls(selected: SelectedRecords) -> Iterator[ChunkCalls]:
    def work(source: ChunkSource, chunk: int, rows: np.ndarray) -> ChunkCalls | None:
        return chunk_calls(source, chunk, rows, selected.samples) if len(rows) else None

    for calls in selected.runs(work, ahead=PREFETCH_DEPTH):
        if calls is not None:
            yield calls
