"""The stored genotype counts of an existing store, read from its genotypes and written beside
them (``vcfzarr-sql index``; ``convert`` computes them from the genotypes in memory instead,
in :mod:`.encode`): a plan of every variant chunk, run by the executor, each chunk summarised
(:func:`~vcfzarr_sql.query.summarise.summarise_chunk`) and written in order."""

from __future__ import annotations

import os

from vcfzarr_sql.format import spec
from vcfzarr_sql.query.execute import run_plan, scan_source
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH
from vcfzarr_sql.query.request import every_chunk_plan
from vcfzarr_sql.query.summarise import ChunkSummary, summarise_chunk
from vcfzarr_sql.store.indexing import GenotypeCountsWriter, local_directory
from vcfzarr_sql.store.vcz import open_store


def write_genotype_counts(path: str | os.PathLike) -> bool:
    """Write the stored genotype counts (:mod:`vcfzarr_sql.format.summaries`, replacing any)
    into the local directory store at ``path``; False (nothing written) when it has no genotypes."""
    location = local_directory(os.fspath(path))
    with open_store(location) as store:
        gt = store.format_fields.get("GT")
        if gt is None or not store.has_array(spec.VARIANT_ALLELE):
            return False
        plan = every_chunk_plan(store)
        source = scan_source(store, plan)
        writer = GenotypeCountsWriter(location, store)

        def summary(run: range) -> ChunkSummary:
            return summarise_chunk(source, gt.array, int(plan.variant_chunks[run.start]))

        for chunk_summary in run_plan(source, plan, summary, ahead=PREFETCH_DEPTH):
            writer.add(chunk_summary)
        writer.close()
    return True
