"""``vcfzarr-sql convert INPUT OUTPUT``: VCF/BCF -> VCF Zarr (a thin wrapper of :func:`convert`)."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options


@click.command("convert")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("output", type=click.Path())
@options.variants_chunk_size
@options.samples_chunk_size
@options.workers
@options.force
@options.quiet
def command(inputs, output, variants_chunk_size, samples_chunk_size, workers, force, quiet):
    """Convert VCF, bgzipped VCF or BCF INPUTS to a VCF Zarr store OUTPUT.

    Several INPUTS (per-chromosome files, say) become one store, as their concatenation;
    their headers must agree. INPUT ``-`` reads standard input. Prints a one-line summary.
    """
    from vcfzarr_sql.converter import convert

    summary = convert(
        list(inputs),
        output,
        variants_chunk_size=variants_chunk_size,
        samples_chunk_size=samples_chunk_size,
        workers=workers,
        force=force,
        show_progress=False if quiet else None,
    )
    if not quiet:
        click.echo(f"{output}: {summary}", err=True)
