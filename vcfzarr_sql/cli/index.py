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
    are popcounts. In a cohort grown with `add`, into every batch."""
    from vcfzarr_sql.converter.cohort_index import index_store

    for done in index_store(store):
        click.echo(f"{done.path}: wrote region_index ({done.index_rows} rows)")
        if done.counts:
            click.echo(f"{done.path}: wrote genotype counts (summary_gt_allele_counts, "
                       "summary_gt_call_counts, summary_gt_hwe, summary_sample_class_counts; "
                       "for stats -s -, the summary_sample_call_stats, summary_call_depth_counts, "
                       "summary_indel_vaf and summary_hwe_genotype_counts of stores with GT)")
        if done.packed:
            click.echo(f"{done.path}: wrote packed genotypes (summary_gt_packed, "
                       "summary_gt_packed_exact)")
