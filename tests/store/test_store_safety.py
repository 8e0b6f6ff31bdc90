"""A store is data, never code, and a damaged store is an error, never silent rows (issue 12):
refused codecs (``pickle`` runs nothing, even with numcodecs' unsafe switch on), missing
chunks, changed dtypes, decompression bombs (Blosc, Zstd, zlib, zip), thousands of regions,
``validate --deep``, and a bounded fuzz of chunk bytes.

Expected rows come from bcftools (``oracle``), never from our own reader.
"""

from __future__ import annotations

import json
import pickle
import shutil
import zipfile
import zlib
from pathlib import Path

import numcodecs
import numcodecs.pickles
import numpy as np
import oracle
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_support import set_zarray

import vcfzarr_sql
from vcfzarr_sql import cli
from vcfzarr_sql.errors import NotSupportedError, StoreError
from vcfzarr_sql.store import bounds, open_store
from vcfzarr_sql.validation import validate

SAMPLE = oracle.CORPUS_SAMPLE  # 9 records, 3 samples
BIG = str(Path(__file__).parents[1] / (
    "data/corpus/vcflib+vcflib/samples/1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz"))


@pytest.fixture
def store(convert_once, tmp_path) -> Path:
    """A private copy of our converter's store of SAMPLE, 2 variants per chunk."""
    copy = tmp_path / "s.vcz"
    shutil.copytree(convert_once(SAMPLE, variants_chunk_size=2), copy)
    return copy


def count(path: Path | str, **params) -> int:
    args = "".join(f", {k} := '{v}'" for k, v in params.items())
    with vcfzarr_sql.connect() as con:
        return con.sql(f"SELECT count(*) FROM vcf_zarr('{path}'{args})").fetchall()[0][0]


def rows(path: Path, sql: str = "SELECT pos, id, info_DP FROM vcf_zarr('{}') ORDER BY pos"):
    with vcfzarr_sql.connect() as con:
        return con.sql(sql.format(path)).fetchall()


def query_error(capsys, path: Path, sql: str = "SELECT sum(info_DP), count(id) FROM vcf_zarr('{}')"):
    code = cli.main(["query", sql.format(path)])
    captured = capsys.readouterr()
    assert code == 1 and len(captured.err.splitlines()) == 1, captured.err
    return captured.err


# ---------------------------------------------------------------------------------------------
# Codecs: an allow-list; pickle never runs


class _Marker:
    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


@pytest.mark.parametrize("where", ["compressor", "filters"])
def test_pickle_codec_never_runs(store, tmp_path, capsys, monkeypatch, where):
    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True)  # numcodecs < 0.16.6
    marker = tmp_path / "pwned"
    payload = pickle.dumps(np.array([_Marker(marker)] * 2, dtype=object))
    if where == "compressor":
        set_zarray(store, "variant_DP", compressor={"id": "pickle"}, filters=None)
    else:
        set_zarray(store, "variant_DP", compressor=None, filters=[{"id": "pickle"}])
    for chunk in store.glob("variant_DP/[0-9]*"):
        chunk.write_bytes(payload)
    err = query_error(capsys, store)
    assert "variant_DP: codec 'pickle' is not allowed" in err
    problems = [str(p) for p in validate(store, deep=True)]
    assert problems == [("variant_DP: codec 'pickle' is not allowed in a VCF Zarr store "
                         "(a store is data, never code)")]
    assert sorted(rows(store, "SELECT pos FROM vcf_zarr('{}')")) == sorted(
        (r.pos,) for r in oracle.records(SAMPLE))  # other columns still read
    assert not marker.exists()


def test_v3_numcodecs_pickle_is_refused(bio2zarr_once, tmp_path, monkeypatch):
    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True)
    store = tmp_path / "v3.vcz"
    shutil.copytree(bio2zarr_once(SAMPLE, zarr_format=3), store)
    doc = json.loads((store / "variant_DP" / "zarr.json").read_text())
    doc["codecs"] = [{"name": "bytes", "configuration": {"endian": "little"}},
                     {"name": "numcodecs.pickle"}]
    (store / "variant_DP" / "zarr.json").write_text(json.dumps(doc))
    root = json.loads((store / "zarr.json").read_text())
    if root.get("consolidated_metadata"):
        root["consolidated_metadata"]["metadata"]["variant_DP"] = doc
        (store / "zarr.json").write_text(json.dumps(root))
    with pytest.raises(StoreError, match="variant_DP: codec 'pickle' is not allowed"):
        open_store(store).read_chunk("variant_DP", (0,))


@pytest.mark.parametrize("codec", ["json2", "vlen-array", "categorize", "astype", "msgpack2",
                                   "imagecodecs_jpeg"])
def test_codecs_outside_the_allow_list_are_refused(codec):
    assert bounds.refusal_in({"compressor": None, "filters": [{"id": codec}]})


