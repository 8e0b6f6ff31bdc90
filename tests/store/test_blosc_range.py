"""``blosc_range.decompress_range``: any byte range of a Blosc frame of one-byte items equals the same bytes of
numcodecs' whole decode; frames it does not read give None; damaged frames raise instead of
reading past the buffer. ``VczStore.decode_chunk_rows`` through a store, and a damaged chunk."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from numcodecs import Blosc

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.store.blosc_range import decompress_range
from vcfzarr_sql.store.bounds import ChunkBoundsError


def _data(size: int, seed: int = 3) -> np.ndarray:
    """Packed-genotype-like bytes: mostly 0, some random (compressible, not trivially)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(size) < 0.3, rng.integers(0, 256, size), 0).astype(np.uint8)


@pytest.mark.parametrize("blocksize", [0, 1000, 4096])
def test_every_range_is_the_whole_decode(blocksize):
    data = _data(25_013)
    raw = Blosc("lz4", 5, Blosc.NOSHUFFLE, blocksize=blocksize).encode(data)
    whole = np.frombuffer(Blosc().decode(raw), np.uint8)
    assert (whole == data).all()
    rng = np.random.default_rng(blocksize)
    bounds = [(0, 0), (0, len(data)), (len(data) - 1, len(data)), (999, 1001), (4096, 8192)]
    bounds += [tuple(sorted(rng.integers(0, len(data) + 1, 2))) for _ in range(40)]
    for start, stop in bounds:
        part = decompress_range(raw, start, stop, len(data))
        assert part is not None and (part == whole[start:stop]).all(), (start, stop)


def test_a_frame_stored_as_it_is():
    """Incompressible bytes (Blosc keeps them as they are: the MEMCPYED flag), and blocks
    stored uncompressed inside a compressed frame."""
    data = np.random.default_rng(1).integers(0, 256, 10_000).astype(np.uint8)
    for clevel in (0, 5):
        raw = Blosc("lz4", clevel, Blosc.NOSHUFFLE, blocksize=1024).encode(data)
        part = decompress_range(raw, 1500, 7001, len(data))
        assert part is not None and (part == data[1500:7001]).all()


@pytest.mark.parametrize("cname", ["zstd", "lz4", "blosclz", "zlib"])
@pytest.mark.parametrize("shuffle", [Blosc.NOSHUFFLE, Blosc.SHUFFLE, Blosc.BITSHUFFLE])
def test_any_compressor_and_shuffle(cname, shuffle):
    """Genotype chunks as stores write them (zstd + bit-shuffle, int8, blocks of 1 MiB), and
    every other compressor and shuffle, in several blocks: ranges inside one block, across
    blocks, and in the last (shorter) block alone, equal those bytes of the whole decode."""
    data = np.random.default_rng(5).integers(-2, 4, 250_003).astype(np.int8).view(np.uint8)
    raw = Blosc(cname, 5, shuffle, blocksize=1 << 15).encode(data)
    assert struct.unpack_from("<i", raw, 8)[0] < len(data)  # (several blocks)
    for start, stop in [(0, 10), (3 * (1 << 15) + 5, 7 * (1 << 15)), (len(data) - 7, len(data)),
                        (0, len(data)), (len(data) - 40_000, len(data) - 100), (5, 5)]:
        part = decompress_range(raw, start, stop, len(data))
        assert part is not None and (part == data[start:stop]).all(), (start, stop)


def test_frames_it_does_not_read_give_none():
    wide = _data(8000).view(np.uint16)  # (items of two bytes: blocks may be split into streams)
    assert decompress_range(Blosc("lz4", 5, Blosc.NOSHUFFLE).encode(wide), 0, 10, wide.nbytes) is None
    # (c-blosc's delta filter, which numcodecs never writes but another writer may: each block
    # decodes against the frame's first block, so blocks cannot be decoded without it)
    for cname in ("lz4", "zstd"):
        raw = bytearray(Blosc(cname, 5, Blosc.BITSHUFFLE, blocksize=4096).encode(_data(20_000)))
        raw[2] |= 0x8
        assert decompress_range(bytes(raw), 8192, 9000, 20_000) is None


def test_damaged_frames_raise():
    data = _data(20_000)
    raw = bytearray(Blosc("lz4", 5, Blosc.NOSHUFFLE, blocksize=4096).encode(data))
    with pytest.raises(ChunkBoundsError, match="expected 20001"):
        decompress_range(bytes(raw), 0, 10, len(data) + 1)
    with pytest.raises(ChunkBoundsError):
        decompress_range(bytes(raw[:-100]), 0, len(data), len(data))  # (cut short)
    far = bytearray(raw)
    struct.pack_into("<i", far, 16 + 4 * 2, len(raw) + 50)  # (block 2 starts past the end)
    with pytest.raises(ChunkBoundsError, match="at byte"):
        decompress_range(bytes(far), 2 * 4096, 2 * 4096 + 1, len(data))
    garbled = bytearray(raw)
    (offset,) = struct.unpack_from("<i", garbled, 16 + 4)
    garbled[offset + 4 : offset + 40] = b"\xff" * 36  # (block 1's LZ4 data)
    with pytest.raises(ChunkBoundsError, match="Blosc block"):
        decompress_range(bytes(garbled), 4096, 4097, len(data))


