"""How fast ``vcfzarr-sql view`` writes VCF text, against ``bcftools view`` reading a BCF of the
same records (htslib's fastest input) and writing VCF text, both to a file.

Three files: the 1000 Genomes chr22 slice in tests/data (6,109 records x 2,504 samples, GT
only) and two generated call sets (GT:AD:DP:GQ:PL and INFO AC/AN/AF/DP/MQ, written
deterministically): ``--records`` x ``--samples`` (4,000 x 500, 50 MB of VCF text) and
``--big-records`` x ``--big-samples`` (20,000 x 1,000, 500 MB: Python's start-up, about 0.3 s,
is amortised; 0 records: not run). Each is converted to a store and to a BCF; both tools' outputs must
have the same record lines (INFO keys compared as sets: the store keeps header order) before
anything is timed. Then the two commands run one after the other, ``--repeats`` times
(interleaved, so a busy machine slows both alike); printed: CPU (user + system, with children)
and wall seconds of each run, medians, and the ratio ours / bcftools of the median CPU.

Our package is compiled to bytecode first (``compileall``), as ``pip install`` leaves it: with
``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__`` (an editable install), every run
would compile its modules again, about 0.1 CPU-s that no installed copy pays
(``--no-bytecode`` measures that case).

``--wheel``: run the ``vcfzarr-sql`` command of a wheel installed into a scratch venv (``pip
install CHECKOUT``, not editable: what users run), instead of this interpreter with the checkout
on ``PYTHONPATH``. An editable install's venv imports its finder at every start-up (a ``.pth``
file: ``pathlib`` and more), ~0.01 CPU-s a run that an installed wheel does not pay (``python
-c pass``: 0.018 CPU-s in such a venv, 0.009 in a fresh one; both have setuptools'
``distutils-precedence.pth``, as a venv made by ``python -m venv`` has). Installing takes ~20 s
a checkout (the pip cache warm).

``--before DIR``: also ``vcfzarr-sql view`` from the checkout DIR (its ``vcfzarr_sql`` on the
path, or its wheel with ``--wheel``), run in the same rounds, so a change is measured against the
code before it under the same load.

    python -m benchmarks.view_write                         # the three files, 5 repeats
    python -m benchmarks.view_write --big-records 0 --repeats 3
    python -m benchmarks.view_write --repeats 3 --before /tmp/old-checkout
    python -m benchmarks.view_write --big-records 0 --wheel --before /tmp/old-checkout
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
from pathlib import Path

import numpy as np

from benchmarks.harness import run_process

KG = (Path(__file__).parent.parent / "tests/data/corpus/vcflib+vcflib/samples/"
      "1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz")
#: the installed ``vcfzarr-sql`` command (its entry point is ``cli.run``: pandas hidden, the
#: garbage collector held while modules import and skipped at exit), not ``cli.main`` in a
#: plain interpreter, which pays about 0.05 CPU-s more than a user's command does
#: (``-P``: the package comes from ``PYTHONPATH``, this checkout's or ``--before``'s, not the
#: working directory)
OURS = [sys.executable, "-P", "-c", "import sys; from vcfzarr_sql.cli import run; sys.exit(run())", "view"]
#: this checkout
ROOT = Path(__file__).parent.parent
HEADER = """##fileformat=VCFv4.2
##FILTER=<ID=PASS,Description="All filters passed">
##FILTER=<ID=LowQual,Description="Low quality">
##contig=<ID=1,length=250000000>
##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count">
##INFO=<ID=AN,Number=1,Type=Integer,Description="Allele number">
##INFO=<ID=AF,Number=A,Type=Float,Description="Allele frequency">
##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">
##INFO=<ID=MQ,Number=1,Type=Float,Description="Mapping quality">
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Allele depths">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">
##FORMAT=<ID=GQ,Number=1,Type=Integer,Description="Genotype quality">
##FORMAT=<ID=PL,Number=G,Type=Integer,Description="Phred-scaled likelihoods">
"""


def call_set(path: Path, records: int, samples: int, seed: int = 28) -> None:
    """A biallelic call set with realistic FORMAT values (2% missing calls), one line a record."""
    rng = np.random.default_rng(seed)
    names = "\t".join(f"S{k:05d}" for k in range(samples))
    positions = np.cumsum(rng.integers(1, 200, records)) + 10_000
    with open(path, "w") as f:
        f.write(HEADER + f"#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t{names}\n")
        for k in range(records):
            alt_freq = rng.beta(0.3, 3)
            calls = (rng.random((samples, 2)) < alt_freq).astype(int)
            dosage = calls.sum(axis=1)
            depth = rng.poisson(30, samples)
            alt = np.where(dosage == 0, rng.binomial(depth, 0.01), rng.binomial(depth, dosage / 2))
            quality = np.minimum(99, rng.integers(0, 140, samples))
            likelihoods = rng.integers(0, 800, (samples, 3))
            likelihoods[np.arange(samples), dosage] = 0
            gt = [f"{a}/{b}" for a, b in calls.tolist()]
            for missing in np.flatnonzero(rng.random(samples) < 0.02):
                gt[missing] = "./."
            cells = "\t".join(
                f"{g}:{d - a},{a}:{d}:{q}:{p0},{p1},{p2}"
                for g, d, a, q, (p0, p1, p2) in zip(gt, depth.tolist(), alt.tolist(), quality.tolist(),
                                                    likelihoods.tolist())
            )
            count = int(calls.sum())
            info = (f"AC={count};AN={2 * samples};AF={count / (2 * samples):.6g};DP={int(depth.sum())};"
                    f"MQ={rng.uniform(20, 60):.2f}")
            ref, alt_base = "ACGT"[k % 4], "CGTA"[k % 4]
            filters = "PASS" if rng.random() < 0.9 else "LowQual"
            f.write(f"1\t{positions[k]}\t.\t{ref}\t{alt_base}\t{rng.gamma(2, 200):.2f}\t{filters}\t{info}"
                    f"\tGT:AD:DP:GQ:PL\t{cells}\n")


def _records(path: Path) -> list[str]:
    """Record lines, INFO keys sorted (the store writes them in header order)."""
    out = []
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                cols = line.rstrip("\n").split("\t")
                cols[7] = ";".join(sorted(cols[7].split(";")))
                out.append("\t".join(cols))
    return out


#: how a checkout's ``vcfzarr-sql view`` is run: the command's first words and its environment
Command = tuple[list[str], dict[str, str]]


def on_path(checkout: Path) -> Command:
    """This interpreter with ``checkout``'s package first on the path (:data:`OURS`)."""
    return OURS, {**os.environ, "PYTHONPATH": str(checkout)}


