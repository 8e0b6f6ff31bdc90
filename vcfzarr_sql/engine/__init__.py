"""SQL over VCF Zarr stores in DuckDB: the ``vcf_zarr(...)`` table functions.

>>> import vcfzarr_sql
>>> con = vcfzarr_sql.connect()
>>> con.sql("SELECT count(*) FROM vcf_zarr('x.zarr') WHERE contig = '1'")   # doctest: +SKIP

A query's table-function calls are found with sqlglot (:mod:`.call_sites`), rewritten by the
rules of :mod:`.rules` into references to registered pyarrow datasets (:mod:`.rewrite`), and
the rest of the SQL text goes to DuckDB unchanged (:mod:`.connection`).
"""

from vcfzarr_sql.engine.connection import Connection, connect, default_connection, register, sql
from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS, ScanSpec
from vcfzarr_sql.engine.rewrite import RewrittenQuery, rewrite

__all__ = [
    "TABLE_FUNCTIONS",
    "Connection",
    "RewrittenQuery",
    "ScanSpec",
    "connect",
    "default_connection",
    "register",
    "rewrite",
    "sql",
]
