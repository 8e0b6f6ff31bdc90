"""vcfzarr-sql: SQL over VCF Zarr, through Arrow.

>>> import vcfzarr_sql
>>> vcfzarr_sql.convert("in.vcf.gz", "out.zarr")                        # doctest: +SKIP
>>> vcfzarr_sql.sql("SELECT count(*) FROM vcf_zarr('out.zarr') WHERE contig = '1'")  # doctest: +SKIP

The public names are imported on first use, so ``import vcfzarr_sql`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from vcfzarr_sql.errors import (
    NotSupportedError,
    QueryError,
    StoreError,
    VcfParseError,
    VcfZarrError,
    VcfZarrWarning,
)

__version__ = "0.1.0"

#: public name -> module that defines it
_LAZY = {
    "convert": "vcfzarr_sql.converter",
    "validate": "vcfzarr_sql.validation",
    "open_store": "vcfzarr_sql.store",
    "dataset": "vcfzarr_sql.adapters",
    "scan_tasks": "vcfzarr_sql.adapters",
    "genotype_matrix": "vcfzarr_sql.query.matrix",
    "connect": "vcfzarr_sql.engine",
    "register": "vcfzarr_sql.engine",
    "sql": "vcfzarr_sql.engine",
    "export": "vcfzarr_sql.exporters",
    "to_anndata": "vcfzarr_sql.exporters",
}

__all__ = [
    "NotSupportedError",
    "QueryError",
    "StoreError",
    "VcfParseError",
    "VcfZarrError",
    "VcfZarrWarning",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vcfzarr_sql' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
