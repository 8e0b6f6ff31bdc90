"""The scan's benchmark: a whole-store ``fmt_GT`` scan against the decode floor, and a 100 kb region.

One simulated store, two measurements.

**Whole-store ``fmt_GT`` scan.** The floor reads every ``call_genotype`` chunk's bytes and decodes them with numcodecs in a
thread pool (:mod:`benchmarks.floor`); nothing can scan the genotypes faster. Side by side,
interleaved, median of N, each printed as a ratio to the floor:

- ``scan``: ``vcfzarr_sql.dataset(store).scanner(columns=["fmt_GT"]).to_reader()`` read to the end;
- ``count``: ``SELECT count(fmt_GT) FROM vcf_zarr(...)`` through ``vcfzarr_sql.connect()``;
- ``alleles``: non-reference called alleles,
  ``SELECT sum(len(list_filter(flatten(fmt_GT), lambda a: a > 0))) FROM vcf_zarr(...)``;
- ``calls``: ``SELECT count(*) FROM vcf_zarr_calls(...) WHERE fmt_GT[1] > 0``;
- ``calls flat`` / ``alleles flat``: the same answers from the calls table's plain allele
  columns, ``WHERE fmt_GT_1 > 0`` (pushed into the scan) and
  ``count(*) FILTER (WHERE fmt_GT_1 > 0) + count(*) FILTER (WHERE fmt_GT_2 > 0)``;
- ``duckdb-floor count`` / ``alleles`` / ``calls`` / ``calls flat`` / ``alleles flat``: the
  same queries over an already built ``pa.Table`` of the columns they read (variants, or
  calls): DuckDB's own cost of ingesting and evaluating, a lower bound no scan can beat;
- ``vcztools``: ``vcztools view -H STORE > /dev/null`` (every record with its genotypes as VCF
  text; its ``query -f '[%GT]'`` is 15x slower), a process;
- ``polars-bio``: ``pb.scan_vcf_zarr(STORE, format_fields=["GT"])``, summing the calls per
  record (it reads only VCF Zarr 0.4: see :mod:`benchmarks.polars_bio`); needs the ``[bench]``
  extra, and reports "failed" without it.

Wall time is what matters; the CPU seconds of this process are printed too, as they are far less
sensitive to a shared machine's load (the floor's CPU time is its decode work).

Every answer is checked against one computed from the floor's decoded chunks.

**100 kb region**, site columns and with genotypes: every tool of :mod:`benchmarks.regions`
(bcftools ``view -r`` on the BCF, vcztools and polars-bio on the same store, DuckDB on Parquet,
ours in a warm session and as a CLI process), each answer checked against ``bcftools view -r``,
printed as tool time / ours.

The store is an msprime simulation from :mod:`benchmarks.data` (1000 diploid samples, 104,843
variants, with missing calls), converted with ``vcfzarr_sql.convert`` into 1000 x 1000 chunks;
both are cached under ``benchmarks/data/scan/``. Run it in the ``[bench]`` environment (for
polars-bio): ``python -m benchmarks.scan_floor [--repeats N]``.
"""

from __future__ import annotations

import argparse
import operator
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import vcfzarr_sql
from benchmarks import polars_bio, regions
from benchmarks.data import generate
from benchmarks.floor import RawArray, map_reduce
from benchmarks.harness import OURS, Case, Measurement, measure, run_process, venv_bin
from benchmarks.sizes import Contig, Size

#: 1000 samples x ~105k variants on one contig (the issue asks for >= 1000 x >= 100k).
SCAN = Size("scan", num_samples=1000, contigs=(Contig("1", 32_000_000, 1e-8),), repeats=5)
VARIANTS_CHUNK = 1000
SAMPLES_CHUNK = 1000

