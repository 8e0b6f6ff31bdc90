"""The scan planner: (store layout, filter, columns, samples) -> a :class:`ScanPlan` of chunk tasks.

Pure: it reads the store's metadata and region index (the store builds the index in memory
when the store has none) and returns a plan; nothing is decoded and nothing is mutated.

Each :class:`ChunkTask` is one variant chunk (times one sample chunk for the ``calls`` table)
whose zones might hold matching rows, with the columns to decode and its residual filter:
the whole pushed filter, or None when every row of the task is known to match (then the
columns only the filter needs are not read either).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql import spec
from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.scan import expressions as ex
from vcfzarr_sql.scan.prune import Zones, prune
from vcfzarr_sql.scan.genotype_stats import PREFIX as GT_SUMMARY_PREFIX
from vcfzarr_sql.scan.schema import FORMAT_PREFIX

TABLES = ("variants", "calls")


class StoreLayout(Protocol):
    """What the planner needs of a store (``vcfzarr_sql.store.VczStore`` is one)."""

    contigs: list[str]
    samples: np.ndarray
    samples_chunk_size: int
    num_sample_chunks: int
    num_variant_chunks: int
    region_index: np.ndarray


@dataclass(frozen=True, eq=False)
class ScanRequest:
    """What a scanner asks for: output ``columns`` (None: all), a pushed ``filter`` (already
    ANDed with any ``region``), and ``samples``: sorted indexes of the selected samples (None:
    all)."""

    table: str
    schema: pa.Schema
    columns: tuple[str, ...] | None = None
    filter: pc.Expression | None = None
    samples: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class ChunkTask:
    """Decode ``columns`` of one chunk, keep the rows satisfying ``filter`` (None: all of them).

    ``samples``: sorted store indexes of the samples to decode (None: all); for the ``calls``
    table, those of ``sample_chunk``. ``num_rows``: rows of the task before filtering.
    """

    variant_chunk: int
    sample_chunk: int | None
    samples: np.ndarray | None
    columns: tuple[str, ...]
    filter: pc.Expression | None
    num_rows: int

    @property
    def reads_calls(self) -> bool:
        """Whether the task decodes per-call values: a FORMAT column, or rows of ``calls``."""
        return self.sample_chunk is not None or any(
            c.startswith((FORMAT_PREFIX, GT_SUMMARY_PREFIX)) for c in self.columns
        )


@dataclass(frozen=True, eq=False)
class ScanPlan:
    """The chunk tasks of a scan, in store order, and the schema of the batches it yields."""

    table: str
    schema: pa.Schema
    tasks: tuple[ChunkTask, ...]
    variant_chunks_total: int
    sample_chunks_total: int


def _output_columns(request: ScanRequest) -> tuple[str, ...]:
    if request.columns is None:
        return tuple(request.schema.names)
    unknown = [c for c in request.columns if c not in request.schema.names]
    if unknown:
        raise QueryError(f"columns: no column named {unknown[0]!r} in the {request.table} table")
    return tuple(request.columns)


def _sample_groups(
    layout: StoreLayout, predicate: ex.Predicate, selected: np.ndarray
) -> list[tuple[int, np.ndarray]]:
    """(sample chunk, sorted sample indexes) of the selected samples the predicate might match."""
    names = [np.array([s], dtype=object) for s in layout.samples[selected]]
    if len(names):
        might = prune(predicate, Zones(layout.contigs, samples=names)).can_true[0]
        selected = selected[might]
    chunk_of = selected // layout.samples_chunk_size
    return [(int(c), selected[chunk_of == c]) for c in np.unique(chunk_of)]


def _tasks(
    layout: StoreLayout,
    request: ScanRequest,
    predicate: ex.Predicate,
    ri: np.ndarray,
    groups: list[tuple[int | None, np.ndarray | None]],
    columns: tuple[str, ...],
) -> list[ChunkTask]:
    """One task per (variant chunk, sample group) whose zones might match, in store order."""
    filter_columns = ex.columns_of(request.filter, request.schema)
    filtered_columns = tuple(c for c in request.schema.names if c in set(columns) | filter_columns)
    unfiltered_columns = tuple(c for c in request.schema.names if c in columns)
    if not len(ri):
        return []
    zones = Zones(
        layout.contigs,
        contig=ri[:, spec.RI_CONTIG],
        pos_min=ri[:, spec.RI_START],
        pos_max=ri[:, spec.RI_END],
        end_max=ri[:, spec.RI_MAX_END],
        samples=(
            [layout.samples[s] for _, s in groups] if request.table == "calls" else None
        ),
    )
    truth = prune(predicate, zones)
    shape = (len(ri), len(groups))
    might = np.broadcast_to(truth.can_true, shape)
    must = np.broadcast_to(truth.must_be_true, shape)

    # Region index rows grouped by variant chunk: a chunk might match when any of its rows
    # might, and needs no row filter when all of them must.
    order = np.argsort(ri[:, spec.RI_CHUNK], kind="stable")
    chunks, starts = np.unique(ri[order, spec.RI_CHUNK], return_index=True)
    chunk_might = np.logical_or.reduceat(might[order], starts, axis=0)
    chunk_must = np.logical_and.reduceat(must[order], starts, axis=0)
    records = np.add.reduceat(ri[order, spec.RI_COUNT], starts)
    tasks = []
    for c, g in zip(*np.nonzero(chunk_might)):  # chunk-major: store order
        sample_chunk, samples = groups[g]
        whole = bool(chunk_must[c, g])
        tasks.append(
            ChunkTask(
                variant_chunk=int(chunks[c]),
                sample_chunk=sample_chunk,
                samples=samples,
                columns=unfiltered_columns if whole else filtered_columns,
                filter=None if whole else request.filter,
                num_rows=int(records[c]) * (1 if sample_chunk is None else len(samples)),
            )
        )
    return tasks


def plan_scan(layout: StoreLayout, request: ScanRequest) -> ScanPlan:
    """The chunk tasks that might hold rows of ``request``.

    >>> from types import SimpleNamespace
    >>> layout = SimpleNamespace(contigs=["0", "1", "2"], samples=np.array(["a"], object),
    ...     samples_chunk_size=1, num_sample_chunks=1, num_variant_chunks=3,
    ...     region_index=np.array([[0, 0, 111, 112, 112, 2], [0, 1, 14370, 14370, 14370, 1],
    ...         [1, 1, 17330, 1230237, 1230237, 3], [2, 1, 1234567, 1235237, 1235237, 2],
    ...         [2, 2, 10, 10, 11, 1]]))
    >>> schema = pa.schema([("contig", pa.string()), ("pos", pa.int64()), ("end", pa.int64())])
    >>> region = (pc.field("contig") == "1") & (pc.field("pos") <= 20000) & (pc.field("end") >= 1)
    >>> [t.variant_chunk for t in plan_scan(layout, ScanRequest("variants", schema,
    ...                                                          filter=region)).tasks]
    [0, 1]
    """
    if request.table not in TABLES:
        raise QueryError(f"table: expected one of {', '.join(TABLES)}, got {request.table!r}")
    columns = _output_columns(request)
    predicate = ex.bind_filter(request.filter, request.schema)
    ri = np.asarray(layout.region_index, dtype=np.int64).reshape(-1, spec.REGION_INDEX_FIELDS)
    if request.table == "calls":
        selected = (
            np.arange(len(layout.samples)) if request.samples is None else request.samples
        )
        groups = _sample_groups(layout, predicate, np.asarray(selected, dtype=np.int64))
    else:
        groups = [(None, request.samples)]
    tasks = _tasks(layout, request, predicate, ri, groups, columns) if groups else []
    return ScanPlan(
        table=request.table,
        schema=pa.schema([request.schema.field(c) for c in columns]),
        tasks=tuple(tasks),
        variant_chunks_total=int(layout.num_variant_chunks),
        sample_chunks_total=int(layout.num_sample_chunks),
    )
