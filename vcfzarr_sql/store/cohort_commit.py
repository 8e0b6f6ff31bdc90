"""Committing a cohort: its manifest written whole, then renamed into place.

The rename is the commit point of ``add`` (:mod:`vcfzarr_sql.converter.cohort`): readers
(:func:`vcfzarr_sql.store.opening.open_store`) see the old manifest or the new one, never a
part of one. The file and its directory are synced, so a crash after the rename keeps it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from vcfzarr_sql.format import cohort as layout


def _sync(path: Path, flags: int = os.O_RDONLY) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit_manifest(root: str | os.PathLike, manifest: layout.Manifest) -> None:
    """Write ``manifest`` as the cohort at ``root``'s (atomically: a temporary file renamed)."""
    target = Path(root) / layout.MANIFEST
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(manifest.as_json(), indent=1) + "\n")
    _sync(temporary)
    os.replace(temporary, target)
    _sync(target.parent)


def sync_written(root: str | os.PathLike) -> None:
    """Make everything written so far under ``root`` durable: the batch and sites stores,
    before the manifest that names them is committed. One ``syncfs(2)`` of the filesystem
    holding ``root`` (Linux returns from it once that filesystem's data and metadata are on
    disk), where an ``fsync`` of each file opened every file again (hundreds of chunk files for
    a batch of one sample); ``sync(2)`` of every filesystem where ``syncfs`` is missing."""
    import ctypes

    fd = os.open(root, os.O_RDONLY)
    try:
        syncfs = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
        if syncfs is None or syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)
