"""Zarr array metadata (v2 ``.zarray``/``.zattrs`` and v3 ``zarr.json``) as one :class:`ArrayInfo`.

Parsing is ours (plain JSON), so reading a store needs no zarr-python: dtype, shape, chunks,
fill value, dimension names, chunk key encoding and the codec pipeline that decodes a chunk.
"""

from __future__ import annotations

import base64
import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vcfzarr_sql.errors import NotSupportedError, StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.format.arrays import (
    BOOL,
    FIXED_ARRAYS,
    FLOAT,
    INT,
    VALUE_FILTERS,
    dtype_kind,
    kind_matches,
)
from vcfzarr_sql.store.codecs import ChunkCodec, v2_codec, v3_codec


@dataclass(frozen=True)
class ArrayInfo:
    """What a reader needs to know about one array of a store.

    ``dtype`` is the stored dtype (any byte order); decoded chunks are in native byte order, and
    string dtypes (``|O``, ``<U1``, ``|S1``) decode to object arrays of ``str``.
    """

    name: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    dims: tuple[str, ...]
    fill_value: Any
    attrs: dict[str, Any] = field(repr=False)
    #: What decodes a chunk's bytes (the codec pipeline).
    codec: ChunkCodec = field(repr=False, compare=False)
    zarr_format: int = 2
    #: Chunk key = ``name/`` + ``key_prefix`` + indexes joined by ``separator``.
    key_prefix: str = field(default="", repr=False)
    separator: str = field(default=".", repr=False)
    #: The numcodecs ids of its filters and codecs (v2 ``filters``; v3 ``codecs``).
    codec_ids: tuple[str, ...] = field(default=(), repr=False)

    @functools.cached_property
    def decoded_dtype(self) -> np.dtype:
        """The dtype of decoded chunks: object for strings, else the stored type, native order."""
        if self.dtype.kind in "OUS":
            return np.dtype(object)
        return self.dtype.newbyteorder("=")

    @functools.cached_property
    def grid(self) -> tuple[int, ...]:
        """Number of chunks along each dimension."""
        return tuple(math.ceil(n / c) if c else 0 for n, c in zip(self.shape, self.chunks))

    def chunk_key(self, chunk: tuple[int, ...]) -> str:
        """The store key of chunk ``chunk`` (indexes along each dimension)."""
        if not chunk:
            return f"{self.name}/{self.key_prefix[:1] or '0'}"
        return f"{self.name}/{self.key_prefix}{self.separator.join(map(str, chunk))}"

    def chunk_bounds(self, chunk: tuple[int, ...]) -> tuple[slice, ...]:
        """The part of a (full-size) decoded chunk that lies inside the array."""
        return tuple(
            slice(0, min(c, n - i * c)) for i, n, c in zip(chunk, self.shape, self.chunks)
        )


def fixed_array_problem(info: ArrayInfo, version: str) -> str | None:
    """Why the spec's fixed array ``info`` (:data:`.format.arrays.FIXED_ARRAYS`) cannot be read
    as the spec types it: a numeric one of another dtype kind (``variant_position`` as float,
    ``variant_quality`` as int), or with a filter that changes its values (``delta``...).
    None for any other array, or when it is fine.

    >>> import numpy as np
    >>> info = ArrayInfo("variant_quality", (2,), (2,), np.dtype("<i4"), ("variants",), 0, {},
    ...                  codec=None)  # type: ignore[arg-type]
    >>> fixed_array_problem(info, "0.4")
    'variant_quality: dtype int32 is not float'
    """
    rule = FIXED_ARRAYS.get(info.name)
    if rule is None or rule.kind not in (INT, FLOAT, BOOL):
        return None
    kind = dtype_kind(info.dtype, version, vlen=False)
    if not kind_matches(kind, rule.kind, version):
        return f"{info.name}: dtype {info.dtype} is not {rule.kind}"
    changing = sorted(VALUE_FILTERS.intersection(info.codec_ids))
    if changing:
        return (f"{info.name}: filter {changing[0]!r} changes its values (not allowed on the "
                "spec's fixed arrays)")
    return None


