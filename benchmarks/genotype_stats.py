"""Genotype statistics: the ``gt_`` columns and ``vcf_zarr_sample_stats`` side by side with plink2
(on a .pgen made from the same VCF), bcftools, DuckDB over Parquet and the numcodecs decode floor.

Self-contained: it simulates a biallelic diploid VCF (seeded; allele frequencies from a skewed
Beta, 1% missing calls), converts it, makes the .pgen (``plink2 --vcf --make-pgen``) and the
Parquet calls table, checks that every tool gives the same allele-count total, then times each
task (median of ``--repeats``, the tools of a task interleaved) and prints wall and CPU time
(user + system, this process and its children: the thread pools and the tools' processes) and
the CPU ratio vcfzarr-sql / tool (below 1: we use less CPU); "unpacked" is the same store
without its packed genotypes (the path of stores written before them). The sample subsets are a random
half of the samples (``samples := [...]`` for us, ``--keep`` for plink2); the last line times
the rewrite of a query naming that many samples (the SQL text's parsing cost). Compiled kernels
(vcfzarr_sql/kernels) are timed warm: ``VCFZARR_SQL_KERNELS`` is ``numba`` unless the environment
sets it (``numpy`` times the fallback) or ``--kernels`` names modes (the first for every
vcfzarr-sql row, each other for a ``vcfzarr-sql [mode]`` row of its own; the header says which),
and each task's vcfzarr-sql query runs once untimed first under each mode (loading the kernels
it uses: their first-call cost is not what a session pays per query).

    python -m benchmarks.genotype_stats --samples 2000 --records 60000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import vcfzarr_sql
from benchmarks import floor
from benchmarks.simulated import diploid_calls, vcf_header
from benchmarks.sizes import DATA_DIR
from vcfzarr_sql.converter import convert


def simulate(directory: Path, samples: int, records: int, seed: int = 7) -> Path:
    """A bgzipped VCF of ``records`` biallelic SNPs x ``samples`` diploid calls (and its
    Parquet calls table: pos, sample, gt0, gt1)."""
    vcf = directory / "sim.vcf.gz"
    if vcf.exists():
        return vcf
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = [f"S{i:06d}" for i in range(samples)]
    header = vcf_header(names, 100_000_000)
    positions = np.sort(rng.choice(np.arange(1, 100_000_000), records, replace=False))
    bgzip = subprocess.Popen(["bgzip", "-c"], stdin=subprocess.PIPE, stdout=vcf.open("wb"))
    assert bgzip.stdin is not None
    bgzip.stdin.write(header.encode())
    writer = None
    for start in range(0, records, 5000):
        pos = positions[start : start + 5000]
        simulated = diploid_calls(rng, len(pos), samples)
        alleles, text = simulated.alleles, simulated.text
        lines = [
            f"1\t{p}\t.\tA\tG\t.\t.\t.\tGT\t" + "\t".join(row) + "\n" for p, row in zip(pos, text)
        ]
        bgzip.stdin.write("".join(lines).encode())
        gt = alleles.astype(object)
        gt[alleles < 0] = None
        calls = pa.table({
            "pos": np.repeat(pos, samples),
            "sample": np.tile(np.arange(samples, dtype=np.int32), len(pos)),
            "gt0": pa.array(gt[..., 0].reshape(-1), pa.int8()),
            "gt1": pa.array(gt[..., 1].reshape(-1), pa.int8()),
        })
        if writer is None:
            writer = pq.ParquetWriter(directory / "calls.parquet", calls.schema)
        writer.write_table(calls)
    assert writer is not None
    writer.close()
    bgzip.stdin.close()
    bgzip.wait()
    return vcf


def prepare(directory: Path, samples: int, records: int) -> tuple[Path, Path, Path]:
    """(vcf, store, pgen prefix), made once."""
    vcf = simulate(directory, samples, records)
    store = directory / "sim.vcz"
    if not store.exists():
        convert(vcf, store, workers=2, show_progress=False)
    pgen = directory / "sim"
    if not pgen.with_suffix(".pgen").exists():
        subprocess.run(["plink2", "--vcf", str(vcf), "--make-pgen", "--out", str(pgen),
                        "--threads", "2", "--silent"], check=True)
    return vcf, store, pgen


def without_packed(store: Path) -> Path:
    """A copy of ``store`` without the packed genotypes (``summary_gt_packed*``): what a store
    written before them reads like (the decoding path), made once."""
    plain = store.with_name(store.name.replace(".vcz", "-unpacked.vcz"))
    if not plain.exists():
        shutil.copytree(store, plain)
        dropped = ("summary_gt_packed", "summary_gt_packed_exact")
        for name in dropped:
            shutil.rmtree(plain / name, ignore_errors=True)
        meta = json.loads((plain / ".zmetadata").read_text())
        meta["metadata"] = {k: v for k, v in meta["metadata"].items() if k.split("/")[0] not in dropped}
        (plain / ".zmetadata").write_text(json.dumps(meta))
    return plain


def cpu_seconds() -> float:
    """User + system time of this process and of its waited-for children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    run()
    return time.perf_counter() - wall, cpu_seconds() - cpu


