"""The genotype counts over all samples of a cohort's records, added up over its batches once,
by ``add``, and stored in its new sites store (:data:`~vcfzarr_sql.store.cohort.ADDED_COUNTS`,
laid out as ``convert`` lays them out: :func:`~vcfzarr_sql.store.summary_arrays.summary_arrays`).

A cohort then reads the ``gt_`` columns over all samples from one array, as a plain store
does, instead of adding up every batch's counts at each query. They are computed by the
cohort itself (:class:`~vcfzarr_sql.store.cohort.CohortStore` over the new sites store, before
the commit), so stored and computed counts cannot differ; this reads every batch's per-record
counts (small arrays: no genotypes). HWE is not stored: it is computed from these counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from vcfzarr_sql.store.cohort import ADDED_COUNTS, CohortStore
from vcfzarr_sql.store.kvstore import open_kv
from vcfzarr_sql.store.summary_arrays import summary_arrays
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.store.vcz import open_store as open_plain
from vcfzarr_sql.store.writer import add_arrays, write_whole


def write_added_counts(root: Path, sites_dir: Path, batches: Sequence[VczStore], compressor: dict) -> bool:
    """Add up the genotype counts of ``batches`` (the cohort at ``root``, in order) at the
    records of the sites store at ``sites_dir`` and store them there; False (nothing written)
    when the cohort has none to add up (a batch without them). ``compressor``: the sites
    store's."""
    sites = open_plain(sites_dir)
    kv = open_kv(str(root))
    try:
        cohort = CohortStore(str(root), kv, list(batches), sites)
        if not all(cohort.has_array(name) for name in ADDED_COUNTS):
            return False
        values = {name: cohort.read_array(name) for name in ADDED_COUNTS}
        shape = (cohort.num_variants, cohort.variants_chunk_size, cohort.samples_chunk_size)
    finally:  # (not cohort.close(): the batches are the caller's)
        sites.close()
        kv.close()
    alleles = values[ADDED_COUNTS[0]].shape[1]
    layouts = summary_arrays(shape[0], alleles, len(cohort.samples), shape[1], shape[2])
    arrays = [replace(layouts[name], compressor=compressor) for name in ADDED_COUNTS]
    add_arrays(sites_dir, 2, arrays)
    for array in arrays:
        write_whole(sites_dir, array, values[array.name], 2)
    return True
