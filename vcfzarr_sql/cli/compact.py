"""``vcfzarr-sql compact COHORT OUTPUT``: a cohort of several batches as one plain store.

The cohort is written as VCF by ``view`` (its merged records, read through the one executor)
and converted: OUTPUT has the answers of the cohort and the stored summaries of a conversion
of the merged VCF. It is built beside OUTPUT and renamed into place by ``convert``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import click

from vcfzarr_sql.cli import options


def compact(cohort: str | os.PathLike, output: str | os.PathLike, *, workers: int = 1,
            force: bool = False) -> None:
    """Write the cohort at ``cohort`` as one plain VCF Zarr store at ``output``."""
    from vcfzarr_sql.converter import convert
    from vcfzarr_sql.store import open_store
    from vcfzarr_sql.view import view

    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    # (not named like convert's work folders, which convert removes as a killed run's leftovers)
    work = Path(tempfile.mkdtemp(prefix=f".compacting-{target.name}-", dir=target.parent))
    try:
        merged = work / "merged.bcf"
        with open_store(cohort) as store:
            view(store, merged, output_type="u")
            chunks = (store.variants_chunk_size, store.samples_chunk_size)
        convert(merged, target, variants_chunk_size=chunks[0], samples_chunk_size=chunks[1],
                workers=workers, force=force, show_progress=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@click.command("compact")
@options.store_path
@click.argument("output", type=click.Path())
@options.workers
@options.force
def command(store: str, output: str, workers: int, force: bool) -> None:
    """Write the cohort STORE (batches added with `add`) as one plain VCF Zarr store at OUTPUT,
    with the same answers and the stored summaries a conversion writes."""
    compact(store, output, workers=workers, force=force)
    click.echo(f"{store}: compacted into {output}")