def test_every_codec_bio2zarr_writes_is_allowed(bio2zarr_once):
    for fmt in (2, 3):
        with open_store(bio2zarr_once(SAMPLE, zarr_format=fmt)) as opened:
            for name in opened.array_names:
                opened.read_array(name)  # every chunk decodes


# ---------------------------------------------------------------------------------------------
# Missing chunks and changed dtypes: errors naming array and chunk, never silent rows


@pytest.mark.parametrize("array", ["variant_id", "variant_DP", "call_DP", "call_genotype",
                                   "variant_position", "region_index"])
def test_a_deleted_chunk_of_our_store_is_an_error(store, capsys, array):
    with open_store(store) as opened:
        key = opened.array_info(array).chunk_key((0,) * len(opened.array_info(array).grid))
    (store / key).unlink()
    sql = "SELECT sum(pos), sum(info_DP), count(id), list(fmt_DP), list(fmt_GT) FROM vcf_zarr('{}')"
    err = query_error(capsys, store, sql)
    assert err.startswith(f"error: {store}: chunk (0") and f"of {array} is missing" in err
    problems = [str(p) for p in validate(store, deep=True)]
    assert any(f"of {array} is missing" in p for p in problems), problems


def test_a_deleted_region_index_chunk_never_returns_zero_rows(store, capsys):
    (store / "region_index" / "0.0").unlink()
    err = query_error(capsys, store, "SELECT count(*) FROM vcf_zarr('{}', region := '20')")
    assert "of region_index is missing" in err


def test_bio2zarr_chunks_left_out_as_fill_are_read_as_fill(bio2zarr_once, tmp_path, capsys):
    """bio2zarr (zarr-python) does not write chunks that are all fill, e.g. call_genotype_mask
    chunks with no missing allele: they read as fill, and rows match bcftools."""
    store = bio2zarr_once(SAMPLE, variants_chunk_size=3)
    assert len(list((Path(store) / "call_genotype_mask").glob("[0-9]*"))) < 3
    expected = sorted((r.chrom, r.pos, r.id or "") for r in oracle.records(SAMPLE))
    got = rows(store, "SELECT contig, pos, coalesce(id, '') FROM vcf_zarr('{}')")
    assert sorted(got) == expected
    assert validate(store, deep=True) == []
    copy = tmp_path / "b.vcz"
    shutil.copytree(store, copy)
    (copy / "variant_position" / "1").unlink()  # positions are never all fill
    err = query_error(capsys, copy, "SELECT sum(pos) FROM vcf_zarr('{}')")
    assert err.startswith(f"error: {copy}: chunk (1,) of variant_position is missing")


@pytest.mark.parametrize("dtype", ["<i2", "<i8", "<f4", "<u4"])
def test_a_changed_dtype_is_an_error(store, capsys, dtype):
    set_zarray(store, "variant_DP", dtype=dtype)
    err = query_error(capsys, store)
    assert "variant_DP" in err and ("cannot hold the header's Type=Integer" in err
                                    or "cannot decode chunk (0,) of variant_DP" in err), err


def test_a_chunk_of_another_dtype_is_an_error(store):
    """A filter giving another dtype than the array's (delta over int64 for an int32 array)."""
    set_zarray(store, "variant_DP", filters=[{"id": "delta", "dtype": "<i8"}], compressor=None)
    dp = np.arange(2, dtype="<i8")
    (store / "variant_DP" / "0").write_bytes(numcodecs.Delta("<i8").encode(dp))
    with pytest.raises(StoreError, match=r"chunk \(0,\) of variant_DP .*decodes to dtype int64"):
        open_store(store).read_chunk("variant_DP", (0,))


# ---------------------------------------------------------------------------------------------
# Memory per chunk is bounded


def _bomb(codec, nbytes: int) -> bytes:
    return codec.encode(np.zeros(nbytes, dtype="u1"))


@pytest.mark.parametrize("codec", [numcodecs.Blosc(), numcodecs.Zstd(), numcodecs.LZ4(),
                                   numcodecs.Zlib(), numcodecs.GZip(), numcodecs.BZ2(),
                                   numcodecs.LZMA()])
def test_a_small_chunk_claiming_a_huge_size_is_refused_before_decoding(store, codec, monkeypatch):
    set_zarray(store, "variant_DP", compressor=codec.get_config())
    (store / "variant_DP" / "0").write_bytes(_bomb(codec, 64 << 20))  # 64 MiB of zeros
    opened = open_store(store)
    with pytest.raises(StoreError, match=r"chunk \(0,\) of variant_DP .*(declares|gives more than 2 bytes)"):
        opened.read_chunk("variant_DP", (0,))


def test_declared_chunks_over_the_limit_are_refused(store, monkeypatch):
    monkeypatch.setenv(bounds.MAX_CHUNK_BYTES_VARIABLE, str(1 << 20))
    set_zarray(store, "region_index", compressor=None, chunks=[1 << 20, 6], shape=[1 << 20, 6])
    (store / "region_index" / "0.0").write_bytes(b"\0" * (4 << 20))
    with pytest.raises(StoreError, match="region_index/0.0 holds more than 1048576 bytes"):
        open_store(store).read_chunk("region_index", (0, 0))
    (store / "region_index" / "0.0").unlink()
    with pytest.raises(StoreError, match=r"chunk \(0, 0\) of region_index would take more"):
        open_store(store).read_chunk("region_index", (0, 0))


