"""``vcfzarr-sql demo``: convert the bundled VCF, describe the store, run real queries.

Each query is printed with its result and its pruning statistics (variant chunks read out of
the store's total), so the effect of region and position predicates is visible.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import click

from vcfzarr_sql.cli.info import describe_store
from vcfzarr_sql.cli.query import print_query
from vcfzarr_sql.converter import convert
from vcfzarr_sql.engine.connection import Connection, connect
from vcfzarr_sql.errors import QueryError

#: The bundled demo call set (package data; see examples/data/make_demo_data.py).
DEMO_VCF = Path(__file__).resolve().parents[1] / "data" / "demo.vcf.gz"
#: Small chunks, so pruning shows on a small file.
DEMO_CHUNK_SIZE = 500


@dataclass(frozen=True)
class Places:
    """Where the demo queries look: a region of one contig, a position range and a region of
    another (the same one if the file has a single contig)."""

    region: str
    contig: str
    start: int
    stop: int
    frequencies_region: str


#: hand-picked places in the bundled data (the region is the gene BETA2 of genes.bed)
BUNDLED_PLACES = Places("1:450000-470000", "2", 300000, 400000, "2:50000-90000")

#: (title, SQL with placeholders: {store}, the fields of Places, {site_fields}, {frequency_fields};
#: the columns it needs)
QUERIES = (
    (
        "Records per contig",
        ("SELECT contig, count(*) AS records, min(pos) AS first, max(pos) AS last\n"
         "FROM vcf_zarr('{store}')\nGROUP BY contig ORDER BY contig"),
        (),
    ),
    (
        "Records overlapping a region (region :=, like bcftools view -r {region})",
        ("SELECT contig, pos, \"end\", id, ref, alt, qual, filters{site_fields}\n"
         "FROM vcf_zarr('{store}', region := '{region}')\nORDER BY pos LIMIT 8"),
        (),
    ),
    (
        "Records by position (WHERE, like bcftools view -t {contig}:{start}-{stop})",
        ("SELECT count(*) AS records, count(*) FILTER (WHERE 'PASS' IN filters) AS pass,\n"
         "       round(avg(qual), 1) AS mean_qual\n"
         "FROM vcf_zarr('{store}')\nWHERE contig = '{contig}' AND pos BETWEEN {start} AND {stop}"),
        (),
    ),
    (
        "Allele counts and frequencies from the genotypes{frequency_note}",
        ("SELECT pos, ref, alt,\n"
         "       list_count(flatten(fmt_GT)) AS an,\n"
         "       len([a FOR a IN flatten(fmt_GT) IF a = 1]) AS ac,\n"
         "       round(ac / an, 4) AS af{frequency_fields}\n"
         "FROM vcf_zarr('{store}', region := '{frequencies_region}')\nORDER BY pos LIMIT 8"),
        ("fmt_GT",),
    ),
    (
        ("Per-sample missingness and heterozygosity on contig {contig} (one row per call;"
         " fmt_GT_1, fmt_GT_2: the alleles)"),
        ("SELECT sample_id, count(*) AS calls,\n"
         "       round(avg((fmt_GT_1 IS NULL AND fmt_GT_2 IS NULL)::INT), 4) AS missing,\n"
         "       round(avg((fmt_GT_1 <> fmt_GT_2)::INT), 4) AS het\n"
         "FROM vcf_zarr_calls('{store}')\nWHERE contig = '{contig}'\n"
         "GROUP BY sample_id ORDER BY missing DESC, sample_id LIMIT 5"),
        ("fmt_GT",),
    ),
)


def _sql_string(text: str) -> str:
    return text.replace("'", "''")


def places_in(con: Connection, store: str) -> Places:
    """Places for a file the demo does not know: windows of its two largest contigs."""
    rows = con.sql(
        f"SELECT contig, min(pos), max(pos) FROM vcf_zarr('{_sql_string(store)}') "
        "GROUP BY contig ORDER BY count(*) DESC, contig LIMIT 2"
    ).fetchall()
    if not rows:
        raise QueryError(f"{store}: no records to demonstrate on")
    first, second = rows[0], rows[-1]

    def at(row: tuple, fraction: float) -> int:
        return int(row[1] + fraction * (row[2] - row[1]))

    return Places(
        region=f"{first[0]}:{at(first, 0.45)}-{at(first, 0.47)}",
        contig=second[0],
        start=at(second, 0.3),
        stop=at(second, 0.4),
        frequencies_region=f"{second[0]}:{at(second, 0.1)}-{at(second, 0.2)}",
    )


def demo_queries(con: Connection, store: str, places: Places) -> list[tuple[str, str]]:
    """(title, SQL) of each demo query the store has the columns for, with INFO/DP, AC and AF
    shown beside the computed values when the file has them."""
    columns = set(con.sql(f"SELECT * FROM vcf_zarr('{_sql_string(store)}') LIMIT 0").columns)
    frequency_fields = [c for c in ("info_AC", "info_AF") if c in columns]
    values = {
        "store": _sql_string(store),
        **asdict(places),
        "site_fields": ", info_DP" if "info_DP" in columns else "",
        "frequency_fields": "".join(f", {c}" for c in frequency_fields),
        "frequency_note": " (vs the AC/AF the VCF carries)" if frequency_fields else "",
    }
    return [
        (title.format(**values), template.format(**values))
        for title, template, needs in QUERIES
        if columns.issuperset(needs)
    ]


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


def run_queries(con: Connection, store: str, places: Places = BUNDLED_PLACES) -> None:
    """Run and print each demo query with its pruning statistics."""
    for title, sql in demo_queries(con, store, places):
        _heading(title)
        click.echo(sql)
        start = time.perf_counter()
        print_query(con, sql)
        elapsed = time.perf_counter() - start
        click.echo(f"{pruning_line(con.last_stats)}; {elapsed * 1000:.0f} ms")


@click.command("demo")
@click.option(
    "--vcf", type=click.Path(exists=True, dir_okay=False), default=str(DEMO_VCF),
    show_default="the bundled demo.vcf.gz", help="VCF/BCF to demonstrate on.",
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
        convert(
            vcf, store, variants_chunk_size=DEMO_CHUNK_SIZE, force=keep is not None, show_progress=False
        )
        click.echo(f"-> {store} in {time.perf_counter() - start:.1f} s")
        con = connect()
        _heading("2. What the store holds (vcfzarr-sql info)")
        describe_store(con, store)
        click.echo()
        click.secho("3. Queries", bold=True)
        bundled = Path(vcf).resolve() == DEMO_VCF
        run_queries(con, store, BUNDLED_PLACES if bundled else places_in(con, store))
