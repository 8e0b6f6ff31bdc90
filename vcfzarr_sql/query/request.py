"""What a scan asks for, from what a user gives: a table name, a bcftools region string,
sample names -> a :class:`~vcfzarr_sql.query.plan.ScanRequest` (the table's schema, the
region's row filter, sample indexes), for :func:`~vcfzarr_sql.query.plan.plan_scan`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query import schema as table_schemas
from vcfzarr_sql.query.expressions import conjunction
from vcfzarr_sql.query.plan import TABLES, ScanRequest
from vcfzarr_sql.query.region import parse_regions, regions_expression
from vcfzarr_sql.store.vcz import VczStore


def sample_indexes(store: VczStore, samples: Sequence[str] | str | None) -> np.ndarray | None:
    """Sorted store indexes of ``samples`` (None: all, also when ``samples`` names every
    sample, so that such a scan reads stored counts like one without ``samples``); QueryError
    names an unknown sample."""
    if samples is None:
        return None
    if isinstance(samples, str):
        samples = [samples]
    position = {name: i for i, name in enumerate(store.samples)}
    unknown = [s for s in samples if s not in position]
    if unknown:
        raise QueryError(f"samples: no sample named {unknown[0]!r} in {store.path}")
    if not samples:
        raise QueryError("samples: the list is empty")
    indexes = np.unique(np.array([position[s] for s in samples], dtype=np.int64))
    return None if len(indexes) == len(store.samples) else indexes


def table_schema(store: VczStore, table: str) -> pa.Schema:
    """The Arrow schema of table ``variants`` or ``calls`` of an open store."""
    if table not in TABLES:
        raise QueryError(f"table: expected one of {', '.join(TABLES)}, got {table!r}")
    if table == "variants":
        return table_schemas.variants_schema(store)
    return table_schemas.calls_schema(store)


def scan_request(
    store: VczStore,
    table: str = "variants",
    *,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
    region: str | None = None,
    samples: Sequence[str] | str | None = None,
) -> ScanRequest:
    """The :class:`~vcfzarr_sql.query.plan.ScanRequest` of a scan: ``filter`` ANDed with the
    rows overlapping ``region`` (a bcftools ``-r`` string), ``samples`` as store indexes."""
    region_filter = None if region is None else regions_expression(parse_regions(region))
    return ScanRequest(
        table=table,
        schema=table_schema(store, table),
        columns=None if columns is None else tuple(columns),
        filter=conjunction(filter, region_filter),
        samples=sample_indexes(store, samples),
    )
