"""Damaged stores that gave silent wrong rows (issue 23, item 6): each is now an error naming the
store, the array (and the chunk), at open or when the chunk is read; ``validate`` reports each.

Hand facts: the sample's records (``oracle.records``), 2 per chunk: chunk 1 holds 20:14370 and
20:17330, chunk 2 holds 20:1110696 and 20:1230237.
"""

from __future__ import annotations

import re
import shutil
import warnings
import zipfile
from pathlib import Path

import numcodecs
import numpy as np
import oracle
import pytest
from store_support import set_zarray

import vcfzarr_sql
from vcfzarr_sql import cli
from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.store import open_store
from vcfzarr_sql.validation import validate

SAMPLE = oracle.CORPUS_SAMPLE  # 9 records, 3 samples
REGION = "20:1-20000"  # bcftools: 2 records (14370, 17330), both in chunk 1


@pytest.fixture
def store(convert_once, tmp_path) -> Path:
    copy = tmp_path / "s.vcz"
    shutil.copytree(convert_once(SAMPLE, variants_chunk_size=2), copy)
    return copy


def query_error(capsys, path: Path | str, sql: str) -> str:
    code = cli.main(["query", sql.format(path)])
    captured = capsys.readouterr()
    assert code == 1 and len(captured.err.splitlines()) == 1, (code, captured)
    return captured.err


def test_the_sample_region_has_two_records_in_chunk_1(store):
    assert [r.pos for r in oracle.records(SAMPLE, region=REGION)] == [14370, 17330]
    with vcfzarr_sql.connect() as con:
        got = con.sql(f"SELECT pos FROM vcf_zarr('{store}', region := '{REGION}')").fetchall()
    assert got == [(14370,), (17330,)]


def test_swapped_position_chunks_are_an_error_not_zero_rows(store, capsys):
    one, two = store / "variant_position" / "1", store / "variant_position" / "2"
    first, second = one.read_bytes(), two.read_bytes()
    one.write_bytes(second)
    two.write_bytes(first)
    err = query_error(capsys, store, f"SELECT pos FROM vcf_zarr('{{}}', region := '{REGION}')")
    assert err.startswith(f"error: {store}: chunk (1,) of variant_position holds POS "
                          "1110696..1230237, the region index 14370..17330"), err
    err = query_error(capsys, store, "SELECT sum(pos) FROM vcf_zarr('{}')")
    assert "chunk (1,) of variant_position" in err
    assert any(p.where == "region_index" for p in validate(store))


def test_big_endian_dtype_over_little_endian_positions_is_an_error(store, capsys):
    set_zarray(store, "variant_position", dtype=">i4")
    err = query_error(capsys, store, f"SELECT pos FROM vcf_zarr('{{}}', region := '{REGION}')")
    assert f"{store}: chunk (1,) of variant_position holds POS" in err, err
    assert validate(store)


@pytest.mark.parametrize(("array", "dtype", "kind"), [
    ("variant_position", "<f4", "int"), ("variant_quality", "<i4", "float"),
    ("variant_contig", "<f8", "int"), ("call_genotype", "<f4", "int"),
    ("region_index", "<f8", "int"),
])
def test_a_fixed_array_of_another_dtype_kind_is_refused_at_open(store, capsys, array, dtype, kind):
    set_zarray(store, array, dtype=dtype)
    message = f"{store}: {array}: dtype {np.dtype(dtype)} is not {kind}"
    with pytest.raises(StoreError, match=re.escape(message)):
        open_store(store)
    assert query_error(capsys, store, "SELECT sum(qual) FROM vcf_zarr('{}')") == f"error: {message}\n"
    assert any(p.where == array and f"is not {kind}" in p.message for p in validate(store))


@pytest.mark.parametrize("flt", [{"id": "delta", "dtype": "<i4"},
                                 {"id": "fixedscaleoffset", "offset": 0, "scale": 1,
                                  "dtype": "<i4", "astype": "<i4"}])
def test_a_value_filter_on_positions_is_refused(store, capsys, flt):
    """The filter decodes the stored bytes to other numbers with no error (0 rows, or negative
    positions): refused on the spec's fixed arrays."""
    set_zarray(store, "variant_position", filters=[flt])
    message = (f"{store}: variant_position: filter {flt['id']!r} changes its values (not allowed "
               "on the spec's fixed arrays)")
    assert query_error(capsys, store, "SELECT count(*) FROM vcf_zarr('{}')") == f"error: {message}\n"
    assert [str(p) for p in validate(store)] == [f"store: {message}"]


def test_a_value_filter_on_an_info_field_still_decodes(store):
    """A real delta-encoded field (not a fixed array) is read, and correctly."""
    with open_store(store) as opened:
        info = opened.array_info("variant_DP")
    dtype = info.dtype.str
    set_zarray(store, "variant_DP", filters=[{"id": "delta", "dtype": dtype}], compressor=None)
    for chunk in (store / "variant_DP").glob("[0-9]*"):
        values = [1, 8] if chunk.name == "1" else [info.fill_value] * 2  # made-up DP of chunk 1
        chunk.write_bytes(numcodecs.Delta(dtype).encode(np.array(values, dtype=dtype)))
    with vcfzarr_sql.connect() as con:
        got = con.sql(f"SELECT info_DP FROM vcf_zarr('{store}', region := '{REGION}')").fetchall()
    assert got == [(1,), (8,)]


def test_a_zip_with_two_members_of_one_name_is_refused(store, tmp_path, capsys):
    archive = tmp_path / "s.vcz.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(store.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(store).as_posix())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # zipfile warns of the duplicate name
            z.writestr("variant_position/1", (store / "variant_position" / "2").read_bytes())
    message = (f"{archive}: the zip archive holds variant_position/1 more than once (a damaged "
               "or forged archive)")
    with pytest.raises(StoreError, match=re.escape(message)):
        open_store(archive)
    assert query_error(capsys, archive, "SELECT count(*) FROM vcf_zarr('{}')") == f"error: {message}\n"
    assert [str(p) for p in validate(archive)] == [f"store: {message}"]


@pytest.mark.parametrize("compressor", [{"id": "zlib", "level": 1}, {"id": "bz2", "level": 1},
                                        {"id": "lzma"}, {"id": "lz4"}, {"id": "gzip"}])
def test_a_codec_failing_outside_our_checks_names_store_array_and_chunk(store, capsys, compressor):
    """Issue 23 (9): ``zlib`` declared over Blosc bytes raised zlib.error (a traceback)."""
    set_zarray(store, "variant_DP", compressor=compressor)
    err = query_error(capsys, store, "SELECT sum(info_DP) FROM vcf_zarr('{}')")
    assert err.startswith(f"error: {store}: cannot decode chunk (0,) of variant_DP ("), err
    problems = [str(p) for p in validate(store, deep=True)]
    assert any(p.startswith(f"variant_DP: {store}: cannot decode chunk (0,) of variant_DP")
               for p in problems), problems
