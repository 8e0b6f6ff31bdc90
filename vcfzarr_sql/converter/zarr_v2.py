"""Writing a Zarr v2 directory store: group and array metadata, and encoded chunks.

Chunks are encoded with numcodecs directly (no zarr-python on the write path); the metadata
is exactly the Zarr v2 storage specification's ``.zgroup``/``.zarray``/``.zattrs`` (plus a
consolidated ``.zmetadata``).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numcodecs
import numpy as np
from numcodecs import VLenUTF8

from vcfzarr_sql.converter import columns as col
from vcfzarr_sql.converter.arrays import ArraySpec
from vcfzarr_sql.format import spec

_VLEN_UTF8 = VLenUTF8()


_FILL = {"char": b"", "filter": False, "contig": spec.INT_FILL, "mask": True}


def fill_value(kind: str):
    """The padding value of an array kind (also used for chunk edges)."""
    return _FILL[kind] if kind in _FILL else col.fill_value(kind)


def array_metadata(array: ArraySpec) -> tuple[dict, dict]:
    """``.zarray`` and ``.zattrs`` of an array."""
    zarray = {
        "zarr_format": 2,
        "shape": list(array.shape),
        "chunks": list(array.chunks),
        "dtype": "|O" if array.dtype == "|O" else array.dtype,
        "compressor": array.compressor,
        "fill_value": None,
        "order": "C",
        "filters": [_VLEN_UTF8.get_config()] if array.dtype == "|O" else None,
        "dimension_separator": ".",
    }
    zattrs = {spec.ARRAY_DIMENSIONS: list(array.dims)}
    if array.description:
        zattrs["description"] = array.description
    return zarray, zattrs


def _write_json(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def write_group(root: str | Path, attrs: dict, arrays: list[ArraySpec]) -> None:
    """Group metadata, every array's metadata, and the consolidated ``.zmetadata``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    group = {"zarr_format": 2}
    _write_json(root / ".zgroup", group)
    _write_json(root / ".zattrs", attrs)
    consolidated = {".zgroup": group, ".zattrs": attrs}
    for array in arrays:
        zarray, zattrs = array_metadata(array)
        (root / array.name).mkdir(exist_ok=True)
        _write_json(root / array.name / ".zarray", zarray)
        _write_json(root / array.name / ".zattrs", zattrs)
        consolidated[f"{array.name}/.zarray"] = zarray
        consolidated[f"{array.name}/.zattrs"] = zattrs
    _write_json(root / ".zmetadata", {"zarr_consolidated_format": 1, "metadata": consolidated})


def encode_chunk(array: ArraySpec, values: np.ndarray) -> bytes:
    """The stored bytes of one chunk (``values`` may be smaller than a chunk at the edges)."""
    chunk_shape = tuple(array.chunks)
    if values.shape != chunk_shape:
        full = np.full(chunk_shape, fill_value(array.kind), dtype=values.dtype)
        full[tuple(slice(0, n) for n in values.shape)] = values
        values = full
    codec = numcodecs.get_codec(array.compressor)
    if array.dtype == "|O":
        return codec.encode(_VLEN_UTF8.encode(values))
    return codec.encode(np.ascontiguousarray(values))


def write_rows(root: str | Path, array: ArraySpec, chunk_index: int, values: np.ndarray) -> None:
    """Write the chunks of variant chunk ``chunk_index`` (all sample chunks) of ``array``."""
    directory = Path(root) / array.name
    trailing = [range(0, max(1, n), c) for n, c in zip(array.shape[1:], array.chunks[1:])]
    for starts in itertools.product(*trailing):
        index = tuple(slice(s, s + c) for s, c in zip(starts, array.chunks[1:]))
        key = ".".join(map(str, (chunk_index, *(s // c for s, c in zip(starts, array.chunks[1:])))))
        (directory / key).write_bytes(encode_chunk(array, values[(slice(None), *index)]))


def write_whole(root: str | Path, array: ArraySpec, values: np.ndarray) -> None:
    """Write every chunk of an array held in memory."""
    step = array.chunks[0]
    for k, start in enumerate(range(0, max(1, array.shape[0]), step)):
        write_rows(root, array, k, values[start : start + step])
