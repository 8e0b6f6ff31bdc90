"""A VCF Zarr table as a ``pyarrow.dataset.Dataset`` that DuckDB and Polars scan with pushdown.

DuckDB and Polars call ``scanner(columns=..., filter=...)`` on an instance of a
``pyarrow.dataset.Dataset`` subclass and read the batches of what it returns (see
docs/architecture.md). Neither re-applies the filter, so a scan yields exactly the rows satisfying the
whole filter: the planner keeps the chunks that might match, and each task evaluates its
residual filter on its batch. Columns the filter needs but the caller did not ask for are
decoded, used and dropped; batches have exactly the schema of the requested columns.

``filter()`` and ``select()`` return new datasets (nothing is mutated); ``last_stats`` holds
what the last finished scan read.

>>> import vcfzarr_sql, duckdb
>>> ds = vcfzarr_sql.dataset("sample.zarr", region="20:1-20000")        # doctest: +SKIP
>>> duckdb.sql("SELECT count(*) FROM ds WHERE qual > 10").fetchone()    # doctest: +SKIP
(3,)
>>> ds.last_stats["variant_chunks_read"]                                 # doctest: +SKIP
1
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds

from vcfzarr_sql.adapters.plain import plain_batch, plain_schema
from vcfzarr_sql.adapters.tasks import DEFAULT_TARGET_BYTES, ScanTasks, cut_plan
from vcfzarr_sql.errors import NotSupportedError, QueryError, StoreError
from vcfzarr_sql.query.execute import plan_batches, scan_source
from vcfzarr_sql.query.expressions import conjunction
from vcfzarr_sql.query.plan import ScanPlan, ScanRequest, plan_scan
from vcfzarr_sql.query.request import scan_request
from vcfzarr_sql.store.counting import nothing_read
from vcfzarr_sql.store.vcz import VczStore

#: Whether scans give dictionary columns (``contig``, ``sample_id``, ...) as plain strings:
#: DuckDB 2 pushes no filter on a dictionary column into a dataset when pyarrow is older than
#: 26 (seen with pyarrow 21 and 25), but pushes the same filter on a string column. Only the
#: Dataset (DuckDB's way in) does this; scan tasks, for Daft and Spark, keep the dictionaries.
PLAIN_STRINGS = int(pa.__version__.split(".")[0]) < 26


def _as_scanned(schema: pa.Schema) -> pa.Schema:
    return plain_schema(schema) if PLAIN_STRINGS else schema


class VczScanner:
    """One scan of a :class:`VczDataset`: its plan, and the batches of matching rows.

    ``stats`` (and the dataset's ``last_stats``) start at nothing read, so a scan the engine
    never reads reports no reads, and are replaced when the scan finishes (or is closed early).
    """

    def __init__(self, dataset: VczDataset, plan: ScanPlan, request: ScanRequest):
        self._dataset = dataset
        self._plan = plan
        self._request = request
        self.stats = nothing_read(
            variant_chunks_total=plan.variant_chunks_total,
            sample_chunks_total=plan.sample_chunks_total,
        )
        dataset.last_stats = self.stats

    @property
    def plan(self) -> ScanPlan:
        return self._plan

    @property
    def request(self) -> ScanRequest:
        return self._request

    @property
    def projected_schema(self) -> pa.Schema:
        return _as_scanned(self._plan.schema)

    @property
    def dataset_schema(self) -> pa.Schema:
        return _as_scanned(self._request.schema)

    def to_batches(self) -> Generator[pa.RecordBatch]:
        """The batches of matching rows, one per task that has any."""
        source = scan_source(self._dataset.store, self._plan)
        started = time.perf_counter()
        try:
            for batch in plan_batches(source, self._plan):
                yield from _slices(plain_batch(batch) if PLAIN_STRINGS else batch)
        finally:
            self.stats = source.stats(
                variant_chunks_total=self._plan.variant_chunks_total,
                sample_chunks_total=self._plan.sample_chunks_total,
                wall_time_s=time.perf_counter() - started,
            )
            self._dataset.last_stats = self.stats

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` matching rows; stops reading once it has them."""
        batches, rows = [], 0
        scan = self.to_batches()
        try:
            while rows < num_rows:
                batch = next(scan, None)
                if batch is None:
                    break
                batches.append(batch.slice(0, num_rows - rows))
                rows += batches[-1].num_rows
        finally:
            scan.close()
        return pa.Table.from_batches(batches, schema=self.projected_schema)

    def count_rows(self) -> int:
        """The number of matching rows (reads only what the filter needs)."""
        request = dataclasses.replace(self._request, columns=())
        counting = VczScanner(self._dataset, plan_scan(self._dataset.store, request), request)
        return sum(batch.num_rows for batch in counting.to_batches())


def _slices(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """``batch``, cut (zero-copy) into slices of at most :data:`SLICE_BYTES` when it is larger.

    >>> wide = pa.record_batch({"x": pa.array(np.zeros(3 * SLICE_BYTES // 8, np.int64))})
    >>> [b.num_rows for b in _slices(wide)], [b.num_rows for b in _slices(wide.slice(0, 10))]
    ([1048576, 1048576, 1048576], [10])
    """
    rows, size = batch.num_rows, batch.nbytes
    if size <= SLICE_BYTES or rows <= 1:
        yield batch
        return
    step = max(1, SLICE_BYTES * rows // size)
    for start in range(0, rows, step):
        yield batch.slice(start, step)


#: Arrow bytes of a batch handed on, at most: a wider task's batch (a variant chunk of many
#: samples' genotypes: ~60 MB at 10,000 samples) is handed on in slices. DuckDB makes each
#: batch it reads into vectors of its own (16 bytes per inner list) and holds several: a
#: whole-store ``COPY ... TO 'x.parquet'`` of 10,000 x 6,000 peaked at 1.65 GiB RSS with
#: whole batches, 0.9 GiB with slices, and used less CPU.
SLICE_BYTES = 8 << 20


class VczDataset(pds.Dataset):
    """The ``variants`` or ``calls`` table of a VCF Zarr store (see :func:`vcfzarr_sql.dataset`)."""

    # pyarrow's Dataset is an extension type; its constructor is not called: every method a
    # caller may use is defined here.
    def __init__(
        self,
        store: VczStore,
        table: str = "variants",
        samples: Sequence[str] | None = None,
        region: str | None = None,
        *,
        filter: pc.Expression | None = None,
        columns: Sequence[str] | None = None,
    ):
        self.store = store
        self.table = table
        self.samples = samples
        self.region = region
        #: The table's schema, region filter and sample indexes: what every scan starts from.
        self._base = scan_request(store, table, region=region, samples=samples)
        self._full_schema = _as_scanned(self._base.schema)
        self._filter = filter
        self._columns = None if columns is None else tuple(columns)
        self.last_stats: dict | None = None

    def __reduce__(self) -> tuple:
        """Pickles as its arguments (the store as a reference, see ``VczStore``)."""
        return _rebuilt, (self.store, self.table, self.samples, self.region, self._filter, self._columns)

    def _derived(self, *, filter: pc.Expression | None, columns: Sequence[str] | None) -> VczDataset:
        return VczDataset(
            self.store, self.table, self.samples, self.region, filter=filter, columns=columns
        )

    @property
    def sample_indexes(self) -> np.ndarray | None:
        """Sorted store indexes of the selected samples (None: all)."""
        return self._base.samples

    @property
    def schema(self) -> pa.Schema:
        if self._columns is None:
            return self._full_schema
        return pa.schema([self._full_schema.field(c) for c in self._columns])

    @property
    def partition_expression(self) -> pc.Expression:
        return pc.scalar(True)

    def scanner(
        self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None, **kwargs: Any
    ) -> VczScanner:
        """A scan of ``columns`` (None: all) of the rows satisfying ``filter``.

        Other keyword arguments of ``pyarrow.dataset.Dataset.scanner`` (``batch_size``,
        ``use_threads``, ...) are accepted and ignored: batches are one per chunk (or run of
        chunks). StoreError when the store changed on disk after it was opened (its metadata
        would be stale).
        """
        if self.store.fingerprint is not None and not self.store.is_unchanged():
            raise StoreError(f"{self.store.path}: the store changed after it was opened; open it again")
        if isinstance(columns, dict):
            raise NotSupportedError("columns: projecting expressions is not supported, give names")
        if columns is None:
            columns = self._columns
        elif self._columns is not None:
            outside = [c for c in columns if c not in self._columns]
            if outside:
                raise QueryError(f"columns: {outside[0]!r} is not among the selected columns")
        request = dataclasses.replace(
            self._base,
            columns=None if columns is None else tuple(columns),
            filter=conjunction(self._filter, filter, self._base.filter),
        )
        return VczScanner(self, plan_scan(self.store, request), request)

    def scan_tasks(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        *,
        target_bytes: float = DEFAULT_TARGET_BYTES,
        min_tasks: int = 1,
    ) -> ScanTasks:
        """The scan :meth:`scanner` plans, cut into picklable tasks of about ``target_bytes``
        of decoded columns (at least ``min_tasks`` when there are that many chunks); see
        :mod:`vcfzarr_sql.adapters.tasks`."""
        scanner = self.scanner(columns, filter)
        return cut_plan(
            self.store, scanner.plan, scanner.request, target_bytes=target_bytes, min_tasks=min_tasks
        )

    def filter(self, expression: pc.Expression) -> VczDataset:
        """A new dataset of the rows that also satisfy ``expression``."""
        return self._derived(filter=conjunction(self._filter, expression), columns=self._columns)

    def select(self, columns: Sequence[str]) -> VczDataset:
        """A new dataset of only ``columns``."""
        self.scanner(columns=columns)  # checks the names
        return self._derived(filter=self._filter, columns=columns)

    def to_batches(
        self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None, **kwargs: Any
    ) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns, filter, **kwargs).to_batches()

    def to_table(
        self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None, **kwargs: Any
    ) -> pa.Table:
        return self.scanner(columns, filter, **kwargs).to_table()

    def head(
        self,
        num_rows: int,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        **kwargs: Any,
    ) -> pa.Table:
        return self.scanner(columns, filter, **kwargs).head(num_rows)

    def count_rows(self, filter: pc.Expression | None = None, **kwargs: Any) -> int:
        return self.scanner([], filter, **kwargs).count_rows()

    def take(
        self,
        indices: Sequence[int] | pa.Array,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        **kwargs: Any,
    ) -> pa.Table:
        return self.to_table(columns, filter, **kwargs).take(indices)

    def _unsupported(self, what: str) -> NotSupportedError:
        return NotSupportedError(f"{what} is not supported on a VCF Zarr dataset: use SQL or to_table()")

    def get_fragments(self, filter: pc.Expression | None = None) -> Any:
        raise self._unsupported("get_fragments()")

    def replace_schema(self, schema: pa.Schema) -> Any:
        raise self._unsupported("replace_schema()")

    def join(self, *args: Any, **kwargs: Any) -> Any:
        raise self._unsupported("join()")

    def join_asof(self, *args: Any, **kwargs: Any) -> Any:
        raise self._unsupported("join_asof()")

    def sort_by(self, *args: Any, **kwargs: Any) -> Any:
        raise self._unsupported("sort_by()")

    def __repr__(self) -> str:
        return f"<VczDataset {self.table} of {self.store.path}>"


def _rebuilt(
    store: VczStore,
    table: str,
    samples: Sequence[str] | None,
    region: str | None,
    filter: pc.Expression | None,
    columns: Sequence[str] | None,
) -> VczDataset:
    return VczDataset(store, table, samples, region, filter=filter, columns=columns)
