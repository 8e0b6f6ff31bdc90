"""Chunk decoding (vcfzarr_sql.store.codecs) against zarr-python, codec by codec.

Each case writes one array with zarr-python into a minimal VCF Zarr store, then checks that
every chunk read through the numcodecs path equals zarr-python's read of the same region.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Literal

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs as zc
from store_support import assert_chunks_match_zarr

import vcfzarr_sql
from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.codec_classes import get_codec

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

SHAPE = (23, 5)  # not a multiple of the chunk shape: edge chunks get trimmed
CHUNKS = (7, 2)


def _dims(zarr_format: int, dims: list[str]) -> dict:
    if zarr_format == 2:
        return {"attributes": {spec.ARRAY_DIMENSIONS: dims}}
    return {"dimension_names": dims}


def _store(path, zarr_format: Literal[2, 3], name: str, data: np.ndarray, **kwargs) -> zarr.Group:
    """A minimal VCF Zarr store holding ``data`` as array ``name`` (written by zarr-python)."""
    group = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
    group.attrs[spec.ATTR_VERSION] = "0.3"
    for column, values in (
        (spec.VARIANT_CONTIG, np.zeros(SHAPE[0], dtype=np.int8)),
        (spec.VARIANT_POSITION, np.arange(1, SHAPE[0] + 1, dtype=np.int32)),
    ):
        dims = _dims(zarr_format, ["variants"])
        group.create_array(column, data=values, chunks=CHUNKS[:1], **dims)
    contigs = group.create_array(spec.CONTIG_ID, shape=(1,), dtype=str,
                                 **_dims(zarr_format, ["contigs"]))
    contigs[...] = np.array(["1"], dtype=object)
    array = group.create_array(
        name, shape=data.shape, dtype=kwargs.pop("dtype", data.dtype), chunks=CHUNKS,
        **_dims(zarr_format, ["variants", "INFO_X_dim"]), **kwargs,
    )
    array[...] = data
    return group


def _roundtrip(tmp_path, zarr_format: Literal[2, 3], case: dict) -> tuple[vcfzarr_sql.store.VczStore, Path]:
    """Write ``case["data"]`` (other keys: zarr-python create_array arguments) as variant_X,
    check every chunk against zarr-python, and return the opened store and its path."""
    kwargs = dict(case)
    data = kwargs.pop("data")
    path = tmp_path / "s.vcz"
    _store(path, zarr_format, "variant_X", data, **kwargs)
    store = vcfzarr_sql.open_store(path)
    assert_chunks_match_zarr(store, path, "variant_X")
    return store, path


RNG = np.random.default_rng(1)
INTS = RNG.integers(-2, 300, size=SHAPE).astype(np.int16)
FLOATS = RNG.normal(size=SHAPE).astype(np.float32)
FLOATS[0, 0] = spec.FLOAT32_MISSING
FLOATS[1, 1] = spec.FLOAT32_FILL
STRINGS = np.array([[f"s{i}.{j}" * (i % 3) for j in range(SHAPE[1])] for i in range(SHAPE[0])],
                   dtype=object)

V2_CASES = {
    "no-compressor": dict(data=INTS, compressors=None),
    "zlib": dict(data=INTS, compressors=numcodecs.Zlib(level=1)),
    "gzip": dict(data=INTS, compressors=numcodecs.GZip()),
    "zstd": dict(data=FLOATS, compressors=numcodecs.Zstd()),
    "blosc-lz4-bitshuffle": dict(data=INTS, compressors=numcodecs.Blosc("lz4", 5, 2)),
    "delta-filter": dict(data=INTS, filters=[numcodecs.Delta(dtype="<i2")]),
    "big-endian": dict(data=INTS.astype(">i4")),
    "blosc-big-endian": dict(data=INTS.astype(">i4"), compressors=numcodecs.Blosc()),
    "blosc-int8": dict(data=INTS.clip(-2, 127).astype(np.int8), compressors=numcodecs.Blosc()),
    "blosc-order-F": dict(data=INTS, order="F", compressors=numcodecs.Blosc()),
    "int8": dict(data=INTS.clip(-2, 127).astype(np.int8)),
    "uint64": dict(data=INTS.clip(0).astype(np.uint64)),
    "float64": dict(data=RNG.normal(size=SHAPE)),
    "bool": dict(data=INTS > 100),
    "order-F": dict(data=INTS, order="F"),
    "separator-slash": dict(data=INTS, chunk_key_encoding={"name": "v2", "separator": "/"}),
    "vlen-utf8": dict(data=STRINGS, dtype=str),
    "fixed-U1": dict(data=np.array(STRINGS, dtype="U1")),
    "fixed-S1": dict(data=np.array(STRINGS, dtype="U1").astype("S1")),
    "fill-value": dict(data=np.full(SHAPE, -2, dtype=np.int16), fill_value=-2),
}


@pytest.mark.parametrize("case", V2_CASES, ids=list(V2_CASES))
def test_zarr_v2(tmp_path, case):
    store, path = _roundtrip(tmp_path, 2, V2_CASES[case])
    if case == "fill-value":
        assert not list((path / "variant_X").glob("[0-9]*")), "zarr-python writes no fill chunks"
    if case == "separator-slash":
        assert store.array_info("variant_X").chunk_key((1, 2)) == "variant_X/1/2"


V3_CASES: dict[str, dict[str, Any]] = {
    "bytes-only": dict(data=INTS, compressors=None),
    "big-endian": dict(data=INTS, serializer=zc.BytesCodec(endian="big"), compressors=None),
    "blosc": dict(data=FLOATS, compressors=zc.BloscCodec(cname="zstd", shuffle="bitshuffle")),
    "zstd": dict(data=INTS, compressors=zc.ZstdCodec()),
    "gzip": dict(data=INTS, compressors=zc.GzipCodec()),
    "crc32c": dict(data=INTS, compressors=[zc.ZstdCodec(), zc.Crc32cCodec()]),
    "transpose": dict(data=INTS, filters=[zc.TransposeCodec(order=(1, 0))]),
    "blosc-transpose": dict(data=INTS, filters=[zc.TransposeCodec(order=(1, 0))],
                            compressors=zc.BloscCodec(cname="lz4")),
    "key-encoding-v2": dict(data=INTS, chunk_key_encoding={"name": "v2", "separator": "."}),
    "key-encoding-dot": dict(data=INTS, chunk_key_encoding={"name": "default", "separator": "."}),
    "vlen-utf8": dict(data=STRINGS, dtype=str),
    "fixed-U1": dict(data=np.array(STRINGS, dtype="U1")),
    "bool": dict(data=INTS > 100),
    "fill-value": dict(data=np.full(SHAPE, -1, dtype=np.int16), fill_value=-1),
    "nan-fill": dict(data=np.full(SHAPE, np.nan, dtype=np.float32), fill_value=np.nan),
}


@pytest.mark.parametrize("case", V3_CASES, ids=list(V3_CASES))
def test_zarr_v3(tmp_path, case):
    store, _ = _roundtrip(tmp_path, 3, V3_CASES[case])
    keys = {"key-encoding-v2": "variant_X/1.2", "key-encoding-dot": "variant_X/c.1.2"}
    assert store.array_info("variant_X").chunk_key((1, 2)) == keys.get(case, "variant_X/c/1/2")


def test_sharding_is_not_supported(tmp_path):
    path = tmp_path / "s.vcz"
    _store(path, 3, "variant_X", INTS, shards=(7, 4))
    store = vcfzarr_sql.open_store(path)  # opening works; decoding names the codec
    with pytest.raises(NotSupportedError, match="sharding_indexed"):
        store.read_chunk("variant_X", (0, 0))


def test_corrupt_chunk_is_a_store_error(tmp_path):
    path = tmp_path / "s.vcz"
    _store(path, 2, "variant_X", INTS, compressors=numcodecs.Zstd())
    store = vcfzarr_sql.open_store(path)
    with pytest.raises(vcfzarr_sql.StoreError, match=r"cannot decode chunk \(0, 0\) of variant_X"):
        store.decode_chunk("variant_X", b"not zstd data", (0, 0))


def test_blosc_chunk_of_the_wrong_size_is_a_store_error(tmp_path):
    """Blosc chunks decode straight into a buffer of the chunk's size only when their header
    says that size; any other size still fails with the general path's error."""
    path = tmp_path / "s.vcz"
    _store(path, 2, "variant_X", INTS, compressors=numcodecs.Blosc())
    store = vcfzarr_sql.open_store(path)
    short = numcodecs.Blosc().encode(INTS[:3, :2].copy())
    with pytest.raises(vcfzarr_sql.StoreError, match="blosc declares 12 bytes, the array.s chunk is 28"):
        store.decode_chunk("variant_X", short, (0, 0))
    with pytest.raises(vcfzarr_sql.StoreError, match=r"cannot decode chunk \(0, 0\)"):
        store.decode_chunk("variant_X", b"\x02\x01" + b"\xff" * 30, (0, 0))


