"""VLenUTF8 chunks decoded straight to Arrow (vcfzarr_sql.store.vlen_utf8 and the store's
``read_chunk_strings``), against numcodecs' own decoding of the same bytes."""

from __future__ import annotations

import json
import shutil
import struct
from typing import Any, Literal

import numcodecs
import numpy as np
import pytest
import zarr.codecs as zc
from corpus import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st
from test_store_codecs import STRINGS, _store

import vcfzarr_sql
from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.store import vlen_utf8

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

VLEN = numcodecs.VLenUTF8()
SAMPLE_VCF = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"
SENTINELS = st.sampled_from(["", ".", "A", "é", "日本", "\x00"])


def encoded(values: list[str]) -> bytes:
    return VLEN.encode(np.array(values, dtype=object))


def raw_vlen(*items: bytes) -> bytes:
    """A VLenUTF8 buffer of ``items`` as given (any bytes, valid UTF-8 or not)."""
    return struct.pack("<I", len(items)) + b"".join(struct.pack("<I", len(i)) + i for i in items)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(SENTINELS, st.text(st.characters(codec="utf-8"), max_size=300))))
def test_decodes_what_numcodecs_decodes(values):
    """Any strings: empty, ".", non-ASCII, NUL characters, 256+ bytes (the fallback)."""
    buf = encoded(values)
    strings = vlen_utf8.decode_to_arrow(buf)
    strings.validate(full=True)
    assert strings.to_pylist() == list(VLEN.decode(buf)) == values


SHORT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(SENTINELS.filter(lambda s: s != "\x00"), SHORT)))
def test_strings_of_up_to_255_bytes_never_need_numcodecs(values):
    """Without NUL characters, strings of 0 to 255 UTF-8 bytes are always found by the
    vectorised pattern (60 characters are at most 240 bytes)."""
    body = np.frombuffer(encoded(values), dtype=np.uint8)
    items = vlen_utf8._items(body)
    assert items is not None
    characters, offsets = items
    joined = characters.tobytes()
    assert [joined[a:b].decode() for a, b in zip(offsets[:-1], offsets[1:])] == values


@pytest.mark.parametrize(
    "values",
    [[], [""], [""] * 9, ["."] * 7, ["AT"] * 3, ["\x00\x00\x00\x00"] * 2, ["G" * 255, ""],
     ["G" * 256], ["", "A", "", "", "CT", ""]],
    ids=["none", "one-empty", "all-empty", "all-dot", "same-length", "nul-words", "255",
         "256", "empties-between"],
)
def test_edge_buffers(values):
    assert vlen_utf8.decode_to_arrow(encoded(values)).to_pylist() == values


@pytest.mark.parametrize(
    "item",
    [b"\xff", b"A\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xff" * 300],
    ids=["invalid-byte", "truncated-sequence", "surrogate", "overlong", "long-fallback"],
)
def test_invalid_utf8_is_an_error(item):
    with pytest.raises(ValueError, match="(?i)utf-8"):
        vlen_utf8.decode_to_arrow(raw_vlen(b"A", item, b"."))


@pytest.mark.parametrize(
    "buf", [b"", b"\x01\x00", raw_vlen(b"A", b"C")[:-1], struct.pack("<I", 3) + raw_vlen(b"A")[4:]],
    ids=["empty", "short-count", "cut-item", "count-too-high"],
)
def test_malformed_buffer_is_an_error(buf):
    with pytest.raises(ValueError):
        vlen_utf8.decode_to_arrow(buf)


STRING_CASES: dict[str, tuple[Literal[2, 3], dict[str, Any]]] = {
    "v2": (2, dict(dtype=str)),
    "v2-no-compressor": (2, dict(dtype=str, compressors=None)),
    "v3": (3, dict(dtype=str)),
    "v3-zstd": (3, dict(dtype=str, compressors=zc.ZstdCodec())),
}


