"""Growing a cohort: ``add`` against re-converting the merged VCF; a cohort of 10 batches
against the same data compacted.

* add 1 sample, and 100 samples, to a 2,000-sample store (``vcfzarr-sql add``, a fresh process
  on a fresh copy of the store) vs ``vcfzarr-sql convert`` of ``bcftools merge -m none`` of the
  store's VCF and the new one (what one would do without ``add``). Target: adding 1 sample
  costs at most 5% of the re-conversion. Beside them, the floor under any ``add``: starting
  Python and importing the libraries it parses and writes with (at 20,000 records that alone
  is ~5% of the re-conversion: pass ``--variants`` larger to see the ratio without it).
* region queries and whole-cohort statistics over the 2,000 samples held as 10 batches of 200
  (``add``) vs the same cohort compacted (``compact``). Target: at most 1.5x. Each query is
  timed twice: in a new connection (which opens the store: a cohort opens its 10 batches and
  its sites store), and again in a connection that has the store open.

CPU (user + system, children included) beside wall; interleaved, median of ``--repeats``.

    python -m benchmarks.cohort --variants 20000
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import run_process, venv_bin

SAMPLES = 2000
BATCHES = 10


def write_vcf(path: Path, samples: list[str], variants: int, seed: int, every: int = 1) -> Path:
    """A bgzipped, indexed VCF of diploid genotypes at every ``every``-th of ``variants``
    biallelic SNPs on one contig (positions shared by every file of the benchmark)."""
    rng = np.random.default_rng(seed)
    header = ["##fileformat=VCFv4.2", "##contig=<ID=1,length=100000000>",
              '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
              "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *samples])]
    codes = np.array(["0/0", "0/1", "1/1", "./."])
    plain = path.with_suffix("")
    with open(plain, "w") as out:
        out.write("\n".join(header) + "\n")
        for v in range(0, variants, every):
            calls = codes[rng.choice(4, size=len(samples), p=[0.7, 0.2, 0.08, 0.02])]
            out.write(f"1\t{1000 + 10 * v}\t.\tA\tG\t.\tPASS\t.\tGT\t" + "\t".join(calls) + "\n")
    subprocess.run(["bgzip", "-f", str(plain)], check=True)
    subprocess.run(["bcftools", "index", "-f", str(path)], check=True)
    return path


def merge(paths: list[Path], out: Path) -> Path:
    subprocess.run(["bcftools", "merge", "-m", "none", "-Oz", "-o", str(out), *map(str, paths)], check=True)
    return out


def timed(argv: list[str], fresh: Path | None = None, copy_of: Path | None = None) -> tuple[float, float]:
    """(wall, CPU) of ``argv`` in a fresh process (after copying ``copy_of`` to ``fresh``)."""
    if fresh is not None and copy_of is not None:
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.copytree(copy_of, fresh)
    result = run_process(argv, capture=False)
    return result.wall_s, result.cpu_s


def report(task: str, rows: dict[str, list[tuple[float, float]]], ours: str) -> None:
    medians = {name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
               for name, t in rows.items()}
    base_wall, base_cpu = medians[ours]
    for name, (wall, cpu) in medians.items():
        print(f"{task:50} {name:28} wall {wall:8.3f} s  CPU {cpu:8.3f} s  "
              f"wall/ours {wall / base_wall:6.2f}  CPU/ours {cpu / base_cpu:6.2f}")


#: What every ``add`` imports before reading anything: numpy, Blosc, htslib's reader, the CLI.
FLOOR_IMPORTS = "import numpy, numcodecs.blosc, cyvcf2, click"


def add_vs_convert(work: Path, base_vcf: Path, base_store: Path, variants: int, repeats: int) -> None:
    cli = venv_bin("vcfzarr-sql")
    for count in (1, 100):
        names = [f"new{i}" for i in range(count)]
        new = write_vcf(work / f"new{count}.vcf.gz", names, variants, seed=count, every=1)
        merged = merge([base_vcf, new], work / f"merged{count}.vcf.gz")
        cases = {
            "vcfzarr-sql add": ([cli, "add", str(work / "grown.zarr"), str(new)], work / "grown.zarr"),
            "convert merged VCF": ([cli, "convert", "-q", "--force", str(merged),
                                    str(work / "reconverted.zarr")], None),
            # (the fixed cost under any add: the interpreter and the libraries it parses and
            # writes with, which the 5% target is measured against at this size)
            "floor: start + imports": ([sys.executable, "-c", FLOOR_IMPORTS], None),
        }
        rows: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for r in range(repeats):
            for name in (list(cases) if r % 2 == 0 else list(cases)[::-1]):
                argv, fresh = cases[name]
                rows[name].append(timed(argv, fresh, base_store if fresh else None))
        report(f"add {count} sample(s) to {SAMPLES}", rows, "vcfzarr-sql add")


QUERIES = {
    "region query (1% of records)": "SELECT count(*), sum(gt_AC[1]) FROM vcf_zarr('{s}', region := '1:1000-{end}')",
    "whole-cohort gt_ statistics": "SELECT sum(gt_AC[1]), sum(gt_AN), avg(gt_F_MISSING) FROM vcf_zarr('{s}')",
    "whole-cohort gt_HWE": "SELECT sum(gt_HWE[1]) > 0 FROM vcf_zarr('{s}')",
    "sample statistics": "SELECT sum(n_het), sum(n_missing) FROM vcf_zarr_sample_stats('{s}')",
    "sample statistics, region": "SELECT sum(n_het), sum(n_missing) FROM "
                                 "vcf_zarr_sample_stats('{s}', region := '1:1000-{end}')",
}


def batches_vs_compacted(work: Path, variants: int, repeats: int) -> None:
    import vcfzarr_sql
    from vcfzarr_sql.cli.compact import compact
    from vcfzarr_sql.converter.cohort import add

    per = SAMPLES // BATCHES
    paths = [write_vcf(work / f"batch{b}.vcf.gz", [f"b{b}s{i}" for i in range(per)], variants, seed=100 + b)
             for b in range(BATCHES)]
    cohort, compacted = work / "batches.zarr", work / "compacted.zarr"
    vcfzarr_sql.convert(paths[0], cohort, show_progress=False)
    add(cohort, paths[1:])
    compact(cohort, compacted)
    end = 1000 + 10 * variants // 100
    stores = {"10 batches": cohort, "compacted": compacted}
    opened: dict[str, list[tuple[float, float]]] = {name: [] for name in stores}
    for r in range(repeats):  # opening the store (a cohort opens its 10 batches and sites store)
        for name, store in list(stores.items())[:: 1 if r % 2 == 0 else -1]:
            cpu, wall = time.process_time(), time.perf_counter()
            vcfzarr_sql.open_store(store).close()
            opened[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    report("open the store", opened, "compacted")
    for task, query in QUERIES.items():
        fresh: dict[str, list[tuple[float, float]]] = {name: [] for name in stores}
        warm: dict[str, list[tuple[float, float]]] = {name: [] for name in stores}
        answers = {}
        for r in range(repeats):
            for name, store in list(stores.items())[:: 1 if r % 2 == 0 else -1]:
                con = vcfzarr_sql.connect()  # (a new connection: it opens the store)
                for times in (fresh, warm):  # (then again, the store open)
                    cpu, wall = time.process_time(), time.perf_counter()
                    answers[name] = con.sql(query.format(s=store, end=end)).fetchall()
                    times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
        assert answers["10 batches"] == answers["compacted"], (task, answers)
        report(f"{task}, new connection", fresh, "compacted")
        if not task.startswith("sample statistics"):  # (a connection computes those once)
            report(f"{task}, store open", warm, "compacted")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("add", "queries"), help="run one of the two parts")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cohort-bench-") as tmp:
        work = Path(tmp)
        base_vcf = write_vcf(work / "base.vcf.gz", [f"s{i}" for i in range(SAMPLES)], args.variants, seed=0)
        base_store = work / "base.zarr"
        subprocess.run([venv_bin("vcfzarr-sql"), "convert", "-q", str(base_vcf), str(base_store)], check=True)
        print(f"{SAMPLES} samples x {args.variants} records; {args.repeats} repeats", file=sys.stderr)
        if args.only != "queries":
            add_vs_convert(work, base_vcf, base_store, args.variants, args.repeats)
        if args.only != "add":
            batches_vs_compacted(work, args.variants, args.repeats)


if __name__ == "__main__":
    main()
