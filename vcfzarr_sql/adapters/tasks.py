"""Scan tasks: a scan cut into picklable pieces that any engine can run, in any process.

:func:`vcfzarr_sql.scan_tasks` plans a table (``variants`` or ``calls``) of a store for some columns, a
pyarrow filter, a region and samples, and cuts the plan into :class:`ScanTask` s: runs of
consecutive (variant chunk, sample chunk) pieces in store order, each about ``target_bytes``
of decoded columns, each carrying the residual filter its chunks need. ``task.to_batches()``
yields exactly the matching rows of its chunks, with exactly ``tasks.schema``; the tasks'
rows together are the scan's rows. A task pickles small (its store travels as path, storage
options and version token, see :mod:`vcfzarr_sql.store.reopen`), so Daft, Ray, Spark or a
process pool can run it; the store is opened once per worker process, and a store that changed
since planning is a StoreError, never a wrong answer.

Planning is vectorised over the region index: a million chunks make arrays, not objects, and
only the tasks are Python objects. :class:`vcfzarr_sql.adapters.VczDataset` (DuckDB, Polars) runs
the same plans in the caller's process.

>>> import vcfzarr_sql, pyarrow.compute as pc
>>> tasks = vcfzarr_sql.scan_tasks("sample.zarr", "calls", columns=["pos", "fmt_GT"],
...     filter=pc.field("qual") > 10, region="20:1-2000000")              # doctest: +SKIP
>>> sum(batch.num_rows for task in tasks for batch in task.to_batches())  # doctest: +SKIP
9
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.query.execute import plan_batches
from vcfzarr_sql.query.plan import ScanPlan, ScanRequest
from vcfzarr_sql.query.request import scan_request, table_schema
from vcfzarr_sql.query.schema import FORMAT_COLUMN_PREFIX
from vcfzarr_sql.store.fetch import fetching
from vcfzarr_sql.store.vcz import VczStore

#: Decoded bytes a task aims at (before filtering): large enough that a task's fixed cost
#: (sending it, revalidating the store) is small against its decoding, small enough to
#: spread a scan over many workers.
DEFAULT_TARGET_BYTES = 64 << 20


def _value_bytes(type_: pa.DataType) -> float:
    """A rough decoded size of one value of ``type_`` (lists: two elements)."""
    if pa.types.is_dictionary(type_):
        return type_.index_type.bit_width / 8
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return 4 + 2 * _value_bytes(type_.value_type)
    if pa.types.is_struct(type_):
        return sum(_value_bytes(f.type) for f in type_)
    try:
        return max(type_.bit_width / 8, 1 / 8)
    except ValueError:  # strings, binary
        return 16


def _row_bytes(plan: ScanPlan, full: pa.Schema, samples: int) -> float:
    """A rough decoded size of one row of the columns ``plan`` decodes; per-sample lists of the
    ``variants`` table count once per selected sample."""
    total = 1.0
    for name in plan.filtered_columns:
        size = _value_bytes(full.field(name).type)
        if plan.table == "variants" and name.startswith(FORMAT_COLUMN_PREFIX):
            size = 4 + samples * _value_bytes(full.field(name).type.value_type)
        total += size
    return total


def _task_starts(piece_bytes: np.ndarray, target_bytes: float, min_tasks: int) -> np.ndarray:
    """Where each task starts: consecutive pieces cut every ``target_bytes`` (less when that
    would make fewer than ``min_tasks`` tasks).

    >>> _task_starts(np.array([10., 10, 10, 10, 10]), 20, 1).tolist()
    [0, 2, 4]
    >>> _task_starts(np.array([10., 10, 10, 10, 10]), 1000, 2).tolist()
    [0, 3]
    """
    if not len(piece_bytes):
        return np.zeros(0, np.int64)
    ends = np.cumsum(piece_bytes)
    target = min(float(target_bytes), ends[-1] / max(min_tasks, 1))
    task_of = np.floor((ends - piece_bytes) / max(target, 1e-9)).astype(np.int64)
    return np.flatnonzero(np.r_[True, task_of[1:] != task_of[:-1]])


@dataclass(frozen=True, eq=False)
class ScanTask:
    """Consecutive pieces of a scan: decode them, keep the rows satisfying the residual filter.

    Picklable; :meth:`to_batches` runs in any process that can reach the store.
    """

    store: VczStore
    plan: ScanPlan
    #: Rough decoded bytes of the task (before filtering): what tasks were cut by.
    estimated_bytes: int

    @property
    def schema(self) -> pa.Schema:
        """The schema of every batch of the task (the requested columns)."""
        return self.plan.schema

    @property
    def num_rows(self) -> int:
        """Rows of the task's chunks before filtering: an upper bound of what it yields."""
        return int(self.plan.rows.sum())

    @property
    def variant_chunks(self) -> np.ndarray:
        """The variant chunks the task reads, in store order."""
        return np.unique(self.plan.variant_chunks)

    @property
    def filter(self) -> pc.Expression | None:
        """The residual filter (None when every row of the task's chunks matches)."""
        return None if self.plan.whole.all() else self.plan.filter

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The matching rows of the task, a batch per piece that has any."""
        if not self.store.is_unchanged():
            raise StoreError(
                f"{self.store.path}: the store changed after the scan was planned; plan it again"
            )
        return plan_batches(fetching(self.store, self.plan), self.plan)

    def to_table(self) -> pa.Table:
        """The matching rows of the task as one table."""
        return pa.Table.from_batches(list(self.to_batches()), schema=self.schema)

    def __repr__(self) -> str:
        chunks = self.variant_chunks
        where = f"variant chunks {chunks[0]}-{chunks[-1]}" if len(chunks) else "no chunks"
        return f"<ScanTask of {self.store.path}: {len(self.plan)} pieces, {where}>"


@dataclass(frozen=True, eq=False)
class ScanTasks:
    """The tasks of one scan, in store order, and the schema of their batches.

    Held as the plan and where each task starts in it: a task object is made when it is
    taken (``tasks[i]``, iteration), so a plan of a million chunks cut into a hundred thousand
    tasks costs arrays, not objects, until an engine asks for them.
    """

    store: VczStore
    plan: ScanPlan
    #: Index of each task's first piece in ``plan``, and the rough decoded bytes of each piece.
    starts: np.ndarray
    piece_bytes: np.ndarray

    @property
    def schema(self) -> pa.Schema:
        return self.plan.schema

    @property
    def variant_chunks_total(self) -> int:
        return self.plan.variant_chunks_total

    @property
    def sample_chunks_total(self) -> int:
        return self.plan.sample_chunks_total

    @property
    def variant_chunks_read(self) -> int:
        """How many variant chunks the tasks read."""
        return len(np.unique(self.plan.variant_chunks))

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> ScanTask:
        if not -len(self) <= i < len(self):
            raise IndexError(f"task {i} of {len(self)}")
        i %= len(self)
        start = int(self.starts[i])
        stop = int(self.starts[i + 1]) if i + 1 < len(self) else len(self.plan)
        estimate = int(self.piece_bytes[start:stop].sum())
        return ScanTask(self.store, self.plan.slice(start, stop), estimate)

    def __iter__(self) -> Iterator[ScanTask]:
        return (self[i] for i in range(len(self)))

    @property
    def tasks(self) -> tuple[ScanTask, ...]:
        """Every task (made now)."""
        return tuple(self)

    def to_table(self) -> pa.Table:
        """Every matching row, the tasks run one after the other in this process."""
        batches = [batch for task in self for batch in task.to_batches()]
        return pa.Table.from_batches(batches, schema=self.schema)


def cut_plan(
    store: VczStore,
    plan: ScanPlan,
    request: ScanRequest,
    *,
    target_bytes: float = DEFAULT_TARGET_BYTES,
    min_tasks: int = 1,
) -> ScanTasks:
    """``plan`` cut into tasks of about ``target_bytes`` (at least ``min_tasks`` when it has
    that many pieces)."""
    samples = store.num_samples if request.samples is None else len(request.samples)
    piece_bytes = plan.rows * _row_bytes(plan, request.schema, samples)
    return ScanTasks(store, plan, _task_starts(piece_bytes, target_bytes, min_tasks), piece_bytes)


__all__ = [
    "DEFAULT_TARGET_BYTES",
    "ScanTask",
    "ScanTasks",
    "cut_plan",
    "scan_request",
    "table_schema",
]
