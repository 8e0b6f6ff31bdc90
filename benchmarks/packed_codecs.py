"""Codecs for the packed genotypes (``summary_gt_packed``): each candidate re-encodes the chunks
of an existing store; printed are its stored bytes, its compression CPU (what ``convert`` and
``index`` pay) and the CPU of decoding every chunk as a query reads it (the store's own decoder,
:func:`vcfzarr_sql.store.codecs.v2_codec`, from bytes in memory), best of ``--repeats``,
candidates interleaved. Then the whole read path of the current codec and of the store's, from
the chunk files (``VczStore.read_chunk``) through the masked popcounts of a random half of the
samples (the compiled kernel), of the store as it is and of a copy (``--copy``; other arrays
hard-linked) with the array encoded as the writer does now.

    python -m benchmarks.packed_codecs benchmarks/data/gtstats-2000x500000/sim.vcz
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
from numcodecs import LZ4, Blosc, Zstd, blosc

from benchmarks.codec_levels import chunks
from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.store.codecs import v2_codec
from vcfzarr_sql.store.packed_arrays import COMPRESSOR, MIN_RATIO, packed_arrays
from vcfzarr_sql.store.writer import encode_chunk

#: name -> (numcodecs configuration, None: no compressor; the writer's ``min_ratio``).
CANDIDATES: dict[str, tuple[dict | None, float]] = {
    "none": (None, 0),
    **{f"blosc lz4 {level}": (Blosc("lz4", level, Blosc.NOSHUFFLE).get_config(), 0) for level in (1, 3, 5)},
    **{f"blosc lz4 {level}, 1 MiB blocks": (Blosc("lz4", level, Blosc.NOSHUFFLE, 1 << 20).get_config(), 0)
       for level in (1, 5)},
    "blosc blosclz 1": (Blosc("blosclz", 1, Blosc.NOSHUFFLE).get_config(), 0),
    "blosc blosclz 5": (Blosc("blosclz", 5, Blosc.NOSHUFFLE).get_config(), 0),
    "blosc zstd 1": (Blosc("zstd", 1, Blosc.NOSHUFFLE).get_config(), 0),
    "lz4 (numcodecs)": (LZ4(1).get_config(), 0),
    "zstd 1 (numcodecs)": (Zstd(1).get_config(), 0),
    f"blosc lz4 5, as it is below {MIN_RATIO}x (the writer's)": (COMPRESSOR, MIN_RATIO),
}


def encoded(config: dict | None, min_ratio: float, values: np.ndarray) -> bytes:
    """The stored bytes of the packed chunk ``values`` (as the writer encodes it)."""
    if config is None:
        return values.tobytes()
    layout = packed_arrays(len(values), 4 * values.shape[1], len(values), 4 * values.shape[1])[pg.PACKED]
    return encode_chunk(replace(layout, compressor=config, min_ratio=min_ratio), values)


def cpu() -> float:
    """CPU seconds of this process, all its threads (Blosc's included)."""
    return time.process_time()


def best_of(repeats: int, runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Least CPU seconds of each run over ``repeats`` interleaved rounds."""
    best = {name: float("inf") for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = cpu()
            run()
            best[name] = min(best[name], cpu() - start)
    return best


def measure(store: Path, repeats: int) -> None:
    meta = json.loads((store / pg.PACKED / ".zarray").read_text())
    shape = tuple(meta["chunks"])
    raws = [r.reshape(shape) for r in chunks(store, pg.PACKED)]
    print(f"{store}: {len(raws)} chunks of {shape}, {sum(r.nbytes for r in raws) / 1e6:.1f} MB; "
          f"stored now as {meta['compressor']}")
    stored, compress = {}, {}
    for name, (config, min_ratio) in CANDIDATES.items():
        codec = v2_codec(pg.PACKED, {**meta, "compressor": config}, np.dtype("u1"), shape)
        start = cpu()
        stored[name] = [encoded(config, min_ratio, r) for r in raws]
        compress[name] = cpu() - start
        assert all(np.array_equal(codec.decode(e), r) for e, r in zip(stored[name], raws))

    def decoding(name: str) -> Callable[[], object]:
        codec = v2_codec(pg.PACKED, {**meta, "compressor": CANDIDATES[name][0]}, np.dtype("u1"), shape)
        return lambda: [codec.decode(e) for e in stored[name]]

    decode = best_of(repeats, {name: decoding(name) for name in CANDIDATES})
    print("| codec | stored MB | / decoded | compress CPU s | decode CPU s | decode GB/s |")
    print("|---|---|---|---|---|---|")
    total = sum(r.nbytes for r in raws)
    for name in CANDIDATES:
        size = sum(len(e) for e in stored[name])
        print(f"| {name} | {size / 1e6:.1f} | {size / total:.3f} | {compress[name]:.4f} | "
              f"{decode[name]:.4f} | {total / 1e9 / max(decode[name], 1e-9):.1f} |")


def read_path(stores: dict[str, Path], repeats: int) -> None:
    """CPU of reading every packed chunk a random half of the samples needs from each store:
    the files alone, ``VczStore.read_chunk``, and that with the masked popcounts."""
    runs: dict[str, Callable[[], object]] = {}
    for label, path in stores.items():
        runs |= {f"{label}: {name}": run for name, run in _reads(path).items()}
    for name, seconds in best_of(repeats, runs).items():
        print(f"| {name} | {seconds:.4f} |")


def _reads(path: Path) -> dict[str, Callable[[], object]]:
    from vcfzarr_sql.kernels.masked_popcounts import MASKED_POPCOUNTS
    from vcfzarr_sql.query.packed_counts import _chunk_masks
    from vcfzarr_sql.store.vcz import open_store

    kernel = MASKED_POPCOUNTS.compiled(work=1 << 40)
    assert kernel is not None
    store = open_store(str(path))
    info = store.array_info(pg.PACKED)
    samples = np.random.default_rng(1).choice(store.num_samples, store.num_samples // 2, replace=False)
    masks = _chunk_masks(np.sort(samples).astype(np.int64).tobytes(), store.samples_chunk_size,
                         info.chunks[1], info.shape[1])
    keys = [(c, column) for c in range(info.grid[0]) for column, _ in masks]

    def files_only() -> None:
        for key in keys:
            fd = os.open(path / pg.PACKED / ".".join(map(str, key)), os.O_RDONLY)
            os.read(fd, os.fstat(fd).st_size + 1)
            os.close(fd)

    def chunks_read() -> None:
        for key in keys:
            store.read_chunk(pg.PACKED, key)

    def counted() -> None:
        counts = np.zeros((3, info.chunks[0]), dtype=np.int64)
        for c in range(info.grid[0]):
            for column, mask in masks:
                words = store.read_chunk(pg.PACKED, (c, column)).view(np.uint64)
                kernel(words, mask, counts[:, : len(words)])

    counted()  # (compiles the kernel for this array type)
    return {"files read": files_only, "read_chunk": chunks_read, "read_chunk + popcounts": counted}


def recoded(store: Path, copy: Path) -> Path:
    """A copy of ``store`` (other arrays hard-linked) with the packed genotypes as the writer
    encodes them now."""
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(store, copy, copy_function=os.link, ignore=shutil.ignore_patterns(pg.PACKED))
    shutil.copytree(store / pg.PACKED, copy / pg.PACKED, ignore=shutil.ignore_patterns("[0-9]*"))
    meta = json.loads((store / pg.PACKED / ".zarray").read_text())
    for path, values in zip(chunk_files(store), chunks(store, pg.PACKED)):
        (copy / pg.PACKED / path.name).write_bytes(
            encoded(COMPRESSOR, MIN_RATIO, values.reshape(meta["chunks"])))
    meta["compressor"] = COMPRESSOR
    (copy / pg.PACKED / ".zarray").write_text(json.dumps(meta, indent=2, sort_keys=True))
    consolidated = json.loads((copy / ".zmetadata").read_text())
    consolidated["metadata"][f"{pg.PACKED}/.zarray"] = meta
    (copy / ".zmetadata").unlink()  # (a hard link: the original must not change)
    (copy / ".zmetadata").write_text(json.dumps(consolidated, indent=2, sort_keys=True))
    return copy


def chunk_files(store: Path) -> list[Path]:
    """The chunk files of the packed genotypes, in :func:`chunks`' order."""
    return sorted(p for p in (store / pg.PACKED).iterdir() if not p.name.startswith("."))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--copy", type=Path, help="where to write the store re-encoded with the "
                        "current codec (default: beside the store)")
    args = parser.parse_args(argv)
    blosc.use_threads = False
    measure(args.store, args.repeats)
    copy = args.copy or args.store.with_name(args.store.name.replace(".vcz", "-recoded.vcz"))
    stores = {"as stored": args.store, "as written now": recoded(args.store, copy)}
    print("| read path (all chunks a random half reads) | CPU s |")
    print("|---|---|")
    read_path(stores, args.repeats)


if __name__ == "__main__":
    main()
