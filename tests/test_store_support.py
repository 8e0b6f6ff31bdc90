"""Shared helpers of the store tests: stores made by bio2zarr from corpus files, and comparing a
decoded chunk with zarr-python's read of the same region (zarr-python is the decoding reference).

Holds no tests; test modules import its fixtures by name.
"""

from __future__ import annotations

import json
import logging
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

from corpus import CORPUS

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


def convert_bio2zarr(vcf: Path, out: Path, zarr_format: int) -> Path:
    """``vcf2zarr convert --zarr-format N`` of ``vcf`` into ``out`` (in-process)."""
    import bio2zarr.vcf

    logging.getLogger("bio2zarr").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bio2zarr.vcf.convert(
            [str(vcf)],
            str(out),
            variants_chunk_size=VARIANTS_CHUNK_SIZE,
            samples_chunk_size=SAMPLES_CHUNK_SIZE,
            zarr_format=zarr_format,
        )
    return out


@pytest.fixture(scope="session")
def bio2zarr_store(tmp_path_factory):
    """``bio2zarr_store(corpus_relpath, zarr_format)`` -> path of a store bio2zarr wrote (cached)."""
    cache: dict[tuple[str, int], Path] = {}

    def make(relpath: str, zarr_format: int) -> Path:
        if (relpath, zarr_format) not in cache:
            out = tmp_path_factory.mktemp(f"bio2zarr-v{zarr_format}") / "store.vcz"
            cache[relpath, zarr_format] = convert_bio2zarr(CORPUS / relpath, out, zarr_format)
        return cache[relpath, zarr_format]

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


def zarr_region(path: Path, name: str, chunk: tuple[int, ...], chunks: tuple[int, ...]) -> np.ndarray:
    """zarr-python's read of the region of chunk ``chunk`` of array ``name``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.open_group(str(path), mode="r")[name]
        return array[tuple(slice(i * c, (i + 1) * c) for i, c in zip(chunk, chunks))]


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
