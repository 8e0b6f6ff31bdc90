"""Shared helpers of the store tests: stores made by bio2zarr from corpus files, and comparing a
decoded chunk with zarr-python's read of the same region (zarr-python is the decoding reference).

Holds no tests; tests/conftest.py registers its fixture for every test module.
"""

from __future__ import annotations

import itertools
import json
import shutil
import warnings
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from corpus import CORPUS

from vcfzarr_sql.store.kvstore import KeyValueStore

#: Small corpus files bio2zarr converts, covering every Number/Type, missing values, mixed
#: ploidy, sites-only, no records, INFO/END, and contigs out of header order.
STORE_FILES = [
    "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz",
    "sgkit-dev+bio2zarr/tests/data/vcf/field_type_combos.vcf.gz",
    "sgkit-dev+bio2zarr/tests/data/vcf/mixed_ploidy.vcf.gz",
    "sgkit-dev+bio2zarr/tests/data/vcf/1kg_2020_chrM.vcf.gz",
    "sgkit-dev+bio2zarr/tests/data/vcf/sample_no_genotypes.vcf.gz",
    "sgkit-dev+bio2zarr/tests/data/vcf/empty.vcf.gz",
    "sgkit-dev+bio2zarr/tests/data/vcf/out_of_order_contigs.vcf.gz",
    "samtools+bcftools/test/missing.vcf",
    "samtools+hts-specs/examples/vcf/sv44.vcf",
]
#: Chunk sizes small enough that every store has several chunks along both dimensions.
VARIANTS_CHUNK_SIZE = 7
SAMPLES_CHUNK_SIZE = 2


@pytest.fixture(scope="session")
def bio2zarr_store(bio2zarr_once):
    """``bio2zarr_store(corpus_relpath, zarr_format)``: path of the store bio2zarr writes
    (``vcf2zarr convert --zarr-format N``) at our small chunk sizes; converted once per run.
    Never write into it: copy it first (:func:`copy_store`)."""

    def make(relpath: str, zarr_format: int) -> Path:
        return bio2zarr_once(
            CORPUS / relpath,
            zarr_format,
            variants_chunk_size=VARIANTS_CHUNK_SIZE,
            samples_chunk_size=SAMPLES_CHUNK_SIZE,
        )

    return make


def copy_store(src: Path, dest: Path, *, drop: tuple[str, ...] = ()) -> Path:
    """A copy of a directory store without the arrays named in ``drop`` (also dropped from
    consolidated metadata, v2 ``.zmetadata`` or v3 ``zarr.json``)."""
    shutil.copytree(src, dest)
    for name in drop:
        shutil.rmtree(dest / name)
    if (dest / ".zmetadata").exists():
        doc = json.loads((dest / ".zmetadata").read_text())
        doc["metadata"] = {k: v for k, v in doc["metadata"].items() if k.split("/")[0] not in drop}
        (dest / ".zmetadata").write_text(json.dumps(doc))
    root = json.loads((dest / "zarr.json").read_text()) if (dest / "zarr.json").exists() else {}
    if root.get("consolidated_metadata"):
        meta = root["consolidated_metadata"]["metadata"]
        root["consolidated_metadata"]["metadata"] = {k: v for k, v in meta.items() if k not in drop}
        (dest / "zarr.json").write_text(json.dumps(root))
    return dest


def zip_store(src: Path, dest: Path, prefix: str = "") -> Path:
    """A zip of a directory store: keys at the archive's root (as zarr's ZipStore writes them),
    or under ``prefix``."""
    with zipfile.ZipFile(dest, "w") as z:
        for f in sorted(src.rglob("*")):
            if f.is_file():
                z.write(f, prefix + str(f.relative_to(src)))
    return dest


def zarr_array(group: zarr.Group, name: str) -> zarr.Array:
    """``group[name]``, an array (zarr-python types a member ``Array | Group``)."""
    member = group[name]
    assert isinstance(member, zarr.Array), f"{name} is a group, not an array"
    return member


def zarr_values(array: zarr.Array, selection: Any = ...) -> np.ndarray:
    """``array[selection]`` as a NumPy array (zarr-python types a read as any of its
    buffer, scalar and array types)."""
    values = array[selection]
    assert isinstance(values, np.ndarray), type(values)
    return values


def zarr_read(path: Path, name: str) -> np.ndarray:
    """zarr-python's read of the whole array ``name`` of the store at ``path``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr_values(zarr_array(zarr.open_group(str(path), mode="r"), name))


def assert_chunks_match_zarr(store, path: Path, name: str) -> int:
    """Every chunk of array ``name`` read by ``store`` (and the whole array) equals the same
    region of zarr-python's read. Returns the number of chunks compared."""
    info = store.array_info(name)
    expected = zarr_read(path, name)
    chunks = list(itertools.product(*(range(n) for n in info.grid)))
    for chunk in chunks:
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(chunk, info.chunks))
        assert_same_values(store.read_chunk(name, chunk), expected[region], f"{name} {chunk}")
    assert_same_values(store.read_array(name), expected, name)
    return len(chunks)


def assert_same_values(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Equal shape and values; floats compared bit for bit (missing and fill NaNs differ);
    strings of any numpy kind compared as ``str``."""
    assert got.shape == expected.shape, what
    if expected.dtype.kind in "OTUS":
        assert got.dtype == object, what
        as_text = [x.decode() if isinstance(x, bytes) else str(x) for x in expected.ravel()]
        assert got.ravel().tolist() == as_text, what
        return
    assert got.dtype == expected.dtype.newbyteorder("="), what
    if expected.dtype.kind == "f":
        bits = f"u{expected.dtype.itemsize}"
        assert np.array_equal(got.view(bits), expected.astype(got.dtype).view(bits)), what
    else:
        assert np.array_equal(got, expected), what


def counted_reads(
    monkeypatch: pytest.MonkeyPatch, kv: KeyValueStore
) -> tuple[list[str], list[list[str]]]:
    """(keys ``kv`` reads one by one, key batches it reads) from now on, as two lists that
    grow as it reads."""
    singles: list[str] = []
    batches: list[list[str]] = []
    get, get_many = kv.get, kv.get_many

    def one(key: str) -> bytes | None:
        singles.append(key)
        return get(key)

    def many(keys: Iterable[str]) -> dict[str, bytes]:
        batches.append(list(keys))
        return get_many(batches[-1])

    monkeypatch.setattr(kv, "get", one)
    monkeypatch.setattr(kv, "get_many", many)
    return singles, batches


def set_zarray(store: Path, array: str, **changes: Any) -> None:
    """Change ``.zarray`` of ``array`` and its copy in ``.zmetadata``."""
    zarray = json.loads((store / array / ".zarray").read_text())
    zarray.update(changes)
    (store / array / ".zarray").write_text(json.dumps(zarray))
    meta = json.loads((store / ".zmetadata").read_text())
    meta["metadata"][f"{array}/.zarray"] = zarray
    (store / ".zmetadata").write_text(json.dumps(meta))
