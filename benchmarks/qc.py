"""``vcfzarr-sql stats -s -`` side by side with ``bcftools stats -s -`` on the BCF of the same
10,000-sample cohort: biallelic SNPs (transitions and transversions) and indels, 1% missing
calls, GT only, with as many records as make bcftools' run take seconds (30,000 by default).
Made once and cached under ``benchmarks/data``.

Both run as processes, interleaved (the order rotates each round), ``--repeats`` rounds; the
data lines of both outputs are checked equal once before timing. Beside them run the floors of
our process: the interpreter, ``import numpy`` (which every reader of the store needs), and our
start-up alone (the modules ``stats`` imports, no work). Prints the median wall and CPU (user +
system, children included) of each, and each one's ratios to bcftools (the issue's target:
``stats`` wall <= 0.05).

Our package is compiled to bytecode first (``compileall``), as ``pip install`` leaves it: with
``PYTHONDONTWRITEBYTECODE`` set every run would otherwise compile its modules again.

    python -m benchmarks.qc                      # 10,000 samples x 30,000 records
    python -m benchmarks.qc --samples 2000 --records 20000 --repeats 3
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks.harness import run_process
from benchmarks.simulated import call_columns, diploid_calls, vcf_header
from benchmarks.sizes import DATA_DIR

#: the ``vcfzarr-sql`` console script (``cli:run``: the process start of :mod:`vcfzarr_sql.cli.process`)
OURS = [sys.executable, "-c", "import sys; from vcfzarr_sql.cli import run; sys.exit(run())", "stats"]
#: The floors of our process, timed beside it: name -> what the interpreter runs.
FLOORS = {
    "python (nothing imported)": "pass",
    "python: import numpy": "import numpy",
    "ours: start-up only": "from vcfzarr_sql.cli import process\nwith process.process_start():\n"
                           "    process.defer_numcodecs_init()\n"
                           "    import vcfzarr_sql.cli.stats, vcfzarr_sql.qc.collect, vcfzarr_sql.qc.text, vcfzarr_sql.store",
}

_BASES = np.array(list("ACGT"))


def simulate(directory: Path, samples: int, records: int, seed: int = 11) -> Path:
    """A bgzipped VCF of ``records`` biallelic sites (9 in 10 SNPs, the others indels of 1-5
    bases) x ``samples`` diploid calls, 1% of them missing."""
    vcf = directory / "sim.vcf.gz"
    if vcf.exists():
        return vcf
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = [f"S{i:06d}" for i in range(samples)]
    header = vcf_header(names, 100_000_000)
    positions = np.sort(rng.choice(np.arange(1, 100_000_000), records, replace=False))
    partial = vcf.with_suffix(".partial")
    with partial.open("wb") as out:
        bgzip = subprocess.Popen(["bgzip", "-@", "2", "-c"], stdin=subprocess.PIPE, stdout=out)
        assert bgzip.stdin is not None
        bgzip.stdin.write(header.encode())
        for start in range(0, records, 2000):
            pos = positions[start : start + 2000]
            ref = rng.integers(0, 4, len(pos))
            alt = (ref + rng.integers(1, 4, len(pos))) % 4
            indel = rng.random(len(pos)) < 0.1
            lengths = rng.integers(1, 6, len(pos))
            quality = rng.integers(10, 999, len(pos))
            calls = call_columns(diploid_calls(rng, len(pos), samples))
            lines = []
            for k, (p, row) in enumerate(zip(pos, calls)):
                r, a = _BASES[ref[k]], _BASES[alt[k]]
                if indel[k]:
                    r, a = (r, r + a * int(lengths[k])) if k % 2 else (r + a * int(lengths[k]), r)
                lines += [f"1\t{p}\t.\t{r}\t{a}\t{quality[k]}\t.\t.\tGT\t".encode(), row]
            bgzip.stdin.write(b"".join(lines))
        bgzip.stdin.close()
        bgzip.wait()
    partial.rename(vcf)
    return vcf


def prepare(directory: Path, samples: int, records: int) -> tuple[Path, Path]:
    """(BCF, store) of the cohort, made once."""
    vcf = simulate(directory, samples, records)
    bcf = directory / "sim.bcf"
    if not bcf.exists():
        subprocess.run(["bcftools", "view", "-Ob", "-o", str(bcf), str(vcf)], check=True)
        subprocess.run(["bcftools", "index", "-f", str(bcf)], check=True)
    store = directory / "sim.vcz"
    if not store.exists():
        from vcfzarr_sql.converter import convert

        convert(vcf, store, workers=2, show_progress=False)
    return bcf, store


def _data(output: bytes) -> list[str]:
    return [line for line in output.decode().splitlines() if line and not line.startswith(("#", "ID\t"))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    import vcfzarr_sql

    compileall.compile_dir(str(Path(vcfzarr_sql.__file__).parent), quiet=1)
    bcf, store = prepare(DATA_DIR / f"qc-{args.samples}x{args.records}", args.samples, args.records)
    compared = {
        "vcfzarr-sql stats -s -": [*OURS, str(store), "-s", "-"],
        "bcftools stats -s -": ["bcftools", "stats", "-s", "-", str(bcf)],
    }
    tools = {**compared, **{name: [sys.executable, "-c", code] for name, code in FLOORS.items()}}
    answers = {name: _data(run_process(argv).stdout) for name, argv in compared.items()}
    ours, theirs = answers.values()
    if ours != theirs:
        different = next(k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b) if len(ours) == len(theirs) else -1
        raise SystemExit(f"outputs differ (line {different})")
    print(f"{len(ours)} data lines equal; {args.samples} samples x {args.records} records")
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
    names = list(tools)
    for round_ in range(args.repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            result = run_process(tools[name], capture=False)
            times[name].append((result.wall_s, result.cpu_s))
    medians = {name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
               for name, t in times.items()}
    bcf_wall, bcf_cpu = medians["bcftools stats -s -"]
    print(f"{'':28s} {'wall':>9s} {'cpu':>9s}   vs bcftools: wall   cpu")
    for name, (wall, cpu) in medians.items():
        print(f"{name:28s} {wall:7.3f} s {cpu:7.3f} s   {wall / bcf_wall:17.3f}x {cpu / bcf_cpu:5.3f}x")
    print("(target: vcfzarr-sql stats -s - wall <= 0.05x bcftools)")


if __name__ == "__main__":
    main()