def _header_damaged(raw: bytes, **fields: int) -> bytes:
    """``raw`` with header fields changed (version, stream_version: bytes 0 and 1; blocksize,
    cbytes: the int32 at 8 and 12)."""
    damaged = bytearray(raw)
    for name, value in fields.items():
        if name in ("version", "stream_version"):
            damaged[("version", "stream_version").index(name)] = value
        else:
            struct.pack_into("<i", damaged, {"blocksize": 8, "cbytes": 12}[name], value)
    return bytes(damaged)


def test_frames_the_whole_decode_refuses_are_refused():
    """A damaged header that the range read could still follow (review of stop 36: a region
    touching part of a chunk answered where one reading all of it failed): a format version
    c-blosc does not know, blocks larger than the frame, a stored frame with bytes to spare."""
    data = _data(20_000)
    raw = Blosc("lz4", 5, Blosc.NOSHUFFLE, blocksize=4096).encode(data)
    stored = Blosc("lz4", 0, Blosc.NOSHUFFLE).encode(data)
    for damaged in (_header_damaged(raw, version=0xDF), _header_damaged(raw, stream_version=7),
                    _header_damaged(raw, blocksize=len(data) + 1),
                    _header_damaged(stored + b"\0", cbytes=len(stored) + 1)):
        with pytest.raises(Exception):  # noqa: B017,PT011 (numcodecs raises RuntimeError or ValueError)
            Blosc().decode(damaged)
        with pytest.raises(ChunkBoundsError):
            decompress_range(damaged, 0, 10, len(data))


@pytest.fixture(scope="module")
def rows_store(tmp_path_factory, convert_once):
    """A store of 23 diploid samples in sample chunks of 10, records in chunks of 25."""
    from fill_tags import simulated_vcf

    vcf = simulated_vcf(tmp_path_factory.mktemp("rows") / "rows.vcf", seed=5, samples=23, ploidies=(2,), max_alts=1, missing=0.05)
    return convert_once(vcf, variants_chunk_size=25, samples_chunk_size=10)


def test_store_rows_of_a_chunk(tmp_path, rows_store):
    """``decode_chunk_rows`` of every packed-genotype chunk of a store (sample chunks of 10,
    the last one trimmed) equals those rows of ``decode_chunk``; a damaged chunk is a
    StoreError naming the store, the array and the chunk."""
    from store_support import copy_store

    import vcfzarr_sql
    from vcfzarr_sql.format import packed_genotypes as pg

    path = rows_store
    store = vcfzarr_sql.open_store(path)
    info = store.array_info(pg.PACKED)
    for chunk in np.ndindex(*info.grid):
        raw = store.read_chunk_bytes(pg.PACKED, chunk)
        whole = store.decode_chunk(pg.PACKED, raw, chunk)
        for rows in (slice(0, 1), slice(3, 17), slice(24, 25), slice(0, len(whole))):
            assert (store.decode_chunk_rows(pg.PACKED, raw, chunk, rows) == whole[rows]).all()
    damaged = copy_store(path, tmp_path / "damaged.vcz")
    chunk_file = damaged / pg.PACKED / "1.0"
    raw = bytearray(chunk_file.read_bytes())
    assert raw[2] & 0x2  # (stored as it is, as random calls are: docs/reference.md)
    struct.pack_into("<i", raw, 12, len(raw) + 8)  # (its frame claims more bytes than it holds)
    chunk_file.write_bytes(bytes(raw))
    broken = vcfzarr_sql.open_store(damaged)
    with pytest.raises(StoreError, match=r"damaged.vcz: cannot decode chunk \(1, 0\) of summary_gt_packed"):
        broken.decode_chunk_rows(pg.PACKED, bytes(raw), (1, 0), slice(2, 5))


def test_rows_of_chunks_read_in_part_are_counted(rows_store):
    """A batch reading records 3-8 of a packed chunk (``BatchBlocks.columns`` with a row mask:
    only the Blosc blocks holding them decompressed) through a ``CountingSource``: the chunk
    counts as read (its stored bytes) and the six rows as decoded (8 bytes each: 10 calls
    padded to 32, four a byte)."""
    import vcfzarr_sql
    from vcfzarr_sql.format import packed_genotypes as pg
    from vcfzarr_sql.store.blocks import BatchBlocks
    from vcfzarr_sql.store.counting import CountingSource

    store = vcfzarr_sql.open_store(rows_store)
    source = CountingSource(store)
    rows = np.zeros(25, bool)
    rows[3:9] = True
    got = BatchBlocks(source, 1, None).columns(pg.PACKED, np.arange(3), rows)
    assert (got == store.read_chunk(pg.PACKED, (1, 0))[3:9, :3]).all()
    stats = source.stats(variant_chunks_total=5, sample_chunks_total=3, wall_time_s=0.0)
    assert stats["arrays_read"] == 1 and stats["variant_chunks_read"] == 1
    assert stats["bytes_read"] == len(store.read_chunk_bytes(pg.PACKED, (1, 0)))
    assert stats["bytes_decoded"] == 6 * 8
