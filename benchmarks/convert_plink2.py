"""Conversion CPU against plink2: ``convert`` of a GT-only VCF beside ``plink2 --make-pgen``.

Self-contained: it simulates a bgzipped, tabix-indexed GT-only VCF (seeded; biallelic diploid
calls with allele frequencies from a skewed Beta, 1 % missing ``./.``, phased or not as asked),
then runs, interleaved and ``--repeats`` times, each in a fresh process:

- ``plink2 --vcf X --make-pgen --threads 1`` (the yardstick of issue 29);
- our ``convert`` with one worker (target: <= 3x plink2's CPU);
- our ``convert`` with two workers (target: CPU / wall >= 1.6 on an idle machine).

CPU is user + system of the process and its children (``wait4``); the machine is shared, so
CPU is the number to trust. It prints the medians, the ratios, a hash of the store's files and
a hash of every array's decoded contents (compare it across versions: the values must not
change, whatever the codec). ``--before DIR``: also our ``convert --workers 1`` from another
checkout's ``vcfzarr_sql`` (DIR on PYTHONPATH), in the same interleaved rounds. ``--kernels
numpy auto``: our ``convert --workers 1`` once per ``VCFZARR_SQL_KERNELS`` mode
(:mod:`vcfzarr_sql.kernels`; the default runs the environment's mode). The compiled kernels'
on-disk cache is filled by an untimed conversion first, so a timed run loads them, as an
installation's every run after its first does. ``--files VCF...``: our commands only, on each
of those files (the corpus files of issue 29's "never slower"), ratios to the first command.

    python -m benchmarks.convert_plink2 --samples 2000 --records 50000
    python -m benchmarks.convert_plink2 --before /tmp/old-checkout --kernels numpy auto
    python -m benchmarks.convert_plink2 --before /tmp/old-checkout --kernels auto --files a.vcf.gz b.vcf
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import numcodecs
import numpy as np

from benchmarks.harness import ProcessResult, run_process
from benchmarks.simulated import vcf_header
from benchmarks.sizes import DATA_DIR

_OUR_CONVERT = (
    "import sys, vcfzarr_sql; vcfzarr_sql.convert(sys.argv[1], sys.argv[2], workers=int(sys.argv[3]), "
    "force=True, show_progress=False)"
)


def simulate(path: Path, samples: int, records: int, phased: bool, seed: int = 11) -> Path:
    """A bgzipped, tabix-indexed GT-only VCF of biallelic SNPs (made once)."""
    if path.exists() and path.with_suffix(".gz.tbi").exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = [f"S{i:06d}" for i in range(samples)]
    header = vcf_header(names, 250_000_000)
    positions = np.sort(rng.choice(np.arange(1, 250_000_000), records, replace=False))
    with path.open("wb") as out:
        bgzip = subprocess.Popen(["bgzip", "-c"], stdin=subprocess.PIPE, stdout=out)
        assert bgzip.stdin is not None
        bgzip.stdin.write(header.encode())
        for start in range(0, records, 2000):
            pos = positions[start : start + 2000]
            freq = rng.beta(0.1, 1.0, len(pos))[:, None, None]
            alleles = (rng.random((len(pos), samples, 2)) < freq).astype(np.uint8)
            text = np.empty((len(pos), samples, 4), dtype=np.uint8)
            text[..., 0] = alleles[..., 0] + ord("0")
            text[..., 1] = ord("|" if phased else "/")
            text[..., 2] = alleles[..., 1] + ord("0")
            text[..., 3] = ord("\t")
            text[rng.random((len(pos), samples)) < 0.01] = np.frombuffer(b"./.\t", dtype=np.uint8)
            text[:, -1, 3] = ord("\n")
            for p, row in zip(pos, text):
                bgzip.stdin.write(f"1\t{p}\t.\tA\tG\t.\t.\t.\tGT\t".encode() + row.tobytes())
        bgzip.stdin.close()
        if bgzip.wait() != 0:
            raise RuntimeError("bgzip failed")
    subprocess.run(["tabix", "-f", "-p", "vcf", str(path)], check=True)
    return path


def store_hash(store: Path) -> str:
    """SHA-256 over every file of ``store`` (relative path and bytes), in path order."""
    digest = hashlib.sha256()
    for file in sorted(p for p in store.rglob("*") if p.is_file()):
        digest.update(file.relative_to(store).as_posix().encode() + b"\0")
        digest.update(file.read_bytes())
    return digest.hexdigest()


def decoded_hash(store: Path) -> str:
    """SHA-256 over every array of ``store`` (Zarr v2, as ``convert`` writes it): its name, dtype,
    shape and every chunk's decoded bytes, in path order (the values, whatever the codec)."""
    digest = hashlib.sha256()
    for meta_path in sorted(store.rglob(".zarray")):
        meta = json.loads(meta_path.read_text())
        digest.update(f"{meta_path.parent.relative_to(store).as_posix()}{meta['dtype']}{meta['shape']}".encode())
        codec = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
        filters = [numcodecs.get_codec(f) for f in meta.get("filters") or []]
        for chunk in sorted(p for p in meta_path.parent.iterdir() if not p.name.startswith(".")):
            data = chunk.read_bytes()
            decoded = codec.decode(data) if codec is not None else data
            for f in reversed(filters):
                decoded = f.decode(decoded)
            digest.update(chunk.name.encode() + b"\0")
            values = np.frombuffer(decoded, dtype=np.uint8) if isinstance(decoded, bytes) else np.asarray(decoded)
            digest.update("\0".join(map(str, values.ravel().tolist())).encode() if values.dtype == object
                          else values.tobytes())
    return digest.hexdigest()


