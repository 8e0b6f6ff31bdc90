"""Spark over VCF Zarr: a Python Data Source (Spark 4.1+) named ``vcf_zarr``.

Needs the ``spark`` extra (``pip install 'vcfzarr-sql[spark]'``) and Java 17+.

>>> import vcfzarr_sql.spark
>>> vcfzarr_sql.spark.register(spark)                                       # doctest: +SKIP
>>> calls = (spark.read.format("vcf_zarr").option("table", "calls")
...          .option("region", "20:1-2000000").load("sample.zarr"))        # doctest: +SKIP
>>> calls.groupBy("sample_id").count().show()                              # doctest: +SKIP

Options: ``table`` (``variants``, the default, or ``calls``), ``region`` (a bcftools ``-r``
string), ``samples`` (comma-separated sample ids), ``storage_options`` (JSON: fsspec's options
for a URL), ``target_bytes`` (decoded bytes per partition), ``min_tasks`` (at least this
many partitions when there are that many chunks; default 1, and :func:`read` gives the
session's default parallelism: Spark plans partitions in a worker process, which has no
session to ask). Spark does not push column pruning into Python data sources: give a narrow
schema (``.schema("contig STRING, pos LONG")``) and only those columns are decoded. Each
partition is one of our :class:`~vcfzarr_sql.adapters.ScanTask` s (many chunks, by
``target_bytes`` and ``min_tasks``). Comparisons, ``IN``, ``IS [NOT] NULL`` and ``NOT`` on plain
columns are pushed down (with ``spark.sql.python.filterPushdown.enabled``, which
:func:`register` sets) and applied exactly by the scan; Spark evaluates the rest.

Stale plans (Spark 4.1 to 4.3): Spark keeps the partitions planned by the last query that
pushed filters on the relation of a DataFrame (or view) and reuses them for its next query that
pushes none, so a whole-store count after a region query counted the region. A reader of a
plain ``load()`` therefore pushes nothing down (Spark filters; ``region`` still prunes), and
:func:`read` gives a DataFrame whose every query pushes a sentinel filter (``pos`` above a
bound no position reaches below), so Spark plans each query anew: its filters are pushed
down, prune chunks and are applied by the scan.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import LongType, StructField, StructType, _parse_datatype_string

from vcfzarr_sql.adapters import DEFAULT_TARGET_BYTES, ScanTask, dataset
from vcfzarr_sql.adapters.plain import plain_batch, plain_schema
from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query.expressions import conjunction

__all__ = ["VczSparkSource", "read", "register"]

NAME = "vcf_zarr"

_COMPARISONS = {
    EqualTo: "__eq__",
    GreaterThan: "__gt__",
    GreaterThanOrEqual: "__ge__",
    LessThan: "__lt__",
    LessThanOrEqual: "__le__",
}


def _arrow_filter(f: Filter, columns: Sequence[str]) -> pc.Expression | None:
    """A Spark filter as a pyarrow expression (None: not one we push down)."""
    if len(getattr(f, "attribute", ())) != 1 or f.attribute[0] not in columns:
        return None
    column = pc.field(f.attribute[0])
    if type(f) in _COMPARISONS and f.value is not None:
        return getattr(column, _COMPARISONS[type(f)])(f.value)
    if isinstance(f, EqualNullSafe) and f.value is not None:
        return column == f.value  # NULL <=> x is false, as is NULL = x after the scan's filter
    if isinstance(f, In) and None not in f.value:
        return column.isin(list(f.value))
    if isinstance(f, IsNull):
        return column.is_null()
    if isinstance(f, IsNotNull):
        return column.is_valid()
    if isinstance(f, Not):
        inner = _arrow_filter(f.child, columns)
        return None if inner is None else ~inner
    return None


#: The filter :func:`read` adds: true for every record (positions are at least 0), and never
#: written by hand, so a query that pushes it comes from a DataFrame that pushes it every time.
_SENTINEL_BOUND = -(2**62) + 1
_SENTINEL = GreaterThan(("pos",), _SENTINEL_BOUND)


class _Partition(InputPartition):
    """One scan task (pickled to the executor that reads it)."""

    def __init__(self, task: ScanTask):
        super().__init__(None)
        self.task = task


class _Reader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType):
        self._options = options
        self._schema = schema
        self._columns = list(schema.fieldNames())
        table = _dataset(options)
        self._names = table.schema.names
        unknown = [c for c in self._columns if c not in self._names]
        if unknown:
            raise QueryError(f"schema: no column named {unknown[0]!r} in the {table.table} table")
        #: Filters of the query being planned: set by pushFilters, used by the next partitions().
        self._pending: pc.Expression | None = None

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        if not any(f == _SENTINEL for f in filters):
            yield from filters  # a plain load(): see "Stale plans" in the module's notes
            return
        pushed = []
        for f in filters:
            expression = _arrow_filter(f, self._names)
            if expression is None:
                yield f
            else:
                pushed.append(expression)
        self._pending = conjunction(*pushed)

    def partitions(self) -> list[InputPartition]:
        pushed, self._pending = self._pending, None  # never reused by a later plan
        tasks = _dataset(self._options).scan_tasks(
            self._columns,
            pushed,
            target_bytes=float(self._options.get("target_bytes", DEFAULT_TARGET_BYTES)),
            min_tasks=int(self._options.get("min_tasks", 1)),
        )
        return [_Partition(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, _Partition):
            return  # a scan of no task: Spark still reads one partition of its own, empty
        target = to_arrow_schema(self._schema)
        for batch in partition.task.to_batches():
            yield plain_batch(batch).cast(target)


def _dataset(options: dict[str, str]) -> Any:
    path = options.get("path")
    if not path:
        raise QueryError("vcf_zarr: give the store's path: spark.read.format('vcf_zarr').load(path)")
    samples = options.get("samples")
    return dataset(
        path,
        options.get("table", "variants"),
        None if samples is None else [s.strip() for s in samples.split(",") if s.strip()],
        options.get("region"),
        storage_options=json.loads(options["storage_options"]) if "storage_options" in options else None,
    )


class VczSparkSource(DataSource):
    """The ``vcf_zarr`` data source: the ``variants`` or ``calls`` table of a store."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return from_arrow_schema(plain_schema(_dataset(self.options).schema))

    def reader(self, schema: StructType) -> DataSourceReader:
        return _Reader(dict(self.options), schema)


