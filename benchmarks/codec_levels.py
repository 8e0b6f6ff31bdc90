"""The store's codec at other settings: Blosc zstd (bit shuffle) at clevel 1, 3, 5 and 7 with
Blosc's automatic blocksize, and at clevel 3, 4, 5 and 7 with 1 MiB blocks, re-encoding the
chunks of one array of existing stores: compression CPU, decompression CPU and stored bytes,
best of ``--repeats`` (single-threaded Blosc, as the encode workers of ``convert --workers 2``
run it). Ratios are to clevel 7 with the automatic blocksize (the default before 2026-11-27);
the default now is :func:`vcfzarr_sql.converter.arrays.default_compressor`'s.

    python -m benchmarks.codec_levels benchmarks/data/gt_only_2000x50000/sim.vcz x.vcz
    python -m benchmarks.codec_levels --array call_genotype_phased STORE
    python -m benchmarks.codec_levels --byte-shuffle --array summary_gt_hwe STORE

``--byte-shuffle``: byte shuffle instead of bit shuffle (the codec of the other arrays, the
summaries' among them; docs/benchmarks.md "stop 38").
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numcodecs
import numpy as np
from numcodecs import Blosc, blosc

#: (clevel, blocksize) pairs measured; blocksize 0 is Blosc's automatic choice.
SETTINGS = ((1, 0), (3, 0), (5, 0), (7, 0), (3, 1 << 20), (4, 1 << 20), (5, 1 << 20), (7, 1 << 20))


def chunks(store: Path, array: str) -> list[np.ndarray]:
    """The decoded chunks of ``array`` (Zarr v2, as ``convert`` writes it)."""
    meta = json.loads((store / array / ".zarray").read_text())
    codec = numcodecs.get_codec(meta["compressor"])
    files = sorted(p for p in (store / array).iterdir() if not p.name.startswith("."))
    return [np.frombuffer(codec.decode(p.read_bytes()), dtype=meta["dtype"]) for p in files]


def measure(raws: list[np.ndarray], repeats: int,
            shuffle: int = Blosc.BITSHUFFLE) -> dict[tuple[int, int], tuple[float, float, int]]:
    """Per (clevel, blocksize): (compress CPU s, decompress CPU s, stored bytes), best of ``repeats``."""
    best: dict[tuple[int, int], tuple[float, float, int]] = {}
    for _ in range(repeats):
        for level in SETTINGS:  # (interleaved: the machine's noise hits every setting alike)
            codec = Blosc(cname="zstd", clevel=level[0], shuffle=shuffle, blocksize=level[1])
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
    parser.add_argument("--byte-shuffle", action="store_true", help="byte shuffle, not bit shuffle")
    args = parser.parse_args(argv)
    blosc.use_threads = False
    for store in args.stores:
        raws = chunks(store, args.array)
        results = measure(raws, args.repeats, Blosc.SHUFFLE if args.byte_shuffle else Blosc.BITSHUFFLE)
        print(f"{store} {args.array}: {len(raws)} chunks, {sum(r.nbytes for r in raws) / 1e6:.1f} MB decoded")
        print("| zstd clevel | blocks | compress CPU s | decompress CPU s | stored MB | size / 7 | "
              "compress / 7 | decompress / 7 |")
        print("|---|---|---|---|---|---|---|---|")
        seven = results[7, 0]
        for level, blocksize in SETTINGS:
            compress, decompress, size = results[level, blocksize]
            print(f"| {level} | {'auto' if blocksize == 0 else f'{blocksize >> 10} KiB'} | {compress:.3f} | "
                  f"{decompress:.3f} | {size / 1e6:.3f} | {size / seven[2]:.3f} | {compress / seven[0]:.2f} | "
                  f"{decompress / seven[1]:.2f} |")


if __name__ == "__main__":
    main()