def _ours(vcf: Path, store: Path, args: argparse.Namespace) -> tuple[dict[str, list[str]], dict[str, dict[str, str] | None]]:
    """Our conversions of ``vcf`` into ``store``: one worker (once per ``--kernels`` mode), two
    workers, and one worker of ``--before``'s checkout; the environment of each (None: ours)."""
    one = [sys.executable, "-c", _OUR_CONVERT, str(vcf), str(store), "1"]
    commands = {"convert --workers 1": one, "convert --workers 2": [*one[:-1], "2"]}
    envs: dict[str, dict[str, str] | None] = dict.fromkeys(commands)
    if args.kernels:
        del commands["convert --workers 1"], envs["convert --workers 1"]
        for mode in args.kernels:
            name = f"convert --workers 1 (kernels {mode})"
            commands[name], envs[name] = one, {**os.environ, "VCFZARR_SQL_KERNELS": mode}
        # (fills numba's cache of the compiled kernels: the timed runs load them)
        run_process(one, capture=False, env={**os.environ, "VCFZARR_SQL_KERNELS": "numba"})
        shutil.rmtree(store)
    if args.before is not None:
        # (-P: the working directory's vcfzarr_sql, if any, does not come first on sys.path)
        commands["convert --workers 1 (before)"] = [sys.executable, "-P", *one[1:]]
        envs["convert --workers 1 (before)"] = {**os.environ, "PYTHONPATH": str(args.before)}
    return commands, envs


def _compare(title: str, commands: dict[str, list[str]], envs: dict[str, dict[str, str] | None],
             store: Path, repeats: int, yardstick: str) -> None:
    """Run ``commands`` interleaved ``repeats`` times; print their medians, the ratios to
    ``yardstick``'s CPU and the hashes of the stores the conversions wrote."""
    runs: dict[str, list[ProcessResult]] = {name: [] for name in commands}
    hashes: dict[str, str] = {}
    decoded: dict[str, str] = {}
    names = list(commands)
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            runs[name].append(run_process(commands[name], capture=False, env=envs.get(name)))
            if name.startswith("convert"):
                hashes[name] = store_hash(store)
                decoded[name] = decoded_hash(store)
                shutil.rmtree(store)
    cpu = {name: statistics.median(r.cpu_s for r in results) for name, results in runs.items()}
    wall = {name: statistics.median(r.wall_s for r in results) for name, results in runs.items()}
    print(f"{title}, median of {repeats}")
    print(f"| command | CPU s | wall s | CPU / wall | CPU / {yardstick} CPU |")
    print("|---|---|---|---|---|")
    for name in commands:
        print(f"| {name} | {cpu[name]:.2f} | {wall[name]:.2f} | {cpu[name] / wall[name]:.2f} | "
              f"{cpu[name] / cpu[yardstick]:.2f}x |")
    for name, value in hashes.items():
        print(f"store hash ({name}): files {value[:16]}, decoded arrays {decoded[name][:16]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--phased", action="store_true")
    parser.add_argument("--before", type=Path, help="a checkout whose vcfzarr_sql to run too")
    parser.add_argument("--kernels", nargs="+", choices=["auto", "numpy", "numba"],
                        help="VCFZARR_SQL_KERNELS modes to run convert --workers 1 in")
    parser.add_argument("--files", nargs="+", type=Path,
                        help="convert these VCFs instead (our commands only, against the first)")
    args = parser.parse_args(argv)
    if args.files:
        for vcf in args.files:
            store = DATA_DIR / "convert_files" / "out.vcz"
            store.parent.mkdir(parents=True, exist_ok=True)
            ours, envs = _ours(vcf, store, args)
            del ours["convert --workers 2"]
            _compare(vcf.name, ours, envs, store, args.repeats, next(iter(ours)))
        return
    directory = DATA_DIR / f"gt_only_{args.samples}x{args.records}{'_phased' if args.phased else ''}"
    vcf = simulate(directory / "sim.vcf.gz", args.samples, args.records, args.phased)
    store = directory / "sim.vcz"
    plink = "plink2 --make-pgen --threads 1"
    commands = {plink: ["plink2", "--vcf", str(vcf), "--make-pgen", "--threads", "1",
                        "--out", str(directory / "plink"), "--silent"]}
    ours, envs = _ours(vcf, store, args)
    commands.update(ours)
    _compare(f"{args.samples} samples x {args.records} records, GT only "
             f"({'phased' if args.phased else 'unphased'})", commands, envs, store, args.repeats, plink)


if __name__ == "__main__":
    main()
