"""The packed genotypes (:mod:`vcfzarr_sql.format.packed_genotypes`) of an existing store, read
from its genotypes and written beside them (``vcfzarr-sql index``; ``convert`` packs them from
the genotypes in memory instead, in :mod:`.encode`): a plan of every variant chunk, run by the
executor, each chunk packed (:func:`~vcfzarr_sql.query.packed_counts.pack_chunk`) and written."""

from __future__ import annotations

import os

import numpy as np

from vcfzarr_sql.converter.summaries import write_chunk_rows
from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.format import spec
from vcfzarr_sql.query.packed_counts import pack_chunk
from vcfzarr_sql.store.counting import CountingSource
from vcfzarr_sql.store.indexing import local_directory
from vcfzarr_sql.store.packed_arrays import packed_arrays
from vcfzarr_sql.store.vcz import open_store


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

        def packed(source: CountingSource, chunk: int) -> dict[str, np.ndarray]:
            rows, exact = pack_chunk(source, gt.array, chunk)
            return {pg.PACKED: rows, pg.PACKED_EXACT: exact}

        write_chunk_rows(location, store, arrays, packed)
    return True
