"""Scanning a VCF Zarr store as Arrow: :func:`dataset` gives a pyarrow Dataset with pushdown.

>>> import vcfzarr_sql, duckdb
>>> variants = vcfzarr_sql.dataset("sample.zarr", region="20:1-20000")   # doctest: +SKIP
>>> duckdb.sql("SELECT pos, ref FROM variants WHERE qual > 10").fetchall()  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from vcfzarr_sql.scan.dataset import VczDataset, VczScanner

__all__ = ["VczDataset", "VczScanner", "dataset"]


def dataset(
    path_or_store: str | os.PathLike | Any,
    table: str = "variants",
    samples: Sequence[str] | None = None,
    region: str | None = None,
) -> VczDataset:
    """The ``variants`` or ``calls`` table of a store (a path, URL, or an open ``VczStore``).

    ``samples``: the sample ids to keep (None: all). ``region``: a bcftools ``-r`` string
    (``"chr1:100-200,chr2"``); only records overlapping it are rows. Both are ANDed with any
    filter the query pushes down.
    """
    if isinstance(path_or_store, (str, os.PathLike)):
        from vcfzarr_sql.store import open_store

        path_or_store = open_store(path_or_store)
    return VczDataset(path_or_store, table, samples, region)
