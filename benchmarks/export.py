"""How fast ``vcfzarr-sql export`` writes PLINK 2 .pgen and PLINK 1 .bed from a store, against
``plink2 --vcf X --make-pgen`` / ``--make-bed`` from the original (bgzipped) VCF; and how fast
an AnnData export is against computing the same matrix from the store with zarr + numpy and
writing it with anndata directly (and against anndata's write alone, the floor).

A biallelic call set of ``--records`` x ``--samples`` (GT only, 2% missing calls, some phased,
written deterministically) is converted to a store (untimed). The outputs are checked before
anything is timed: plink2 ``--freq counts`` of ours and of plink2's own files must be equal,
and the AnnData X equal to the dosage matrix the baseline writes. Then the commands run one
after the other, ``--repeats`` times, interleaved (a busy machine slows both alike); printed:
CPU (user + system, with children and threads) and wall seconds of each run, medians, and the
ratio ours / the alternative of the median CPU (the issue's targets: at most 1.0 for .pgen and
.bed, at most 2 for AnnData).

    python -m benchmarks.export                                   # 20,000 x 2,000, 3 repeats
    python -m benchmarks.export --records 100000 --samples 2000 --repeats 3
    python -m benchmarks.export --records 500000 --samples 2000 --workdir /tmp/export  # the issue's size
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.harness import run_process

OURS = [sys.executable, "-c", "import sys; from vcfzarr_sql.cli import main; sys.exit(main())", "export"]
#: Each call as the 4 bytes it is written with (the tab after it; the last of a line becomes a newline),
#: by code: 0-2 unphased alternate-allele count, 3 missing, 4-7 phased (4 + 2 * first + second).
GENOTYPES = np.frombuffer(b"0/0\t0/1\t1/1\t./.\t0|0\t0|1\t1|0\t1|1\t", dtype=np.uint8).reshape(8, 4)
#: Records generated (and written) at once: a block of 1,000 x 2,000 calls is ~40 MB of draws.
BLOCK = 1000


def call_set(path: Path, records: int, samples: int, seed: int = 26) -> None:
    """A biallelic call set, GT only: 2% missing calls, a third of the records phased.

    Whole blocks of records are drawn and formatted at once (numpy byte tables), so 500k x 2,000
    (4 GB of text) takes minutes, not the better part of an hour.
    """
    rng = np.random.default_rng(seed)
    names = "\t".join(f"S{k:05d}" for k in range(samples))
    positions = np.cumsum(rng.integers(1, 200, records)) + 10_000
    with open(path, "wb") as f:
        f.write(("##fileformat=VCFv4.2\n##contig=<ID=1,length=250000000>\n"
                 '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
                 f"#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t{names}\n").encode())
        for first in range(0, records, BLOCK):
            rows = range(first, min(first + BLOCK, records))
            freq = rng.beta(0.3, 3, len(rows))
            alleles = (rng.random((len(rows), samples, 2)) < freq[:, None, None]).astype(np.uint8)
            phased = (np.asarray(rows) % 3 == 0)[:, None]
            codes = np.where(phased, 4 + 2 * alleles[:, :, 0] + alleles[:, :, 1], alleles.sum(axis=2))
            codes[rng.random((len(rows), samples)) < 0.02] = 3
            text = GENOTYPES[codes].reshape(len(rows), samples * 4)
            text[:, -1] = ord("\n")
            f.write(b"".join(f"1\t{positions[k]}\trs{k}\tA\tG\t.\t.\t.\tGT\t".encode() + line.tobytes()
                             for k, line in zip(rows, text)))


def bgzipped(text: Path) -> Path:
    """``text`` bgzipped (by htslib's bgzip, two threads) and tabix-indexed; the text is removed."""
    vcf = text.with_name(text.name + ".gz")
    subprocess.run(["bgzip", "-f", "-@", "2", str(text)], check=True)
    subprocess.run(["tabix", "-f", "-p", "vcf", str(vcf)], check=True)
    return vcf


def _freq(inputs: list[str], out: Path) -> str:
    subprocess.run(["plink2", *inputs, "--freq", "counts", "--out", str(out)], check=True, capture_output=True)
    return Path(f"{out}.acount").read_text()


def compare_plink(fmt: str, vcf: Path, store: Path, tmp: Path, repeats: int) -> None:
    make = "--make-pgen" if fmt == "pgen" else "--make-bed"
    theirs = ["plink2", "--vcf", str(vcf), "--vcf-half-call", "missing", make, "--out", str(tmp / f"theirs-{fmt}")]
    if fmt == "plink":
        theirs += ["--max-alleles", "2"]
    ours = [*OURS, str(store), str(tmp / f"ours-{fmt}"), "--format", fmt]
    run_process(theirs)
    run_process(ours)
    read = (lambda p: ["--pfile", p]) if fmt == "pgen" else (lambda p: ["--bfile", p])
    if _freq(read(str(tmp / f"theirs-{fmt}")), tmp / "f1") != _freq(read(str(tmp / f"ours-{fmt}")), tmp / "f2"):
        raise SystemExit(f"{fmt}: plink2 --freq counts differ between the two outputs")
    print(f"\n### {fmt}: `export --format {fmt}` vs `plink2 --vcf {make}`\n")
    print("| run | plink2 CPU / wall s | vcfzarr-sql CPU / wall s |\n|---|---|---|")
    runs = []
    for k in range(repeats):
        t = run_process(theirs)
        o = run_process(ours)
        runs.append((t.cpu_s, t.wall_s, o.cpu_s, o.wall_s))
        print(f"| {k + 1} | {t.cpu_s:.2f} / {t.wall_s:.2f} | {o.cpu_s:.2f} / {o.wall_s:.2f} |")
    t_cpu, t_wall, o_cpu, o_wall = (statistics.median(r[i] for r in runs) for i in range(4))
    print(f"| median | {t_cpu:.2f} / {t_wall:.2f} | {o_cpu:.2f} / {o_wall:.2f} |")
    print(f"CPU ratio vcfzarr-sql / plink2: {o_cpu / t_cpu:.2f} (wall {o_wall / t_wall:.2f})")


def _timed(work: Callable[[], object]) -> tuple[float, float]:
    """(CPU, wall) seconds of ``work`` in this process (every thread)."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    work()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def compare_anndata(vcf: Path, store: Path, tmp: Path, repeats: int) -> None:
    """Ours against two baselines: the same matrix computed from the store with zarr + numpy
    and written by anndata (what a user script does without us), and the matrix already in
    memory, only written by anndata (the floor)."""
    import anndata
    import pandas as pd
    import zarr

    from vcfzarr_sql.exporters import export

    def read(name: str) -> np.ndarray:
        return np.asarray(zarr.open_array(str(store / name), mode="r")[...])

    def store_matrix() -> tuple[np.ndarray, list[str], list[str]]:
        genotypes = read("call_genotype")
        missing = (genotypes < 0).any(axis=2)
        matrix = np.where(missing, np.float32(np.nan), (genotypes > 0).sum(axis=2)).astype(np.float32).T
        names = [f"1:{p}" for p in read("variant_position").tolist()]
        return np.ascontiguousarray(matrix), [str(s) for s in read("sample_id").tolist()], names

    def write(matrix: np.ndarray, samples: list[str], names: list[str], path: Path) -> None:
        anndata.AnnData(X=matrix, obs=pd.DataFrame(index=pd.Index(samples, dtype=str)),
                        var=pd.DataFrame(index=pd.Index(names, dtype=str))).write_h5ad(path)

    matrix, samples, names = store_matrix()

    def direct() -> None:
        write(*store_matrix(), tmp / "direct.h5ad")

    def floor() -> None:
        write(matrix, samples, names, tmp / "floor.h5ad")

    def ours() -> None:
        export(store, tmp / "ours.h5ad", "anndata")

    direct()
    ours()
    if not np.array_equal(anndata.read_h5ad(tmp / "ours.h5ad").X, matrix, equal_nan=True):
        raise SystemExit("anndata: X differs from the baseline's matrix")
    print(f"\n### anndata: `export --format anndata` ({len(names)} x {len(samples)}) vs zarr + numpy + anndata\n")
    print("| run | zarr + numpy + anndata CPU / wall s | anndata write only | vcfzarr-sql CPU / wall s |\n|---|---|---|---|")
    runs = []
    for k in range(repeats):
        d, f, o = _timed(direct), _timed(floor), _timed(ours)
        runs.append((*d, *f, *o))
        print(f"| {k + 1} | {d[0]:.2f} / {d[1]:.2f} | {f[0]:.2f} / {f[1]:.2f} | {o[0]:.2f} / {o[1]:.2f} |")
    med = [statistics.median(r[i] for r in runs) for i in range(6)]
    print(f"| median | {med[0]:.2f} / {med[1]:.2f} | {med[2]:.2f} / {med[3]:.2f} | {med[4]:.2f} / {med[5]:.2f} |")
    print(f"CPU ratio vcfzarr-sql / zarr + numpy + anndata: {med[4] / med[0]:.2f} (wall {med[5] / med[1]:.2f}); "
          f"/ anndata write only: {med[4] / med[2]:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=2_000)
    parser.add_argument("--anndata-records", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path,
                        help="Keep the generated VCFs and stores here and reuse them on the next run "
                             "(default: a temporary folder, removed at the end).")
    args = parser.parse_args(argv)
    import vcfzarr_sql

    # As `pip install` leaves it: without __pycache__ (PYTHONDONTWRITEBYTECODE, an editable
    # install) every run of ours would compile its modules again.
    compileall.compile_dir(str(Path(vcfzarr_sql.__file__).parent), quiet=1)
    if args.workdir is None:
        with tempfile.TemporaryDirectory() as folder:
            run(Path(folder), args)
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        run(args.workdir, args)


def run(tmp: Path, args: argparse.Namespace) -> None:
    from vcfzarr_sql.converter import convert

    for name, records in (("plink", args.records), ("anndata", args.anndata_records)):
        stem = f"{name}-{records}x{args.samples}"
        vcf, store = tmp / f"{stem}.vcf.gz", tmp / f"{stem}.zarr"
        if not store.exists():
            text = tmp / f"{stem}.vcf"
            call_set(text, records, args.samples)
            vcf = bgzipped(text)
            convert(str(vcf), str(tmp / f"{stem}.partial.zarr"), show_progress=False, force=True, workers=2)
            (tmp / f"{stem}.partial.zarr").rename(store)
        print(f"{name}: {records} records x {args.samples} samples, VCF {vcf.stat().st_size / 1e6:.0f} MB, "
              f"load average {os.getloadavg()[0]:.1f}")
        if name == "plink":
            for fmt in ("pgen", "plink"):
                compare_plink(fmt, vcf, store, tmp, args.repeats)
        else:
            compare_anndata(vcf, store, tmp, args.repeats)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")

if __name__ == "__main__":
    main()
