"""``vcfzarr-sql demo``: convert the bundled VCF, describe the store, run real queries.

Each query is printed with its result and its pruning statistics (variant chunks read out of
the store's total), so the effect of region and position predicates is visible.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import click

import vcfzarr_sql
from vcfzarr_sql.cli.info import describe_store
from vcfzarr_sql.cli.query import print_query
from vcfzarr_sql.engine.connection import Connection

#: The bundled demo call set (see examples/data/make_demo_data.py).
DEMO_VCF = Path(__file__).resolve().parents[2] / "examples" / "data" / "demo.vcf.gz"
#: Small chunks, so pruning shows on a small file.
DEMO_CHUNK_SIZE = 500

#: (title, SQL with a {store} placeholder)
QUERIES = (
    (
        "Records per contig",
        "SELECT contig, count(*) AS records, min(pos) AS first, max(pos) AS last\n"
        "FROM vcf_zarr('{store}')\nGROUP BY contig ORDER BY contig",
    ),
    (
        "Records overlapping a region (region :=, like bcftools view -r 1:450000-470000)",
        "SELECT contig, pos, \"end\", id, ref, alt, qual, filters, info_DP\n"
        "FROM vcf_zarr('{store}', region := '1:450000-470000')\nORDER BY pos LIMIT 8",
    ),
    (
        "Records by position (WHERE, like bcftools view -t 2:300000-400000)",
        "SELECT count(*) AS records, count(*) FILTER (WHERE 'PASS' IN filters) AS pass,\n"
        "       round(avg(qual), 1) AS mean_qual\n"
        "FROM vcf_zarr('{store}')\nWHERE contig = '2' AND pos BETWEEN 300000 AND 400000",
    ),
    (
        "Allele counts and frequencies from the genotypes (vs the AC/AF the VCF carries)",
        "SELECT pos, ref, alt,\n"
        "       list_count(flatten(fmt_GT)) AS an,\n"
        "       len([a FOR a IN flatten(fmt_GT) IF a = 1]) AS ac,\n"
        "       round(ac / an, 4) AS af, info_AC, info_AF\n"
        "FROM vcf_zarr('{store}', region := '2:50000-90000')\nORDER BY pos LIMIT 8",
    ),
    (
        "Per-sample missingness and heterozygosity on contig 2 (one row per call;"
        " fmt_GT_1, fmt_GT_2: the alleles)",
        "SELECT sample_id, count(*) AS calls,\n"
        "       round(avg((fmt_GT_1 IS NULL AND fmt_GT_2 IS NULL)::INT), 4) AS missing,\n"
        "       round(avg((fmt_GT_1 <> fmt_GT_2)::INT), 4) AS het\n"
        "FROM vcf_zarr_calls('{store}')\nWHERE contig = '2'\n"
        "GROUP BY sample_id ORDER BY missing DESC, sample_id LIMIT 5",
    ),
)


def pruning_line(stats: dict) -> str:
    """One line saying how much of the store a query read.

    >>> pruning_line({"variant_chunks_read": 2, "variant_chunks_total": 11,
    ...               "sample_chunks_read": 1, "sample_chunks_total": 1, "bytes_read": 20480})
    'read 2 of 11 variant chunks, 1 of 1 sample chunks, 20.0 KiB'
    """
    return (
        f"read {stats['variant_chunks_read']} of {stats['variant_chunks_total']} variant chunks, "
        f"{stats['sample_chunks_read']} of {stats['sample_chunks_total']} sample chunks, "
        f"{stats['bytes_read'] / 1024:.1f} KiB"
    )


def _heading(text: str) -> None:
    click.echo()
    click.secho(text, bold=True)
    click.echo("-" * len(text))


def run_queries(con: Connection, store: str) -> None:
    """Run and print each demo query with its pruning statistics."""
    for title, template in QUERIES:
        sql = template.format(store=store.replace("'", "''"))
        _heading(title)
        click.echo(sql)
        start = time.perf_counter()
        print_query(con, sql)
        elapsed = time.perf_counter() - start
        click.echo(f"{pruning_line(con.last_stats)}; {elapsed * 1000:.0f} ms")


@click.command("demo")
@click.option(
    "--vcf", type=click.Path(exists=True, dir_okay=False), default=str(DEMO_VCF),
    show_default="the bundled examples/data/demo.vcf.gz", help="VCF/BCF to demonstrate on.",
)
@click.option(
    "--keep", type=click.Path(file_okay=False), default=None,
    help="Write the store to this directory and keep it (default: a temporary directory).",
)
def command(vcf: str, keep: str | None) -> None:
    """Convert a small bundled VCF, describe the store, and query it with pruning statistics."""
    with tempfile.TemporaryDirectory(prefix="vcfzarr-sql-demo-") as tmp:
        store = keep if keep is not None else os.path.join(tmp, "demo.zarr")
        _heading(f"1. Convert {vcf}")
        start = time.perf_counter()
        vcfzarr_sql.convert(
            vcf, store, variants_chunk_size=DEMO_CHUNK_SIZE, force=keep is not None, show_progress=False
        )
        click.echo(f"-> {store} in {time.perf_counter() - start:.1f} s")
        con = vcfzarr_sql.connect()
        _heading("2. What the store holds (vcfzarr-sql info)")
        describe_store(con, store)
        click.echo()
        click.secho("3. Queries", bold=True)
        run_queries(con, store)