COUNT_SQL = "SELECT count(fmt_GT) FROM {table}"
ALLELES_SQL = "SELECT sum(len(list_filter(flatten(fmt_GT), lambda a: a > 0))) FROM {table}"
CALLS_SQL = "SELECT count(*) FROM {table} WHERE fmt_GT[1] > 0"
CALLS_FLAT_SQL = "SELECT count(*) FROM {table} WHERE fmt_GT_1 > 0"
ALLELES_FLAT_SQL = (
    "SELECT count(*) FILTER (WHERE fmt_GT_1 > 0) + count(*) FILTER (WHERE fmt_GT_2 > 0) FROM {table}"
)


def scan_store() -> Path:
    """The cached store of :data:`SCAN` (simulated and converted on first use)."""
    files = generate(SCAN)
    store = files.store(f"vcfzarr-sql-{VARIANTS_CHUNK}x{SAMPLES_CHUNK}")
    if not store.exists():
        vcfzarr_sql.convert(
            files.vcf,
            store,
            variants_chunk_size=VARIANTS_CHUNK,
            samples_chunk_size=SAMPLES_CHUNK,
            workers=2,
            show_progress=False,
        )
    return store


def floor_answers(genotypes: RawArray) -> tuple[int, int, int]:
    """(records, non-reference called alleles, calls whose first allele is non-reference)."""

    def per_chunk(key: tuple[int, ...], chunk: np.ndarray) -> np.ndarray:
        records = chunk.shape[0] if key[1] == 0 else 0
        first_nonref = np.count_nonzero(chunk[:, :, 0] > 0)
        return np.array([records, np.count_nonzero(chunk > 0), first_nonref])

    records, nonref, first_nonref = (int(n) for n in map_reduce(genotypes, per_chunk, operator.add))
    return records, nonref, first_nonref


def checked(tool: str, run: Callable[[], Any], expected: Any, cpu: dict[str, list[float]]) -> Case:
    """``run`` timed as ``tool`` (its CPU seconds of this process go to ``cpu[tool]``);
    checked once first: it must answer ``expected``."""

    def check() -> None:
        _expect(run(), expected)

    def timed() -> None:  # the answer was checked once; repeats only time
        start = time.process_time()
        run()
        cpu.setdefault(tool, []).append(time.process_time() - start)

    return Case(tool=tool, run=timed, check=check)


def cases(store: Path, cpu: dict[str, list[float]]) -> list[Case]:
    genotypes = RawArray(store, "call_genotype")
    records, alleles, first_nonref = floor_answers(genotypes)
    num_calls = records * genotypes.shape[1]
    dataset = vcfzarr_sql.dataset(str(store))
    con = vcfzarr_sql.connect()
    con.register("variants_gt", dataset.to_table(columns=["fmt_GT"]))
    calls_dataset = vcfzarr_sql.dataset(str(store), table="calls")
    con.register("calls_gt", calls_dataset.to_table(columns=["fmt_GT"]))
    con.register("calls_alleles", calls_dataset.to_table(columns=["fmt_GT_1", "fmt_GT_2"]))

    def floor() -> int:
        return map_reduce(genotypes, lambda key, chunk: chunk.size, operator.add)

    def scan() -> int:
        return sum(batch.num_rows for batch in dataset.scanner(columns=["fmt_GT"]).to_reader())

    def query(sql: str) -> Callable[[], Any]:
        return lambda: con.execute(sql).fetchall()[0][0]

    vcztools = [venv_bin("vcztools"), "view", "-H", str(store)]

    def vcztools_records() -> int:
        return run_process(vcztools).stdout.count(b"\n")

    def vcztools_discard() -> None:  # the answer was checked once, by vcztools_records
        run_process(vcztools, capture=False)

    variants, calls = f"vcf_zarr('{store}')", f"vcf_zarr_calls('{store}')"
    lower_alleles = ALLELES_SQL.format(table="variants_gt")
    return [
        checked("floor", floor, int(np.prod(genotypes.shape)), cpu),
        checked("scan", scan, records, cpu),
        checked("count", query(COUNT_SQL.format(table=variants)), records, cpu),
        checked("alleles", query(ALLELES_SQL.format(table=variants)), alleles, cpu),
        checked("calls", query(CALLS_SQL.format(table=calls)), first_nonref, cpu),
        checked("calls flat", query(CALLS_FLAT_SQL.format(table=calls)), first_nonref, cpu),
        checked("alleles flat", query(ALLELES_FLAT_SQL.format(table=calls)), alleles, cpu),
        checked("duckdb-floor count", query(COUNT_SQL.format(table="variants_gt")), records, cpu),
        checked("duckdb-floor alleles", query(lower_alleles), alleles, cpu),
        checked("duckdb-floor calls", query(CALLS_SQL.format(table="calls_gt")), first_nonref, cpu),
        checked("duckdb-floor calls flat", query(CALLS_FLAT_SQL.format(table="calls_alleles")), first_nonref, cpu),
        checked("duckdb-floor alleles flat", query(ALLELES_FLAT_SQL.format(table="calls_alleles")), alleles, cpu),
        Case(tool="vcztools", run=vcztools_discard, check=lambda: _expect(vcztools_records(), records)),
        checked("polars-bio", lambda: polars_bio.genotype_calls(store), num_calls, cpu),
    ]


