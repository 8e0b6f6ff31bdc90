"""Parse one partition of a VCF/BCF (in a worker process) into spilled blocks.

A partition is the whole file, or the records of an indexed file whose POS lies in a range of
one contig. Records are read with cyvcf2 in blocks; each block's columns are spilled with
block-local widths, and the partition reports what it saw (records, widths, contigs, filters,
and the header as htslib left it, which includes the fields htslib added for undeclared keys).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.converter import columns as col
from vcfzarr_sql.converter.arrays import int_dtype
from vcfzarr_sql.converter.header import FieldDef, HeaderInfo, read_header
from vcfzarr_sql.converter.order import SortCheck
from vcfzarr_sql.converter.spill import write_block
from vcfzarr_sql.converter.stats import ColumnStats, column_stats, merge_stats
from vcfzarr_sql.converter.workers import add_progress, clear_errno, memory_limit, out_of_memory
from vcfzarr_sql.errors import NotVcfError, VcfParseError

if TYPE_CHECKING:
    from cyvcf2 import VCF, Variant


@dataclass(frozen=True)
class Partition:
    """Records of ``path`` to read: all of them (``region`` None), or those of an index region
    whose POS is in ``[start, stop)`` (``None`` bounds are open)."""

    index: int
    region: str | None = None
    start: int | None = None
    stop: int | None = None


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


def block_path(spill_dir: str | Path, partition: int, block: int) -> Path:
    return Path(spill_dir) / f"p{partition:06d}_b{block:06d}.blk"


def narrowed(block: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The block with integer columns in the narrowest dtype that holds them (a smaller spill)."""
    out = {}
    for name, values in block.items():
        if values.dtype.kind == "i" and values.size:
            values = values.astype(int_dtype(int(values.min()), int(values.max())), copy=False)
        out[name] = values
    return out


def _stats(block: dict[str, np.ndarray], fields: dict[str, FieldDef]) -> dict[str, ColumnStats]:
    out = {}
    for name, values in block.items():
        vector = values.ndim >= 2 and name != col.PHASED
        character = name in fields and fields[name].vcf_type == "Character"
        out[name] = column_stats(values, vector=vector, measure_strings=character)
    return out


class _PartitionReader:
    def __init__(self, path: str, partition: Partition, spill_dir: str, block_size: int):
        self.path = path
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
        block: list[Variant] = []
        for v in self.records():
            block.append(v)
            if len(block) == self.block_size:
                self.flush(block)
                block = []
        if block:
            self.flush(block)
        self.result.header = read_header(self.reader)
        self.result.contigs = list(self.seen_contigs)
        self.result.filters = list(self.seen_filters)
        self.result.unsorted = self.order.first
        return self.result

    def flush(self, variants: list[Variant]) -> None:
        size = len(self.reader.raw_header)
        if size != self.header_size:  # htslib added fields for undeclared keys
            self.header = read_header(self.reader)
            self.header_size = size
        fields = {f.array: f for f in self.header.fields}
        undeclared = {f.name for f in self.header.fields
                      if f.category == "INFO" and f.key not in self.declared}
        block = narrowed(col.block_columns(variants, self.header.fields, self.n_samples, undeclared))
        r = self.result
        write_block(block_path(self.spill_dir, r.index, len(r.block_sizes)), block)
        r.block_sizes.append(len(variants))
        r.num_records += len(variants)
        merge_stats(r.stats, _stats(block, fields))
        self.seen_contigs.update(dict.fromkeys(block[col.CONTIG]))
        self.order.feed(block[col.CONTIG], block[col.POSITION])
        for text in dict.fromkeys(block[col.FILTERS]):
            self.seen_filters.update(dict.fromkeys(f for f in text.split(";") if f))
        add_progress(len(variants))


def read_partition(path: str, partition: Partition, spill_dir: str, block_size: int) -> PartitionResult:
    """Parse ``partition`` of ``path`` into blocks of ``block_size`` records under ``spill_dir``
    (run in a worker process: adds the records read to the pool's progress counter)."""
    return _PartitionReader(path, partition, spill_dir, block_size).run()


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