def test_decoding_does_not_touch_zarr_python(tmp_path, monkeypatch):
    """The chunk path is numcodecs only: zarr-python's Array indexing is never called."""
    path = tmp_path / "s.vcz"
    _store(path, 2, "variant_X", INTS)
    store = vcfzarr_sql.open_store(path)

    def forbidden(*args, **kwargs):
        raise AssertionError("zarr-python Array used on the chunk path")

    with warnings.catch_warnings():
        monkeypatch.setattr(zarr.Array, "__getitem__", forbidden)
        monkeypatch.setattr(zarr.Array, "get_basic_selection", forbidden)
        assert store.read_chunk("variant_X", (3, 2)).tolist() == INTS[21:, 4:].tolist()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_array_metadata_pickles_with_its_codec_and_decodes_after(tmp_path, zarr_format):
    """A codec is built at its first decode, and an array's metadata (which scan workers may
    receive) pickles before and after that, decoding as the store does."""
    import pickle

    path = tmp_path / "s.vcz"
    _store(path, zarr_format, "variant_X", INTS, compressors=numcodecs.Zstd() if zarr_format == 2
           else zc.ZstdCodec())
    store = vcfzarr_sql.open_store(path)
    info = store.array_info("variant_X")
    raw = store.read_chunk_bytes("variant_X", (0, 0))
    before = pickle.loads(pickle.dumps(info)).codec.decode(raw)
    np.testing.assert_array_equal(before, info.codec.decode(raw))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(info)).codec.decode(raw), before)
    np.testing.assert_array_equal(before[:7, :2], INTS[:7, :2])


@pytest.mark.parametrize("config", [
    {"id": "blosc", "cname": "zstd", "clevel": 7, "shuffle": 1}, {"id": "blosc"}, {"id": "zstd", "level": 3},
    {"id": "lz4", "acceleration": 2}, {"id": "zlib", "level": 4}, {"id": "gzip", "level": 2},
    {"id": "vlen-utf8"}, {"id": "vlen-bytes"}, {"id": "delta", "dtype": "<i4"},
])
def test_codecs_from_their_modules_are_numcodecs_registered_ones(config):
    # (stats builds them without numcodecs' package start-up: store/codec_classes.py)
    ours, theirs = get_codec(dict(config)), numcodecs.get_codec(dict(config))
    assert type(ours) is type(theirs) and ours == theirs