def test_a_zip_bomb_entry_is_refused_before_reading(store, tmp_path, monkeypatch):
    archive = tmp_path / "s.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(store.rglob("*")):
            if path.is_file() and path.relative_to(store).as_posix() != "call_DP/0.0":
                z.write(path, path.relative_to(store).as_posix())
        z.writestr("call_DP/0.0", b"\0" * (8 << 20))  # 8 KB deflated
    assert archive.stat().st_size < 100_000
    monkeypatch.setenv(bounds.MAX_CHUNK_BYTES_VARIABLE, str(1 << 20))
    with pytest.raises(StoreError, match="call_DP/0.0 holds more than 1048576 bytes"):
        open_store(archive).read_chunk("call_DP", (0, 0))


def _zlib_bomb(mebibytes: int) -> bytes:
    """zlib of ``mebibytes`` MiB of zeros, made without holding them (about 1/1000 the size)."""
    compressor = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    return b"".join(compressor.compress(zeros) for _ in range(mebibytes)) + compressor.flush()


def test_zlib_stream_is_decompressed_incrementally():
    with pytest.raises(bounds.ChunkBoundsError, match="gives more than 65536 bytes"):
        bounds.decompress(numcodecs.Zlib(), _zlib_bomb(256), 65536)


# ---------------------------------------------------------------------------------------------
# Thousands of regions


@pytest.mark.slow
def test_five_thousand_regions_match_bcftools(convert_once):
    regions = ",".join(f"22:{16050000 + 60 * i}-{16050000 + 60 * i + 30}" for i in range(5000))
    assert count(convert_once(BIG), region=regions) == len(oracle.records(BIG, region=regions))


# ---------------------------------------------------------------------------------------------
# Fuzz: corrupt chunk bytes give the right rows or our one-line error, never a crash


def _decode_checked(opened, name: str, raw: bytes, chunk: tuple[int, ...]) -> None:
    info = opened.array_info(name)
    try:
        if info.codec.arrow_strings:
            values = opened.decode_chunk_strings(name, raw, chunk)
            assert len(values) == np.prod([s.stop for s in info.chunk_bounds(chunk)])
        else:
            values = opened.decode_chunk(name, raw, chunk)
            assert values.shape == tuple(s.stop for s in info.chunk_bounds(chunk))
            assert values.dtype == info.decoded_dtype
    except (StoreError, NotSupportedError) as err:
        assert "\n" not in str(err) and str(err).startswith(str(opened.path))


@pytest.fixture(scope="module")
def fuzz_store(convert_once):
    opened = open_store(convert_once(SAMPLE, variants_chunk_size=4))
    arrays = ["variant_position", "variant_id", "variant_allele", "call_genotype", "variant_AF"]
    chunks = {name: (0,) * len(opened.array_info(name).grid) for name in arrays}
    return opened, {name: (c, opened.read_chunk_bytes(name, c)) for name, c in chunks.items()}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzz_chunk_bytes(fuzz_store, data):
    opened, chunks = fuzz_store
    name = data.draw(st.sampled_from(sorted(chunks)))
    chunk, raw = chunks[name]
    kind = data.draw(st.sampled_from(["random", "flip", "truncate", "header"]))
    if kind == "random":
        mutated = data.draw(st.binary(max_size=200))
    elif kind == "truncate":
        mutated = raw[: data.draw(st.integers(0, len(raw)))]
    else:
        buf = bytearray(raw)
        top = 16 if kind == "header" else len(buf)
        for _ in range(data.draw(st.integers(1, 4))):
            buf[data.draw(st.integers(0, min(top, len(buf)) - 1))] = data.draw(st.integers(0, 255))
        mutated = bytes(buf)
    _decode_checked(opened, name, mutated, chunk)


def test_validate_deep_reads_every_chunk(store, capsys):
    (store / "call_DP" / "1.0").unlink()
    (store / "call_DP" / "3.0").unlink()
    assert cli.main(["validate", str(store)]) == 0  # call_DP is not read without --deep
    capsys.readouterr()
    assert cli.main(["validate", "--deep", str(store)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [(f"call_DP: {store}: chunk (1, 0) of call_DP is missing (no "
                                 "call_DP/1.0): the store is incomplete (and 1 more bad chunks)")]
    assert err == f"error: {store}: 1 problem(s) with the VCF Zarr spec\n"


def test_a_small_array_claiming_a_huge_shape_is_refused(store):
    set_zarray(store, "sample_id", shape=[10**12], chunks=[10**12])
    with pytest.raises(StoreError, match=r"array sample_id of shape \(1000000000000,\) would take"):
        open_store(store)
