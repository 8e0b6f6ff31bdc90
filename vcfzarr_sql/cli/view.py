"""``vcfzarr-sql view STORE``: the store as VCF/BCF, as ``bcftools view`` writes it."""

from __future__ import annotations

from typing import Any

import click

from vcfzarr_sql.cli import options


@click.command("view", context_settings={"help_option_names": ["--help"]})  # -h: bcftools' header only
@options.store_path
@options.selection
@click.option("--no-update", "-I", is_flag=True, help="Do not recompute INFO/AC and INFO/AN for -s.")
# -- record filters besides -i/-e (bcftools view's names; query/selection/sites.py)
@click.option("--min-ac", "-c", help="Minimum allele count INT[:nref|alt1|minor|major|nonmajor].")
@click.option("--max-ac", "-C", help="Maximum allele count INT[:nref|alt1|minor|major|nonmajor].")
@click.option("--min-af", "-q", help="Minimum allele frequency FLOAT[:nref|alt1|minor|major|nonmajor].")
@click.option("--max-af", "-Q", help="Maximum allele frequency FLOAT[:nref|alt1|minor|major|nonmajor].")
@click.option("--min-alleles", "-m", type=int, help="Minimum number of alleles (REF included).")
@click.option("--max-alleles", "-M", type=int, help="Maximum number of alleles (REF included).")
@click.option("--types", "-v", help="Only these types: snps,indels,mnps,other,bnd,overlaps.")
@click.option("--exclude-types", "-V", help="Not these types: snps,indels,mnps,other,bnd,overlaps.")
@click.option("--uncalled", "-u", is_flag=True, help="Only sites without a called genotype.")
@click.option("--exclude-uncalled", "-U", is_flag=True, help="Drop sites without a called genotype.")
@click.option("--known", "-k", is_flag=True, help="Only sites with an ID.")
@click.option("--novel", "-n", is_flag=True, help="Only sites without an ID.")
@click.option("--apply-filters", "-f", help="Only sites whose FILTER is one of these (PASS,. ...).")
@click.option("--genotype", "-g", help="Sites with a hom|het|miss genotype (^: without).")
@click.option("--phased", "-p", is_flag=True, help="Only sites where every sample is phased.")
@click.option("--exclude-phased", "-P", is_flag=True, help="Drop sites where every sample is phased.")
@click.option("--private", "-x", is_flag=True, help="Only sites whose non-reference alleles are all in the -s samples.")
@click.option("--exclude-private", "-X", is_flag=True, help="Drop sites private to the -s samples.")
@click.option("--trim-alt-alleles", "-a", is_flag=True, help="Remove ALT alleles no selected sample's genotype calls.")
# --
@click.option("--output-type", "-O", type=click.Choice(["v", "z", "b", "u"]), default=None,
              help="v: VCF (default), z: bgzipped VCF, b: BCF, u: uncompressed BCF. "
              "A FILE named .vcf, .vcf.gz, .vcf.bgz or .bcf is written as named (as bcftools does).")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write to FILE (default: standard output).")
@click.option("--header-only", "-h", is_flag=True, help="Write the header only (help: --help).")
@click.option("--no-header", "-H", is_flag=True, help="Write the records without the header.")
@click.option("--drop-genotypes", "-G", is_flag=True, help="Write no FORMAT and sample columns.")
def command(store: str, regions: str | None, regions_file: str | None, targets: str | None,
            targets_file: str | None, samples: str | None, samples_file: str | None,
            include: str | None, exclude: str | None, no_update: bool, output_type: str | None,
            output: str | None, header_only: bool, no_header: bool, drop_genotypes: bool,
            **site_options: Any) -> None:
    """Write the records of STORE as VCF or BCF, as bcftools view does for the original file.

    \b
    vcfzarr-sql view x.zarr -r 20:1-200000 -s NA00001 -i 'QUAL>20' -Oz -o out.vcf.gz
    """
    from vcfzarr_sql.cli.process import blosc_without_lock, defer_numcodecs_init, reuse_freed_memory

    defer_numcodecs_init()  # (it reads chunks through store/codec_classes.py only)
    blosc_without_lock()  # (it decompresses only)
    from vcfzarr_sql.view import Selection, SiteFilters, view

    reuse_freed_memory()  # (each chunk's arrays in the pages of the last's: 13,000 faults fewer of 39,000 at 20,000 x 1,000)
    selection = Selection(
        regions=regions, regions_file=regions_file, targets=targets, targets_file=targets_file,
        samples=samples, samples_file=samples_file, include=include, exclude=exclude,
        update_counts=not no_update, sites=SiteFilters.parse(**site_options),
    )
    view(store, output, selection, output_type, header=not no_header, records=not header_only,
         genotypes=not drop_genotypes)
