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

Shared plans (Spark 4.1 to 4.3, measured with 4.3.0): Spark keeps one plan (partitions and
reader) per relation, the one made by the last filter pushdown on it, and every scan of the
relation runs it: a later query that pushes no filter (Spark then calls no Python), and both
sides of a self-join (each side pushes its filters, the last one's plan runs for both). So:

- a plain ``load()`` or ``USING vcf_zarr`` view pushes nothing down (Spark filters; the
  ``region`` and ``samples`` options prune): its query without a filter would run the plan of
  an earlier query's filters;
- :func:`read` gives a DataFrame whose every query pushes a sentinel filter (``pos`` above a
  bound no position reaches below), so every query plans anew. Its scan prunes chunks with
  the OR of the filters every scan of the relation has pushed so far (kept per relation in a
  file of a private directory :func:`read` makes, removed when the process that called it
  exits; Spark plans on the driver), so a plan run by the
  other side of a self-join still holds that side's rows; Spark applies each scan's filters.

With ``VCFZARR_SQL_SPARK_LOG`` naming a file (in the driver's environment when Spark starts),
each plan appends a JSON line: path, table, the filters pushed, the scan's filter, columns,
tasks and variant chunks read of the total. Spark's ``explain`` does not show a Python
source's pushed filters (4.3.0).

Path forms: a path, ``file:/p`` or ``file:///p`` (Spark's form of a ``LOCATION``), a URL. Spark
4.3.0 gives a catalog table's query no options (``CREATE TABLE t USING vcf_zarr LOCATION
'p'`` then ``SELECT`` has no path): such a query is refused, naming the form that works.
A user-given schema must give the store's types (``pos BIGINT``, not ``pos INT``): another type
is refused, as Spark's cast would disable pushdown.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import pickle
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

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

from vcfzarr_sql.adapters import DEFAULT_TARGET_BYTES, ScanTask, VczDataset, dataset
from vcfzarr_sql.adapters.plain import plain_batch, plain_schema
from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query.expressions import conjunction, disjunction

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
#: The option naming where :func:`read`'s relations keep the filters their scans pushed.
_STATE_OPTION = "vcfzarr_sql_state_dir"


class _Partition(InputPartition):
    """One scan task (pickled to the executor that reads it)."""

    def __init__(self, task: ScanTask):
        super().__init__(None)
        self.task = task


def _state_directory(options: Mapping[str, str]) -> Path:
    """The directory :func:`read` made for its relations' filters: made by this user with
    ``mkdtemp`` (mode 0700), checked again before a file in it is unpickled, so no other
    user's file is ever loaded."""
    directory = Path(options.get(_STATE_OPTION, ""))
    info = os.stat(directory) if directory.is_absolute() else None
    if info is None or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise QueryError(f"vcf_zarr: {_STATE_OPTION} {str(directory)!r} is not a private directory of this user")
    return directory


def _relation_filters(directory: Path, relation: str, scan_filter: pc.Expression) -> pc.Expression:
    """The OR of every filter the scans of ``relation`` pushed, ``scan_filter`` added (kept in
    a file: each pushdown runs in a new worker process of the driver)."""
    with open(directory / relation, "a+b") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        file.seek(0)
        seen: list[pc.Expression] = pickle.loads(file.read() or pickle.dumps([]))
        if not any(scan_filter.equals(f) for f in seen):
            seen.append(scan_filter)
            file.seek(0)
            file.truncate()
            file.write(pickle.dumps(seen))
    return disjunction(*seen)


def _log(entry: dict[str, Any]) -> None:
    """Append ``entry`` to the file ``VCFZARR_SQL_SPARK_LOG`` names, if it names one."""
    path = os.environ.get("VCFZARR_SQL_SPARK_LOG")
    if path:
        with open(path, "a") as file:
            file.write(json.dumps(entry) + "\n")


class _Reader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType, relation: str):
        self._options = options
        self._schema = schema
        self._relation = relation
        self._columns = list(schema.fieldNames())
        table = _dataset(options)
        self._names = table.schema.names
        store_types = from_arrow_schema(plain_schema(table.schema))
        for field in schema.fields:
            if field.name not in self._names:
                raise QueryError(f"schema: no column named {field.name!r} in the {table.table} table")
            stored = store_types[field.name].dataType
            if field.dataType != stored:
                raise QueryError(
                    f"schema: column {field.name!r} is {stored.simpleString()} in the store, "
                    f"not {field.dataType.simpleString()} (give the store's type, or leave it out)"
                )
        #: Set by pushFilters, used by partitions(): the filters Spark pushed, the scan's filter.
        self._pushed: list[str] = []
        self._filter: pc.Expression | None = None

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        # Spark applies every filter: the plan made here may run for another scan of the
        # relation (see "Shared plans" in the module's notes), which prunes by the OR of all
        yield from filters
        if not any(f == _SENTINEL for f in filters):
            return  # a plain load(): see "Shared plans"
        pushed = [(f, _arrow_filter(f, self._names)) for f in filters]
        self._pushed = [repr(f) for f, e in pushed if e is not None]
        scan_filter = conjunction(*(e for _, e in pushed))
        assert scan_filter is not None  # the sentinel is one
        self._filter = _relation_filters(_state_directory(self._options), self._relation, scan_filter)

    def partitions(self) -> list[InputPartition]:
        table = _dataset(self._options)
        tasks = table.scan_tasks(
            self._columns,
            self._filter,
            target_bytes=float(self._options.get("target_bytes", DEFAULT_TARGET_BYTES)),
            min_tasks=int(self._options.get("min_tasks", 1)),
        )
        _log({
            "path": str(table.store.path), "table": table.table, "pushed": self._pushed,
            "filter": None if self._filter is None else str(self._filter), "columns": self._columns,
            "tasks": len(tasks), "variant_chunks_read": tasks.variant_chunks_read,
            "variant_chunks_total": tasks.variant_chunks_total,
        })
        return [_Partition(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, _Partition):
            return  # a scan of no task: Spark still reads one partition of its own, empty
        target = to_arrow_schema(self._schema)
        for batch in partition.task.to_batches():
            yield plain_batch(batch).cast(target)


def _local_path(path: str) -> str:
    """``path``, or the local path of a ``file:`` URI (Spark's form of a ``LOCATION``).

    >>> _local_path("file:/data/a%20b.vcz"), _local_path("file:///data/x.vcz"), _local_path("s3://b/x")
    ('/data/a b.vcz', '/data/x.vcz', 's3://b/x')
    """
    url = urlparse(path)
    if url.scheme != "file":
        return path
    if url.netloc not in ("", "localhost"):
        raise QueryError(f"vcf_zarr: {path}: a file: URI of another host ({url.netloc})")
    return unquote(url.path)


def _dataset(options: Mapping[str, str]) -> VczDataset:
    path = options.get("path")
    if not path:
        raise QueryError(
            "vcf_zarr: no path: give one with load(path) or OPTIONS (path '...') of a TEMP VIEW"
            " (Spark 4.3 passes a catalog table's LOCATION and OPTIONS to no query)"
        )
    samples = options.get("samples")
    return dataset(
        _local_path(path),
        options.get("table", "variants"),
        None if samples is None else [s.strip() for s in samples.split(",") if s.strip()],
        options.get("region"),
        storage_options=json.loads(options["storage_options"]) if "storage_options" in options else None,
    )


class VczSparkSource(DataSource):
    """The ``vcf_zarr`` data source: the ``variants`` or ``calls`` table of a store."""

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        #: Names this relation: Spark makes the source once per relation (see "Shared plans").
        self.relation = uuid.uuid4().hex

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return from_arrow_schema(plain_schema(_dataset(self.options).schema))

    def reader(self, schema: StructType) -> DataSourceReader:
        return _Reader(dict(self.options), schema, self.relation)


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
    reader = reader.option(_STATE_OPTION, _private_directory())
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


def _private_directory() -> str:
    """A new directory (mode 0700) for one relation's pushed filters, removed when this
    process exits."""
    directory = tempfile.mkdtemp(prefix="vcfzarr_sql-spark-")
    atexit.register(shutil.rmtree, directory, True)
    return directory


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("vcf_zarr")`` available in ``spark``, with filter pushdown."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(VczSparkSource)
