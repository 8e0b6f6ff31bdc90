"""A dosage matrix of 1,000 variants x all samples into numpy: ``genotype_matrix`` against pgenlib.

    python -m benchmarks.genotype_matrix [--repeats 15] [--variants 1000] [--start RECORD]
        [--gtstats SAMPLESxRECORDS] [--only ours] [--kernels numpy,numba] [--peak-rss] [--first-use]

Both read the same records of the scan benchmark's simulation (:func:`benchmarks.scan_floor.scan_store`,
1000 samples x 104,843 variants; plink2 ``--make-pgen`` of its VCF, cached beside it), the
reader or store opened once, outside the timing:

- pgenlib: ``PgenReader.read_range(start, stop, out)`` into an int8 (variants, samples) array
  (needs ``pip install pgenlib``: benchmarks only);
- ours: ``vcfzarr_sql.genotype_matrix(store, region=..., columns=())`` for the region that
  spans the same records, ``values`` int8 dosages (-9 missing, as pgenlib), from the packed
  genotypes, once per ``--kernels`` mode (``ours[numpy]``: numpy's look-up; ``ours[numba]``:
  the compiled expansion, ``VCFZARR_SQL_KERNELS`` set before each call, compiled before the
  timing); "ours unpacked": the same store without them (decoding ``call_genotype``).

``--gtstats 2000x30000`` reads the simulation of :mod:`benchmarks.genotype_stats` instead.

The two answers are checked equal (on the records biallelic in both) before timing; each tool
is then run ``repeats`` times, interleaved; the medians of CPU time (this process, all
threads) and wall time are printed with their ratio to pgenlib's, beside two references: the
same dosages through SQL and Arrow (``SELECT fmt_GT ... region := ...``, then numpy), and the
decode floor (the genotype chunks holding the records, decoded with numcodecs). ``--only``
times only the named tools beside pgenlib (the others evict the caches between them);
``--peak-rss`` also runs a process that only reads the matrix 3 times, ours and pgenlib's,
and prints their peak RSS; ``--first-use`` runs a fresh process per mode that opens the store
and reads the matrix twice, and prints the CPU time of each read (the first one pays for
loading numba and the compiled code from numba's disk cache).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import vcfzarr_sql
from benchmarks.data import generate
from benchmarks.genotype_stats import prepare, without_packed
from benchmarks.scan_floor import SCAN, scan_store
from benchmarks.sizes import DATA_DIR
from vcfzarr_sql.query.matrix import dosage


def pgen(vcf: Path) -> Path:
    """plink2's ``.pgen`` of ``vcf`` (cached beside it; the prefix is returned)."""
    prefix = vcf.parent / "plink"
    if not prefix.with_suffix(".pgen").exists():
        subprocess.run(["plink2", "--vcf", str(vcf), "--make-pgen", "--allow-extra-chr", "--threads", "2",
                        "--out", str(prefix)], check=True, capture_output=True)
    return prefix


def timed(run: Callable[[], object], repeats: int, cpu: list[float], wall: list[float]) -> None:
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        run()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)


#: What a process that reads the matrix with pgenlib runs (its peak RSS is measured).
PGENLIB_PROCESS = """
import numpy as np, pgenlib
reader = pgenlib.PgenReader(b"{pgen}", allele_idx_offsets=np.array({offsets}, np.uintp))
for _ in range(3):
    out = np.empty(({stop} - {start}, {samples}), np.int8)
    reader.read_range({start}, {stop}, out)
"""
#: The same with ``genotype_matrix``.
OURS_PROCESS = """
import vcfzarr_sql
store = vcfzarr_sql.open_store("{store}")
for _ in range(3):
    values = vcfzarr_sql.genotype_matrix(store, region="{region}", columns=()).values
"""


#: What a fresh process reading the matrix twice runs (the CPU time of each read is printed).
FIRST_USE_PROCESS = """
import time, vcfzarr_sql
store = vcfzarr_sql.open_store("{store}")
for _ in range(2):
    cpu = time.process_time()
    vcfzarr_sql.genotype_matrix(store, region="{region}", columns=())
    print(time.process_time() - cpu)
"""


def first_use(code: str, mode: str) -> list[float]:
    """The CPU seconds of each read of :data:`FIRST_USE_PROCESS` ``code`` in a fresh process
    with ``VCFZARR_SQL_KERNELS=mode``."""
    env = os.environ | {"VCFZARR_SQL_KERNELS": mode}
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    return [float(line) for line in done.stdout.split()]


