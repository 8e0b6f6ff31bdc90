"""Start-up cost of the CLI as a process, against the floors it cannot beat (hyperfine-like).

    python -m benchmarks.startup [--repeats 15] [--store PATH]

Every process is run ``repeats`` times, interleaved (one round runs each command once, in
turn), after one warm-up run each; the medians of its CPU time (user + system) and wall time
are printed, and each one's ratio to its floor:

- ``vcfzarr-sql --help`` against ``python -c pass`` (target: <= 0.15 CPU-s);
- ``vcfzarr-sql query "SELECT 1"`` against Python running the same query with DuckDB;
- ``vcfzarr-sql query`` of whole-cohort AC (:data:`AC_SQL`) against its floor: a bare
  ``python -c 'import duckdb, pyarrow, numpy'`` process plus the same query warm in one
  session (``vcfzarr_sql.connect()``, run once, then timed; median over the repeats).
  Target: <= 1.5x.

The store is :func:`benchmarks.scan_floor.scan_store` (1000 samples x 104,843 variants,
simulated and converted on first use) unless ``--store`` names another. The package is
byte-compiled first (``compileall``), as an installed package is: a process that compiles our
modules from source (``PYTHONDONTWRITEBYTECODE``) pays ~0.3 s more.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
import time
from pathlib import Path

import vcfzarr_sql
from benchmarks.harness import run_process

PY = sys.executable
CLI = [PY, "-m", "vcfzarr_sql"]
AC_SQL = "SELECT count(*) AS records, sum(gt_AC[1]) AS ac FROM vcf_zarr('{store}')"
#: the floor of ``vcfzarr-sql query``: its three big imports
BARE = "python: import duckdb, pyarrow, numpy"


def commands(store: Path) -> dict[str, list[str]]:
    ac = AC_SQL.format(store=store)
    return {
        "python -c pass": [PY, "-c", "pass"],
        "python: import duckdb; SELECT 1": [PY, "-c", "import duckdb; duckdb.sql('SELECT 1').fetchall()"],
        BARE: [PY, "-c", "import duckdb, pyarrow, numpy"],
        "vcfzarr-sql --help": [*CLI, "--help"],
        'vcfzarr-sql query "SELECT 1"': [*CLI, "query", "SELECT 1"],
        "vcfzarr-sql query AC": [*CLI, "query", ac],
    }


#: each command -> its floor (a command, or the bare imports plus the warm query)
FLOORS = {
    "vcfzarr-sql --help": "python -c pass",
    'vcfzarr-sql query "SELECT 1"': "python: import duckdb; SELECT 1",
    "vcfzarr-sql query AC": f"{BARE} + warm query",
}


def warm_query(store: Path, repeats: int) -> tuple[float, float]:
    """Median (CPU, wall) seconds of :data:`AC_SQL` in a session that has run it once."""
    con = vcfzarr_sql.connect()
    sql = AC_SQL.format(store=store)
    con.sql(sql).fetchall()
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        con.sql(sql).fetchall()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--store", type=Path, help="store for the AC query (default: the scan benchmark's)")
    args = parser.parse_args(argv)
    if args.store is None:
        from benchmarks.scan_floor import scan_store

        args.store = scan_store()
    compileall.compile_dir(os.path.dirname(vcfzarr_sql.__file__), quiet=1)
    runs = commands(args.store.resolve())
    for command in runs.values():
        run_process(command)  # warm-up: file cache
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(args.repeats):
        names = list(runs)
        names = names[round_ % len(names):] + names[:round_ % len(names)]
        for name in names:
            result = run_process(runs[name])
            cpu[name].append(result.cpu_s)
            wall[name].append(result.wall_s)
    medians = {name: (statistics.median(cpu[name]), statistics.median(wall[name])) for name in runs}
    warm_cpu, warm_wall = warm_query(args.store, args.repeats)
    bare_cpu, bare_wall = medians[BARE]
    medians[FLOORS["vcfzarr-sql query AC"]] = (bare_cpu + warm_cpu, bare_wall + warm_wall)
    print(f"store {args.store}; warm AC query in a session: CPU {warm_cpu:.3f} s, wall {warm_wall:.3f} s")
    print(f"{'command':46s} {'CPU s':>7s} {'wall s':>7s}   ratio to floor (CPU, wall)")
    for name, (c, w) in medians.items():
        floor = FLOORS.get(name)
        ratio = ""
        if floor is not None:
            fc, fw = medians[floor]
            ratio = f"   {c / fc:.2f}x, {w / fw:.2f}x  {floor}"
        print(f"{name:46s} {c:7.3f} {w:7.3f}{ratio}")


if __name__ == "__main__":
    main()
