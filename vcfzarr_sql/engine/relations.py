"""What gets registered in DuckDB for a bound table-function call."""

from __future__ import annotations

from typing import Any

from vcfzarr_sql.engine.functions import ScanSpec
from vcfzarr_sql.engine.metadata import METADATA_TABLES
from vcfzarr_sql.scan import dataset


def open_relation(spec: ScanSpec, store: Any) -> Any:
    """A pyarrow Dataset (``vcf_zarr``, ``vcf_zarr_calls``) or a metadata Arrow table."""
    builder = METADATA_TABLES.get(spec.table)
    if builder is not None:
        return builder(store)
    samples = None if spec.samples is None else list(spec.samples)
    return dataset(store, table=spec.table, samples=samples, region=spec.region)
