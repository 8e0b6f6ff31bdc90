"""A DuckDB relation's rows as an Arrow record batch reader, on every DuckDB version we support
(``to_arrow_reader`` since DuckDB 1.4; ``fetch_arrow_reader`` before, deprecated since).

>>> import duckdb
>>> arrow_reader(duckdb.sql("SELECT 42 AS answer"), 1024).read_all().to_pylist()
[{'answer': 42}]
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

__all__ = ["arrow_reader"]


def arrow_reader(relation: duckdb.DuckDBPyRelation, batch_rows: int) -> pa.RecordBatchReader:
    """Run ``relation`` and stream its rows ``batch_rows`` at a time."""
    if hasattr(relation, "to_arrow_reader"):
        return relation.to_arrow_reader(batch_rows)
    return relation.fetch_arrow_reader(batch_rows)
