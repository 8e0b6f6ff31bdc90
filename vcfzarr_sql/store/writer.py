"""The one Zarr writer: group and array metadata, and encoded chunks, of a local directory store.

Everything ``convert`` and ``index`` write goes through here: :func:`write_group` and
:func:`write_rows` make a new Zarr v2 store (``convert``, whose worker processes write the
chunks of their variant chunks); :func:`add_arrays` then :func:`write_rows` add or replace
arrays of an existing Zarr v2 or v3 store (``index``), keeping its consolidated metadata
current. Chunks are encoded with numcodecs directly and the metadata (the Zarr v2
specification's ``.zgroup``/``.zarray``/``.zattrs`` and ``.zmetadata``, v3's ``zarr.json``) is
written by hand rather than through zarr-python: in a converter worker process zarr-python
costs 0.3 s to import and about 1.3 ms of CPU per chunk written (30% more CPU than numcodecs
for 2 MB genotype chunks, 90% more for 128 kB ones), measured with numcodecs' Blosc zstd 7.
"""

from __future__ import annotations

import itertools
import json
import shutil
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numcodecs.blosc as blosc
import numpy as np
from numcodecs.vlen import VLenUTF8

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.codec_classes import get_codec

_VLEN_UTF8 = VLenUTF8()
_V3_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}  # numcodecs' Blosc -> Zarr v3's


class ArrayLayout(Protocol):
    """What the writer needs to know of an array: its metadata, and the value that pads a
    chunk beyond the array's edge."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str: ...  # numpy/Zarr v2 dtype string ("|O": UTF-8 strings)
    @property
    def dims(self) -> tuple[str, ...]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def chunks(self) -> tuple[int, ...]: ...
    @property
    def compressor(self) -> dict: ...  # numcodecs codec configuration
    @property
    def description(self) -> str: ...
    @property
    def padding(self) -> object: ...
    @property
    def min_ratio(self) -> float: ...  # (see NewArray)


@dataclass(frozen=True)
class NewArray:
    """An :class:`ArrayLayout` given outright (arrays that are not built from VCF columns)."""

    name: str
    dtype: str
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    compressor: dict
    description: str = ""
    padding: object = 0
    #: A chunk the (Blosc) compressor does not make at least this many times smaller is stored
    #: as it is, in a Blosc frame of its bytes (which Blosc decodes as a copy); 0: never.
    min_ratio: float = 0


def array_metadata(array: ArrayLayout) -> tuple[dict, dict]:
    """``.zarray`` and ``.zattrs`` of an array."""
    zarray = {
        "zarr_format": 2,
        "shape": list(array.shape),
        "chunks": list(array.chunks),
        "dtype": array.dtype,
        "compressor": array.compressor,
        "fill_value": None,
        "order": "C",
        "filters": [_VLEN_UTF8.get_config()] if array.dtype == "|O" else None,
        "dimension_separator": ".",
    }
    zattrs: dict[str, Any] = {spec.ARRAY_DIMENSIONS: list(array.dims)}
    if array.description:
        zattrs["description"] = array.description
    return zarray, zattrs


def _write_json(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def write_group(root: str | Path, attrs: dict, arrays: Sequence[ArrayLayout]) -> None:
    """Group metadata, every array's metadata, and the consolidated ``.zmetadata``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    group = {"zarr_format": 2}
    _write_json(root / ".zgroup", group)
    _write_json(root / ".zattrs", attrs)
    consolidated: dict[str, dict] = {".zgroup": group, ".zattrs": attrs}
    for array in arrays:
        (root / array.name).mkdir(exist_ok=True)
        consolidated.update(_write_metadata(root, array, 2))
    _write_json(root / ".zmetadata", {"zarr_consolidated_format": 1, "metadata": consolidated})


def _write_metadata(root: Path, array: ArrayLayout, zarr_format: int) -> dict[str, dict]:
    """Write the metadata of ``array`` into its directory; its documents by store key, as
    consolidated metadata holds them."""
    if zarr_format == 2:
        documents = dict(zip((f"{array.name}/.zarray", f"{array.name}/.zattrs"), array_metadata(array)))
    else:
        documents = {array.name: array_metadata_v3(array)}
    for key, document in documents.items():
        _write_json(root / (key if zarr_format == 2 else f"{key}/zarr.json"), document)
    return documents


def array_metadata_v3(array: ArrayLayout) -> dict:
    """The Zarr v3 ``zarr.json`` of a numeric array (little-endian bytes, then its compressor,
    a Blosc codec).

    >>> doc = array_metadata_v3(NewArray("x", "<i4", ("d",), (5,), (2,), {"id": "blosc",
    ...     "cname": "zstd", "clevel": 7, "shuffle": 1, "blocksize": 0}))
    >>> doc["data_type"], doc["codecs"][1]["configuration"]["shuffle"]
    ('int32', 'shuffle')
    """
    dtype = np.dtype(array.dtype)
    blosc_config = {key: value for key, value in array.compressor.items() if key != "id"}
    if array.compressor.get("id") != "blosc" or dtype.kind not in "biuf":
        raise StoreError(f"array {array.name}: cannot write {dtype} with {array.compressor} "
                         "to Zarr v3")
    shuffle = _V3_SHUFFLE[blosc_config["shuffle"]]
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(array.shape),
        "data_type": dtype.name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(array.chunks)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "blosc", "configuration": {**blosc_config, "shuffle": shuffle,
                                                "typesize": dtype.itemsize}},
        ],
        "attributes": {"description": array.description} if array.description else {},
        "dimension_names": list(array.dims),
        "storage_transformers": [],
    }


