"""``vcfzarr-sql index`` over a store or a cohort: the region index, stored genotype counts and
packed genotypes written into every batch (a plain store is its own one batch).

The cohort's own region index (its sites store's) is written by ``add`` and needs nothing
here; each batch is a plain store whose region index a cohort's region queries use to read
only the batch's chunks holding the records they keep, and whose stored genotype counts the
cohort adds up. A cohort's batches are indexed under the lock ``add`` holds, so that an
``add`` cannot remove or commit batches meanwhile.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vcfzarr_sql.converter.output import output_lock
from vcfzarr_sql.converter.packed import write_packed_genotypes
from vcfzarr_sql.converter.summaries import write_genotype_counts
from vcfzarr_sql.store.indexing import local_directory, write_region_index
from vcfzarr_sql.store.kvstore import open_kv
from vcfzarr_sql.store.opening import read_manifest


@dataclass(frozen=True)
class Indexed:
    """One store indexed: its directory, its region index's rows, and whether genotype counts
    and packed genotypes were written (False: it has no genotypes)."""

    path: str
    index_rows: int
    counts: bool
    packed: bool


def batch_directories(path: str) -> list[str]:
    """The directory of each batch of the cohort at ``path`` in the order added (``[path]``
    for a plain store)."""
    kv = open_kv(path)
    try:
        manifest = read_manifest(path, kv)
    finally:
        kv.close()
    if manifest is None:
        return [path]
    return [os.path.join(path, relative) if relative else path for relative in manifest.batches]


def index_store(path: str | os.PathLike) -> Iterator[Indexed]:
    """Write the region index and genotype counts into the local store at ``path``, or into
    each batch of the cohort there (under its lock), yielding each store as it is done."""
    location = local_directory(os.fspath(path))
    directories = batch_directories(location)
    if len(directories) == 1:
        yield _indexed(location)
        return
    with output_lock(Path(location)):
        for directory in batch_directories(location):  # (as committed once the lock is held)
            yield _indexed(directory)


def _indexed(directory: str) -> Indexed:
    index = write_region_index(directory)
    counts = write_genotype_counts(directory)
    return Indexed(directory, len(index), counts, write_packed_genotypes(directory))