def read(
    spark: SparkSession,
    path: str,
    table: str = "variants",
    *,
    region: str | None = None,
    samples: Sequence[str] | None = None,
    schema: str | StructType | None = None,
    **options: str,
) -> DataFrame:
    """The ``variants`` or ``calls`` table of the store at ``path`` with filter pushdown that
    stays correct when the DataFrame (or a view of it) is queried many times.

    ``schema``: the columns to read (a DDL string or StructType; default: all). ``options``:
    other options of the data source (``storage_options``, ``target_bytes``, ``min_tasks``:
    default, the session's default parallelism).
    """
    reader = spark.read.format(NAME).option("table", table)
    reader = reader.option("min_tasks", str(spark.sparkContext.defaultParallelism))
    if region is not None:
        reader = reader.option("region", region)
    if samples is not None:
        reader = reader.option("samples", ",".join(samples))
    for key, value in options.items():
        reader = reader.option(key, value)
    if schema is None:
        return reader.load(path).where(f"pos > {_SENTINEL_BOUND}")
    struct: StructType = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    columns = struct.fieldNames()
    if "pos" not in columns:  # the sentinel filter needs it; dropped after
        struct = StructType([*struct.fields, StructField("pos", LongType())])
    return reader.schema(struct).load(path).where(f"pos > {_SENTINEL_BOUND}").select(*columns)


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("vcf_zarr")`` available in ``spark``, with filter pushdown."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(VczSparkSource)
