"""Daft over VCF Zarr: :func:`read_vcf_zarr` gives a Daft DataFrame that pushes down filters,
columns and limits into our scan tasks.

Needs the ``daft`` extra (``pip install 'vcfzarr-sql[daft]'``). The DataFrame runs on Daft's
native runner or on Ray (``daft.set_runner_ray()``): each Daft task is one of our
:class:`~vcfzarr_sql.adapters.ScanTask` s, pickled to the worker, which opens the store once per
process (local paths must be visible to the workers; ``s3://``/``gs://`` URLs with
``storage_options`` work anywhere).

>>> import daft, vcfzarr_sql.daft
>>> t = vcfzarr_sql.daft.read_vcf_zarr("sample.zarr", table="calls", region="20")  # doctest: +SKIP
>>> daft.sql("SELECT sample_id, count(*) AS n FROM t GROUP BY sample_id", t=t)     # doctest: +SKIP

Daft lists the columns a query outputs, not those only its filter uses, yet evaluates the
pushed filter on what the scan returns: a task returns both, in the table's column order. The
filter is translated to a pyarrow expression, which our scan applies exactly (and prunes chunks
with); a filter pyarrow cannot express is evaluated with Daft on each batch. Dictionary strings (``contig``,
``sample_id``) come as plain strings: Daft has no dictionary type.

A count Daft pushes down (``df.count_rows()``) is answered by one task that scans ``pos`` (and
the filter's columns; ``count(col)`` scans ``col``), never the column Daft names for it. Daft
0.7.26's SQL ``count(*)`` pushes no count: it asks for one column of its choosing, which the
scan decodes.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import daft
import pyarrow as pa
import pyarrow.compute as pc
from daft.expressions import Expression, ExpressionsProjection
from daft.io.pushdowns import Pushdowns
from daft.io.source import DataSource, DataSourceTask
from daft.recordbatch import RecordBatch

from vcfzarr_sql.adapters import DEFAULT_TARGET_BYTES, ScanTask, dataset
from vcfzarr_sql.adapters.plain import plain_batch, plain_schema

__all__ = ["VczDaftSource", "read_vcf_zarr"]


def _arrow_filter(filters: Expression | None) -> pc.Expression | None:
    """Daft's pushed filter as a pyarrow expression, or None when pyarrow cannot express it."""
    if filters is None:
        return None
    try:
        return filters.to_arrow_expr()
    except (NotImplementedError, ValueError, TypeError, KeyError):
        return None


class _Task(DataSourceTask):
    """One scan task as a Daft task: its batches, filtered by Daft when pyarrow could not be."""

    def __init__(
        self,
        task: ScanTask,
        schema: pa.Schema,
        filter: Expression | None,
        limit: int | None,
    ):
        self._task = task
        self._schema = schema
        self._filter = filter
        self._limit = limit

    @property
    def schema(self) -> daft.Schema:
        return daft.Schema.from_pyarrow_schema(self._schema)

    def _batch(self, batch: pa.RecordBatch) -> RecordBatch:
        batch = plain_batch(batch)
        rows = RecordBatch.from_arrow_record_batches([batch], batch.schema)
        if self._filter is not None:
            rows = rows.filter(ExpressionsProjection([self._filter]))
        return rows

    async def read(self) -> AsyncIterator[RecordBatch]:
        batches = iter(self._task.to_batches())
        remaining = self._limit
        while remaining is None or remaining > 0:
            # decode off the event loop: Daft runs other tasks meanwhile
            batch = await asyncio.to_thread(next, batches, None)
            if batch is None:
                return
            rows = self._batch(batch)
            if remaining is not None:
                rows = rows.head(remaining)
                remaining -= len(rows)
            yield rows


