"""Parse one partition of a VCF/BCF (in a worker process) into spilled blocks.

A partition is the whole file, or the records of an indexed file whose POS lies in a range of
one contig. Records are read with cyvcf2 in blocks; each block's columns are spilled with
block-local widths, and the partition reports what it saw (records, widths, contigs, filters,
and the header as htslib left it, which includes the fields htslib added for undeclared keys).

The fast path, for a whole VCF text file (bgzipped or plain) whose records are GT-only: its
lines are read by :mod:`.text`, the genotypes of a block of GT-only lines are parsed with numpy
(:mod:`.genotype_text`) and htslib parses only their first eight columns; a block of other
lines is parsed whole by htslib, from the same text. Anything the fast path does not read
exactly as htslib would (the first block not GT-only, a line htslib complains about, a blank
or non-ASCII line, a damaged block) discards what it wrote and reads the partition with
htslib's reader, which is the reference: the store is the same either way.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.converter import columns as col
from vcfzarr_sql.converter import long_values
from vcfzarr_sql.converter.arrays import int_dtype
from vcfzarr_sql.converter.genotype_text import gt_only_lines, parse_genotypes, short_diploid_lines
from vcfzarr_sql.converter.header import FieldDef, HeaderInfo, read_header
from vcfzarr_sql.converter.order import SortCheck
from vcfzarr_sql.converter.site_text import VALUELESS, site_columns
from vcfzarr_sql.converter.spill import drop_block, write_block
from vcfzarr_sql.converter.stats import ColumnStats, column_stats, merge_stats
from vcfzarr_sql.converter.text import NotPlainText, Span, gt_only_start, record_lines, text_kind
from vcfzarr_sql.converter.workers import add_progress, clear_errno, memory_limit, out_of_memory
from vcfzarr_sql.errors import NotVcfError, VcfParseError

if TYPE_CHECKING:
    from typing import BinaryIO

    from cyvcf2 import VCF, Variant, Writer


@dataclass(frozen=True)
class Partition:
    """Records of ``path`` to read: all of them (``region`` and ``span`` None), those of an index
    region whose POS is in ``[start, stop)`` (``None`` bounds are open), or the lines of a span
    of the bytes of a VCF text file (:func:`.text.spans`), which only the fast path reads."""

    index: int
    region: str | None = None
    start: int | None = None
    stop: int | None = None
    span: Span | None = None


@dataclass
class PartitionResult:
    index: int
    num_records: int = 0
    block_sizes: list[int] = field(default_factory=list)
    stats: dict[str, ColumnStats] = field(default_factory=dict)
    contigs: list[str] = field(default_factory=list)  # in order of first appearance
    filters: list[str] = field(default_factory=list)  # in order of first appearance
    header: HeaderInfo | None = None  # htslib's header after reading the partition
    unsorted: str | None = None  # the first record out of order (:mod:`.order`), if any
    stepped_aside: bool = False  # the fast path could not read the span: nothing was spilled


def block_path(spill_dir: str | Path, partition: int, block: int) -> Path:
    return Path(spill_dir) / f"p{partition:06d}_b{block:06d}.blk"


def narrowed(block: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The block with integer columns in the narrowest dtype that holds them (a smaller spill)."""
    out = {}
    for name, values in block.items():
        if values.dtype.kind == "i" and values.itemsize > 1 and values.size:  # (int8 is the narrowest)
            values = values.astype(int_dtype(int(values.min()), int(values.max())), copy=False)
        out[name] = values
    return out


def fast_path_header(header: HeaderInfo) -> bool:
    """Whether the fast path may read a file with this header: it has samples, and GT declared
    as usual (``Number=1,Type=String``; htslib declares it so when it is undeclared, which the
    fast path would not do)."""
    gt = [(f.number, f.vcf_type) for f in header.fields if f.key == ("FORMAT", "GT")]
    return bool(header.samples) and gt == [("1", "String")]


