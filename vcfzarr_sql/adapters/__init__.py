"""Scanning a VCF Zarr store as Arrow: :func:`dataset` gives a pyarrow Dataset with pushdown.

>>> import vcfzarr_sql, duckdb
>>> variants = vcfzarr_sql.dataset("sample.zarr", region="20:1-20000")   # doctest: +SKIP
>>> duckdb.sql("SELECT pos, ref FROM variants WHERE qual > 10").fetchall()  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow.compute as pc

from vcfzarr_sql.adapters.dataset import VczDataset, VczScanner
from vcfzarr_sql.adapters.tasks import DEFAULT_TARGET_BYTES, ScanTask, ScanTasks

__all__ = [
    "DEFAULT_TARGET_BYTES", "ScanTask", "ScanTasks", "VczDataset", "VczScanner", "dataset", "scan_tasks",
]


def dataset(
    path_or_store: str | os.PathLike | Any,
    table: str = "variants",
    samples: Sequence[str] | None = None,
    region: str | None = None,
    *,
    storage_options: dict | None = None,
) -> VczDataset:
    """The ``variants`` or ``calls`` table of a store (a path, URL, or an open ``VczStore``).

    ``samples``: the sample ids to keep (None: all). ``region``: a bcftools ``-r`` string
    (``"chr1:100-200,chr2"``); only records overlapping it are rows. Both are ANDed with any
    filter the query pushes down. ``storage_options``: fsspec options of a URL.
    """
    if isinstance(path_or_store, (str, os.PathLike)):
        from vcfzarr_sql.store import open_store

        path_or_store = open_store(path_or_store, storage_options=storage_options)
    return VczDataset(path_or_store, table, samples, region)


def scan_tasks(
    path_or_store: str | os.PathLike | Any,
    table: str = "variants",
    *,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
    region: str | None = None,
    samples: Sequence[str] | None = None,
    target_bytes: float = DEFAULT_TARGET_BYTES,
    min_tasks: int = 1,
    storage_options: dict | None = None,
) -> ScanTasks:
    """The scan of ``table`` (``"variants"`` or ``"calls"``) as picklable :class:`ScanTask` s,
    for running it on another engine or in other processes (:mod:`vcfzarr_sql.adapters.tasks`).

    ``columns``: output columns (None: all); ``filter``: a pyarrow expression the rows must
    satisfy (applied exactly, pruning chunks); ``region``, ``samples``, ``storage_options``:
    as :func:`dataset`. Tasks are cut at about ``target_bytes`` of decoded columns, smaller
    when that gives fewer than ``min_tasks`` tasks (e.g. the engine's parallelism).
    """
    table_dataset = dataset(path_or_store, table, samples, region, storage_options=storage_options)
    return table_dataset.scan_tasks(
        columns, filter, target_bytes=target_bytes, min_tasks=min_tasks
    )