def _expect(answer: Any, expected: Any) -> None:
    if answer != expected:
        raise AssertionError(f"answer {answer}, expected {expected}")


def region_results(store: Path, repeats: int) -> list[Measurement]:
    """The 100 kb region query, sites and with genotypes, every tool of the regions suite."""
    files = generate(SCAN)
    region = regions.region_of(SCAN, 100_000)
    text = f"{region[0]}:{region[1]}-{region[2]}"
    session: dict = {}
    results = []
    for genotypes in (False, True):
        expected = regions.bcftools_count(files, text, genotypes)
        task = f"100 kb {'+ genotypes' if genotypes else 'sites'} ({expected} records)"
        tools = regions.cases(files, store, SCAN, region, genotypes, session)
        results += measure(task, tools, expected, repeats)
    return results


def print_regions(results: list[Measurement]) -> None:
    print(f"\n{'':22s} {'wall':>8s} {'/ours':>7s}  (tool time / ours, medians)")
    for task in dict.fromkeys(r.task for r in results):
        print(task)
        rows = [r for r in results if r.task == task]
        ours = next(r for r in rows if r.tool == OURS)
        for result in rows:
            median, base = result.median, ours.median
            if result.ok and ours.ok and median is not None and base is not None:
                print(f"  {result.tool:20s} {median:7.3f}s {median / base:6.2f}x")
            else:
                print(f"  {result.tool:20s} {result.status}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=SCAN.repeats)
    parser.add_argument("--store", type=Path, help="scan this store instead of the simulated one (no regions)")
    args = parser.parse_args(argv)
    store = args.store or scan_store()
    genotypes = RawArray(store, "call_genotype")
    print(f"{store}: call_genotype {genotypes.shape}, chunks {genotypes.chunks}")
    cpu: dict[str, list[float]] = {}
    results = {m.tool: m for m in measure("fmt_GT scan", cases(store, cpu), None, args.repeats)}
    floor, floor_cpu = results["floor"].median, statistics.median(cpu["floor"])
    width = max(map(len, results))
    header = f"{'':{width}s} {'wall':>8s} {'/floor':>7s} {'cpu':>8s} {'/floor':>7s}"
    print(f"{header}  (medians of {args.repeats})")
    for tool, result in results.items():
        median = result.median
        if result.ok and median is not None and floor is not None:
            wall = f"{median:7.3f}s {median / floor:6.2f}x"
            if tool in cpu:
                used = statistics.median(cpu[tool])
                print(f"{tool:{width}s} {wall} {used:7.3f}s {used / floor_cpu:6.2f}x")
            else:  # another process: its CPU time is not this process's
                print(f"{tool:{width}s} {wall} {'-':>8s} {'-':>7s}")
        else:
            print(f"{tool:{width}s} {result.status}")
    if args.store is None:
        print_regions(region_results(store, args.repeats))


if __name__ == "__main__":
    main()
