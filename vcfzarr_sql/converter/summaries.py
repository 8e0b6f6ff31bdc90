"""The stored genotype counts of an existing store, read from its genotypes and written beside
them (``vcfzarr-sql index``; ``convert`` computes them from the genotypes in memory instead,
in :mod:`.encode`): a plan of every variant chunk, run by the executor, each chunk summarised
(:func:`~vcfzarr_sql.query.summarise.summarise_chunk`) and written in order."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.query.call_stats import summarise_call_stats_chunk, summarised_store
from vcfzarr_sql.query.execute import every_chunk
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH
from vcfzarr_sql.query.summarise import summarise_chunk
from vcfzarr_sql.store.counting import CountingSource
from vcfzarr_sql.store.indexing import GenotypeCountsWriter, local_directory
from vcfzarr_sql.store.summary_arrays import call_stats_arrays
from vcfzarr_sql.store.vcz import VczStore, open_store
from vcfzarr_sql.store.writer import ArrayLayout, add_arrays, blosc_single_threaded, write_rows


def write_genotype_counts(path: str | os.PathLike) -> bool:
    """Write the stored genotype counts (:mod:`vcfzarr_sql.format.summaries`, replacing any;
    with the per-chunk counts of ``stats -s -``) into the local directory store at ``path``; False (nothing written) when it has no genotypes."""
    location = local_directory(os.fspath(path))
    with open_store(location) as store:
        gt = store.format_fields.get("GT")
        if gt is None or not store.has_array(spec.VARIANT_ALLELE):
            return False
        writer = GenotypeCountsWriter(location, store)
        summaries = every_chunk(store, lambda source, chunk: summarise_chunk(source, gt.array, chunk),
                                ahead=PREFETCH_DEPTH)
        for _, chunk_summary in summaries:
            writer.add(chunk_summary)
        writer.close()
        _write_call_stats(location, store, gt.array)
    return True


def _write_call_stats(location: str, store: VczStore, gt_array: str) -> None:
    """Write the per-chunk counts of ``stats -s -`` (:mod:`vcfzarr_sql.query.call_stats`,
    replacing any) of ``store``, opened from the local directory ``location``, when its
    FORMAT/DP and AD are of the shapes they count."""
    if not summarised_store(store):
        return
    arrays = call_stats_arrays(store.num_variants, store.num_samples, store.variants_chunk_size,
                               store.samples_chunk_size)

    def counted(source: CountingSource, chunk: int) -> dict[str, np.ndarray]:
        stats = summarise_call_stats_chunk(source, gt_array, chunk)
        return {name: stats.block(name) for name in arrays}

    write_chunk_rows(location, store, arrays, counted)


def write_chunk_rows(location: str, store: VczStore, arrays: Mapping[str, ArrayLayout],
                     rows: Callable[[CountingSource, int], dict[str, np.ndarray]]) -> None:
    """Add ``arrays`` (one row per variant chunk; replacing any) to ``store``, opened from the
    local directory ``location``, and write each chunk's rows, ``rows(source, chunk)`` (one
    block per array name), computed by the executor over every chunk in order."""
    add_arrays(location, store.zarr_format, list(arrays.values()))
    with blosc_single_threaded():
        for chunk, blocks in every_chunk(store, rows, ahead=PREFETCH_DEPTH):
            for name, array in arrays.items():
                write_rows(location, array, chunk, blocks[name], store.zarr_format)
