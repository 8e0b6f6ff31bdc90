"""Where ``view`` writes: VCF text, BGZF-compressed VCF, or BCF (through htslib, via cyvcf2)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.view.bgzf import BgzfWriter

#: bcftools ``-O`` letters: VCF, compressed VCF, BCF, uncompressed BCF
OUTPUT_TYPES = ("v", "z", "b", "u")


class _TextSink:
    def __init__(self, stream: IO[bytes]):
        self._stream = stream

    def write(self, line: str) -> None:
        self._stream.write(line.encode())


class _BcfSink:
    """Each line parsed by htslib (cyvcf2) and written as BCF."""

    def __init__(self, writer):
        self._writer = writer

    def write(self, line: str) -> None:
        self._writer.write_record(self._writer.variant_from_string(line.rstrip("\n")))


@contextlib.contextmanager
def open_output(path: str | None, output_type: str, header: str, stdout: IO[str]) -> Iterator:
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
    raw: IO[bytes] = open(path, "wb") if path is not None else stdout.buffer
    stream = BgzfWriter(raw) if output_type == "z" else raw
    try:
        stream.write(header.encode())
        yield _TextSink(stream)
    finally:
        if output_type == "z":
            stream.close()
        else:
            stream.flush()
        if path is not None:
            raw.close()
