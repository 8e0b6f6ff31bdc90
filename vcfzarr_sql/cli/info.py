"""``vcfzarr-sql info STORE``: what a VCF Zarr store holds.

Version and format, record and sample counts, chunking, then the contigs, filters, samples
and the INFO/FORMAT fields (Number, Type, Description), read through the same metadata table
functions SQL sees (``vcf_zarr_contigs``, ``vcf_zarr_samples``, ``vcf_zarr_fields``).
"""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options
from vcfzarr_sql.cli.query import print_query
from vcfzarr_sql.engine.connection import Connection, connect

#: the width of the fields table: every column and whole descriptions, whatever the terminal
FIELDS_WIDTH = 10_000
#: samples listed before "... and N more"
SAMPLES_SHOWN = 10


def describe_store(con: Connection, path: str) -> None:
    """Print the summary of the store at ``path``."""
    store = con.store(path)
    click.echo(f"store:     {path}")
    click.echo(f"version:   VCF Zarr {store.version} (Zarr v{store.zarr_format})")
    click.echo(f"records:   {store.num_variants:,} in {store.num_variant_chunks} chunks of {store.variants_chunk_size:,}")
    click.echo(f"samples:   {store.num_samples:,} in {store.num_sample_chunks} chunks of {store.samples_chunk_size:,}")
    samples = [str(s) for s in store.samples]
    shown = ", ".join(samples[:SAMPLES_SHOWN])
    more = f" ... and {len(samples) - SAMPLES_SHOWN} more" if len(samples) > SAMPLES_SHOWN else ""
    click.echo(f"           {shown}{more}")
    filters = ", ".join(store.filters) if len(store.filters) else "(none)"
    click.echo(f"filters:   {filters}")
    literal = path.replace("'", "''")
    click.echo("contigs:")
    print_query(con, f"SELECT contig, length, num_variants FROM vcf_zarr_contigs('{literal}')")
    click.echo("fields:")
    print_query(
        con,
        'SELECT category, name, column_name, number, type, description, dtype, chunks '
        f"FROM vcf_zarr_fields('{literal}')",
        max_width=FIELDS_WIDTH,
    )


@click.command("info")
@options.store_path
def command(store: str) -> None:
    """Describe a VCF Zarr store: samples, contigs, fields, chunking, version."""
    describe_store(connect(), store)
