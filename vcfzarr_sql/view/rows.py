"""``-i``/``-e``: which records of a chunk satisfy a bcftools filter expression.

The expression becomes SQL (:mod:`.expression`), evaluated by DuckDB over the chunk's rows
decoded as the ``vcf_zarr`` table (same row order as the stored arrays), with the selected
samples in the FORMAT lists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.view.expression import store_fields, to_sql


@dataclass(frozen=True)
class ExpressionFilter:
    sql: str  # a condition that is never NULL
    columns: tuple[str, ...]
    samples: np.ndarray | None  # sorted store indexes of the samples the FORMAT lists cover

    @classmethod
    def of(cls, store, include: str | None, exclude: str | None, samples) -> ExpressionFilter | None:
        if include is None and exclude is None:
            return None
        condition = to_sql(include if include is not None else exclude, store_fields(store))
        sql = condition if include is not None else f"NOT {condition}"
        schema_names = _schema_names(store)
        used = tuple(n for n in schema_names if _mentions(condition, n))
        ordered = None if samples is None else np.unique(samples)
        return cls(sql, used or (schema_names[0],), ordered)

    def mask(self, store, chunk: int) -> np.ndarray:
        """Per record of variant chunk ``chunk``: whether it satisfies the expression."""
        import duckdb

        from vcfzarr_sql.query.decode import decode_variants

        batch = decode_variants(store, chunk, self.columns, self.samples)  # noqa: F841 (scanned)
        con = duckdb.connect()
        try:
            values = con.execute(f"SELECT {self.sql} FROM batch").fetchnumpy()
        finally:
            con.close()
        return np.asarray(next(iter(values.values())), dtype=bool)


def _schema_names(store) -> tuple[str, ...]:
    from vcfzarr_sql.query.schema import variants_schema

    return tuple(variants_schema(store).names)


def _mentions(sql: str, column: str) -> bool:
    import re

    return re.search(rf"(?<![\w]){re.escape(column)}(?![\w])", sql) is not None
