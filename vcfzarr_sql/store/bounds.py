"""A store is data, never code, and its chunks decode within bounds.

* Only the codecs VCF Zarr writers use are allowed (:data:`ALLOWED_CODECS`); any other
  (``pickle``, which runs code, ``json2``, plug-ins...) is refused before it is built.
* Every compressor's output is bounded before memory is taken for it: Blosc, LZ4 and Zstd
  declare their output size in a header, which must fit the chunk ``.zarray`` declares (or
  :func:`max_chunk_bytes` when a filter such as vlen-utf8 follows); zlib, gzip, bz2 and lzma
  are decompressed incrementally, at most that many bytes.

>>> refusal("pickle")
"codec 'pickle' is not allowed in a VCF Zarr store (a store is data, never code)"
>>> refusal("blosc") is None
True
"""

from __future__ import annotations

import io
import os
import zlib
from typing import Any

from numcodecs.compat import ensure_contiguous_ndarray

#: numcodecs ids of the compressors and filters VCF Zarr writers use (bio2zarr: Blosc and
#: vlen-utf8; zarr-python: zstd, gzip, crc32c; sgkit and others: packbits, delta...).
COMPRESSORS = frozenset({"blosc", "zstd", "lz4", "zlib", "gzip", "bz2", "lzma"})
FILTERS = frozenset({"vlen-utf8", "vlen-bytes", "delta", "fixedscaleoffset", "packbits",
                     "bitround", "quantize", "shuffle", "crc32", "crc32c", "adler32",
                     "fletcher32"})
ALLOWED_CODECS = COMPRESSORS | FILTERS

#: Default of :func:`max_chunk_bytes`: 1 GiB.
DEFAULT_MAX_CHUNK_BYTES = 1 << 30
MAX_CHUNK_BYTES_VARIABLE = "VCFZARR_SQL_MAX_CHUNK_BYTES"


class ChunkBoundsError(ValueError):
    """A chunk breaks the bounds its array declares (the store names the array and chunk)."""


def max_chunk_bytes() -> int:
    """Most bytes one chunk may take, stored or decoded: ``$VCFZARR_SQL_MAX_CHUNK_BYTES``,
    else 1 GiB."""
    return int(os.environ.get(MAX_CHUNK_BYTES_VARIABLE) or DEFAULT_MAX_CHUNK_BYTES)


def refusal(codec_id: Any) -> str | None:
    """Why the codec ``codec_id`` may not be used (None: it may)."""
    if codec_id in ALLOWED_CODECS:
        return None
    return f"codec {codec_id!r} is not allowed in a VCF Zarr store (a store is data, never code)"


#: Zarr v3 codec names that are not numcodecs ids (``numcodecs.<id>`` ones are checked by id).
_V3_CODECS = frozenset({"bytes", "transpose", "vlen-utf8", "vlen-bytes", "blosc", "zstd",
                        "gzip", "crc32c", "sharding_indexed"})


def refusal_in(meta: dict) -> str | None:
    """Why the codecs of an array's metadata (v2 ``.zarray``: ``compressor`` and ``filters``; v3
    ``zarr.json``: ``codecs``, nested ones included) may not be used (None: they may).

    >>> refusal_in({"compressor": {"id": "blosc"}, "filters": [{"id": "pickle"}]})
    "codec 'pickle' is not allowed in a VCF Zarr store (a store is data, never code)"
    """
    if "codecs" in meta:
        for codec in meta.get("codecs") or ():
            name = codec.get("name") if isinstance(codec, dict) else codec
            conf = (codec.get("configuration") or {}) if isinstance(codec, dict) else {}
            if isinstance(name, str) and name.startswith("numcodecs."):
                why = refusal(name[len("numcodecs."):])
            else:
                why = None if name in _V3_CODECS else refusal(name)
            for nested in ("codecs", "index_codecs"):
                why = why or (refusal_in({"codecs": conf[nested]}) if nested in conf else None)
            if why is not None:
                return why
        return None
    for config in filter(None, [meta.get("compressor"), *(meta.get("filters") or ())]):
        why = refusal(config.get("id") if isinstance(config, dict) else config)
        if why is not None:
            return why
    return None


def _too_big(size: int, expected: int | None, limit: int, what: str) -> ChunkBoundsError | None:
    if expected is not None and size != expected:
        return ChunkBoundsError(f"{what} declares {size} bytes, the array's chunk is {expected}")
    if size > limit:
        return ChunkBoundsError(f"{what} declares {size} bytes, more than the limit of {limit} "
                                f"(${MAX_CHUNK_BYTES_VARIABLE})")
    return None


