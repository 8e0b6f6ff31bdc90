"""Region queries (1 kb, 100 kb, 10 Mb), site columns only and with genotypes, every tool side by side.

Tools: vcfzarr-sql in a warm session (``region :=`` and ``WHERE contig/pos``) and as a CLI process,
``bcftools view -r`` on the indexed BCF (binary output to /dev/null: records copied, genotypes not
decoded; and VCF text, ``-Ov``, every genotype decoded as our rows are), ``vcztools view -r`` on the
same store, polars-bio (``scan_vcf`` on the indexed VCF.gz, and ``scan_vcf_zarr`` on the store),
DuckDB over the Parquet export. Every tool's record count must equal bcftools' before it is timed.

    python -m benchmarks.regions --size quick
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from benchmarks import ours, polars_bio, report
from benchmarks.data import generate
from benchmarks.harness import OURS, Case, Measurement, measure, run_process, venv_bin
from benchmarks.sizes import Files, Size

SPANS = {"1 kb": 1_000, "100 kb": 100_000, "10 Mb": 10_000_000}
#: The site columns every tool returns in the "sites" tasks.
SITE_COLUMNS = "contig, pos, ref, alt, info_AC, info_AF"


def region_of(size: Size, span: int) -> tuple[str, int, int]:
    """(contig, start, end) 1-based inclusive: ``span`` bases a third into the first contig."""
    contig = size.contigs[0]
    start = min(contig.length // 3, contig.length - span) + 1
    return contig.name, start, start + span - 1


def bcftools_count(files: Files, region: str, genotypes: bool) -> int:
    """The expected answer: records bcftools returns for ``-r region``."""
    argv = ["bcftools", "view", "-H", "-r", region, str(files.bcf)] + ([] if genotypes else ["-G"])
    return subprocess.run(argv, check=True, capture_output=True).stdout.count(b"\n")


def line_count(argv: list[str]) -> Callable[[], int]:
    return lambda: run_process(argv).stdout.count(b"\n")


def discard(argv: list[str]) -> Callable[[], None]:
    def run() -> None:
        run_process(argv, capture=False)

    return run


def cases(files: Files, store: Path, size: Size, region: tuple[str, int, int], genotypes: bool, session: dict) -> list[Case]:
    contig, start, end = region
    text = f"{contig}:{start}-{end}"
    drop_gt = [] if genotypes else ["-G"]
    gt_column = ", fmt_GT" if genotypes else ""
    ours_region = f"SELECT {SITE_COLUMNS}{gt_column} FROM vcf_zarr('{store}', region := '{text}')"
    ours_where = f"SELECT {SITE_COLUMNS}{gt_column} FROM vcf_zarr('{store}') WHERE contig = '{contig}' AND pos BETWEEN {start} AND {end}"

    def our_session() -> Any:
        if "con" not in session:
            session["con"] = ours.connect()
        return session["con"]

    def ours_sql(sql: str) -> Callable[[], int]:
        return lambda: ours.arrow_rows(our_session().sql(sql))

    def ours_cli() -> int:
        argv = ours.cli_argv("query", "--format", "csv", ours_region)
        return run_process(argv).stdout.count(b"\n") - 1  # minus the CSV header

    def ours_cli_timed() -> None:
        run_process(ours.cli_argv("query", "--format", "csv", ours_region), capture=False)

    bcftools = ["bcftools", "view", "-r", text, *drop_gt]
    vcztools = [venv_bin("vcztools"), "view", "-H", "-r", text, *drop_gt, str(store)]

    def polars_bio_scan(scan: str, path: Path) -> Callable[[], int]:
        def run() -> int:
            import polars_bio as pb

            frame = getattr(pb, scan)(str(path), info_fields=["AC", "AF"], format_fields=["GT"] if genotypes else [])
            predicate = (pl.col("chrom") == contig) & pl.col("start").is_between(start, end)
            return frame.filter(predicate).collect().height

        return run

    parquet = duckdb.connect()
    if genotypes:
        parquet_sql = (
            f"SELECT contig, pos, sample_id, gt0, gt1 FROM read_parquet('{files.calls_parquet}') "
            f"WHERE contig = '{contig}' AND pos BETWEEN {start} AND {end}"
        )
    else:
        parquet_sql = (
            f"SELECT {SITE_COLUMNS} FROM read_parquet('{files.variants_parquet}') "
            f"WHERE contig = '{contig}' AND pos BETWEEN {start} AND {end}"
        )
    per_record = size.num_samples if genotypes else 1

    def duckdb_parquet() -> int:
        rows = ours.arrow_rows(parquet.sql(parquet_sql))
        return rows // per_record if rows % per_record == 0 else -rows

    return [
        Case(OURS, ours_sql(ours_region), note="warm session, `vcf_zarr(path, region := ...)`, rows streamed as Arrow"),
        Case(f"{OURS} WHERE", ours_sql(ours_where), note="warm session, `WHERE contig = ... AND pos BETWEEN ...`"),
        Case(f"{OURS} CLI", ours_cli_timed, check=ours_cli, note="`vcfzarr-sql query --format csv` process, output to /dev/null"),
        Case("bcftools", discard([*bcftools, "-Ou", str(files.bcf)]), check=line_count([*bcftools, "-H", str(files.bcf)]),
             note="`bcftools view -r` on the CSI-indexed BCF, uncompressed BCF to /dev/null (records copied: "
                  "genotypes are never decoded)"),
        Case("bcftools text", discard([*bcftools, "-Ov", str(files.bcf)]), check=line_count([*bcftools, "-H", str(files.bcf)]),
             note="`bcftools view -r -Ov`: the same records as VCF text to /dev/null, every genotype decoded and "
                  "formatted (like with like for our Arrow rows, which hold every call decoded)"),
        Case("vcztools", discard(vcztools), check=line_count(vcztools), note="`vcztools view -r` on the same store, VCF text to /dev/null"),
        Case("polars-bio VCF", polars_bio_scan("scan_vcf", files.vcf), note="`pb.scan_vcf(...).filter(chrom, start).collect()` on the indexed VCF.gz"),
        Case("polars-bio VCZ", polars_bio_scan("scan_vcf_zarr", polars_bio.readable_store(store)),
             note="`pb.scan_vcf_zarr(...)` on the same store's chunks (a view labelled VCF Zarr 0.4, the only version it reads)"),
        Case("DuckDB Parquet", duckdb_parquet, note="DuckDB over the Parquet export (long calls table for genotypes)"),
    ]


def run_suite(size: Size, skip: Sequence[str] = ()) -> tuple[list[Measurement], str]:
    files = generate(size)
    store, origin = ours.query_store(files)
    session: dict = {}
    results: list[Measurement] = []
    for genotypes in (False, True):
        for label, span in SPANS.items():
            region = region_of(size, span)
            text = f"{region[0]}:{region[1]}-{region[2]}"
            expected = bcftools_count(files, text, genotypes)
            task = f"{label} {'+ genotypes' if genotypes else 'sites'} ({expected} rec)"
            results += measure(task, cases(files, store, size, region, genotypes, session), expected, size.repeats, skip)
    return results, f"Store {origin}. Regions start a third into contig 1; sites = `{SITE_COLUMNS}`."


def main(argv: list[str] | None = None) -> list[Measurement]:
    return report.suite_main("regions", run_suite, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
