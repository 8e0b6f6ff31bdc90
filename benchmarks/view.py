"""``vcfzarr-sql view`` side by side with ``bcftools view`` (on the original VCF.gz/BCF) and
``vcztools view`` (on the same store): whole file, a region, a sample subset, a filter.

Every tool runs as a process writing VCF text; each answer's record count must equal
bcftools' before it is timed. Prints the median wall and CPU time of each tool and the ratio
of CPU times tool / vcfzarr-sql (above 1: we are faster); CPU time is the steadier measure on
a shared machine.

    python -m benchmarks.view                       # the 1000 Genomes chr22 slice in tests/data
    python -m benchmarks.view --vcf calls.vcf.gz --region chr20:1-5000000 --samples A,B
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import run_process, venv_bin

DEFAULT_VCF = (Path(__file__).parent.parent / "tests/data/corpus/vcflib+vcflib/samples/"
               "1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz")
#: the installed command's process (``cli.run``: what it defers and skips at start and exit), not ``cli.main``
OURS = [sys.executable, "-c", "import sys; from vcfzarr_sql.cli import run; sys.exit(run())", "view"]


def _samples(vcf: Path, count: int) -> str:
    names = subprocess.run(["bcftools", "query", "-l", str(vcf)], check=True, capture_output=True,
                           text=True).stdout.split()
    return ",".join(names[:: max(1, len(names) // count)][:count])


def _median(argv: list[str], repeats: int) -> tuple[float, float, int]:
    """Median wall and CPU (user + system) seconds, and the records written."""
    runs = [run_process(argv) for _ in range(repeats)]
    records = sum(1 for line in runs[0].stdout.split(b"\n") if line and not line.startswith(b"#"))
    return statistics.median(r.wall_s for r in runs), statistics.median(r.cpu_s for r in runs), records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vcf", type=Path, default=DEFAULT_VCF)
    parser.add_argument("--region", default="22:16100000-16200000")
    parser.add_argument("--samples", type=int, default=10, help="how many samples -s selects")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    from vcfzarr_sql.converter import convert

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store.zarr"
        convert(args.vcf, store, show_progress=False)
        samples = _samples(args.vcf, args.samples)
        tasks = {
            "whole file": [],
            f"-r {args.region}": ["-r", args.region],
            f"-s ({args.samples} samples)": ["-s", samples],
            "-i 'QUAL>50 & INFO/AF<0.1'": ["-i", "QUAL>50 & INFO/AF<0.1"],
        }
        vcztools = venv_bin("vcztools")
        print(f"Wall / CPU seconds (median of {args.repeats}); ratios of CPU time, tool / vcfzarr-sql:\n")
        print("| task | records | vcfzarr-sql | bcftools | vcztools | bcftools / ours | vcztools / ours |")
        print("|---|---|---|---|---|---|---|")
        for task, options in tasks.items():
            b_wall, b_cpu, expected = _median(["bcftools", "view", *options, str(args.vcf)], args.repeats)
            o_wall, o_cpu, records = _median([*OURS, str(store), *options], args.repeats)
            v_wall, v_cpu, vcz_records = _median([vcztools, "view", *options, str(store)], args.repeats)
            if records != expected:
                raise SystemExit(f"{task}: vcfzarr-sql wrote {records} records, bcftools {expected}")
            vcz = f"{v_wall:.2f} / {v_cpu:.2f}" + ("" if vcz_records == expected else f" ({vcz_records} records!)")
            print(f"| {task} | {expected} | {o_wall:.2f} / {o_cpu:.2f} | {b_wall:.2f} / {b_cpu:.2f} | {vcz} "
                  f"| {b_cpu / o_cpu:.2f} | {v_cpu / o_cpu:.2f} |")


if __name__ == "__main__":
    main()
