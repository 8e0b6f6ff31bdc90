"""``vcfzarr-sql index STORE``: add a region index to an existing local VCF Zarr store."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options


@click.command("index")
@options.store_path
def command(store: str) -> None:
    """Write region_index (and variant_length if absent) into STORE, a local directory store
    (Zarr v2 or v3), so region queries read only the chunks they need; and genotype counts
    (summary_gt_* arrays), so the gt_ columns over all samples need no genotype decoding, and
    the genotypes packed 2 bits per call (summary_gt_packed), so counts over sample subsets
    are popcounts."""
    from vcfzarr_sql.converter.packed import write_packed_genotypes
    from vcfzarr_sql.converter.summaries import write_genotype_counts
    from vcfzarr_sql.store import write_region_index

    index = write_region_index(store)
    click.echo(f"{store}: wrote region_index ({len(index)} rows)")
    if write_genotype_counts(store):
        click.echo(f"{store}: wrote genotype counts (summary_gt_allele_counts, "
                   "summary_gt_call_counts, summary_gt_hwe, summary_sample_class_counts)")
    if write_packed_genotypes(store):
        click.echo(f"{store}: wrote packed genotypes (summary_gt_packed, summary_gt_packed_exact)")
