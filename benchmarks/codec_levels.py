"""The store's codec at other levels: Blosc zstd at clevel 1, 3, 5 and 7 (bit shuffle, the same
blocksize), re-encoding the chunks of one array of existing stores: compression CPU,
decompression CPU and stored bytes, best of ``--repeats`` (single-threaded Blosc, as the
encode workers of ``convert --workers 2`` run it). The default (7) is not changed by this.

    python -m benchmarks.codec_levels benchmarks/data/gt_only_2000x50000/sim.vcz x.vcz
    python -m benchmarks.codec_levels --array call_genotype_phased STORE
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numcodecs
import numpy as np
from numcodecs import Blosc, blosc

LEVELS = (1, 3, 5, 7)


def chunks(store: Path, array: str) -> list[np.ndarray]:
    """The decoded chunks of ``array`` (Zarr v2, as ``convert`` writes it)."""
    meta = json.loads((store / array / ".zarray").read_text())
    codec = numcodecs.get_codec(meta["compressor"])
    files = sorted(p for p in (store / array).iterdir() if not p.name.startswith("."))
    return [np.frombuffer(codec.decode(p.read_bytes()), dtype=meta["dtype"]) for p in files]


def measure(raws: list[np.ndarray], repeats: int) -> dict[int, tuple[float, float, int]]:
    """Per level: (compress CPU s, decompress CPU s, stored bytes), best of ``repeats``."""
    best: dict[int, tuple[float, float, int]] = {}
    for _ in range(repeats):
        for level in LEVELS:  # (interleaved: the machine's noise hits every level alike)
            codec = Blosc(cname="zstd", clevel=level, shuffle=Blosc.BITSHUFFLE)
            start = time.process_time()
            encoded = [codec.encode(r) for r in raws]
            compress = time.process_time() - start
            start = time.process_time()
            for e in encoded:
                codec.decode(e)
            decompress = time.process_time() - start
            size = sum(len(e) for e in encoded)
            old = best.get(level)
            best[level] = (compress, decompress, size) if old is None else (
                min(old[0], compress), min(old[1], decompress), size)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+", type=Path)
    parser.add_argument("--array", default="call_genotype")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    blosc.use_threads = False
    for store in args.stores:
        raws = chunks(store, args.array)
        results = measure(raws, args.repeats)
        print(f"{store} {args.array}: {len(raws)} chunks, {sum(r.nbytes for r in raws) / 1e6:.1f} MB decoded")
        print("| zstd clevel | compress CPU s | decompress CPU s | stored MB | size / clevel 7 | compress / clevel 7 |")
        print("|---|---|---|---|---|---|")
        seven = results[7]
        for level in LEVELS:
            compress, decompress, size = results[level]
            print(f"| {level} | {compress:.3f} | {decompress:.3f} | {size / 1e6:.2f} | {size / seven[2]:.3f} | "
                  f"{compress / seven[0]:.2f} |")


if __name__ == "__main__":
    main()
