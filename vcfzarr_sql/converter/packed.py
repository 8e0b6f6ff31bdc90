"""The packed genotypes (:mod:`vcfzarr_sql.format.packed_genotypes`) of an existing store, read
from its genotypes and written beside them (``vcfzarr-sql index``; ``convert`` packs them from
the genotypes in memory instead, in :mod:`.encode`): a plan of every variant chunk, run by the
executor, each chunk packed (:func:`~vcfzarr_sql.query.packed_counts.pack_chunk`) and written."""

from __future__ import annotations

import os

from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.format import spec
from vcfzarr_sql.query.execute import run_plan, scan_source
from vcfzarr_sql.query.packed_counts import pack_chunk
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH
from vcfzarr_sql.query.request import every_chunk_plan
from vcfzarr_sql.store.indexing import local_directory
from vcfzarr_sql.store.packed_arrays import packed_arrays
from vcfzarr_sql.store.vcz import open_store
from vcfzarr_sql.store.writer import add_arrays, blosc_single_threaded, write_rows


def write_packed_genotypes(path: str | os.PathLike) -> bool:
    """Write the packed genotype arrays (replacing any) into the local directory store at
    ``path``; False (nothing written) when it has no genotypes."""
    location = local_directory(os.fspath(path))
    with open_store(location) as store:
        gt = store.format_fields.get("GT")
        if gt is None or not store.has_array(spec.VARIANT_ALLELE):
            return False
        arrays = packed_arrays(store.num_variants, store.num_samples, store.variants_chunk_size,
                               store.samples_chunk_size)
        add_arrays(location, store.zarr_format, list(arrays.values()))
        plan = every_chunk_plan(store)
        source = scan_source(store, plan)

        def packed(run: range) -> tuple[int, tuple]:
            chunk = int(plan.variant_chunks[run.start])
            return chunk, pack_chunk(source, gt.array, chunk)

        with blosc_single_threaded():
            for chunk, (rows, exact) in run_plan(source, plan, packed, ahead=PREFETCH_DEPTH):
                write_rows(location, arrays[pg.PACKED], chunk, rows, store.zarr_format)
                write_rows(location, arrays[pg.PACKED_EXACT], chunk, exact, store.zarr_format)
    return True
