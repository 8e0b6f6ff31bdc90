"""Batches for engines without Arrow dictionary types (Daft, Spark): dictionaries decoded.

Our scans give ``contig``, ``sample_id`` and other repetitive strings as dictionary arrays
(DuckDB and Polars push filters down on them); Daft and Spark reject dictionary columns, so
their adapters pass schemas and batches through here.

>>> import pyarrow as pa
>>> batch = pa.record_batch({"contig": pa.array(["1", "1", "2"]).dictionary_encode()})
>>> plain_batch(batch).schema
contig: string
"""

from __future__ import annotations

import pyarrow as pa


def _plain_type(type_: pa.DataType) -> pa.DataType:
    return type_.value_type if pa.types.is_dictionary(type_) else type_


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every dictionary column as its value type (field metadata kept)."""
    return pa.schema(
        [f.with_type(_plain_type(f.type)) for f in schema], metadata=schema.metadata
    )


def plain_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with every dictionary column decoded to its values."""
    if not any(pa.types.is_dictionary(f.type) for f in batch.schema):
        return batch
    columns = [
        c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in batch.columns
    ]
    return pa.RecordBatch.from_arrays(columns, schema=plain_schema(batch.schema))
