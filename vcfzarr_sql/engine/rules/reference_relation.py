"""Rule: a table-function call becomes a reference to the relation registered for it.

Without an alias of its own, the reference is aliased to the function's name, so columns
qualified the DuckDB way (``vcf_zarr.pos``) keep working.
"""

from __future__ import annotations

from sqlglot import exp


def reference_relation(call: exp.Anonymous, relation_name: str, needs_alias: bool) -> exp.Table:
    """The table reference that replaces ``call``.

    >>> import sqlglot
    >>> call = sqlglot.parse_one("vcf_zarr('x.zarr')", read="duckdb")
    >>> reference_relation(call, "vcf_zarr_5335f9a62062", needs_alias=True).sql("duckdb")
    'vcf_zarr_5335f9a62062 AS vcf_zarr'
    >>> reference_relation(call, "vcf_zarr_5335f9a62062", needs_alias=False).sql("duckdb")
    'vcf_zarr_5335f9a62062'
    """
    alias = exp.TableAlias(this=exp.to_identifier(call.name.lower())) if needs_alias else None
    return exp.Table(this=exp.to_identifier(relation_name), alias=alias)