def timed_interleaved(tools: dict[str, Callable[[], object]], repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of each tool over ``repeats`` rounds, the order rotated each round (a
    tool over 10 s is run once)."""
    times: dict[str, list[tuple[float, float]]] = {tool: [] for tool in tools}
    names = list(tools)
    for round_ in range(repeats):
        for tool in names[round_ % len(names):] + names[:round_ % len(names)]:
            if times[tool] and times[tool][-1][0] > 10:
                continue
            times[tool].append(timed(tools[tool]))
    return {tool: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
            for tool, t in times.items()}


def shell(command: str) -> Callable[[], object]:
    return lambda: subprocess.run(command, shell=True, check=True, capture_output=True)


def duckdb_rows(sql: str) -> Callable[[], object]:
    """The rows of ``sql`` on DuckDB's default connection."""

    def run() -> list[tuple]:
        relation = duckdb.sql(sql)
        assert relation is not None
        return relation.fetchall()

    return run


def floor_counts(store: Path, samples: np.ndarray | None) -> Callable[[], object]:
    """Decode every genotype chunk with numcodecs (2 threads) and count per record (the floor)."""
    genotypes = floor.RawArray(store, "call_genotype")

    def per_chunk(key: tuple[int, ...], chunk: np.ndarray) -> list[np.ndarray]:
        if samples is not None:
            chunk = chunk[:, samples]
        return [np.count_nonzero(chunk == 1, axis=(1, 2))]

    return lambda: floor.map_reduce(genotypes, per_chunk, lambda a, b: a + b)


def floor_sample_counts(store: Path) -> Callable[[], object]:
    genotypes = floor.RawArray(store, "call_genotype")

    def per_chunk(key: tuple[int, ...], chunk: np.ndarray) -> np.ndarray:
        return np.stack([(chunk[..., 0] == -1).sum(0), (chunk[..., 0] != chunk[..., 1]).sum(0)])

    return lambda: floor.map_reduce(genotypes, per_chunk, np.add)


def under_kernels(mode: str, run: Callable[[], object]) -> Callable[[], object]:
    """``run`` with ``VCFZARR_SQL_KERNELS`` set to ``mode`` (and set back after: the rows
    timed next run under the base mode)."""

    def go() -> object:
        base = os.environ["VCFZARR_SQL_KERNELS"]
        os.environ["VCFZARR_SQL_KERNELS"] = mode
        try:
            return run()
        finally:
            os.environ["VCFZARR_SQL_KERNELS"] = base

    return go


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--records", type=int, default=60000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="time only the tasks whose name has this text")
    parser.add_argument("--skip", default="", help="comma-separated texts: tools whose name has "
                        "one are not timed (e.g. 'unpacked,floor', the slow ones at 500k records)")
    parser.add_argument("--kernels", default="", help="comma-separated VCFZARR_SQL_KERNELS modes "
                        "to time vcfzarr-sql under, interleaved (the first is the ratios' base)")
    args = parser.parse_args(argv)
    modes = [mode for mode in args.kernels.split(",") if mode] or [os.environ.get("VCFZARR_SQL_KERNELS", "numba")]
    os.environ["VCFZARR_SQL_KERNELS"] = modes[0]  # (every row but the other modes' own)
    directory = DATA_DIR / f"gtstats-{args.samples}x{args.records}"
    vcf, store, pgen = prepare(directory, args.samples, args.records)
    out = directory / "out"
    con = vcfzarr_sql.connect()
    names = [f"S{i:06d}" for i in range(args.samples)]
    half = np.sort(np.random.default_rng(1).choice(args.samples, args.samples // 2, replace=False))
    keep = directory / "half.txt"
    keep.write_text("".join(f"{names[i]}\n" for i in half))
    parquet = directory / "calls.parquet"

    def ours(sql: str) -> Callable[[], object]:
        return lambda: con.sql(sql).to_arrow_table()

    s = f"'{store}'"
    unpacked = f"'{without_packed(store)}'"
    half_list = [names[i] for i in half]
    tasks = {
        "AC/AN/AF per variant, all samples": {
            "vcfzarr-sql": ours(f"SELECT contig, pos, gt_AC, gt_AN, gt_AF FROM vcf_zarr({s})"),
            "plink2 --freq counts": shell(f"plink2 --pfile {pgen} --freq counts --threads 2 --out {out} --silent"),
            "bcftools +fill-tags": shell(f"bcftools +fill-tags {vcf} -Ou -- -t AC,AN,AF | bcftools query -f '%AC %AN %AF\\n' > /dev/null"),
            "DuckDB Parquet": duckdb_rows(f"SELECT pos, sum(gt0) + sum(gt1), count(gt0) + count(gt1) FROM '{parquet}' GROUP BY pos"),
            "floor (numcodecs)": floor_counts(store, None),
            "SQL over fmt_GT_k": ours(f"SELECT contig, pos, list_sum(list_transform(fmt_GT_1, lambda a: a)) + list_sum(list_transform(fmt_GT_2, lambda a: a)) FROM vcf_zarr({s})"),
        },
        "per-sample counts, random half of samples": {
            "vcfzarr-sql": lambda: vcfzarr_sql.connect().sql(
                f"SELECT * FROM vcf_zarr_sample_stats({s}, samples := {half_list!r})").to_arrow_table(),
            "vcfzarr-sql, 1 Mb region": lambda: vcfzarr_sql.connect().sql(
                f"SELECT * FROM vcf_zarr_sample_stats({s}, region := '1:50000000-51000000', "
                f"samples := {half_list!r})").to_arrow_table(),
            "vcfzarr-sql unpacked, 1 Mb region": lambda: vcfzarr_sql.connect().sql(
                f"SELECT * FROM vcf_zarr_sample_stats({unpacked}, region := '1:50000000-51000000', "
                f"samples := {half_list!r})").to_arrow_table(),
            "plink2 --missing": shell(f"plink2 --pfile {pgen} --keep {keep} --missing sample-only --threads 2 --out {out} --silent"),
        },
        "AC/AN/AF per variant, random half of samples": {
            "vcfzarr-sql": ours(f"SELECT contig, pos, gt_AC, gt_AN, gt_AF FROM vcf_zarr({s}, samples := {half_list!r})"),
            "vcfzarr-sql unpacked (decoding)": ours(f"SELECT contig, pos, gt_AC, gt_AN, gt_AF FROM vcf_zarr({unpacked}, samples := {half_list!r})"),
            "plink2 --freq counts": shell(f"plink2 --pfile {pgen} --keep {keep} --freq counts --threads 2 --out {out} --silent"),
            "floor (numcodecs)": floor_counts(store, half),
        },
        "AC per variant, 1 Mb region": {
            "vcfzarr-sql": ours(f"SELECT pos, gt_AC FROM vcf_zarr({s}, region := '1:50000000-51000000')"),
            "plink2 --freq counts": shell(f"plink2 --pfile {pgen} --chr 1 --from-bp 50000000 --to-bp 51000000 --freq counts --threads 2 --out {out} --silent"),
        },
        "per-sample missing + het counts": {
            # (a new session each time: a session computes a sample_stats call once)
            "vcfzarr-sql": lambda: vcfzarr_sql.connect().sql(
                f"SELECT * FROM vcf_zarr_sample_stats({s})").to_arrow_table(),
            "plink2 --missing": shell(f"plink2 --pfile {pgen} --missing sample-only --threads 2 --out {out} --silent"),
            "plink2 --sample-counts": shell(f"plink2 --pfile {pgen} --sample-counts --threads 2 --out {out} --silent"),
            "bcftools stats -s -": shell(f"bcftools stats -s - {vcf} > /dev/null"),
            "DuckDB Parquet": duckdb_rows(f"SELECT sample, count(*) FILTER (gt0 IS NULL), count(*) FILTER (gt0 <> gt1) FROM '{parquet}' GROUP BY sample"),
            "floor (numcodecs)": floor_sample_counts(store),
        },
        "HWE per variant": {
            "vcfzarr-sql": ours(f"SELECT pos, gt_HWE FROM vcf_zarr({s})"),
            "plink2 --hardy": shell(f"plink2 --pfile {pgen} --hardy --threads 2 --out {out} --silent"),
            "bcftools +fill-tags": shell(f"bcftools +fill-tags {vcf} -Ou -- -t HWE | bcftools query -f '%HWE\\n' > /dev/null"),
        },
        "HWE per variant, random half of samples": {
            "vcfzarr-sql": ours(f"SELECT pos, gt_HWE FROM vcf_zarr({s}, samples := {half_list!r})"),
            "vcfzarr-sql unpacked (decoding)": ours(f"SELECT pos, gt_HWE FROM vcf_zarr({unpacked}, samples := {half_list!r})"),
            "plink2 --hardy": shell(f"plink2 --pfile {pgen} --keep {keep} --hardy --threads 2 --out {out} --silent"),
        },
    }
    ours_rows = ["vcfzarr-sql", *(f"vcfzarr-sql [{mode}]" for mode in modes[1:])]
    for tools in tasks.values():
        for mode, row in zip(modes[1:], ours_rows[1:]):
            tools[row] = under_kernels(mode, tools["vcfzarr-sql"])
    # One answer checked before timing: the total ALT allele count, ours = plink2's = bcftools'.
    ac = con.sql(f"SELECT sum(list_sum(gt_AC)) FROM vcf_zarr({s})").fetchall()[0][0]
    subprocess.run(f"plink2 --pfile {pgen} --freq counts --out {out} --silent", shell=True, check=True)
    plink_ac = sum(int(line.split("\t")[4]) for line in (out.with_suffix(".acount")).read_text().splitlines()[1:])
    bcf_ac = sum(int(x) for x in subprocess.run(
        f"bcftools +fill-tags {vcf} -Ou -- -t AC | bcftools query -f '%AC\\n'", shell=True,
        capture_output=True, check=True, text=True).stdout.split())
    assert ac == plink_ac == bcf_ac, (ac, plink_ac, bcf_ac)

    print(f"## genotype statistics: {args.samples} samples x {args.records} records "
          f"(ALT allele total {ac}, equal in vcfzarr-sql, plink2, bcftools; "
          f"VCFZARR_SQL_KERNELS={modes[0]}"
          f"{''.join(f', {mode} in the [{mode}] rows' for mode in modes[1:])})\n")
    print("| task | tool | wall | CPU | vcfzarr-sql / tool (CPU) |\n|---|---|---|---|---|")
    for task, tools in tasks.items():
        if args.only not in task:
            continue
        skipped = [text for text in args.skip.split(",") if text]
        tools = {tool: run for tool, run in tools.items() if not any(text in tool for text in skipped)}
        tools["vcfzarr-sql"]()  # (warm-up: compiled kernels loaded)
        for row in ours_rows[1:]:
            tools[row]()  # (and under each other mode)
        times = timed_interleaved(tools, args.repeats)
        ours_cpu = times["vcfzarr-sql"][1]
        for tool, (wall, cpu) in times.items():
            print(f"| {task} | {tool} | {wall:.3f} s | {cpu:.3f} s | {ours_cpu / cpu:.2f}x |", flush=True)
    query = f"SELECT contig, pos, gt_AC FROM vcf_zarr({s}, samples := {half_list!r}) LIMIT "
    limits = iter(range(1, 1 << 30))  # (a new text each time: a session remembers short texts)
    wall, cpu = timed_interleaved({"rewrite": lambda: con.rewrite(f"{query}{next(limits)}")},
                                  args.repeats)["rewrite"]
    print(f"\nrewriting a query naming {len(half_list)} samples ({len(query):,} characters): "
          f"{wall:.3f} s wall, {cpu:.3f} s CPU")


if __name__ == "__main__":
    main()
