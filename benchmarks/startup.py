"""Start-up time of the CLI as a process, against the floors it cannot beat (hyperfine-like).

    python benchmarks/startup.py [--repeats 15]

Prints the median wall time of each command over the repeats (after one warm-up run) and its
ratio to the floor beside it: Python itself for ``--help``, Python running the same query with
DuckDB directly for ``query "SELECT 1"``. Targets on a quiet machine: --help < 0.15 s,
query < 0.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

PY = sys.executable
CLI = [PY, "-m", "vcfzarr_sql"]
#: (name, command, name of its floor)
COMMANDS = (
    ("python -c pass", [PY, "-c", "pass"], None),
    ("python: import duckdb; SELECT 1", [PY, "-c", "import duckdb; duckdb.sql('SELECT 1').show()"], None),
    ("vcfzarr-sql --help", [*CLI, "--help"], "python -c pass"),
    ('vcfzarr-sql query "SELECT 1"', [*CLI, "query", "SELECT 1"], "python: import duckdb; SELECT 1"),
)


def median_time(command: list[str], repeats: int) -> float:
    subprocess.run(command, check=True, capture_output=True)  # warm-up (file cache)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    repeats = parser.parse_args().repeats
    medians: dict[str, float] = {}
    for name, command, floor in COMMANDS:
        medians[name] = median_time(command, repeats)
        ratio = f"  {medians[name] / medians[floor]:.2f}x {floor}" if floor else ""
        print(f"{name:40s} {medians[name]:6.3f} s{ratio}")


if __name__ == "__main__":
    main()