def add_arrays(root: str | Path, zarr_format: int, arrays: Sequence[ArrayLayout]) -> None:
    """Create ``arrays`` in the existing store at ``root`` (Zarr ``zarr_format``), replacing
    any of the same name with its chunks, and record them in its consolidated metadata if it
    has any; their chunks are then written with :func:`write_rows`."""
    root = Path(root)
    documents: dict[str, dict] = {}
    for array in arrays:
        directory = root / array.name
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
        documents.update(_write_metadata(root, array, zarr_format))
    path = root / (".zmetadata" if zarr_format == 2 else "zarr.json")
    document = json.loads(path.read_text()) if path.exists() else {}
    consolidated = (document if zarr_format == 2 else document.get("consolidated_metadata") or {})
    if consolidated.get("metadata") is not None:
        consolidated["metadata"].update(documents)
        _write_json(path, document)


def encode_chunk(array: ArrayLayout, values: np.ndarray) -> bytes:
    """The stored bytes of one chunk (``values`` may be smaller than a chunk at the edges)."""
    chunk_shape = tuple(array.chunks)
    if values.shape != chunk_shape:
        full = np.full(chunk_shape, array.padding, dtype=values.dtype)
        full[tuple(slice(0, n) for n in values.shape)] = values
        values = full
    if values.dtype == np.bool_ and array.dtype == "|b1" and values.size:
        first = bool(values.flat[0])
        if (values.all() if first else not values.any()):
            return _constant_chunk(array.compressor, chunk_shape, first)
    codec = get_codec(array.compressor)
    if array.dtype == "|O":
        return codec.encode(_VLEN_UTF8.encode(values))
    values = np.ascontiguousarray(values, dtype=np.dtype(array.dtype))
    encoded = codec.encode(values)
    if array.min_ratio and len(encoded) * array.min_ratio > values.nbytes:
        return get_codec({**array.compressor, "clevel": 0}).encode(values)  # (Blosc's "as it is")
    return encoded


#: :func:`_constant_chunk`'s bytes, by codec, shape, value and Blosc's threading.
_CONSTANT_CHUNKS: dict[tuple[str, tuple[int, ...], bool, tuple[bool | None, bool], int], bytes] = {}


def _constant_chunk(compressor: dict, shape: tuple[int, ...], value: bool) -> bytes:
    """The stored bytes of a chunk of bools all ``value``, compressed once per process and
    codec: the phasing of a file's every call where all are unphased (or all phased), which
    took ~0.15 CPU-s to compress in a conversion of 2,000 x 50,000 calls. The bytes are the
    codec's own, compressed as any chunk is (keyed by whether Blosc uses threads and how many,
    which may change them)."""
    # Keyed by numcodecs' public switch and whether this is the main thread (what its default,
    # None, decides by), not by its private helper: a key that missed a change would still hold
    # bytes that decode to the same values, only perhaps not the bytes compressed anew.
    threads = (blosc.use_threads, threading.current_thread() is threading.main_thread())
    key = (json.dumps(compressor, sort_keys=True), shape, value, threads, blosc.get_nthreads())
    found = _CONSTANT_CHUNKS.get(key)
    if found is None:
        found = _CONSTANT_CHUNKS[key] = bytes(get_codec(compressor).encode(np.full(shape, value)))
    return found


def write_rows(
    root: str | Path, array: ArrayLayout, chunk_index: int, values: np.ndarray, zarr_format: int = 2
) -> None:
    """Write the chunks of row chunk ``chunk_index`` (all chunks of the other axes) of ``array``
    (in a Zarr v3 store: its default chunk keys, ``c/0/0``)."""
    directory = Path(root) / array.name
    trailing = [range(0, max(1, n), c) for n, c in zip(array.shape[1:], array.chunks[1:])]
    for starts in itertools.product(*trailing):
        index = tuple(slice(s, s + c) for s, c in zip(starts, array.chunks[1:]))
        chunk = (chunk_index, *(s // c for s, c in zip(starts, array.chunks[1:])))
        if zarr_format == 2:
            path = directory / ".".join(map(str, chunk))
        else:
            path = directory.joinpath("c", *map(str, chunk))
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode_chunk(array, values[(slice(None), *index)]))


@contextmanager
def blosc_single_threaded() -> Iterator[None]:
    """Blosc compresses a chunk of several blocks into other bytes with threads than without:
    chunks written in this context are compressed without (as zarr-python does), whatever the
    process's setting."""
    saved, blosc.use_threads = blosc.use_threads, False
    try:
        yield
    finally:
        blosc.use_threads = saved


def write_whole(root: str | Path, array: ArrayLayout, values: np.ndarray, zarr_format: int = 2) -> None:
    """Write every chunk of an array held in memory (:func:`blosc_single_threaded`)."""
    step = array.chunks[0]
    with blosc_single_threaded():
        for k, start in enumerate(range(0, max(1, array.shape[0]), step)):
            write_rows(root, array, k, values[start : start + step], zarr_format)