def _stats(block: dict[str, np.ndarray], fields: dict[str, FieldDef]) -> dict[str, ColumnStats]:
    out = {}
    for name, values in block.items():
        vector = values.ndim >= 2 and name != col.PHASED
        character = name in fields and fields[name].vcf_type == "Character"
        out[name] = column_stats(values, vector=vector, measure_strings=character)
    return out


class _PartitionReader:
    def __init__(self, path: str, partition: Partition, spill_dir: str, block_size: int, hold: bool = False):
        self.path = path
        self.hold = hold
        self.partition = partition
        self.spill_dir = spill_dir
        self.block_size = block_size
        self.reader = open_vcf(path)
        self.header = read_header(self.reader)
        self.declared = {f.key for f in self.header.fields}  # before htslib adds any
        self.header_size = len(self.reader.raw_header)
        self.n_samples = len(self.header.samples)
        self.result = PartitionResult(index=partition.index)
        self.seen_contigs: dict[str, None] = {}
        self.seen_filters: dict[str, None] = {}
        self.order = SortCheck()

    def records(self) -> Iterator[Variant]:
        p = self.partition
        records = self.reader(p.region) if p.region is not None else self.reader
        for v in self._parsed(iter(records)):
            pos = v.start + 1  # v.POS is 32-bit in cyvcf2
            if p.start is not None and pos < p.start:
                continue
            if p.stop is not None and pos >= p.stop:
                continue
            if not v.CHROM:  # htslib reads a blank line as a record without CHROM
                raise VcfParseError(self.path, "empty CHROM (a blank line?)", record=f":{pos}")
            if self.n_samples and not v.FORMAT and str(v).count("\t") < 8:
                raise VcfParseError(
                    self.path,
                    "the number of columns does not match the number of samples "
                    f"(0 vs {self.n_samples})",
                    record=f"{v.CHROM}:{pos}",
                )
            yield v

    def _parsed(self, records: Iterator[Variant]) -> Iterator[Variant]:
        """``records``, with htslib's read errors (cyvcf2's bare ``Exception``) and a refused
        allocation (a line htslib cannot hold within the worker's memory bound) raised as a
        VcfParseError naming the record (its number in the file, or in the region read)."""
        clear_errno()
        read = 0
        while True:
            try:
                v = next(records)
            except StopIteration:
                return
            except Exception as exc:
                memory = out_of_memory(exc)
                if not memory and type(exc) is not Exception:
                    raise
                region = self.partition.region
                where = f"{read + 1}" if region is None else f"{read + 1} of region {region}"
                what = (f"a line longer than the parser's memory allows (--max-memory, {memory_limit()} bytes)"
                        if memory else f"{type(exc).__name__}: {exc}")
                raise VcfParseError(self.path, what, record=where) from None
            read += 1
            yield v

    def run(self) -> PartitionResult:
        """Read the partition with htslib's reader."""
        block: list[Variant] = []
        for v in self.records():
            block.append(v)
            if len(block) == self.block_size:
                self.flush(block)
                block = []
        if block:
            self.flush(block)
        self._check_long_values()
        return self.finish()

    def _check_long_values(self) -> None:
        """Refuse an INFO value htslib read wrong, without a word, as it is too long
        (:mod:`.long_values`: looked for only when this process's memory has been that large).
        Only htslib's reader needs it: the fast path leaves any line longer than
        :data:`.text.MAX_LINE` (64 MiB) to htslib's reader."""
        limit = long_values.LIMIT
        if not long_values.may_have_read_one(limit):
            return
        found = long_values.long_value_in(self.path, limit)
        if found is not None:
            raise VcfParseError(self.path, f"an INFO value of {limit} bytes or more, which htslib "
                                "reads wrong (its lengths are 32-bit)", record=found[0],
                                field=f"INFO/{found[1]}")

    def finish(self) -> PartitionResult:
        self.result.header = read_header(self.reader)
        self.result.contigs = list(self.seen_contigs)
        self.result.filters = list(self.seen_filters)
        self.result.unsorted = self.order.first
        return self.result

    def text_kind(self) -> str | None:
        """The kind of text (:func:`.text.text_kind`) when the fast path may read the partition:
        all of a VCF text file or a span of it, with samples and GT declared as usual
        (:func:`fast_path_header`) whose first record is GT-only, while htslib's messages
        go to a file (fd 2, a worker's log) where they can be read back."""
        if self.partition.region is not None or not fast_path_header(self.header):
            return None
        try:
            if not stat.S_ISREG(os.fstat(2).st_mode):
                return None
        except OSError:
            return None
        kind = text_kind(self.path)
        try:
            return kind if kind is not None and gt_only_start(self.path, kind) else None
        except NotPlainText:
            return None

    def run_text(self, kind: str) -> PartitionResult:
        """Read the partition through the fast path (see the module docstring); NotPlainText
        when it cannot."""
        import cyvcf2

        # cyvcf2 parses text only with a Writer's variant_from_string; this one is set up as a
        # reader of the file (its header read by htslib, as the reader's), and never writes
        parser = cyvcf2.Writer.__new__(cyvcf2.Writer)
        cyvcf2.VCF.__init__(parser, self.path)
        self.reader.close()
        self.reader = parser
        try:
            log = open("/proc/self/fd/2", "rb")  # noqa: SIM115 (closed below)
        except OSError:
            raise NotPlainText("htslib's messages cannot be read back") from None
        log.seek(0, os.SEEK_END)
        try:
            for lines in record_lines(self.path, kind, self.block_size, self.partition.span or (0, None)):
                self._text_block(parser, log, lines)
        except MemoryError:
            raise NotPlainText("out of memory") from None
        finally:
            log.close()
        return self.finish()

    def _text_block(self, parser: Writer, log: BinaryIO, lines: list[bytes]) -> None:
        short = short_diploid_lines(lines, self.n_samples)
        genotypes: tuple[np.ndarray, np.ndarray] | None
        if short is not None:
            texts, genotypes = short
        else:
            split = gt_only_lines(lines, self.n_samples)
            if split is None and any(line.count(b"\t") < 9 for line in lines):
                raise NotPlainText("a line without sample columns")
            genotypes = None if split is None else parse_genotypes(split[1], self.n_samples)
            if genotypes is None and not self.result.block_sizes:
                raise NotPlainText("the first block is not GT-only")
            texts = lines if split is None or genotypes is None else split[0]
        joined = b"\n".join(texts)  # (the checks of every line at once: texts hold no newline)
        if (not joined.isascii() or not all(texts) or joined.startswith(b"#") or b"\n#" in joined
                or b"\r\n" in joined or joined.endswith(b"\r")):
            raise NotPlainText("a blank, comment or non-ASCII line")
        sites = None if texts is lines else site_columns(
            texts, [c for c, _ in self.header.contigs], [f for f, _ in self.header.filters])
        if sites is not None:  # (plain sites: nothing for htslib to parse)
            self.flush([VALUELESS] * len(texts), genotypes, sites)
            return
        try:
            variants = [parser.variant_from_string(t.decode()) for t in texts]
        except Exception:  # cyvcf2's bare Exception: vcf_parse failed (htslib says why on fd 2)
            raise NotPlainText("htslib could not parse a line") from None
        if b"[E::" in log.read() or not all(v.CHROM for v in variants):
            raise NotPlainText("htslib could not parse a line")
        self.flush(variants, genotypes)

    def discard(self) -> None:
        """Delete the blocks written so far (before reading the partition again)."""
        for block in range(len(self.result.block_sizes)):
            drop_block(block_path(self.spill_dir, self.result.index, block))
        add_progress(-self.result.num_records)

    def flush(self, variants: list[Variant], genotypes: tuple[np.ndarray, np.ndarray] | None = None,
              sites: dict[str, np.ndarray] | None = None) -> None:
        """Spill a block of records; ``genotypes`` and ``sites``: their GT and fixed columns
        when already parsed (:func:`.columns.block_columns`)."""
        size = len(self.reader.raw_header)
        if size != self.header_size:  # htslib added fields for undeclared keys
            self.header = read_header(self.reader)
            self.header_size = size
        fields = {f.array: f for f in self.header.fields}
        undeclared = {f.name for f in self.header.fields
                      if f.category == "INFO" and f.key not in self.declared}
        block = narrowed(col.block_columns(variants, self.header.fields, self.n_samples, undeclared,
                                            genotypes, sites))
        r = self.result
        write_block(block_path(self.spill_dir, r.index, len(r.block_sizes)), block, self.hold)
        r.block_sizes.append(len(variants))
        r.num_records += len(variants)
        merge_stats(r.stats, _stats(block, fields))
        self.seen_contigs.update(dict.fromkeys(block[col.CONTIG]))
        self.order.feed(block[col.CONTIG], block[col.POSITION])
        for text in dict.fromkeys(block[col.FILTERS]):
            self.seen_filters.update(dict.fromkeys(f for f in text.split(";") if f))
        add_progress(len(variants))