@pytest.mark.parametrize("case", STRING_CASES, ids=list(STRING_CASES))
def test_store_strings_equal_the_object_chunks(tmp_path, case):
    """Every chunk, edge chunks (trimmed along either axis) and never-written ones included."""
    zarr_format, kwargs = STRING_CASES[case]
    data = STRINGS.copy()
    data[:7] = ""  # the first row of chunks is all fill: zarr-python does not write it
    _store(tmp_path / "s.vcz", zarr_format, "variant_X", data, **kwargs)
    store = vcfzarr_sql.open_store(tmp_path / "s.vcz")
    assert store.array_info("variant_X").codec.arrow_strings
    assert store.read_chunk_bytes("variant_X", (0, 0)) is None
    for chunk in np.ndindex(*store.array_info("variant_X").grid):
        strings = store.read_chunk_strings("variant_X", chunk)
        strings.validate(full=True)
        assert strings.to_pylist() == store.read_chunk("variant_X", chunk).reshape(-1).tolist()


def test_strings_not_in_c_order_take_the_object_path(tmp_path):
    """(A Zarr v3 transpose of vlen-utf8 strings is not tested: zarr-python 3.1.6 cannot
    read back what it writes for one.)"""
    _store(tmp_path / "s.vcz", 2, "variant_X", STRINGS, dtype=str, order="F")
    store = vcfzarr_sql.open_store(tmp_path / "s.vcz")
    assert not store.array_info("variant_X").codec.arrow_strings
    assert store.read_chunk("variant_X", (0, 0)).tolist() == STRINGS[:7, :2].tolist()


def _corrupt_chunk(store_path, array: str, key: str, encoded_strings: bytes) -> None:
    """Replace chunk ``key`` of ``array`` by ``encoded_strings`` compressed like the array."""
    meta = json.loads((store_path / array / ".zarray").read_text())
    compressor = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
    raw = encoded_strings if compressor is None else compressor.encode(encoded_strings)
    (store_path / array / key).write_bytes(raw)


def test_invalid_utf8_in_a_store_is_a_one_line_store_error(tmp_path):
    _store(tmp_path / "s.vcz", 2, "variant_X", STRINGS, dtype=str, compressors=None)
    (tmp_path / "s.vcz" / "variant_X" / "0.0").write_bytes(raw_vlen(*[b"\xffA"] * 14))
    store = vcfzarr_sql.open_store(tmp_path / "s.vcz")
    with pytest.raises(StoreError) as err:
        store.read_chunk_strings("variant_X", (0, 0))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 's.vcz'}: cannot decode chunk (0, 0) of variant_X")
    assert "UTF-8" in message


def test_a_query_over_corrupted_ids_is_a_one_line_store_error(tmp_path, convert_once):
    store_path = tmp_path / "copy.vcz"
    shutil.copytree(convert_once(SAMPLE_VCF), store_path)
    rows = vcfzarr_sql.open_store(store_path).variants_chunk_size
    _corrupt_chunk(store_path, "variant_id", "0", raw_vlen(*[b"rs\xc3("] * min(rows, 9)))
    with pytest.raises(StoreError) as err:
        vcfzarr_sql.dataset(store_path).to_table(columns=["id"])
    assert "\n" not in str(err.value)
    assert "cannot decode chunk (0,) of variant_id" in str(err.value)


def test_a_chunk_with_the_wrong_item_count_is_a_store_error(tmp_path):
    _store(tmp_path / "s.vcz", 2, "variant_X", STRINGS, dtype=str, compressors=None)
    (tmp_path / "s.vcz" / "variant_X" / "0.0").write_bytes(encoded(["A", "C"]))
    store = vcfzarr_sql.open_store(tmp_path / "s.vcz")
    with pytest.raises(StoreError, match="holds 2 values, expected 14"):
        store.read_chunk_strings("variant_X", (0, 0))


def test_scan_stats_count_the_string_chunks(convert_once):
    """String arrays read as Arrow are counted like any other chunk read."""
    path = convert_once(SAMPLE_VCF, variants_chunk_size=5)  # 9 records: 2 chunks
    ds = vcfzarr_sql.dataset(path)
    ds.to_table(columns=["id"])
    stored = sum(f.stat().st_size for f in (path / "variant_id").glob("[0-9]*"))
    assert ds.last_stats["arrays_read"] == 1
    assert ds.last_stats["variant_chunks_read"] == 2
    assert ds.last_stats["bytes_read"] == stored