def _zstd_content_size(raw: memoryview) -> int | None:
    """The decompressed size a Zstandard frame header declares (None: not declared)."""
    if len(raw) < 6 or bytes(raw[:4]) != b"\x28\xb5\x2f\xfd":
        raise ChunkBoundsError("not a Zstandard frame")
    descriptor = raw[4]
    single_segment = (descriptor >> 5) & 1
    size_bytes = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
    start = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
    if size_bytes == 0 or len(raw) < start + size_bytes:
        return None
    size = int.from_bytes(raw[start : start + size_bytes], "little")
    return size + 256 if size_bytes == 2 else size


def _declared_size(codec: Any, raw: memoryview) -> int | None:
    """The output size a Blosc, LZ4 or Zstd buffer declares; None for other codecs."""
    codec_id = codec.codec_id  # (the codecs of these ids: store/codec_classes.py)
    if codec_id == "blosc":
        if len(raw) < 16:
            raise ChunkBoundsError(f"{len(raw)} bytes: too short for a Blosc buffer")
        return int.from_bytes(raw[4:8], "little")
    if codec_id == "lz4":
        if len(raw) < 4:
            raise ChunkBoundsError(f"{len(raw)} bytes: too short for an LZ4 buffer")
        return int.from_bytes(raw[:4], "little")
    if codec_id == "zstd":
        size = _zstd_content_size(raw)
        if size is None:
            raise ChunkBoundsError("Zstandard frame without a content size (refused: unbounded)")
        return size
    return None


def _stream(codec: Any, raw: memoryview, limit: int) -> bytes:
    """``raw`` decompressed by a zlib, gzip, bz2 or lzma ``codec``, reading at most
    ``limit + 1`` bytes of output."""
    if codec.codec_id == "zlib":
        decompressor = zlib.decompressobj()
        out = decompressor.decompress(raw, limit + 1)
        if len(out) <= limit and not decompressor.eof:
            raise ChunkBoundsError("truncated zlib stream")
        return out
    import bz2  # (imported by the few stores compressed so)
    import gzip
    import lzma

    reader: gzip.GzipFile | bz2.BZ2File | lzma.LZMAFile
    if codec.codec_id == "gzip":
        reader = gzip.GzipFile(fileobj=io.BytesIO(raw), mode="rb")
    elif codec.codec_id == "bz2":
        reader = bz2.BZ2File(io.BytesIO(raw))
    else:
        reader = lzma.LZMAFile(io.BytesIO(raw), format=codec.format, filters=codec.filters)
    with reader:
        try:
            return reader.read(limit + 1)
        except (EOFError, OSError, lzma.LZMAError) as err:
            raise ChunkBoundsError(f"{codec.codec_id}: {err}") from None


def decompress(codec: Any, raw: Any, expected: int | None) -> Any:
    """``raw`` decompressed by ``codec`` (an allowed compressor), within bounds: exactly
    ``expected`` bytes when the chunk's size is known, else at most :func:`max_chunk_bytes`.
    Raises ChunkBoundsError for a buffer claiming or giving more."""
    limit = max_chunk_bytes()
    raw = memoryview(ensure_contiguous_ndarray(raw)).cast("B")
    declared = _declared_size(codec, raw)
    if declared is not None:
        error = _too_big(declared, expected, limit, codec.codec_id)
        if error is not None:
            raise error
        return codec.decode(raw)
    cap = limit if expected is None else min(expected, limit)
    out = _stream(codec, raw, cap)
    if len(out) > cap:
        raise ChunkBoundsError(f"{codec.codec_id} stream gives more than {cap} bytes"
                               + ("" if expected is None else ", the array's chunk size"))
    if expected is not None and len(out) != expected:
        raise ChunkBoundsError(f"{codec.codec_id} stream gives {len(out)} bytes, the array's "
                               f"chunk is {expected}")
    return out


def check_filter_input(codec: Any, buf: Any, items: int) -> None:
    """Refuse a filter input that would decode to more than the chunk's ``items`` values (the
    item count of vlen-utf8/vlen-bytes, the bits of packbits) before decoding it."""
    if codec.codec_id in ("vlen-utf8", "vlen-bytes"):
        head = memoryview(ensure_contiguous_ndarray(buf)).cast("B")[:4]
        if len(head) == 4 and int.from_bytes(head, "little") != items:
            raise ChunkBoundsError(f"{codec.codec_id} buffer holds "
                                   f"{int.from_bytes(head, 'little')} values, expected {items}")
    elif codec.codec_id == "packbits":
        if ensure_contiguous_ndarray(buf).nbytes > items // 8 + 2:
            raise ChunkBoundsError(f"packbits buffer holds more than {items} values")