def read_partition(path: str, partition: Partition, spill_dir: str, block_size: int,
                   hold: bool = False) -> PartitionResult:
    """Parse ``partition`` of ``path`` into blocks of ``block_size`` records under ``spill_dir``
    (run in a worker process: adds the records read to the pool's progress counter; ``hold``:
    the blocks are encoded by this process, which may keep them in memory:
    :func:`.spill.write_block`). A span
    the fast path cannot read gives a result that says so (``stepped_aside``): htslib cannot
    read a span, the file is then read again in partitions htslib reads."""
    reader = _PartitionReader(path, partition, spill_dir, block_size, hold)
    kind = reader.text_kind()
    if kind is not None:
        try:
            return reader.run_text(kind)
        except NotPlainText:
            reader.discard()
        if partition.span is None:
            reader = _PartitionReader(path, partition, spill_dir, block_size, hold)
    if partition.span is not None:
        return PartitionResult(partition.index, stepped_aside=True)
    return reader.run()


def _why_not_vcf(path: str) -> str | None:
    """Why ``path`` is no VCF or BCF at all, in the user's terms; None when it starts as one
    (then htslib's message about its header says what is wrong)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError as err:
        return err.strerror or str(err)
    if not head:
        return "the file is empty, not a VCF or BCF"
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(31).decompress(head, 64)
        except zlib.error:
            head = b""
        if not head.startswith((b"##fileformat=VCF", b"BCF")):
            return "compressed, but not a VCF or BCF inside (htslib reads bgzip or gzip of VCF/BCF)"
    if head.startswith((b"##fileformat=VCF", b"BCF")):
        return None
    first = head.split(b"\n", 1)[0][:60].decode("utf-8", "replace")
    return f"not a VCF or BCF: a VCF starts with '##fileformat=VCF', this one with {first!r}"


def open_vcf(path: str) -> VCF:
    """cyvcf2's reader of ``path``; a one-line VcfParseError naming the file and why htslib
    cannot read it (cyvcf2 says ``OSError: ... is not valid bcf or vcf (format: 2 mode: r)``)."""
    import cyvcf2

    try:
        return cyvcf2.VCF(path)
    except OSError as err:
        why = None if err.errno is not None else _why_not_vcf(path)
        if why is None:  # the system's error (a permission), or htslib's about a VCF's header
            raise
        raise NotVcfError(path, why) from None


def read_file_header(path: str) -> HeaderInfo:
    """The header of ``path`` as htslib reads it (run in a worker process)."""
    return read_header(open_vcf(path))