def installed(checkout: Path, venvs: Path) -> Command:
    """``checkout`` installed as a wheel (``pip install``, not editable) into a new venv under
    ``venvs`` (made from the interpreter this one's venv was made from): its ``vcfzarr-sql``.
    Built from a copy of its package and project files (a checkout's own ``build/`` directory
    may hold modules it no longer has)."""
    venv = venvs / f"venv-{len(list(venvs.glob('venv-*')))}"
    source = venv.with_name(venv.name + "-source")
    shutil.copytree(checkout / "vcfzarr_sql", source / "vcfzarr_sql", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(checkout / name, source / name)
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", str(source)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return [str(venv / "bin/vcfzarr-sql"), "view"], env


def compare(name: str, vcf: Path, tmp: Path, repeats: int, command: Command,
            before: Command | None = None) -> None:
    from vcfzarr_sql.converter import convert

    bcf, store = tmp / f"{name}.bcf", tmp / f"{name}.zarr"
    subprocess.run(["bcftools", "view", "-Ob", "-o", str(bcf), str(vcf)], check=True)
    convert(str(vcf), str(store), show_progress=False)
    theirs_out, ours_out = tmp / "theirs.vcf", tmp / "ours.vcf"
    theirs = ["bcftools", "view", "-o", str(theirs_out), str(bcf)]
    prefix, env = command
    ours = [*prefix, str(store), "-o", str(ours_out)]
    run_process(theirs, capture=False)
    run_process(ours, capture=False, env=env)
    if _records(theirs_out) != _records(ours_out):
        raise SystemExit(f"{name}: vcfzarr-sql's records differ from bcftools'")
    size = theirs_out.stat().st_size
    header_only = [*prefix, str(store), "-h", "-o", str(tmp / "header.vcf")]
    startup = statistics.median(run_process(header_only, capture=False, env=env).cpu_s for _ in range(3))
    print(f"\n{name}: {len(_records(theirs_out))} records, {size / 1e6:.1f} MB of VCF text; "
          f"vcfzarr-sql view -h (Python start-up, imports, the header): {startup:.3f} s CPU")
    old = None if before is None else [*before[0], str(store), "-o", str(ours_out)]
    old_env = None if before is None else before[1]
    if old is not None:
        run_process(old, capture=False, env=old_env)
        if _records(theirs_out) != _records(ours_out):
            raise SystemExit(f"{name}: the --before checkout's records differ from bcftools'")
    print("| run | bcftools CPU / wall | vcfzarr-sql CPU / wall |" + (" before CPU / wall |" if before else ""))
    print("|---|---|---|" + ("---|" if before else ""))
    runs: list[tuple[float, ...]] = []
    for k in range(repeats):
        b = run_process(theirs, capture=False)
        o = run_process(ours, capture=False, env=env)
        p = None if old is None else run_process(old, capture=False, env=old_env)
        runs.append((b.cpu_s, b.wall_s, o.cpu_s, o.wall_s) + (() if p is None else (p.cpu_s, p.wall_s)))
        print(f"| {k + 1} | {b.cpu_s:.3f} / {b.wall_s:.2f} | {o.cpu_s:.3f} / {o.wall_s:.2f} |"
              + ("" if p is None else f" {p.cpu_s:.3f} / {p.wall_s:.2f} |"))
    medians = [statistics.median(r[i] for r in runs) for i in range(len(runs[0]))]
    b_cpu, b_wall, o_cpu, o_wall = medians[:4]
    print(f"| median | {b_cpu:.3f} / {b_wall:.2f} | {o_cpu:.3f} / {o_wall:.2f} |"
          + ("" if before is None else f" {medians[4]:.3f} / {medians[5]:.2f} |"))
    print(f"CPU ratio vcfzarr-sql / bcftools: {o_cpu / b_cpu:.3f} (wall {o_wall / b_wall:.2f}); "
          f"vcfzarr-sql at {size / 1e6 / o_cpu:.0f} MB/s CPU, bcftools {size / 1e6 / b_cpu:.0f} MB/s"
          + ("" if before is None else f"; before: {medians[4] / b_cpu:.3f}"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=4000)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--big-records", type=int, default=20000)
    parser.add_argument("--big-samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a checkout whose vcfzarr_sql to run too, in the same rounds")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="Do not compile our package to bytecode first (runs compile it, without __pycache__).")
    parser.add_argument("--wheel", action="store_true",
                        help="Run the vcfzarr-sql command of each checkout installed as a wheel in a scratch venv.")
    args = parser.parse_args(argv)
    if not args.no_bytecode and not args.wheel:
        import vcfzarr_sql

        compileall.compile_dir(str(Path(vcfzarr_sql.__file__).parent), quiet=1)
        if args.before is not None:
            compileall.compile_dir(str(args.before / "vcfzarr_sql"), quiet=1)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        run = (lambda checkout: installed(checkout, tmp)) if args.wheel else on_path
        commands = (run(ROOT), None if args.before is None else run(args.before))
        generated = tmp / "calls.vcf"
        call_set(generated, args.records, args.samples)
        compare(f"generated {args.records} x {args.samples} GT:AD:DP:GQ:PL", generated, tmp, args.repeats, *commands)
        compare("1000 Genomes chr22 slice (GT only)", KG, tmp, args.repeats, *commands)
        if args.big_records:
            big = tmp / "big.vcf"
            call_set(big, args.big_records, args.big_samples)
            compare(f"generated {args.big_records} x {args.big_samples} GT:AD:DP:GQ:PL", big, tmp,
                    args.repeats, *commands)


if __name__ == "__main__":
    main()
