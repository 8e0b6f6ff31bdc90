"""Where ``view`` writes: VCF text, BGZF-compressed VCF, or BCF (through htslib, via cyvcf2)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO, Protocol, TextIO

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.view.bgzf import BgzfWriter

if TYPE_CHECKING:
    from cyvcf2 import Writer

#: bcftools ``-O`` letters: VCF, compressed VCF, BCF, uncompressed BCF
OUTPUT_TYPES = ("v", "z", "b", "u")


class _Bytes(Protocol):
    def write(self, data: bytes, /) -> int: ...


class _TextSink:
    def __init__(self, stream: _Bytes):
        self._stream = stream

    def write(self, line: str) -> None:
        self._stream.write(line.encode())


class _BcfSink:
    """Each line parsed by htslib (cyvcf2) and written as BCF."""

    def __init__(self, writer: Writer):
        self._writer = writer

    def write(self, line: str) -> None:
        self._writer.write_record(self._writer.variant_from_string(line.rstrip("\n")))


@contextlib.contextmanager
def open_output(
    path: str | None, output_type: str, header: str, stdout: TextIO
) -> Iterator[_TextSink | _BcfSink]:
    """A sink with ``write(line)`` for records; the header is written first."""
    if output_type not in OUTPUT_TYPES:
        raise QueryError(f"-O {output_type!r}: expected one of {', '.join(OUTPUT_TYPES)}")
    if output_type in ("b", "u"):
        import cyvcf2

        # A template file, not Writer.from_string: that one rewrites ##fileformat to VCFv4.2.
        with tempfile.TemporaryDirectory(prefix="vcfzarr-sql-") as tmp:
            template = os.path.join(tmp, "header.vcf")
            with open(template, "w") as f:
                f.write(header)
            mode = "wb" if output_type == "b" else "wbu"
            writer = cyvcf2.Writer(path or "-", cyvcf2.VCF(template), mode=mode)
        writer.write_header()
        try:
            yield _BcfSink(writer)
        finally:
            writer.close()
        return
    raw: BinaryIO = open(path, "wb") if path is not None else stdout.buffer
    bgzf = BgzfWriter(raw) if output_type == "z" else None
    try:
        sink = _TextSink(raw if bgzf is None else bgzf)
        sink.write(header)
        yield sink
    finally:
        if bgzf is not None:
            bgzf.close()
        else:
            raw.flush()
        if path is not None:
            raw.close()
