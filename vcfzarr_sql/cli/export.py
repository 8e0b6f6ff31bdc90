"""``vcfzarr-sql export STORE OUT --format FORMAT``: a selection for the analysis tools."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options

#: the formats (vcfzarr_sql.exporters.FORMATS, named here so --help imports nothing)
FORMATS = ("plink", "pgen", "bgen", "anndata")


@click.command("export")
@options.store_path
@click.argument("out", type=click.Path())
@click.option("--format", "-f", "format_", type=click.Choice(FORMATS), required=True,
              help="plink: OUT.bed/.bim/.fam; pgen: OUT.pgen/.pvar/.psam; bgen: OUT.bgen/.sample; "
              "anndata: OUT.h5ad or OUT.zarr.")
@options.selection
@click.option("--sparse", is_flag=True, help="anndata: X as a sparse (CSR) matrix.")
@click.option("--allele-layers", is_flag=True,
              help="anndata: the calls as layers allele_1, allele_2, ... (int8 allele indexes) and phased.")
@click.option("--compression", type=click.Choice(("zlib", "zstd")), default=None,
              help="bgen: how each variant's probabilities are compressed (default zlib).")
def command(store: str, out: str, format_: str, regions: str | None, regions_file: str | None,
            targets: str | None, targets_file: str | None, samples: str | None,
            samples_file: str | None, include: str | None, exclude: str | None,
            sparse: bool, compression: str | None, allele_layers: bool) -> None:
    """Write the records of STORE (those view selects with the same options) for PLINK 1/2,
    BGEN readers (REGENIE, SAIGE, BOLT) or AnnData tools (scanpy).

    \b
    vcfzarr-sql export x.zarr out/x --format pgen -r 20:1-2000000 -i 'MAF>0.01'
    vcfzarr-sql export x.zarr x.h5ad --format anndata -S samples.txt
    """
    from vcfzarr_sql.cli.process import reuse_freed_memory
    from vcfzarr_sql.exporters import Selection, export

    reuse_freed_memory()
    selection = Selection(regions=regions, regions_file=regions_file, targets=targets,
                          targets_file=targets_file, samples=samples, samples_file=samples_file,
                          include=include, exclude=exclude)
    summary = export(store, out, format_, selection, sparse=sparse, compression=compression,
                     allele_layers=allele_layers)
    left_out = (f"; {summary.left_out} with more than one ALT left out (as plink2 --max-alleles 2)"
                if summary.left_out else "")
    click.echo(f"{summary.records} records x {summary.samples} samples written to "
               f"{', '.join(summary.files)}{left_out}", err=True)
