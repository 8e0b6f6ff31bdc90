"""``vcfzarr-sql index STORE``: writes region_index (and variant_length) into a local store.

Expected values: what bio2zarr's own conversion wrote, and bcftools' END (tests/oracle.py).
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest
import zarr
from corpus import CORPUS
from store_support import (
    STORE_FILES,
    copy_store,
    zarr_array,
    zarr_values,
    zip_store,
)

import vcfzarr_sql
from vcfzarr_sql.cli import main
from vcfzarr_sql.format import spec

pytestmark = pytest.mark.filterwarnings(
    "ignore:The data type"  # zarr-python, when bio2zarr writes Character fields to Zarr v3
)

FILES = [STORE_FILES[0], STORE_FILES[3], STORE_FILES[8]]  # sample, chrM, sv44 (INFO/END)


def _index(path, capsys) -> tuple[int, str, str]:
    code = main(["index", str(path)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _dims(array: zarr.Array) -> tuple[object, ...]:
    if array.metadata.zarr_format == 2:
        dimensions = array.attrs[spec.ARRAY_DIMENSIONS]
        assert isinstance(dimensions, list)
        return tuple(dimensions)
    assert array.metadata.dimension_names is not None
    return tuple(array.metadata.dimension_names)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("relpath", FILES, ids=[f.rsplit("/", 1)[-1] for f in FILES])
def test_index_writes_what_bio2zarr_writes(bio2zarr_store, tmp_path, capsys, relpath, zarr_format):
    original = bio2zarr_store(relpath, zarr_format)
    path = copy_store(original, tmp_path / "s.vcz", drop=(spec.REGION_INDEX, spec.VARIANT_LENGTH))
    code, out, err = _index(path, capsys)
    assert (code, err) == (0, "")
    expected = zarr.open_group(str(original), mode="r")
    written = zarr.open_group(str(path), mode="r", zarr_format=zarr_format)
    expected_index = zarr_array(expected, spec.REGION_INDEX)
    written_index = zarr_array(written, spec.REGION_INDEX)
    written_length = zarr_array(written, spec.VARIANT_LENGTH)
    assert out.startswith(
        f"{path}: wrote region_index ({expected_index.shape[0]} rows)\n"
    )
    assert np.array_equal(zarr_values(written_index), zarr_values(expected_index))
    records = oracle.records(CORPUS / relpath)
    assert zarr_values(written_length).tolist() == [r.end - r.pos + 1 for r in records]
    assert _dims(written_index) == (
        spec.DIM_REGION_INDEX_VALUES, spec.DIM_REGION_INDEX_FIELDS
    )
    assert _dims(written_length) == (spec.DIM_VARIANTS,)
    assert written_length.chunks == zarr_array(expected, spec.VARIANT_POSITION).chunks
    position = zarr_array(expected, spec.VARIANT_POSITION).dtype
    assert np.can_cast(position, written_index.dtype)
    store = vcfzarr_sql.open_store(path)
    assert store.zarr_format == zarr_format
    assert np.array_equal(store.region_index, zarr_values(expected_index))


def test_index_keeps_a_stored_variant_length(bio2zarr_store, tmp_path, capsys):
    path = copy_store(bio2zarr_store(FILES[0], 2), tmp_path / "s.vcz", drop=(spec.REGION_INDEX,))
    before = {f: f.read_bytes() for f in (path / spec.VARIANT_LENGTH).iterdir()}
    assert _index(path, capsys)[0] == 0
    assert {f: f.read_bytes() for f in (path / spec.VARIANT_LENGTH).iterdir()} == before


def test_index_replaces_an_existing_index(bio2zarr_store, tmp_path, capsys):
    original = bio2zarr_store(FILES[0], 3)
    path = copy_store(original, tmp_path / "s.vcz")
    assert _index(path, capsys)[0] == 0
    assert np.array_equal(
        vcfzarr_sql.open_store(path).region_index, vcfzarr_sql.open_store(original).region_index
    )


@pytest.mark.filterwarnings("ignore:Consolidated metadata")  # zarr-python, v3
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_index_updates_consolidated_metadata(bio2zarr_store, tmp_path, capsys, zarr_format):
    original = bio2zarr_store(FILES[0], zarr_format)
    path = copy_store(original, tmp_path / "s.vcz", drop=(spec.REGION_INDEX,))
    zarr.consolidate_metadata(str(path), zarr_format=zarr_format)
    assert not vcfzarr_sql.open_store(path).has_array(spec.REGION_INDEX)
    assert _index(path, capsys)[0] == 0
    store = vcfzarr_sql.open_store(path)
    assert store.consolidated is not None and store.has_array(spec.REGION_INDEX)
    assert np.array_equal(store.region_index, vcfzarr_sql.open_store(original).region_index)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (lambda store, tmp: zip_store(store, tmp / "s.zip"), "into a zip or other file"),
        (lambda store, tmp: "memory://somewhere/s.vcz", "into a remote store"),
        (lambda store, tmp: tmp / "missing.vcz", "no such file or directory"),
        (lambda store, tmp: tmp, "not a Zarr store"),
    ],
    ids=["zip", "url", "missing", "not-a-store"],
)
def test_index_refuses(bio2zarr_store, tmp_path, capsys, target, message):
    path = target(bio2zarr_store(FILES[0], 2), tmp_path)
    code, out, err = _index(path, capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"error: {path}: ") and message in err and err.count("\n") == 1
