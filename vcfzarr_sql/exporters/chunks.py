"""What every export shares: the selected calls, chunk by chunk, and what an export wrote."""

from __future__ import annotations

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
