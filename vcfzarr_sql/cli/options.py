"""Click options shared by several commands: defined once, reused."""

from __future__ import annotations

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