def peak_rss(code: str) -> float:
    """The peak RSS (MiB) of a Python process running ``code`` (its VmHWM: ``ru_maxrss``
    carries the forking parent's peak over ``exec``)."""
    probe = code + "import re; print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1])"
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    return int(done.stdout.split()[-1]) / 1024


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--variants", type=int, default=1000)
    parser.add_argument("--start", type=int, default=None,
                        help="the first record (default: the middle one); a multiple of the chunk size "
                             "reads one chunk per 1000 records, others two")
    parser.add_argument("--gtstats", default="", metavar="SAMPLESxRECORDS",
                        help="the store and .pgen of benchmarks.genotype_stats at that size instead")
    parser.add_argument("--only", default="", metavar="TOOL,...",
                        help="time only these tools beside pgenlib (e.g. 'ours': the others evict the caches)")
    parser.add_argument("--peak-rss", action="store_true",
                        help="also the peak RSS of a process that only reads the matrix 3 times, ours and pgenlib's")
    parser.add_argument("--kernels", default="numpy,numba", metavar="MODE,...",
                        help="the VCFZARR_SQL_KERNELS modes to time ours in (numpy, numba, auto)")
    parser.add_argument("--first-use", action="store_true",
                        help="also the CPU time of the first and second read of a fresh process, per mode")
    args = parser.parse_args(argv)
    import pgenlib

    if args.gtstats:
        samples_text, records_text = args.gtstats.split("x")
        _, path, prefix = prepare(DATA_DIR / f"gtstats-{args.gtstats}", int(samples_text), int(records_text))
    else:
        path, prefix = scan_store(), pgen(generate(SCAN).vcf)
    store = vcfzarr_sql.open_store(path)
    unpacked = vcfzarr_sql.open_store(without_packed(path))
    pvar = np.loadtxt(prefix.with_suffix(".pvar"), comments="#", usecols=(1, 4), dtype=str)
    positions = pvar[:, 0].astype(np.int64)
    alleles = np.char.count(pvar[:, 1], ",") + 2
    offsets = np.concatenate([[0], np.cumsum(alleles)]).astype(np.uintp)
    start = len(positions) // 2 if args.start is None else args.start
    stop = start + args.variants
    region = f"1:{positions[start]}-{positions[stop - 1]}"
    reader = pgenlib.PgenReader(bytes(str(prefix.with_suffix(".pgen")), "utf8"), allele_idx_offsets=offsets)
    samples = reader.get_raw_sample_ct()
    out = np.empty((stop - start, samples), np.int8)

    def theirs() -> np.ndarray:
        reader.read_range(start, stop, out)
        return out

    modes = args.kernels.split(",")

    def ours_in(mode: str) -> Callable[[], np.ndarray]:
        def ours() -> np.ndarray:
            os.environ["VCFZARR_SQL_KERNELS"] = mode
            return vcfzarr_sql.genotype_matrix(store, region=region, columns=()).values
        return ours

    ours = ours_in(modes[0])

    def ours_unpacked() -> np.ndarray:  # a store without packed genotypes (written before them)
        return vcfzarr_sql.genotype_matrix(unpacked, region=region, columns=()).values

    con = vcfzarr_sql.connect()
    sql = f"SELECT fmt_GT FROM vcf_zarr('{store.path}', region := '{region}')"

    def through_sql() -> np.ndarray:  # what a user did before: SQL, Arrow, then numpy
        column = con.sql(sql).to_arrow_table().column("fmt_GT").combine_chunks()
        alleles = column.flatten().flatten().fill_null(-1).to_numpy().reshape(len(column), samples, -1)
        return dosage(alleles.astype(np.int8))

    chunks = range(store.num_variant_chunks)[start // store.variants_chunk_size:(stop - 1) // store.variants_chunk_size + 1]

    def decode_floor() -> list[np.ndarray]:  # the genotype chunks the records are in, decoded
        return [store.read_chunk("call_genotype", (c, 0, 0)) for c in chunks]

    ours_values, theirs_values = ours(), theirs().copy()
    if ours_values.shape != theirs_values.shape:
        raise SystemExit(f"different shapes: ours {ours_values.shape}, pgenlib {theirs_values.shape}")
    biallelic = alleles[start:stop] == 2
    if not (ours_values[biallelic] == theirs_values[biallelic]).all():
        raise SystemExit("different dosages")
    print(f"{stop - start} variants x {samples} samples ({region}); answers equal "
          f"({int(biallelic.sum())} biallelic records compared)")

    for mode in modes[1:]:
        if not np.array_equal(ours_in(mode)(), ours_values):
            raise SystemExit(f"different dosages with VCFZARR_SQL_KERNELS={mode}")
    if not (through_sql() == ours_values).all():
        raise SystemExit("different dosages through SQL")
    if not (ours_unpacked() == ours_values).all():
        raise SystemExit("different dosages from the store without packed genotypes")
    tools = {"pgenlib": theirs, **{f"ours[{mode}]": ours_in(mode) for mode in modes}, "ours unpacked": ours_unpacked,
             "SQL+Arrow": through_sql, "decode floor": decode_floor}
    if args.only:
        tools = {tool: run for tool, run in tools.items()
                 if tool == "pgenlib" or tool in args.only.split(",") or tool.split("[")[0] in args.only.split(",")}
    cpu: dict[str, list[float]] = {tool: [] for tool in tools}
    wall: dict[str, list[float]] = {tool: [] for tool in tools}
    for _ in range(args.repeats):
        for tool, run in tools.items():
            timed(run, 1, cpu[tool], wall[tool])
    if args.peak_rss:
        rss = {"pgenlib": peak_rss(PGENLIB_PROCESS.format(pgen=prefix.with_suffix(".pgen"), offsets=offsets.tolist(),
                                                          start=start, stop=stop, samples=samples)),
               "ours": peak_rss(OURS_PROCESS.format(store=path, region=region))}
        print(f"peak RSS of a process reading the matrix 3 times: ours {rss['ours']:.0f} MiB, "
              f"pgenlib {rss['pgenlib']:.0f} MiB ({rss['ours'] / rss['pgenlib']:.2f}x)")
    if args.first_use:
        for mode in modes:
            first, second = first_use(FIRST_USE_PROCESS.format(store=path, region=region), mode)
            print(f"a fresh process, VCFZARR_SQL_KERNELS={mode}: first read CPU {first * 1000:.1f} ms, "
                  f"second {second * 1000:.1f} ms")
    medians = {tool: (statistics.median(cpu[tool]), statistics.median(wall[tool])) for tool in cpu}
    for tool, (c, w) in medians.items():
        print(f"{tool:13s} CPU {c * 1000:7.1f} ms  wall {w * 1000:7.1f} ms   "
              f"/ pgenlib: CPU {c / medians['pgenlib'][0]:.2f}x, wall {w / medians['pgenlib'][1]:.2f}x")


if __name__ == "__main__":
    main()
