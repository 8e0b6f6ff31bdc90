"""The genotype counts over all samples of a cohort's records, added up by ``add`` and stored in
its new sites store (:data:`~vcfzarr_sql.store.cohort.ADDED_COUNTS`, laid out as ``convert``
lays them out: :func:`~vcfzarr_sql.store.summary_arrays.summary_arrays`).

A cohort then reads the ``gt_`` columns over all samples from one array, as a plain store
does, instead of adding up every batch's counts at each query. Where the cohort stored its
totals before the add (and holds no gVCF blocks), the new batches' counts are added to them
(:class:`Since`), so that an add reads the counts of its own batches, not every batch's; else
they are computed by the cohort itself (:class:`~vcfzarr_sql.store.cohort.CohortStore` over
the new sites store, before the commit). Both add up with one function
(:func:`~vcfzarr_sql.store.cohort.added_up`), so stored and computed counts cannot differ.
HWE is not stored: it is computed from these counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vcfzarr_sql.format import cohort as layout
from vcfzarr_sql.store.cohort import ADDED_COUNTS, CohortStore, added_up, variants_chunk_of
from vcfzarr_sql.store.kvstore import open_kv
from vcfzarr_sql.store.summary_arrays import summary_arrays
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.store.vcz import open_store as open_plain
from vcfzarr_sql.store.writer import add_arrays, write_whole


@dataclass(frozen=True)
class Since:
    """What an add adds its new batches' counts to: the cohort's stored ``totals`` before it
    (:func:`stored_totals`), each record's row in those (``origin``, -1: a record new to the
    cohort) and in each batch (``batch_rows``), and how many batches the cohort had."""

    totals: dict[str, np.ndarray]
    origin: np.ndarray
    batch_rows: np.ndarray
    old_batches: int


def stored_totals(store: VczStore) -> dict[str, np.ndarray] | None:
    """The counts over all samples that ``store`` (a plain store, or a cohort) stores, by name;
    None if it stores none, or holds gVCF blocks (their counts depend on the merged blocks)."""
    sites = store.sites if isinstance(store, CohortStore) else store
    if sites.has_array(layout.ALLELES) or not all(sites.has_array(name) for name in ADDED_COUNTS):
        return None
    return {name: sites.read_array(name) for name in ADDED_COUNTS}


def _added(since: Since, batches: Sequence[VczStore]) -> dict[str, np.ndarray] | None:
    """The counts of ``since``'s totals and the new batches, added up; None if a new batch
    stores none."""
    new = list(enumerate(batches))[since.old_batches:]
    if not all(batch.has_array(name) for _, batch in new for name in ADDED_COUNTS):
        return None
    rows = [since.origin, *(since.batch_rows[:, b] for b, _ in new)]
    samples = [sum(batch.num_samples for batch in batches[: since.old_batches]),
               *(batch.num_samples for _, batch in new)]
    values = {}
    for name in ADDED_COUNTS:
        stored = [since.totals[name], *(batch.read_array(name) for _, batch in new)]
        trailing = tuple(max(s.shape[k] for s in stored) for k in range(1, stored[0].ndim))
        parts = [(r >= 0, s[r[r >= 0]] if (r >= 0).any() else None, n) for r, s, n in zip(rows, stored, samples)]
        values[name] = added_up(name, (len(since.origin), *trailing), parts)
    return values


def write_added_counts(root: Path, sites_dir: Path, batches: Sequence[VczStore], compressor: dict,
                       since: Since | None = None) -> bool:
    """Add up the genotype counts of ``batches`` (the cohort at ``root``, in order) at the
    records of the sites store at ``sites_dir`` and store them there; False (nothing written)
    when the cohort has none to add up (a batch without them). ``compressor``: the sites
    store's; ``since``: the totals the new batches' counts are added to."""
    sites = open_plain(sites_dir)
    kv = open_kv(str(root))
    try:
        values = None if since is None else _added(since, batches)
        if values is None:
            cohort = CohortStore(str(root), kv, list(batches), sites)
            if not all(cohort.has_array(name) for name in ADDED_COUNTS):
                return False
            values = {name: cohort.read_array(name) for name in ADDED_COUNTS}
        shape = (sites.num_variants, variants_chunk_of(sites), batches[0].samples_chunk_size)
        samples = len(sites.samples)
    finally:  # (not cohort.close(): the batches are the caller's)
        sites.close()
        kv.close()
    alleles = values[ADDED_COUNTS[0]].shape[1]
    layouts = summary_arrays(shape[0], alleles, samples, shape[1], shape[2])
    arrays = [replace(layouts[name], compressor=compressor) for name in ADDED_COUNTS]
    add_arrays(sites_dir, 2, arrays)
    for array in arrays:
        write_whole(sites_dir, array, values[array.name], 2)
    return True
