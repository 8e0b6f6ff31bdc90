"""``genotype_matrix`` of another checkout and of this one in one process, interleaved with pgenlib.

    python -m benchmarks.matrix_versions BASE --gtstats 2000x30000 [--start RECORD] [--repeats 101]

On a loaded machine, runs of two checkouts in separate processes differ by more than a change
of a few hundred microseconds a call (pgenlib's own time moved 2x between them at load 15);
here each call of the three is timed in turn, under the same load and caches. ``BASE``: a
directory holding the other checkout (``git archive main | tar -x -C BASE``); its package is
copied into a temporary directory as ``vcfzarr_sql_base`` (``vcfzarr_sql`` renamed in its
sources) and imported beside this one. The store and ``.pgen`` are those of
:mod:`benchmarks.genotype_stats` (made by ``benchmarks.genotype_matrix --gtstats``); the
window is 1000 records from ``--start`` (default: the middle one), the answers are checked
equal first, and the medians of process CPU and wall time are printed with their ratio to
pgenlib's (``VCFZARR_SQL_KERNELS=numba``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.genotype_stats import prepare
from benchmarks.sizes import DATA_DIR


def base_package(checkout: Path, into: Path) -> Any:
    """The ``vcfzarr_sql`` of ``checkout``, copied into ``into`` as ``vcfzarr_sql_base`` and imported."""
    package = into / "vcfzarr_sql_base"
    shutil.copytree(checkout / "vcfzarr_sql", package)
    for source in package.rglob("*.py"):
        source.write_text(re.sub(r"\bvcfzarr_sql\b", "vcfzarr_sql_base", source.read_text()))
    sys.path.insert(0, str(into))
    return importlib.import_module("vcfzarr_sql_base")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="a directory holding the other checkout")
    parser.add_argument("--gtstats", required=True, metavar="SAMPLESxRECORDS")
    parser.add_argument("--start", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=101)
    args = parser.parse_args(argv)
    os.environ["VCFZARR_SQL_KERNELS"] = "numba"
    import pgenlib

    import vcfzarr_sql

    samples, records = args.gtstats.split("x")
    _, path, prefix = prepare(DATA_DIR / f"gtstats-{args.gtstats}", int(samples), int(records))
    # (not np.loadtxt: it warns about the header line, which its ``comments`` leaves empty)
    pvar = [line.split("\t") for line in prefix.with_suffix(".pvar").read_text().splitlines()
            if not line.startswith("#")]
    positions = np.array([int(row[1]) for row in pvar], np.int64)
    alleles = np.array([row[4].count(",") + 2 for row in pvar])
    offsets = np.concatenate([[0], np.cumsum(alleles)]).astype(np.uintp)
    start = len(positions) // 2 if args.start is None else args.start
    stop = start + 1000
    region = f"1:{positions[start]}-{positions[stop - 1]}"
    reader = pgenlib.PgenReader(bytes(str(prefix.with_suffix(".pgen")), "utf8"), allele_idx_offsets=offsets)
    out = np.empty((stop - start, reader.get_raw_sample_ct()), np.int8)
    with tempfile.TemporaryDirectory() as into:
        base = base_package(args.base, Path(into))
        base_store, store = base.open_store(path), vcfzarr_sql.open_store(path)
        tools: dict[str, Callable[[], Any]] = {
            "pgenlib": lambda: reader.read_range(start, stop, out),
            "base": lambda: base.genotype_matrix(base_store, region=region, columns=()).values,
            "this": lambda: vcfzarr_sql.genotype_matrix(store, region=region, columns=()).values,
        }
        tools["pgenlib"]()
        biallelic = alleles[start:stop] == 2
        theirs, ours = tools["base"](), tools["this"]()
        if not (np.array_equal(theirs, ours) and (ours[biallelic] == out[biallelic]).all()):
            raise SystemExit("different dosages")
        cpu: dict[str, list[float]] = {tool: [] for tool in tools}
        wall: dict[str, list[float]] = {tool: [] for tool in tools}
        for _ in range(args.repeats):
            for tool, run in tools.items():
                c, w = time.process_time(), time.perf_counter()
                run()
                cpu[tool].append(time.process_time() - c)
                wall[tool].append(time.perf_counter() - w)
    medians = {tool: (statistics.median(cpu[tool]), statistics.median(wall[tool])) for tool in tools}
    print(f"{stop - start} variants x {out.shape[1]} samples ({region}), load {os.getloadavg()[0]:.1f}")
    for tool, (c, w) in medians.items():
        print(f"{tool:8s} CPU {c * 1000:7.2f} ms  wall {w * 1000:7.2f} ms   / pgenlib: CPU "
              f"{c / medians['pgenlib'][0]:.2f}x, wall {w / medians['pgenlib'][1]:.2f}x")


if __name__ == "__main__":
    main()
