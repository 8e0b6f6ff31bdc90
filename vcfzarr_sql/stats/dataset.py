"""``vcf_zarr_sample_stats`` as a relation DuckDB scans: computed when its rows are read.

A ``pyarrow.dataset.Dataset`` subclass, as :class:`vcfzarr_sql.adapters.dataset.VczDataset`
is, so DuckDB calls :meth:`SampleStatsDataset.scanner` when a query reads the table (and
pushes its filter, which the scan must apply: DuckDB does not apply it again); ``EXPLAIN``
and ``LIMIT 0`` read nothing. The region and samples are checked when the dataset is made;
the first scan plans and computes the table, its reads counted in ``last_stats``, and later
scans read it again (a dataset is made anew when its store changes, see
:mod:`vcfzarr_sql.engine.relations`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds

from vcfzarr_sql.errors import NotSupportedError, QueryError
from vcfzarr_sql.query.execute import scan_source
from vcfzarr_sql.query.plan import plan_scan
from vcfzarr_sql.query.request import scan_request
from vcfzarr_sql.stats.sample_stats import SCHEMA, counted_table
from vcfzarr_sql.store.counting import nothing_read
from vcfzarr_sql.store.vcz import VczStore


class SampleStatsScan:
    """One scan of a :class:`SampleStatsDataset`: ``columns`` of the rows satisfying
    ``filter``, computed when the first batch is read."""

    def __init__(self, dataset: SampleStatsDataset, columns: Sequence[str] | None,
                 filter: pc.Expression | None):
        unknown = [c for c in columns or () if c not in SCHEMA.names]
        if unknown:
            raise QueryError(f"columns: no column named {unknown[0]!r} in vcf_zarr_sample_stats")
        self._dataset = dataset
        self._columns = SCHEMA.names if columns is None else list(columns)
        self._filter = filter

    @property
    def projected_schema(self) -> pa.Schema:
        return pa.schema([SCHEMA.field(c) for c in self._columns])

    @property
    def dataset_schema(self) -> pa.Schema:
        return SCHEMA

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The table's rows, in one batch (none when no sample matches)."""
        table = self._dataset.compute()
        if self._filter is not None:
            table = table.filter(self._filter)
        yield from table.select(self._columns).combine_chunks().to_batches()

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)


class SampleStatsDataset(pds.Dataset):
    """The per-sample genotype counts of ``region`` (None: all records) for ``samples``
    (None: all) of ``store``, as :func:`~vcfzarr_sql.stats.sample_stats.sample_stats_table`
    computes them; ``last_stats`` holds what the last computation read."""

    # pyarrow's Dataset is an extension type; its constructor is not called.
    def __init__(self, store: VczStore, region: str | None = None, samples: Sequence[str] | None = None):
        self.store = store
        self.region = region
        self.samples = samples
        self._request = scan_request(store, "variants", columns=(), region=region, samples=samples)
        self._table: pa.Table | None = None
        self._lock = threading.Lock()
        self.last_stats: dict | None = None

    @property
    def schema(self) -> pa.Schema:
        return SCHEMA

    def compute(self) -> pa.Table:
        """The table: computed by the first call (a plan run by the executor, its reads
        counted), kept for the others."""
        with self._lock:
            if self._table is None:
                self._table = self._computed()
            return self._table

    def _computed(self) -> pa.Table:
        plan = plan_scan(self.store, self._request)
        source = scan_source(self.store, plan)
        totals = {"variant_chunks_total": plan.variant_chunks_total,
                  "sample_chunks_total": plan.sample_chunks_total}
        self.last_stats = nothing_read(**totals)
        started = time.perf_counter()
        try:
            return counted_table(self.store, plan, source)
        finally:
            self.last_stats = source.stats(**totals, wall_time_s=time.perf_counter() - started)

    def scanner(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                **kwargs: Any) -> SampleStatsScan:
        """A scan of ``columns`` (None: all) of the rows satisfying ``filter``; other keyword
        arguments of ``pyarrow.dataset.Dataset.scanner`` are accepted and ignored."""
        if isinstance(columns, dict):
            raise NotSupportedError("columns: projecting expressions is not supported, give names")
        return SampleStatsScan(self, columns, filter)

    def to_table(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                 **kwargs: Any) -> pa.Table:
        return self.scanner(columns, filter).to_table()

    def to_batches(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                   **kwargs: Any) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns, filter).to_batches()

    def __repr__(self) -> str:
        return f"<SampleStatsDataset of {self.store.path}>"
