"""Where ``view`` writes: VCF text, BGZF-compressed VCF, or BCF (through htslib, via cyvcf2)."""

from __future__ import annotations

import contextlib
import gzip
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO, Protocol, TextIO

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.view.bgzf import BgzfWriter

if TYPE_CHECKING:
    from cyvcf2 import Writer

#: bcftools ``-O`` letters: VCF, compressed VCF, BCF, uncompressed BCF
OUTPUT_TYPES = ("v", "z", "b", "u")
#: file name endings (any case) that decide the format, as in bcftools (``set_wmode``)
NAMED_TYPES = ((".vcf.gz", "z"), (".vcf.bgz", "z"), (".bcf", "b"), (".vcf", "v"))


def named_type(path: str | None) -> str | None:
    """The ``-O`` letter a file name implies (None: it implies none).

    >>> [named_type(n) for n in ("x.vcf.gz", "x.VCF.BGZ", "x.bcf", "x.vcf", "x.gz", None)]
    ['z', 'z', 'b', 'v', None, None]
    """
    lower = (path or "").lower()
    return next((letter for ending, letter in NAMED_TYPES if lower.endswith(ending)), None)


def resolved_type(path: str | None, requested: str | None = None) -> str:
    """The ``-O`` letter to write ``path`` (None: standard output) with, as bcftools chooses
    it: the one the name implies, even over ``-O`` (``-Ov -o x.vcf.gz`` writes BGZF); else
    ``requested`` (default ``v``).

    >>> resolved_type("x.vcf.gz"), resolved_type("x.vcf", "z"), resolved_type("x.txt", "z"), resolved_type(None)
    ('z', 'v', 'z', 'v')
    """
    if requested is not None and requested not in OUTPUT_TYPES:
        raise QueryError(f"-O {requested!r}: expected one of {', '.join(OUTPUT_TYPES)}")
    return named_type(path) or requested or "v"


class _Bytes(Protocol):
    def write(self, data: bytes, /) -> int: ...


class _TextSink:
    def __init__(self, stream: _Bytes):
        self._stream = stream

    def write(self, text: bytes) -> None:
        self._stream.write(text)


class _BcfSink:
    """Each line parsed by htslib (cyvcf2) and written as BCF."""

    def __init__(self, writer: Writer):
        self._writer = writer

    def write(self, text: bytes) -> None:
        for line in text.decode().splitlines():
            self._writer.write_record(self._writer.variant_from_string(line))


@contextlib.contextmanager
def _bcf_output(path: str | None, uncompressed: bool, header: str, stdout: TextIO) -> Iterator[_BcfSink]:
    """BCF written by htslib (cyvcf2); uncompressed (``-Ou``): written compressed to a
    temporary file, then inflated to ``path`` (cyvcf2 0.35 compresses in mode ``wbu`` too)."""
    import shutil  # (with bz2 and lzma; BCF only)
    import tempfile

    import cyvcf2

    with tempfile.TemporaryDirectory(prefix="vcfzarr-sql-") as tmp:
        # A template file, not Writer.from_string: that one rewrites ##fileformat to VCFv4.2.
        template = os.path.join(tmp, "header.vcf")
        with open(template, "w") as f:
            f.write(header)
        target = os.path.join(tmp, "out.bcf") if uncompressed else (path or "-")
        writer = cyvcf2.Writer(target, cyvcf2.VCF(template), mode="wb")
        writer.write_header()
        try:
            yield _BcfSink(writer)
        finally:
            writer.close()
        if uncompressed:
            with gzip.open(target, "rb") as bcf, (open(path, "wb") if path else contextlib.nullcontext(stdout.buffer)) as raw:
                shutil.copyfileobj(bcf, raw)
                raw.flush()


@contextlib.contextmanager
def open_output(
    path: str | None, requested: str | None, header: str, stdout: TextIO
) -> Iterator[_TextSink | _BcfSink]:
    """A sink with ``write(text)`` for records (UTF-8 lines); the header is written first. The format is
    :func:`resolved_type` of ``path`` and ``requested`` (an ``-O`` letter or None)."""
    output_type = resolved_type(path, requested)
    if output_type in ("b", "u"):
        with _bcf_output(path, output_type == "u", header, stdout) as bcf:
            yield bcf
        return
    raw: BinaryIO = open(path, "wb") if path is not None else stdout.buffer
    bgzf = BgzfWriter(raw) if output_type == "z" else None
    try:
        sink = _TextSink(raw if bgzf is None else bgzf)
        sink.write(header.encode())
        yield sink
    finally:
        if bgzf is not None:
            bgzf.close()
        else:
            raw.flush()
        if path is not None:
            raw.close()
