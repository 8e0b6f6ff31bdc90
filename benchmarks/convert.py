"""Conversion: vcfzarr-sql vs ``vcf2zarr convert``, VCF.gz -> VCF Zarr, same chunks and workers.

Each conversion runs in a fresh subprocess (ours through the public ``vcfzarr_sql.convert`` API,
bio2zarr through its CLI) so that wall time and peak RSS (``wait4``) cover the whole job.
The stores written here are the ones the query suites read.

    python -m benchmarks.convert --size quick
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import report
from benchmarks.data import generate
from benchmarks.harness import (
    OURS,
    Case,
    Measurement,
    ProcessResult,
    Unavailable,
    directory_size,
    measure,
    run_process,
    suite_arguments,
    venv_bin,
)
from benchmarks.sizes import SIZES, Files, Size

VARIANTS_CHUNK_SIZE = 1000
SAMPLES_CHUNK_SIZE = 10000
WORKERS = 2

OUR_CONVERT = (
    "import sys, vcfzarr_sql; vcfzarr_sql.convert(sys.argv[1], sys.argv[2], variants_chunk_size={v}, "
    "samples_chunk_size={s}, workers={w}, force=True, show_progress=False)"
)


def store_shape(store: Path) -> tuple[int, int]:
    """(variants, samples) of a VCF Zarr store, from its ``call_genotype`` array metadata."""
    for name in (".zarray", "zarr.json"):
        meta = store / "call_genotype" / name
        if meta.exists():
            shape = json.loads(meta.read_text())["shape"]
            return int(shape[0]), int(shape[1])
    raise RuntimeError(f"{store}: no call_genotype array")


def record_count(files: Files) -> int:
    out = subprocess.run(["bcftools", "index", "--nrecords", str(files.bcf)], check=True, capture_output=True, text=True)
    return int(out.stdout)


def ours_argv(files: Files) -> list[str]:
    if importlib.util.find_spec("vcfzarr_sql.converter") is None:
        raise Unavailable("vcfzarr_sql.converter is not built yet")
    code = OUR_CONVERT.format(v=VARIANTS_CHUNK_SIZE, s=SAMPLES_CHUNK_SIZE, w=WORKERS)
    return [sys.executable, "-c", code, str(files.vcf), str(files.store(OURS))]


def vcf2zarr_argv(files: Files) -> list[str]:
    return [
        venv_bin("vcf2zarr"), "convert", "--force", "--no-progress",
        "-l", str(VARIANTS_CHUNK_SIZE), "-w", str(SAMPLES_CHUNK_SIZE), "-p", str(WORKERS),
        str(files.vcf), str(files.store("vcf2zarr")),
    ]


def conversion_case(tool: str, argv_of: Callable[[Files], list[str]], files: Files, runs: list[ProcessResult]) -> Case:
    store = files.store(tool)

    def run() -> tuple[int, int]:
        argv = argv_of(files)
        shutil.rmtree(store, ignore_errors=True)
        runs.append(run_process(argv, capture=False))
        return store_shape(store)

    return Case(tool, run)


def run_suite(size: Size, skip: Sequence[str] = ()) -> list[Measurement]:
    files = generate(size)
    expected = (record_count(files), size.num_samples)
    processes: dict[str, list[ProcessResult]] = {OURS: [], "vcf2zarr": []}
    cases = [
        conversion_case(OURS, ours_argv, files, processes[OURS]),
        conversion_case("vcf2zarr", vcf2zarr_argv, files, processes["vcf2zarr"]),
    ]
    results = measure("convert VCF.gz -> VCF Zarr", cases, expected, size.repeats, skip)
    for result in results:
        runs = processes[result.tool]
        if result.ok and runs:
            result.extra["max_rss_bytes"] = statistics.median(p.max_rss_bytes for p in runs)
            result.extra["store_bytes"] = directory_size(files.store(result.tool))
    return results


def size_table(results: list[Measurement], files: Files) -> str:
    """Peak memory and sizes, each with its ratio to ours."""
    ours = next((r for r in results if r.tool == OURS and r.ok), None)

    def fmt(result: Measurement, key: str) -> str:
        value = result.extra.get(key)
        if value is None:
            return report.short_status(result) if not result.ok else "n/a"
        text = f"{value / 2**20:.1f} MiB"
        if ours is not None and result is not ours and ours.extra.get(key):
            text = f"**{value / ours.extra[key]:.2f}x** ({text})"
        return text

    lines = ["| tool | peak RSS (largest process) | store size |", "|---|---|---|"]
    lines += [f"| {r.tool} | {fmt(r, 'max_rss_bytes')} | {fmt(r, 'store_bytes')} |" for r in results]
    lines += ["", "| reference file | size |", "|---|---|"]
    for label, path in [
        ("VCF (bgzip)", files.vcf),
        ("BCF", files.bcf),
        ("Parquet variants", files.variants_parquet),
        ("Parquet calls (long)", files.calls_parquet),
    ]:
        lines.append(f"| {label} | {directory_size(path) / 2**20:.1f} MiB |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[Measurement]:
    args = suite_arguments(__doc__.splitlines()[0], argv)
    size = SIZES[args.size]
    results = run_suite(size, args.skip)
    preamble = (
        f"Input: {size.name} simulated VCF.gz. Chunks {VARIANTS_CHUNK_SIZE} variants x {SAMPLES_CHUNK_SIZE} samples, "
        f"{WORKERS} worker processes for both. Ratios of wall time, peak RSS and store size: tool / vcfzarr-sql."
    )
    report.publish("convert", size.name, results, preamble, size_table(results, Files(size.directory)))
    return results


if __name__ == "__main__":
    main()
