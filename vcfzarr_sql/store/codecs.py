"""Chunk decoding with numcodecs: a Zarr v2 filter/compressor chain or a Zarr v3 codec pipeline.

This is the scan's hot path, so it calls numcodecs directly (no zarr-python ``Array``): the
codecs release the GIL, and one decode is a handful of C calls. A pipeline vcfzarr-sql cannot
decode (e.g. ``sharding_indexed``) still opens; decoding one of its chunks raises
:class:`~vcfzarr_sql.errors.NotSupportedError` naming the codec. vlen-utf8 strings in C order
can also be decoded straight to one Arrow string array (``decode_strings``, see
:mod:`vcfzarr_sql.store.vlen_utf8`), without a Python ``str`` per value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numcodecs.compat import ensure_contiguous_ndarray

from vcfzarr_sql.errors import NotSupportedError, StoreError, VcfZarrError
from vcfzarr_sql.store import bounds, memory, vlen_utf8
from vcfzarr_sql.store.blosc_range import stored_as_is
from vcfzarr_sql.store.codec_classes import get_codec

if TYPE_CHECKING:  # (imported where Arrow is used: commands that read no strings never load it)
    import pyarrow as pa


class ChunkCodec(Protocol):
    """Decodes the stored bytes of one chunk into a full chunk-shaped array (stored dtype).

    When ``arrow_strings`` is true (vlen-utf8 strings in C order), ``decode_strings`` gives
    the chunk's strings as one flat Arrow string array instead, without Python objects.
    """

    @property
    def arrow_strings(self) -> bool: ...

    def decode(self, raw: bytes) -> np.ndarray: ...

    def decode_strings(self, raw: bytes) -> pa.Array: ...


class DeferredCodec:
    """A codec built at its first use: opening a store parses every array's metadata, and a
    query decodes the chunks of a few arrays (of a cohort's batches, often none). Whether a
    codec is allowed is decided before (:class:`RefusedCodec`), when the metadata is parsed.
    It pickles as what builds it (a store's array metadata goes to scan workers)."""

    def __init__(self, build: Callable[[], ChunkCodec]):
        self._build = build
        self._built: ChunkCodec | None = None

    @property
    def built(self) -> ChunkCodec:
        if self._built is None:
            self._built = self._build()
        return self._built

    @property
    def arrow_strings(self) -> bool:
        return self.built.arrow_strings

    def decode(self, raw: bytes) -> np.ndarray:
        return self.built.decode(raw)

    def decode_strings(self, raw: bytes) -> pa.Array:
        return self.built.decode_strings(raw)


class UnsupportedCodec:
    """The codec of an array vcfzarr-sql cannot decode: decoding raises NotSupportedError."""

    arrow_strings = False
    error: type[VcfZarrError] = NotSupportedError

    def __init__(self, message: str):
        self.message = message

    def decode(self, raw: bytes) -> np.ndarray:
        raise self.error(self.message)

    def decode_strings(self, raw: bytes) -> pa.Array:
        raise self.error(self.message)


class RefusedCodec(UnsupportedCodec):
    """A codec that is not allowed in a store (:mod:`vcfzarr_sql.store.bounds`), e.g. ``pickle``:
    never built; decoding raises StoreError."""

    error = StoreError

    def __init__(self, name: str, reason: str):
        super().__init__(f"array {name}: {reason}")
        self.reason = reason


def _as_array(buf: Any, dtype: np.dtype, name: str) -> np.ndarray:
    if isinstance(buf, np.ndarray) and buf.dtype.kind == "O":
        if dtype.kind != "O":
            raise bounds.ChunkBoundsError(f"decodes to objects, the array's dtype is {dtype}")
        return buf
    if dtype.kind == "O":
        raise StoreError(f"array {name}: object dtype without an object codec (e.g. vlen-utf8)")
    if isinstance(buf, np.ndarray) and buf.dtype != dtype and buf.dtype.itemsize != 1:
        raise bounds.ChunkBoundsError(f"decodes to dtype {buf.dtype}, the array's is {dtype}")
    return ensure_contiguous_ndarray(buf).view(dtype)


def _pooled(compressor: Any, dtype: np.dtype) -> bool:
    """Whether chunks of ``dtype`` compressed by ``compressor`` alone may be decompressed by
    :func:`_pooled_decompress` (a Blosc compressor; not strings)."""
    return getattr(compressor, "codec_id", None) == "blosc" and dtype.kind != "O"


def _pooled_decompress(compressor: Any, raw: Any, dtype: np.dtype, size: int) -> np.ndarray | None:
    """``raw`` decompressed by the Blosc ``compressor`` (:func:`_pooled`) into a buffer of
    Arrow's memory pool (:mod:`vcfzarr_sql.store.memory`), as ``size`` values of ``dtype``, or
    a read-only view of ``raw`` where the frame holds the values as they are; None when that
    does not apply (a size other than the chunk's)."""
    if len(raw) < 16:
        return None
    nbytes = int.from_bytes(raw[4:8], "little")  # the Blosc header's uncompressed size
    if nbytes == 0 or nbytes != size * dtype.itemsize or nbytes > bounds.max_chunk_bytes():
        return None  # the general path decodes it, or says why it cannot
    as_is = stored_as_is(raw, nbytes)
    if as_is is not None:  # (not compressed: a view of the bytes read, not a copy of them)
        return np.frombuffer(as_is, dtype, size)
    out = memory.empty(size, dtype)
    compressor.decode(raw, out=out)
    return out


def decode_rows(codec: ChunkCodec, raw: bytes, start: int, stop: int) -> np.ndarray | None:
    """Rows ``start`` to ``stop`` (along the first axis) of the full chunk ``raw`` decodes to,
    decompressed from only the Blosc blocks holding them (:mod:`~vcfzarr_sql.store.blosc_range`);
    None when the codec is not a Zarr v2 Blosc compressor alone over one-byte values in C
    order, or the frame's blocks are not read so (the caller decodes the whole chunk)."""
    built = codec.built if isinstance(codec, DeferredCodec) else codec
    if (not isinstance(built, V2Codec) or built.filters or built.dtype.itemsize != 1 or built.dtype.kind == "O"
            or getattr(built.compressor, "codec_id", None) != "blosc" or built.order != "C"):
        return None
    from vcfzarr_sql.store.blosc_range import decompress_range

    row = math.prod(built.chunks[1:])
    part = decompress_range(raw, start * row, stop * row, math.prod(built.chunks))
    return None if part is None else part.view(built.dtype).reshape(stop - start, *built.chunks[1:])


def _check_size(size: int, shape: tuple[int, ...]) -> None:
    if size != math.prod(shape):
        raise bounds.ChunkBoundsError(f"decodes to {size} values, expected {math.prod(shape)}")


def _fixed_nbytes(dtype: np.dtype, shape: tuple[int, ...], filters: list) -> int | None:
    """The bytes a compressor must give for a chunk of ``shape`` (None: not known, as for
    strings or when filters follow)."""
    return None if filters or dtype.kind == "O" else math.prod(shape) * dtype.itemsize


def _decompressed(compressors: list, raw: Any, expected: int | None) -> Any:
    """``raw`` through bytes->bytes ``compressors`` (decode order), each bounded; the last
    must give ``expected`` bytes when known."""
    buf = raw
    for k, codec in enumerate(compressors):
        if codec.codec_id in bounds.COMPRESSORS:
            buf = bounds.decompress(codec, buf, expected if k == len(compressors) - 1 else None)
        else:  # a checksum: its output is its input less the checksum
            buf = codec.decode(buf)
    return buf


def _filtered(filters: list, buf: Any, size: int) -> Any:
    """``buf`` through array filters (decode order), each input checked first."""
    for f in filters:
        bounds.check_filter_input(f, buf, size)
        buf = f.decode(buf)
    return buf


def _reshaped(arr: np.ndarray, shape: tuple[int, ...], order: str, name: str) -> np.ndarray:
    _check_size(arr.size, shape)
    return arr.reshape(shape, order="F" if order == "F" else "C")


def _chunk_strings(buf: Any, shape: tuple[int, ...], name: str) -> pa.Array:
    strings = vlen_utf8.decode_to_arrow(buf)
    _check_size(len(strings), shape)
    return strings


class V2Codec:
    """Zarr v2: the compressor, then the filters in reverse order, then ``order`` C or F."""

    def __init__(self, name: str, compressor: Any, filters: list, dtype: np.dtype,
                 chunks: tuple[int, ...], order: str):
        self.name = name
        self.compressor = compressor
        self.filters = filters[::-1]
        self.dtype = dtype
        self.chunks = chunks
        self.order = order
        self.arrow_strings = [f.codec_id for f in filters] == ["vlen-utf8"] and (
            order == "C" or len(chunks) < 2
        )
        self._size = math.prod(chunks)
        self._pooled = not filters and _pooled(compressor, dtype)

    def decode(self, raw: bytes) -> np.ndarray:
        if self._pooled:
            pooled = _pooled_decompress(self.compressor, raw, self.dtype, self._size)
            if pooled is not None:
                return _reshaped(pooled, self.chunks, self.order, self.name)
        buf = _filtered(self.filters, self._decompressed(raw), self._size)
        return _reshaped(_as_array(buf, self.dtype, self.name), self.chunks, self.order, self.name)

    def decode_strings(self, raw: bytes) -> pa.Array:
        buf = self._decompressed(raw)
        bounds.check_filter_input(self.filters[0], buf, math.prod(self.chunks))
        return _chunk_strings(buf, self.chunks, self.name)

    def _decompressed(self, raw: bytes) -> Any:
        compressors = [] if self.compressor is None else [self.compressor]
        expected = _fixed_nbytes(self.dtype, self.chunks, self.filters)
        return _decompressed(compressors, raw, expected)


def v2_codec(name: str, meta: dict, dtype: np.dtype, chunks: tuple[int, ...]) -> ChunkCodec:
    """The decoder of a v2 array's chunks, from its ``.zarray`` document; a codec that is not
    allowed (:data:`~vcfzarr_sql.store.bounds.ALLOWED_CODECS`) is refused before it is built."""
    why = bounds.refusal_in(meta)
    if why is not None:
        return RefusedCodec(name, why)
    return DeferredCodec(functools.partial(_v2_pipeline, name, meta, dtype, chunks))


def _v2_pipeline(name: str, meta: dict, dtype: np.dtype, chunks: tuple[int, ...]) -> ChunkCodec:
    try:
        compressor = get_codec(meta["compressor"]) if meta.get("compressor") else None
        filters = [get_codec(f) for f in meta.get("filters") or ()]
    except (ValueError, KeyError, TypeError) as err:
        return UnsupportedCodec(f"array {name}: codec not supported ({err})")
    return V2Codec(name, compressor, filters, dtype, chunks, meta.get("order", "C"))


#: v3 bytes->bytes codec names -> the numcodecs configuration that decodes them (decoding
#: needs none of the stored one's).
_BYTES_CODECS: dict[str, dict[str, str]] = {
    "blosc": {}, "zstd": {}, "gzip": {}, "crc32c": {"location": "end"},
}
_VLEN_CODECS = ("vlen-utf8", "vlen-bytes")


class V3Codec:
    """Zarr v3: bytes->bytes codecs reversed, the array->bytes codec, then transposes reversed."""

    def __init__(self, name: str, transposes: list[tuple[int, ...]], vlen: Any, dtype: np.dtype,
                 bytes_codecs: list, chunks: tuple[int, ...]):
        self.name = name
        self.vlen = vlen
        self.dtype = dtype
        self.bytes_codecs = bytes_codecs[::-1]
        self.shape = chunks
        for order in transposes:
            self.shape = tuple(self.shape[i] for i in order)
        self.untranspose = [tuple(np.argsort(order)) for order in transposes[::-1]]
        self.arrow_strings = vlen is not None and vlen.codec_id == "vlen-utf8" and all(
            axes == tuple(range(len(axes))) for axes in self.untranspose
        )
        self._pooled = vlen is None and len(bytes_codecs) == 1 and _pooled(bytes_codecs[0], dtype)

    def decode(self, raw: bytes) -> np.ndarray:
        if self._pooled:
            pooled = _pooled_decompress(self.bytes_codecs[0], raw, self.dtype, math.prod(self.shape))
            if pooled is not None:
                return self._untransposed(_reshaped(pooled, self.shape, "C", self.name))
        buf = self._decompressed(raw)
        if self.vlen is not None:
            bounds.check_filter_input(self.vlen, buf, math.prod(self.shape))
            arr = self.vlen.decode(buf)
        else:
            arr = _as_array(buf, self.dtype, self.name)
        return self._untransposed(_reshaped(arr, self.shape, "C", self.name))

    def _untransposed(self, arr: np.ndarray) -> np.ndarray:
        for axes in self.untranspose:
            arr = arr.transpose(axes)
        return arr

    def decode_strings(self, raw: bytes) -> pa.Array:
        buf = self._decompressed(raw)
        bounds.check_filter_input(self.vlen, buf, math.prod(self.shape))
        return _chunk_strings(buf, self.shape, self.name)

    def _decompressed(self, raw: bytes) -> Any:
        filters = [] if self.vlen is None else [self.vlen]
        expected = _fixed_nbytes(self.dtype, self.shape, filters)
        return _decompressed(self.bytes_codecs, raw, expected)


def _transpose_order(conf: dict, ndim: int) -> tuple[int, ...]:
    order = conf.get("order", "C")
    if order == "C":
        return tuple(range(ndim))
    if order == "F":
        return tuple(range(ndim))[::-1]
    return tuple(order)


def v3_codec(name: str, codecs: list[dict], dtype: np.dtype, chunks: tuple[int, ...]) -> ChunkCodec:
    """The decoder of a v3 array's chunks, from the ``codecs`` list of its ``zarr.json``; a
    codec that is not allowed is refused before it is built."""
    why = bounds.refusal_in({"codecs": codecs})
    if why is not None:
        return RefusedCodec(name, why)
    return DeferredCodec(functools.partial(_v3_pipeline, name, codecs, dtype, chunks))


def _v3_pipeline(name: str, codecs: list[dict], dtype: np.dtype, chunks: tuple[int, ...]) -> ChunkCodec:
    transposes: list[tuple[int, ...]] = []
    bytes_codecs: list = []
    vlen = None
    stored = None
    for codec in codecs:
        cname, conf = codec["name"], codec.get("configuration") or {}
        if stored is None and cname == "transpose":
            transposes.append(_transpose_order(conf, len(chunks)))
        elif stored is None and cname == "bytes":
            stored = dtype.newbyteorder(">" if conf.get("endian") == "big" else "<")
        elif stored is None and cname in _VLEN_CODECS:
            stored, vlen = dtype, get_codec({"id": cname})
        elif stored is not None and cname in _BYTES_CODECS:
            bytes_codecs.append(get_codec({"id": cname, **_BYTES_CODECS[cname]}))
        elif stored is not None and cname.startswith("numcodecs."):
            try:
                bytes_codecs.append(get_codec({"id": cname[10:], **conf}))
            except (ValueError, TypeError) as err:
                return UnsupportedCodec(f"array {name}: codec {cname!r} not supported ({err})")
        else:
            return UnsupportedCodec(f"array {name}: Zarr v3 codec {cname!r} is not supported")
    if stored is None:
        return UnsupportedCodec(f"array {name}: no array->bytes codec in {codecs!r}")
    return V3Codec(name, transposes, vlen, stored, bytes_codecs, chunks)


def trimmed_strings(
    strings: pa.Array, chunks: tuple[int, ...], bounds: tuple[slice, ...]
) -> pa.Array:
    """The values of a chunk's flat C-order ``strings`` that lie inside ``bounds``."""
    shape = tuple(s.stop for s in bounds)
    if shape[1:] == chunks[1:]:  # whole rows (an edge chunk along the first axis): a slice
        return strings.slice(0, math.prod(shape))
    positions = np.arange(len(strings)).reshape(chunks)[bounds]
    return strings.take(positions.reshape(-1))


def finished(arr: np.ndarray) -> np.ndarray:
    """A decoded chunk as readers get it: native byte order; fixed-width strings (``U``/``S``)
    as object arrays of ``str``."""
    if arr.dtype.kind == "U":
        return arr.astype(object)
    if arr.dtype.kind == "S":
        return np.char.decode(arr, "utf-8").astype(object)
    if not arr.dtype.isnative:
        return arr.astype(arr.dtype.newbyteorder("="))
    return arr