def parse_v2(name: str, meta: dict, attrs: dict) -> ArrayInfo:
    """ArrayInfo of a Zarr v2 array from its ``.zarray`` and ``.zattrs`` documents."""
    dtype = _v2_dtype(name, meta["dtype"])
    chunks = tuple(meta["chunks"])
    return ArrayInfo(
        name=name,
        shape=tuple(meta["shape"]),
        chunks=chunks,
        dtype=dtype,
        dims=tuple(attrs.get(spec.ARRAY_DIMENSIONS) or ()),
        fill_value=parse_fill_value(meta.get("fill_value"), dtype),
        attrs=attrs,
        zarr_format=2,
        key_prefix="",
        separator=meta.get("dimension_separator") or ".",
        codec=v2_codec(name, meta, dtype, chunks),
        codec_ids=tuple(str(f.get("id")) for f in meta.get("filters") or () if isinstance(f, dict)),
    )


def parse_v3(name: str, zarr_json: dict) -> ArrayInfo:
    """ArrayInfo of a Zarr v3 array from its ``zarr.json`` document."""
    grid = zarr_json.get("chunk_grid", {})
    if grid.get("name") != "regular":
        raise NotSupportedError(f"array {name}: chunk grid {grid.get('name')!r} is not supported")
    chunks = tuple(grid["configuration"]["chunk_shape"])
    dtype = _v3_dtype(name, zarr_json["data_type"])
    encoding = zarr_json.get("chunk_key_encoding", {"name": "default"})
    separator = encoding.get("configuration", {}).get("separator")
    if encoding["name"] == "default":
        key_prefix, separator = f"c{separator or '/'}", separator or "/"
    elif encoding["name"] == "v2":
        key_prefix, separator = "", separator or "."
    else:
        raise NotSupportedError(
            f"array {name}: chunk key encoding {encoding['name']!r} is not supported"
        )
    return ArrayInfo(
        name=name,
        shape=tuple(zarr_json["shape"]),
        chunks=chunks,
        dtype=dtype,
        dims=tuple(d or "" for d in zarr_json.get("dimension_names") or ()),
        fill_value=parse_fill_value(zarr_json.get("fill_value"), dtype),
        attrs=zarr_json.get("attributes") or {},
        zarr_format=3,
        key_prefix=key_prefix,
        separator=separator,
        codec=v3_codec(name, zarr_json.get("codecs", []), dtype, chunks),
        codec_ids=tuple(str(c.get("name")).removeprefix("numcodecs.")
                        for c in zarr_json.get("codecs", []) if isinstance(c, dict)),
    )


def _v2_dtype(name: str, text: Any) -> np.dtype:
    if not isinstance(text, str):
        raise NotSupportedError(f"array {name}: structured dtype {text!r} is not supported")
    try:
        return np.dtype(text)
    except TypeError:
        raise StoreError(f"array {name}: unknown dtype {text!r}") from None


#: v3 data type name -> numpy dtype (fixed-size types; parametrised ones are handled below)
_V3_DTYPES = {
    "bool": "|b1",
    **{f"int{b}": f"<i{b // 8}" for b in (8, 16, 32, 64)},
    **{f"uint{b}": f"<u{b // 8}" for b in (8, 16, 32, 64)},
    **{f"float{b}": f"<f{b // 8}" for b in (16, 32, 64)},
    "string": "|O",
    "variable_length_utf8": "|O",
    "bytes": "|O",
    "variable_length_bytes": "|O",
}


def _v3_dtype(name: str, data_type: Any) -> np.dtype:
    if isinstance(data_type, str) and data_type in _V3_DTYPES:
        return np.dtype(_V3_DTYPES[data_type])
    if isinstance(data_type, dict):
        length = data_type.get("configuration", {}).get("length_bytes")
        if data_type.get("name") == "fixed_length_utf32" and length:
            return np.dtype(f"<U{length // 4}")
        if data_type.get("name") == "null_terminated_bytes" and length:
            return np.dtype(f"|S{length}")
    raise NotSupportedError(f"array {name}: Zarr v3 data type {data_type!r} is not supported")


_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def parse_fill_value(value: Any, dtype: np.dtype) -> Any:
    """The fill value of JSON metadata as a Python/numpy scalar; ``null`` gives what zarr-python
    uses for it (0, False, ``""``)."""
    if dtype.kind == "O":
        return "" if value is None else value
    if dtype.kind == "U":
        return "" if value is None else str(value)
    if dtype.kind == "S":
        return b"" if value is None else base64.standard_b64decode(value)
    if value is None:
        return dtype.type(0)
    if dtype.kind == "f":
        if isinstance(value, str) and value.startswith("0x"):
            bits = np.array(int(value, 16), dtype=f"u{dtype.itemsize}")
            return bits.view(dtype.newbyteorder("="))[()]
        return dtype.type(_FLOAT_WORDS.get(value, value))
    return dtype.type(value)
