"""``-i``/``-e``: which records of a chunk satisfy a bcftools filter expression.

The expression becomes SQL (:mod:`.expression`), evaluated by DuckDB over the chunk's rows
decoded as the ``vcf_zarr`` table (same row order as the stored arrays), with the selected
samples in the FORMAT lists. One DuckDB connection per view evaluates it on every chunk (the
scan threads take turns).
"""

from __future__ import annotations

import re
import threading

import numpy as np

from vcfzarr_sql.query.decode import decode_variants
from vcfzarr_sql.query.schema import variants_schema
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view.expression import store_fields, to_sql


class ExpressionFilter:
    """A bcftools expression over the ``vcf_zarr`` columns it mentions (``columns``), the
    FORMAT lists covering ``samples`` (sorted store indexes; None: all). Close it when done."""

    def __init__(self, sql: str, columns: tuple[str, ...], samples: np.ndarray | None):
        self.sql = sql  # a condition that is never NULL
        self.columns = columns
        self.samples = samples
        import duckdb  # (a view without -i/-e does not pay for importing it)

        self._con = duckdb.connect()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, store: VczStore, include: str | None, exclude: str | None,
           samples: np.ndarray | None) -> ExpressionFilter | None:
        """The filter of ``-i include`` or ``-e exclude`` (None when neither is given)."""
        expression = include if include is not None else exclude
        if expression is None:
            return None
        condition = to_sql(expression, store_fields(store))
        sql = condition if include is not None else f"NOT {condition}"
        schema_names = tuple(variants_schema(store).names)
        used = tuple(n for n in schema_names if _mentions(condition, n))
        ordered = None if samples is None else np.unique(samples)
        return cls(sql, used or (schema_names[0],), ordered)

    def mask(self, source: ChunkSource, chunk: int) -> np.ndarray:
        """Per record of variant chunk ``chunk`` (read through ``source``): whether it
        satisfies the expression."""
        batch = decode_variants(source, chunk, self.columns, self.samples)
        with self._lock:
            self._con.register("batch", batch)
            try:
                values = self._con.execute(f"SELECT {self.sql} FROM batch").fetchnumpy()
            finally:
                self._con.unregister("batch")
        return np.asarray(next(iter(values.values())), dtype=bool)

    def close(self) -> None:
        self._con.close()


def _mentions(sql: str, column: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(column)}(?![\w])", sql) is not None
