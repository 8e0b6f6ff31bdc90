"""Click options shared by several commands: defined once, reused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from vcfzarr_sql.format import spec

force = click.option(
    "--force", is_flag=True, help="Replace OUTPUT if it is an existing VCF Zarr store."
)
quiet = click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
workers = click.option(
    "--workers",
    "-w",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes.",
)
variants_chunk_size = click.option(
    "--variants-chunk-size",
    type=click.IntRange(min=1),
    default=spec.DEFAULT_VARIANTS_CHUNK_SIZE,
    show_default=True,
    help="Variants per chunk.",
)
samples_chunk_size = click.option(
    "--samples-chunk-size",
    type=click.IntRange(min=1),
    default=spec.DEFAULT_SAMPLES_CHUNK_SIZE,
    show_default=True,
    help="Samples per chunk.",
)
store_path = click.argument("store", type=click.Path())
deep = click.option("--deep", is_flag=True, help="Also decode every chunk of every array.")
database = click.option(
    "--database",
    "-d",
    default=":memory:",
    show_default=True,
    help="DuckDB database file (:memory:: a private in-memory one per session).",
)


def selection(command: Callable[..., Any]) -> Callable[..., Any]:
    """bcftools' record and sample selection (``view``, ``export``): ``-r/-R``, ``-t/-T``,
    ``-s/-S``, ``-i/-e``."""
    for option in reversed([
        click.option("--regions", "-r", help="Records overlapping chr|chr:pos|chr:beg-end, comma-separated."),
        click.option("--regions-file", "-R", type=click.Path(dir_okay=False),
                     help="Regions from a file (CHROM[ POS| BEG END] or .bed)."),
        click.option("--targets", "-t", help="Records whose POS is in the targets ('^' excludes)."),
        click.option("--targets-file", "-T", type=click.Path(dir_okay=False), help="Targets from a file."),
        click.option("--samples", "-s", help="Comma-separated samples, in output order ('^' excludes)."),
        click.option("--samples-file", "-S", type=click.Path(dir_okay=False),
                     help="Samples from a file, one per line."),
        click.option("--include", "-i", help="Keep records for which the bcftools expression holds."),
        click.option("--exclude", "-e", help="Drop records for which the bcftools expression holds."),
    ]):
        command = option(command)
    return command
