"""``vcfzarr-sql convert INPUT OUTPUT``: VCF/BCF -> VCF Zarr (a thin wrapper of :func:`convert`)."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options


@click.command("convert")
@click.argument("input", type=click.Path(dir_okay=False))
@click.argument("output", type=click.Path())
@options.variants_chunk_size
@options.samples_chunk_size
@options.workers
@options.force
@options.quiet
def command(input, output, variants_chunk_size, samples_chunk_size, workers, force, quiet):
    """Convert a VCF, bgzipped VCF or BCF file INPUT to a VCF Zarr store OUTPUT."""
    from vcfzarr_sql.converter import convert

    convert(
        input,
        output,
        variants_chunk_size=variants_chunk_size,
        samples_chunk_size=samples_chunk_size,
        workers=workers,
        force=force,
        show_progress=False if quiet else None,
    )
