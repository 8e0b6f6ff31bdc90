"""Many regions at once (bcftools ``-R``): 10 to 100,000 one-base intervals, ours against
``bcftools view -R``.

On the 1000 Genomes chr22 slice in tests/data (6,109 records x 2,504 samples), converted to a
store and to a CSI-indexed BCF. Each interval set (``CHROM<TAB>POS<TAB>END`` lines, one base
each, seeded: half at record positions, half anywhere in the slice's span) is queried by

- ``vcfzarr-sql query -R FILE "SELECT contig, pos FROM vcf_zarr(store)"`` (a process: CSV out),
- a warm session: ``SELECT contig, pos FROM vcf_zarr(store, regions_file := FILE)``,
- ``bcftools view -G -H -R FILE`` on the BCF (a process), and on a sites-only BCF of the
  same records (``-G``: no genotypes to skip, as our query reads none),

whose record counts must agree before anything is timed. Then each runs ``--repeats`` times
(interleaved, so a busy machine slows all alike); printed: medians of CPU (user + system, with
children; the session: its process CPU time) and wall seconds, and the ratios to bcftools.

    python -m benchmarks.region_sets                       # 10 / 1,000 / 10,000 / 100,000, 3 repeats
    python -m benchmarks.region_sets --counts 10 1000 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.harness import run_process

KG = (Path(__file__).parent.parent / "tests/data/corpus/vcflib+vcflib/samples/"
      "1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz")
OURS = [sys.executable, "-c", "import sys; from vcfzarr_sql.cli import main; sys.exit(main())", "query"]
COUNTS = (10, 1_000, 10_000, 100_000)


def write_intervals(path: Path, contig: str, positions: np.ndarray, count: int, seed: int = 7) -> None:
    """``count`` one-base intervals: half at record positions, half anywhere in their span."""
    rng = np.random.default_rng(seed)
    at_records = rng.choice(positions, count // 2)
    anywhere = rng.integers(positions.min(), positions.max() + 1, count - count // 2)
    starts = np.sort(np.r_[at_records, anywhere])
    path.write_text("".join(f"{contig}\t{p}\t{p}\n" for p in starts))


def timed(run: Callable[[], int]) -> tuple[int, float, float]:
    """(answer, CPU seconds of this process, wall seconds) of ``run()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    answer = run()
    return answer, time.process_time() - cpu, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=list(COUNTS))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import vcfzarr_sql
    from vcfzarr_sql.converter import convert

    with tempfile.TemporaryDirectory() as name, vcfzarr_sql.connect() as con:
        tmp = Path(name)
        bcf, sites, store = tmp / "kg.bcf", tmp / "sites.bcf", tmp / "kg.zarr"
        for argv, path in ((["-Ob"], bcf), (["-G", "-Ob"], sites)):
            subprocess.run(["bcftools", "view", *argv, "-o", str(path), str(KG)], check=True)
            subprocess.run(["bcftools", "index", str(path)], check=True)
        convert(str(KG), str(store), show_progress=False)
        listed = subprocess.run(["bcftools", "query", "-f", "%CHROM\t%POS\n", str(bcf)], check=True,
                                capture_output=True, text=True).stdout.split()
        contig, positions = listed[0], np.array(listed[1::2], dtype=np.int64)
        print("| intervals | records | bcftools CPU / wall | bcftools sites-only CPU / wall | ours CLI CPU / wall "
              "| ours session CPU / wall | CLI / bcftools (CPU, wall) | CLI / bcftools sites-only (CPU, wall) |")
        print("|---|---|---|---|---|---|---|---|")
        for count in args.counts:
            regions = tmp / f"r{count}.tsv"
            write_intervals(regions, contig, positions, count)
            theirs = ["bcftools", "view", "-G", "-H", "-R", str(regions), str(bcf)]
            theirs_sites = [*theirs[:-1], str(sites)]
            ours = [*OURS, "--format", "csv", "-R", str(regions), f"SELECT contig, pos FROM vcf_zarr('{store}')"]
            sql = f"SELECT contig, pos FROM vcf_zarr('{store}', regions_file := '{regions}')"

            def session(sql: str = sql) -> int:
                return con.sql(sql).to_arrow_table().num_rows

            expected = run_process(theirs).stdout.count(b"\n")
            if run_process(theirs_sites).stdout.count(b"\n") != expected:
                raise SystemExit(f"{count} intervals: bcftools' sites-only BCF gives another count")
            # (CSV rows: DuckDB draws a progress bar on stdout when a query takes seconds)
            got_cli = sum(line.startswith(f"{contig},".encode()) for line in run_process(ours).stdout.splitlines())
            got_session = session()
            if not expected == got_cli == got_session:
                raise SystemExit(f"{count} intervals: bcftools {expected}, ours {got_cli} (CLI), {got_session} (session)")
            runs: list[tuple[float, ...]] = []
            for _ in range(args.repeats):
                b, b_sites = run_process(theirs, capture=False), run_process(theirs_sites, capture=False)
                o = run_process(ours, capture=False)
                _, s_cpu, s_wall = timed(session)
                runs.append((b.cpu_s, b.wall_s, b_sites.cpu_s, b_sites.wall_s, o.cpu_s, o.wall_s, s_cpu, s_wall))
            b_cpu, b_wall, t_cpu, t_wall, o_cpu, o_wall, s_cpu, s_wall = (
                statistics.median(r[i] for r in runs) for i in range(8))
            print(f"| {count:,} | {expected:,} | {b_cpu:.2f} / {b_wall:.2f} | {t_cpu:.2f} / {t_wall:.2f} "
                  f"| {o_cpu:.2f} / {o_wall:.2f} | {s_cpu:.2f} / {s_wall:.2f} | {o_cpu / max(b_cpu, 0.005):.1f}, "
                  f"{o_wall / b_wall:.1f} | {o_cpu / max(t_cpu, 0.005):.1f}, {o_wall / t_wall:.1f} |", flush=True)


if __name__ == "__main__":
    main()
