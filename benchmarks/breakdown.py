"""Where our time goes: the same work cut into layers, each timed alone (median of N).

Whole-store genotype scan: numcodecs floor -> our scan without DuckDB -> DuckDB pulling the
batches -> the full aggregate queries of ``benchmarks.aggregates``. CLI: interpreter start ->
``import vcfzarr_sql.cli`` -> ``vcfzarr-sql query`` of a 1 kb region.

    python -m benchmarks.breakdown --size quick
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import floor, ours
from benchmarks.harness import run_process, suite_arguments, venv_bin
from benchmarks.regions import region_of
from benchmarks.sizes import RESULTS_DIR, SIZES, Files


def median_time(work: Callable[[], object], repeats: int) -> float:
    work()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def scan_layers(store: Path, repeats: int) -> list[tuple[str, float]]:
    dataset = ours.require("vcfzarr_sql.adapters", "dataset")
    con = ours.connect()
    queries = {
        "DuckDB pulls the batches: `SELECT count(*), sum(len(fmt_GT))`": f"SELECT count(*), sum(len(fmt_GT)) FROM vcf_zarr('{store}')",
        "+ per-variant allele count (list lambdas)": f"SELECT count(*), sum(ac) FROM (SELECT list_count(list_filter(flatten(fmt_GT), lambda a: a > 0)) AS ac FROM vcf_zarr('{store}'))",
        "calls table pulled: `SELECT count(fmt_GT) FROM vcf_zarr_calls`": f"SELECT count(fmt_GT) FROM vcf_zarr_calls('{store}')",
        "+ GROUP BY sample_id (missingness)": f"SELECT sample_id, count(*) FILTER (WHERE fmt_GT[1] IS NULL) FROM vcf_zarr_calls('{store}') GROUP BY sample_id",
    }
    layers = [
        ("floor: numcodecs decode of call_genotype + numpy count", lambda: floor.allele_counts(store)),
        ("our scan alone (no DuckDB): `dataset(...).to_table(columns=['fmt_GT'])`", lambda: dataset(str(store)).to_table(columns=["fmt_GT"])),
        *((label, lambda q=q: con.sql(q).fetchall()) for label, q in queries.items()),
    ]
    return [(label, median_time(work, repeats)) for label, work in layers]


def cli_layers(files: Files, store: Path, repeats: int) -> list[tuple[str, float]]:
    contig, start, end = region_of(SIZES[files.directory.name], 1_000)
    sql = f"SELECT contig, pos FROM vcf_zarr('{store}', region := '{contig}:{start}-{end}')"
    layers = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("python -c 'import vcfzarr_sql.cli'", [sys.executable, "-c", "import vcfzarr_sql.cli"]),
        ("python -c 'import duckdb, pyarrow.dataset'", [sys.executable, "-c", "import duckdb, pyarrow.dataset"]),
        ("vcfzarr-sql query (1 kb region)", [venv_bin("vcfzarr-sql"), "query", "--format", "csv", sql]),
    ]
    return [(label, median_time(functools.partial(run_process, argv, capture=False), repeats)) for label, argv in layers]


def table(title: str, rows: list[tuple[str, float]]) -> str:
    lines = [f"| {title} | median s |", "|---|---|"]
    lines += [f"| {label} | {seconds:.3f} |" for label, seconds in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = suite_arguments(__doc__.splitlines()[0], argv)
    size = SIZES[args.size]
    files = Files(size.directory)
    store, origin = ours.query_store(files)
    text = "\n\n".join(
        [
            f"## breakdown ({size.name})",
            f"Store {origin}.",
            table("whole-store genotype scan, layer by layer", scan_layers(store, size.repeats)),
            table("CLI process, layer by layer", cli_layers(files, store, size.repeats)),
        ]
    )
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"breakdown-{size.name}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
