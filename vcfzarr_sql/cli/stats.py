"""``vcfzarr-sql stats STORE``: the numbers of ``bcftools stats``, and the plots of
``plot-vcfstats`` as one HTML page (``--plot DIR`` / ``-o report.html``)."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options


@click.command("stats", context_settings={"help_option_names": ["-h", "--help"]})
@options.store_path
@click.option("--regions", "-r", help="Records overlapping chr|chr:pos|chr:beg-end, comma-separated.")
@click.option("--regions-file", "-R", type=click.Path(dir_okay=False), help="Regions from a file (CHROM[ POS| BEG END] or .bed).")
@click.option("--targets", "-t", help="Records whose POS is in the targets ('^' excludes).")
@click.option("--targets-file", "-T", type=click.Path(dir_okay=False), help="Targets from a file.")
@click.option("--samples", "-s", help="Samples for the per-sample sections: comma-separated, '-' for all, '^' excludes.")
@click.option("--samples-file", "-S", type=click.Path(dir_okay=False), help="Samples from a file, one per line.")
@click.option("--include", "-i", help="Count records for which the bcftools expression holds.")
@click.option("--exclude", "-e", help="Skip records for which the bcftools expression holds.")
@click.option("--sections", default=None, help="Comma-separated sections to print (default: all): SN,TSTV,SiS,AF,QUAL,IDD,ST,DP,PSC,PSI,HWE.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), help="Write the report (report.html and one PNG per plot) to DIR.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the HTML report to FILE (its PNGs beside it).")
def command(store: str, regions: str | None, regions_file: str | None, targets: str | None,
            targets_file: str | None, samples: str | None, samples_file: str | None,
            include: str | None, exclude: str | None, sections: str | None,
            plot_dir: str | None, output: str | None) -> None:
    """Print the sections of bcftools stats for STORE, as bcftools stats prints them for the
    original file with the same options (-s for the per-sample sections PSC, PSI, HWE).

    \b
    vcfzarr-sql stats x.zarr -s - -r 20:1-200000
    vcfzarr-sql stats x.zarr -s - -o qc/report.html
    """
    import sys

    from vcfzarr_sql.cli.process import defer_numcodecs_init

    defer_numcodecs_init()  # (it reads chunks through store/codec_classes.py only)
    from vcfzarr_sql.qc import SECTIONS, collect
    from vcfzarr_sql.qc.text import stats_text
    from vcfzarr_sql.query.selection import Selection
    from vcfzarr_sql.store import open_store

    selection = Selection(regions=regions, regions_file=regions_file, targets=targets,
                          targets_file=targets_file, samples=samples, samples_file=samples_file,
                          include=include, exclude=exclude)
    wanted = SECTIONS if sections is None else tuple(s.strip() for s in sections.split(","))
    counted = collect(open_store(store), selection)
    if plot_dir is None and output is None:
        sys.stdout.writelines(stats_text(counted.totals, counted.sample_names, wanted, store))
        return
    from vcfzarr_sql.qc.report import write_report

    path = write_report(counted, output, plot_dir, title=store)
    click.echo(f"wrote {path}", err=True)
