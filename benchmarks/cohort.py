"""Growing a cohort: ``add`` against re-converting the merged VCF; a cohort of 10 batches
against the same data compacted.

* add 1 sample, and 100 samples, to a 2,000-sample store (``vcfzarr-sql add``, a fresh process
  on a fresh copy of the store) vs ``vcfzarr-sql convert`` of ``bcftools merge -m none`` of the
  store's VCF and the new one (what one would do without ``add``). Target: adding 1 sample
  costs at most 5% of the re-conversion. Beside them, the floor under any ``add``: starting
  Python and importing the libraries it parses and writes with (at 20,000 records that alone
  is ~5% of the re-conversion). At each of several record counts (``--variants``, default
  20,000 and 100,000: a cohort whose re-conversion takes a few seconds says little about
  cohorts), then the cost per record of both between the two largest, whose ratio is what
  the ratio tends to as the cohort grows (start-up no longer counts). Also adding the sample to
  a cohort (the store after one add of another sample: its sites store holds the allele keys
  the union compares), against the same re-conversion. ``--before TREE``: each add also run
  with the ``vcfzarr_sql`` of the checkout TREE (PYTHONPATH), interleaved.
* region queries and whole-cohort statistics over the 2,000 samples held as 10 batches of 200
  (``add``) vs the same cohort compacted (``compact``). Target: at most 1.5x. Each query is
  timed twice: in a new connection (which opens the store: a cohort opens its 10 batches and
  its sites store), and again in a connection that has the store open.

CPU (user + system, children included) beside wall; interleaved, median of ``--repeats``.
Our package (and ``--before``'s) is compiled to bytecode first (``compileall``), as ``pip
install`` leaves it: with ``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__`` (an editable
install), every ``add`` would compile the ~70 modules it imports again, ~0.28 CPU-s that no
installed copy pays, a fifth of adding one sample to 100,000 records (``--no-bytecode``
measures that case).

    python -m benchmarks.cohort --variants 20000 100000 --only add
    python -m benchmarks.cohort --work /tmp/cohort-inputs  # (inputs kept, and reused if there)
    python -m benchmarks.cohort --only add --before /path/to/older/checkout
"""

from __future__ import annotations

import argparse
import compileall
import os
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
    if path.exists() and path.with_suffix(".gz.csi").exists():  # (kept from a run with --work)
        return path
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
    if out.exists():
        return out
    subprocess.run(["bcftools", "merge", "-m", "none", "-Oz", "-o", str(out), *map(str, paths)], check=True)
    return out


