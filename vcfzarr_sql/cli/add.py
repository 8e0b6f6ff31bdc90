"""``vcfzarr-sql add COHORT INPUT...``: add the samples of VCF/BCF files to a store
(:func:`vcfzarr_sql.converter.cohort.add`)."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options


@click.command("add")
@click.argument("cohort", type=click.Path(file_okay=False))
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--reference", "-f", type=click.Path(dir_okay=False, exists=True), default=None,
              help="FASTA of the reference: the REF base of a gVCF block cut where no input's "
                   "block starts (as bcftools merge --gvcf REF.fa; without it: N).")
@options.workers
def command(cohort: str, inputs: tuple[str, ...], reference: str | None, workers: int) -> None:
    """Add the samples of each INPUT (a VCF/BCF file: one batch each, in order) to COHORT, a
    store `convert` made. Its records become the union of the inputs' as `bcftools merge -m
    none` gives it (gVCF reference blocks: as `bcftools merge --gvcf REF.fa -m none`); nothing
    already written is rewritten; a killed add changes nothing."""
    from vcfzarr_sql.cli.process import defer_numcodecs_init

    defer_numcodecs_init()  # (it writes and reads chunks through store/codec_classes.py only)
    from vcfzarr_sql.converter.cohort import add

    click.echo(f"{cohort}: {add(cohort, list(inputs), workers=workers, reference=reference)}")