class _CountTask(DataSourceTask):
    """A pushed count: the rows (``All``) or the valid or null values of one column of the
    scan, as the one row Daft expects (``uint64``, named as Daft names it)."""

    def __init__(self, tasks: list[_Task], column: str, mode: str, name: str):
        self._tasks = tasks
        self._column = column
        self._mode = mode
        self._name = name

    @property
    def schema(self) -> daft.Schema:
        return daft.Schema.from_pyarrow_schema(pa.schema([pa.field(self._name, pa.uint64())]))

    async def read(self) -> AsyncIterator[RecordBatch]:
        total = 0
        for task in self._tasks:
            async for rows in task.read():
                values = rows.to_arrow_record_batch().column(self._column)
                total += {"All": len(values), "Valid": len(values) - values.null_count,
                          "Null": values.null_count}[self._mode]
        yield RecordBatch.from_pydict({self._name: pa.array([total], pa.uint64())})


class VczDaftSource(DataSource):
    """The ``variants`` or ``calls`` table of a VCF Zarr store as a Daft data source."""

    def __init__(
        self,
        path: str | os.PathLike,
        table: str = "variants",
        *,
        region: str | None = None,
        samples: Sequence[str] | None = None,
        storage_options: dict | None = None,
        target_bytes: float = DEFAULT_TARGET_BYTES,
        min_tasks: int | None = None,
    ):
        self._dataset = dataset(path, table, samples, region, storage_options=storage_options)
        self._target_bytes = target_bytes
        self._min_tasks = min_tasks or os.cpu_count() or 1
        self._arrow_schema = plain_schema(self._dataset.schema)

    @property
    def name(self) -> str:
        return f"vcf_zarr({self._dataset.store.path!r}, {self._dataset.table!r})"

    @property
    def schema(self) -> daft.Schema:
        return daft.Schema.from_pyarrow_schema(self._arrow_schema)

    def supports_count_pushdown(self) -> bool:
        return True

    async def get_tasks(self, pushdowns: Pushdowns) -> AsyncIterator[DataSourceTask]:
        names = self._arrow_schema.names
        count = pushdowns._to_pypushdowns()
        if pushdowns.aggregation is not None:
            mode = str(count.aggregation_count_mode()).rsplit(".", 1)[-1]
            name = count.aggregation_required_column_names()[0]
            column = "pos" if mode == "All" else name  # every row has a pos: the cheapest
            tasks = list(self._tasks(pushdowns, [column]))
            yield _CountTask(tasks, column, mode, name)
            return
        wanted = names if pushdowns.columns is None else pushdowns.columns
        for task in self._tasks(pushdowns, wanted):
            yield task

    def _tasks(self, pushdowns: Pushdowns, wanted: Sequence[str]) -> Iterator[_Task]:
        names = self._arrow_schema.names
        # Daft reads a task's columns in schema order, and evaluates its filter on them
        needed = set(wanted) | pushdowns.filter_required_column_names()
        columns = [c for c in names if c in needed]
        output = pa.schema([self._arrow_schema.field(c) for c in columns])
        arrow_filter = _arrow_filter(pushdowns.filters)
        daft_filter = None
        if pushdowns.filters is not None and arrow_filter is None:
            daft_filter = pushdowns.filters
        tasks = self._dataset.scan_tasks(
            columns, arrow_filter, target_bytes=self._target_bytes, min_tasks=self._min_tasks
        )
        remaining = pushdowns.limit
        for task in tasks:
            yield _Task(task, output, daft_filter, pushdowns.limit)
            if remaining is not None and pushdowns.filters is None:
                remaining -= task.num_rows  # exact without a filter: stop once enough rows
                if remaining <= 0:
                    return


def read_vcf_zarr(
    path: str | os.PathLike,
    table: str = "variants",
    *,
    region: str | None = None,
    samples: Sequence[str] | None = None,
    **options: Any,
) -> daft.DataFrame:
    """The ``variants`` or ``calls`` table of the store at ``path`` as a Daft DataFrame.

    ``region`` (a bcftools ``-r`` string) and ``samples`` restrict the rows as in
    :func:`vcfzarr_sql.dataset`. ``options`` are :class:`VczDaftSource`'s:
    ``storage_options`` (fsspec's, for a URL), ``target_bytes`` (decoded bytes per task) and
    ``min_tasks`` (default: this machine's cores).
    """
    return VczDaftSource(path, table, region=region, samples=samples, **options).read()