def timed(argv: list[str], fresh: Path | None = None, copy_of: Path | None = None,
          env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) of ``argv`` in a fresh process (after copying ``copy_of`` to ``fresh``)."""
    if fresh is not None and copy_of is not None:
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.copytree(copy_of, fresh)
    result = run_process(argv, capture=False, env=env)
    return result.wall_s, result.cpu_s


def report(task: str, rows: dict[str, list[tuple[float, float]]], ours: str) -> dict[str, float]:
    """Print the medians of each case beside ours; the median CPU seconds of each."""
    medians = {name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
               for name, t in rows.items()}
    base_wall, base_cpu = medians[ours]
    for name, (wall, cpu) in medians.items():
        print(f"{task:50} {name:28} wall {wall:8.3f} s  CPU {cpu:8.3f} s  "
              f"wall/ours {wall / base_wall:6.2f}  CPU/ours {cpu / base_cpu:6.2f}")
    return {name: cpu for name, (_, cpu) in medians.items()}


#: What every ``add`` imports before reading anything: numpy, Blosc, htslib's reader, the CLI.
FLOOR_IMPORTS = "import numpy, numcodecs.blosc, cyvcf2, click"


def base_store(work: Path, variants: int) -> tuple[Path, Path]:
    """The 2,000-sample VCF of ``variants`` records and the store ``convert`` makes of it."""
    base_vcf = write_vcf(work / f"base{variants}.vcf.gz", [f"s{i}" for i in range(SAMPLES)], variants, seed=0)
    store = work / f"base{variants}.zarr"
    if not store.exists():
        subprocess.run([venv_bin("vcfzarr-sql"), "convert", "-q", str(base_vcf), str(store)], check=True)
    return base_vcf, store


def grown_store(work: Path, variants: int, base: Path) -> Path:
    """The store ``base`` after one add (of another one-sample VCF): a cohort."""
    grown = work / f"cohort{variants}.zarr"
    if not grown.exists():
        prior = write_vcf(work / f"prior_{variants}.vcf.gz", ["prior0"], variants, seed=7)
        shutil.copytree(base, work / "cohort.tmp")
        subprocess.run([venv_bin("vcfzarr-sql"), "add", str(work / "cohort.tmp"), str(prior)], check=True,
                       stdout=subprocess.DEVNULL)
        (work / "cohort.tmp").rename(grown)
    return grown


def add_vs_convert(work: Path, variants: int, repeats: int, before: Path | None = None) -> dict[int, dict[str, float]]:
    """The timings of adding 1 and 100 samples to the cohort of ``variants`` records (and, with
    ``before``, the same adds by the checkout there); the median CPU seconds of each case, by
    the number of samples added."""
    cli = venv_bin("vcfzarr-sql")
    base_vcf, base = base_store(work, variants)
    grown = grown_store(work, variants, base)
    older = None if before is None else {**os.environ, "PYTHONPATH": str(before)}
    found = {}
    for count in (1, 100):
        names = [f"new{i}" for i in range(count)]
        new = write_vcf(work / f"new{count}_{variants}.vcf.gz", names, variants, seed=count, every=1)
        merged = merge([base_vcf, new], work / f"merged{count}_{variants}.vcf.gz")
        adds = {"vcfzarr-sql add": base, "add to a cohort": grown}
        cases: dict[str, tuple[list[str], Path | None, dict[str, str] | None]] = {}
        for name, store in adds.items():
            for label, env in [("", None)] + ([] if older is None else [(", before", older)]):
                cases[name + label] = ([cli, "add", str(work / "grown.zarr"), str(new)], store, env)
        cases |= {
            "convert merged VCF": ([cli, "convert", "-q", "--force", str(merged),
                                    str(work / "reconverted.zarr")], None, None),
            # (the fixed cost under any add: the interpreter and the libraries it parses and
            # writes with, which the 5% target is measured against at this size)
            "floor: start + imports": ([sys.executable, "-c", FLOOR_IMPORTS], None, None),
        }
        rows: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for r in range(repeats):
            for name in (list(cases) if r % 2 == 0 else list(cases)[::-1]):
                argv, copied, env = cases[name]
                rows[name].append(timed(argv, work / "grown.zarr" if copied else None, copied, env))
        found[count] = report(f"add {count} sample(s) to {SAMPLES} x {variants} records", rows, "vcfzarr-sql add")
        again = found[count]["convert merged VCF"]
        for name in cases:
            if "add" in name:
                print(f"{'':50} {name:28} add / convert merged VCF {found[count][name] / again:6.1%}")
    return found


def per_record(found: dict[int, dict[int, dict[str, float]]]) -> None:
    """The CPU per record of add and of the re-conversion between the two largest record
    counts, and their ratio: what add / re-conversion tends to as the cohort grows."""
    small, large = sorted(found)[-2:]
    for count in (1, 100):
        again = (found[large][count]["convert merged VCF"] - found[small][count]["convert merged VCF"]) / (large - small)
        for name in (n for n in found[large][count] if "add" in n):
            add = (found[large][count][name] - found[small][count][name]) / (large - small)
            print(f"{f'add {count} sample(s), per record ({small} -> {large})':50} {name:28} {add * 1e6:7.2f} us  "
                  f"convert merged VCF {again * 1e6:7.2f} us  add/convert {add / again:6.1%}")


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
    paths = [write_vcf(work / f"batch{b}_{variants}.vcf.gz", [f"b{b}s{i}" for i in range(per)], variants,
                       seed=100 + b)
             for b in range(BATCHES)]
    cohort, compacted = work / "batches.zarr", work / "compacted.zarr"
    for store in (cohort, compacted):
        shutil.rmtree(store, ignore_errors=True)
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
    parser.add_argument("--variants", type=int, nargs="+", default=[20000, 100000],
                        help="record counts of the add part (the queries use the first)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("add", "queries"), help="run one of the two parts")
    parser.add_argument("--work", type=Path, help="keep the inputs here (and reuse those there)")
    parser.add_argument("--before", type=Path, help="a checkout whose vcfzarr_sql each add is also run with")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="do not compile the package(s) to bytecode first (each run compiles them)")
    args = parser.parse_args(argv)
    if not args.no_bytecode:
        import vcfzarr_sql

        compileall.compile_dir(str(Path(vcfzarr_sql.__file__).parent), quiet=1)
        if args.before is not None:
            compileall.compile_dir(str(args.before / "vcfzarr_sql"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="cohort-bench-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(f"{SAMPLES} samples x {args.variants} records; {args.repeats} repeats", file=sys.stderr)
        if args.only != "queries":
            found = {variants: add_vs_convert(work, variants, args.repeats, args.before)
                     for variants in args.variants}
            if len(found) > 1:
                per_record(found)
        if args.only != "add":
            batches_vs_compacted(work, args.variants[0], args.repeats)


if __name__ == "__main__":
    main()
