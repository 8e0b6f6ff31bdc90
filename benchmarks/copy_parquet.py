"""Peak memory of ``COPY (SELECT * FROM vcf_zarr(store)) TO 'x.parquet'`` of a whole store:
ours (pyarrow's writer, a bounded row group at a time: vcfzarr_sql/engine/parquet_copy.py)
beside DuckDB's own writer (which builds row groups of 122,880 rows) on the same query.

    python -m benchmarks.copy_parquet [--repeats 2] [--store PATH]

Each process runs one COPY; its maximum RSS, CPU (user + system) and wall time are printed,
interleaved over the repeats (medians), with the ratios. Target: ours under 1 GiB RSS. The
store is :func:`benchmarks.scan_floor.scan_store` (1000 samples x 104,843 variants) unless
``--store`` names another. Measured 2026-11-26 (2 cores, load ~10): DuckDB's writer 8,945 MiB,
27.2 CPU-s; ours 581 MiB, 19.8 CPU-s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import run_process

#: a COPY of every column; DuckDB's writer is chosen by an option ours does not take
COPY = "COPY (SELECT * FROM vcf_zarr('{store}')) TO '{out}' {options}"
RUNS = {"ours (pyarrow writer)": "", "DuckDB's writer": "(FORMAT parquet, PER_THREAD_OUTPUT false)"}
PROGRAM = "import sys, vcfzarr_sql; vcfzarr_sql.connect().sql(sys.argv[1])"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--store", type=Path, help="store to copy (default: the scan benchmark's)")
    args = parser.parse_args(argv)
    if args.store is None:
        from benchmarks.scan_floor import scan_store

        args.store = scan_store()
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in RUNS}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for name, options in RUNS.items():
                sql = COPY.format(store=args.store.resolve(), out=Path(tmp) / "x.parquet", options=options)
                result = run_process([sys.executable, "-c", PROGRAM, sql])
                results[name].append((result.max_rss_bytes / 2**20, result.cpu_s, result.wall_s))
    medians = {name: [statistics.median(values) for values in zip(*runs)] for name, runs in results.items()}
    print(f"store {args.store}")
    print(f"{'writer':24s} {'max RSS MiB':>12s} {'CPU s':>7s} {'wall s':>7s}")
    for name, (rss, cpu, wall) in medians.items():
        print(f"{name:24s} {rss:12.0f} {cpu:7.2f} {wall:7.2f}")
    (rss, cpu, wall), (base_rss, base_cpu, base_wall) = medians.values()
    print(f"ours / DuckDB's: RSS {rss / base_rss:.2f}x, CPU {cpu / base_cpu:.2f}x, wall {wall / base_wall:.2f}x")


if __name__ == "__main__":
    main()
