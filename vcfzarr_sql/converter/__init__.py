"""VCF/BCF -> VCF Zarr 0.3 on Zarr v2: :func:`convert`.

Two passes over the data, both in worker processes: parsing (cyvcf2, or the fast path of
:mod:`.reader` for GT-only VCF text) spills blocks of records (one worker holds them in
memory: :mod:`.spill`) with block-local widths while learning the widest value of every
dimension; encoding then
pads each variant chunk to the final widths and writes it. The store is built in a temporary
directory beside the output and renamed into place only when complete.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import warnings
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path
from typing import Any

import numcodecs.abc
import numpy as np

from vcfzarr_sql import __version__
from vcfzarr_sql.converter.arrays import (
    ArraySpec,
    Layout,
    build_arrays,
    header_deviations,
    whole_array,
)
from vcfzarr_sql.converter.encode import Piece, encode_variant_chunk
from vcfzarr_sql.converter.header import FieldDef, HeaderInfo, merged_header_text
from vcfzarr_sql.converter.inputs import STDIN, check_inputs, single_input
from vcfzarr_sql.converter.output import (
    WORK_SUFFIX,
    os_error,
    output_lock,
    refuse_to_replace,
    remove_leftovers,
    swap_into_place,
)
from vcfzarr_sql.converter.partitions import plan_partitions
from vcfzarr_sql.converter.reader import (
    PartitionResult,
    block_path,
    fast_path_header,
    read_file_header,
    read_partition,
)
from vcfzarr_sql.converter.stats import ColumnStats, merge_stats
from vcfzarr_sql.converter.undeclared import retype_undeclared
from vcfzarr_sql.converter.workers import WorkerPool
from vcfzarr_sql.errors import VcfParseError, VcfZarrError, VcfZarrWarning
from vcfzarr_sql.format import spec
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.query.call_stats import ALLELE_DEPTH, DEPTH, counted_shapes
from vcfzarr_sql.store.packed_arrays import packed_arrays
from vcfzarr_sql.store.summary_arrays import ADD_COMPRESSOR, PER_RECORD, call_stats_arrays, summary_arrays
from vcfzarr_sql.store.writer import NewArray, write_group, write_whole

__all__ = ["ConvertSummary", "convert"]

_BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


def _check_bgzf_eof(path: Path, name: str | None = None) -> None:
    """Refuse a BGZF file without its end-of-file block (truncated), as bcftools does; ``name``:
    what the error calls it (standard input spooled to ``path``)."""
    with open(path, "rb") as f:
        head = f.read(16)
        if len(head) < 16 or head[:2] != b"\x1f\x8b" or head[12:14] != b"BC":
            return
        f.seek(-len(_BGZF_EOF), os.SEEK_END)
        if f.read() != _BGZF_EOF:
            raise VcfParseError(name or str(path), "no BGZF EOF marker; file may be truncated")


class _Progress:
    """A tqdm bar fed from the workers' shared counter (nothing when disabled)."""

    def __init__(self, show: bool, pool: WorkerPool):
        self.show = show
        self.pool = pool
        self.bar = None

    def start(self, description: str, total: int | None, unit: str) -> None:
        self.close()
        if self.show:
            from tqdm import tqdm

            with self.pool.progress.get_lock():
                self.pool.progress.value = 0
            self.bar = tqdm(total=total, desc=description, unit=unit, file=sys.stderr, leave=False)

    def update(self) -> None:
        if self.bar is not None:
            self.bar.n = self.pool.progress.value
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@dataclass(frozen=True)
class _Seen:
    """What the partitions found, merged in file order: what the store's arrays are made of."""

    fields: list[FieldDef]  # header order, then fields htslib added for undeclared keys
    columns: dict[str, str]  # array -> the block column it is made of, where not its own
    notes: list[str]  # what the user should know: unsorted records, undeclared keys
    contigs: list[tuple[str, int | None]]  # header order, then undeclared ones in body order
    filters: list[tuple[str, str]]  # PASS, header order, then undeclared ones in body order
    stats: dict[str, ColumnStats]
    num_variants: int
    header_text: str

    @classmethod
    def merge(cls, header: HeaderInfo, results: list[PartitionResult]) -> _Seen:
        later = [r.header for r in results if r.header is not None]
        fields = {f.key: f for f in header.fields}
        for h in later:
            for f in h.fields:
                fields.setdefault(f.key, f)
        stats: dict[str, ColumnStats] = {}
        for r in results:
            merge_stats(stats, r.stats)
        undeclared = retype_undeclared(list(fields.values()), {f.key for f in header.fields}, stats)
        unsorted = next((r.unsorted for r in results if r.unsorted is not None), None)
        order = [] if unsorted is None else [(
            f"records are not sorted: {unsorted} is the first out of order. Region queries "
            "stay correct (the region index bounds every chunk), but they prune less, and "
            "`view` writes the records in this order, which tabix cannot index; sort the "
            "input first (bcftools sort)")]
        return cls(
            fields=undeclared.fields,
            columns=undeclared.columns,
            notes=[*order, *undeclared.notes],
            contigs=_merge_named(header.contigs, [r.contigs for r in results], later, "contigs"),
            filters=_merge_named(header.filters, [r.filters for r in results], later, "filters"),
            stats=stats,
            num_variants=sum(r.num_records for r in results),
            header_text=merged_header_text(header, later, undeclared.flags) + "\n",
        )


def _merge_named(declared: Sequence[tuple[str, Any]], seen_lists: list[list[str]],
                 later_headers: list[HeaderInfo], attribute: str) -> list[tuple[str, Any]]:
    """Declared (name, value) pairs, then names first seen in the body, valued as htslib added them."""
    out = dict(declared)
    added = {}
    for header in later_headers:
        added.update({name: value for name, value in getattr(header, attribute) if name not in out})
    for names in seen_lists:
        for name in names:
            if name not in out:
                out[name] = added.get(name)
    return list(out.items())


def _chunk_pieces(results: list[PartitionResult], spill: Path, chunk: int, total: int) -> list[list[Piece]]:
    """For each variant chunk, the (block, rows) pieces holding its records, in order."""
    blocks = [(str(block_path(spill, r.index, b)), n) for r in results for b, n in enumerate(r.block_sizes)]
    starts = [0, *accumulate(n for _, n in blocks)]
    chunks = []
    for lo in range(0, total, chunk):
        hi = min(lo + chunk, total)
        pieces = []
        b = bisect_right(starts, lo) - 1
        while b < len(blocks) and starts[b] < hi:
            path, _ = blocks[b]
            pieces.append(Piece(path, max(lo, starts[b]) - starts[b], min(hi, starts[b + 1]) - starts[b],
                                last=starts[b + 1] <= hi))
            b += 1
        chunks.append(pieces)
    return chunks


def _string_array(values: Iterable[str]) -> np.ndarray:
    values = list(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _tables(seen: _Seen, samples: Sequence[str], layout: Layout, index: np.ndarray,
            position_dtype: str, compressor: dict | None) -> list[tuple[ArraySpec, np.ndarray]]:
    """The small arrays (contigs, filters, samples, region index) and their values."""
    lengths = [length for _, length in seen.contigs]
    tables = [
        (spec.CONTIG_ID, _string_array(c for c, _ in seen.contigs), spec.DIM_CONTIGS),
        (spec.FILTER_ID, _string_array(f for f, _ in seen.filters), spec.DIM_FILTERS),
        (spec.FILTER_DESCRIPTION, _string_array(d or "" for _, d in seen.filters), spec.DIM_FILTERS),
        (spec.SAMPLE_ID, _string_array(samples), spec.DIM_SAMPLES),
        (spec.REGION_INDEX, index.astype(position_dtype), spec.DIM_REGION_INDEX_VALUES),
    ]
    if any(length is not None for length in lengths):
        contig_length = np.array([spec.INT_MISSING if n is None else n for n in lengths], dtype=np.int64)
        tables.append((spec.CONTIG_LENGTH, contig_length, spec.DIM_CONTIGS))
    chunk = {spec.SAMPLE_ID: layout.samples_chunk}
    return [(whole_array(name, values, dim, compressor, chunk.get(name)), values)
            for name, values, dim in tables]


def _parse(input_path: str, header: HeaderInfo, spill: Path, pool: WorkerPool, progress: _Progress,
           workers: int, block_size: int, text: bool) -> list[PartitionResult]:
    """Pass 1: the partitions parsed into blocks under ``spill`` (emptied first; one worker,
    which encodes them too, holds them in memory while it has room: :mod:`.spill`); ``text``:
    the file may be cut into spans for the fast path (:func:`.partitions.plan_partitions`)."""
    shutil.rmtree(spill, ignore_errors=True)
    spill.mkdir()
    partitions, expected = plan_partitions(input_path, workers, [c for c, _ in header.contigs], text=text,
                                           count=progress.show)
    progress.start("Parse", expected, "rec")
    return pool.run(
        read_partition,
        [(input_path, p, str(spill), block_size, workers == 1) for p in partitions],
        progress.update,
    )


def _build(input_path: str, store: Path, work: Path, pool: WorkerPool, progress: _Progress, *,
           variants_chunk_size: int, samples_chunk_size: int, workers: int, compressor: dict | None,
           batch: bool) -> Layout:
    """Parse (pass 1), then encode (pass 2) into ``store``; the store's layout (``batch``:
    without the summaries a cohort does not read of its batches: :func:`convert`)."""
    [header] = pool.run(read_file_header, [(input_path,)])
    spill = work / "spill"
    results = _parse(input_path, header, spill, pool, progress, workers, variants_chunk_size,
                     fast_path_header(header))
    if any(r.stepped_aside for r in results):  # spans the fast path cannot read: htslib reads it all
        results = _parse(input_path, header, spill, pool, progress, workers, variants_chunk_size, False)
    seen = _Seen.merge(header, results)
    layout = Layout.of(seen.num_variants, len(header.samples), variants_chunk_size, samples_chunk_size)
    arrays = build_arrays(seen.fields, seen.stats, layout, len(seen.filters), compressor,
                          columns=seen.columns)
    for deviation in [*seen.notes, *header_deviations(seen.fields, arrays)]:
        warnings.warn(VcfZarrWarning(f"{input_path}: {deviation}"), stacklevel=2)
    summary = _summary_arrays(arrays, layout, batch)
    call_stats = {} if batch else _call_stats_arrays(arrays, layout)
    packed = (packed_arrays(layout.num_variants, layout.num_samples, layout.variants_chunk,
                            layout.samples_chunk) if summary and not batch else None)
    write_group(store, {}, [*arrays, *summary.values(), *call_stats.values(),
                            *(packed or {}).values()])

    chunks = _chunk_pieces(results, spill, layout.variants_chunk, seen.num_variants)
    contig_ids = {name: i for i, (name, _) in enumerate(seen.contigs)}
    filter_ids = {name: i for i, (name, _) in enumerate(seen.filters)}
    class_counts = summary.get(sc.SAMPLE_CLASS_COUNTS)
    progress.start("Encode", len(chunks), "chunk")
    encoded = pool.run(
        encode_variant_chunk,
        [(str(store), k, pieces, arrays, contig_ids, filter_ids, class_counts, call_stats, packed)
         for k, pieces in enumerate(chunks)],
        progress.update,
        parsing=False,
    )
    progress.close()

    rows = [index for index, _ in encoded]
    index = np.concatenate(rows) if rows else np.empty((0, spec.REGION_INDEX_FIELDS))
    position_dtype = next(a.dtype for a in arrays if a.name == spec.VARIANT_POSITION)
    small = _tables(seen, header.samples, layout, index, position_dtype, compressor)
    attrs = {
        spec.ATTR_VERSION: spec.WRITE_VERSION,
        spec.ATTR_HEADER: seen.header_text,
        spec.ATTR_SOURCE: f"vcfzarr-sql {__version__}",
        spec.ATTR_HEADER_ADDED: [
            line for line in seen.header_text.splitlines() if line.startswith("##")
            and line not in header.meta_lines
        ],
    }
    write_group(store, attrs, [*arrays, *(a for a, _ in small), *summary.values(),
                               *call_stats.values(), *(packed or {}).values()])
    for array, values in small:
        write_whole(store, array, values)
    if summary and encoded:  # (the sample class counts were written by the workers)
        for name in PER_RECORD:
            write_whole(store, summary[name], np.concatenate([blocks[name] for _, blocks in encoded]))
    return layout


def _summary_arrays(arrays: list[ArraySpec], layout: Layout, batch: bool) -> dict[str, NewArray]:
    """The summary arrays of a store with these arrays (none without genotypes); a batch's
    with ``add``'s quicker compressor."""
    by_name = {a.name: a for a in arrays}
    if spec.CALL_GENOTYPE not in by_name:
        return {}
    found = summary_arrays(layout.num_variants, by_name[spec.VARIANT_ALLELE].shape[1],
                           layout.num_samples, layout.variants_chunk, layout.samples_chunk)
    return {name: replace(a, compressor=ADD_COMPRESSOR) for name, a in found.items()} if batch else found


def _call_stats_arrays(arrays: list[ArraySpec], layout: Layout) -> dict[str, NewArray]:
    """The per-chunk counts of ``stats -s -`` of a store with these arrays (none without
    genotypes, or with FORMAT/DP or AD of other shapes than ``stats`` reads)."""
    by_name = {a.name: a for a in arrays}
    if spec.CALL_GENOTYPE not in by_name or spec.VARIANT_ALLELE not in by_name:
        return {}
    depth, allele_depth = (by_name.get(name) for name in (DEPTH, ALLELE_DEPTH))
    shapes = [None if a is None or a.kind != "int" else a.shape for a in (depth, allele_depth)]
    if not counted_shapes(by_name[spec.CALL_GENOTYPE].shape, *shapes):
        return {}
    return call_stats_arrays(layout.num_variants, layout.num_samples, layout.variants_chunk,
                             layout.samples_chunk)


@dataclass(frozen=True)
class ConvertSummary:
    """What a conversion wrote."""

    records: int
    samples: int
    store_bytes: int
    seconds: float

    def __str__(self) -> str:
        return (f"{self.records} records, {self.samples} samples, "
                f"{self.store_bytes / 1e6:.1f} MB store, {self.seconds:.1f} s")


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def convert(
    input: str | os.PathLike | Sequence[str | os.PathLike],
    output: str | os.PathLike,
    *,
    variants_chunk_size: int = spec.DEFAULT_VARIANTS_CHUNK_SIZE,
    samples_chunk_size: int = spec.DEFAULT_SAMPLES_CHUNK_SIZE,
    workers: int = 1,
    force: bool = False,
    show_progress: bool | None = None,
    compressor: numcodecs.abc.Codec | None = None,
    max_memory: int | None = None,
    batch: bool = False,
) -> ConvertSummary:
    """Convert a VCF, bgzipped VCF or BCF file to a VCF Zarr 0.3 store (Zarr v2) at ``output``.

    ``input`` may also be ``"-"`` (standard input) or a list of files converted as their
    concatenation (their headers must agree: :mod:`.inputs`). Returns a :class:`ConvertSummary`.

    ``compressor``: a numcodecs codec for every array (default: Blosc zstd, level 4 bit-shuffled
    in 1 MiB blocks for genotypes and bool arrays, level 7 byte-shuffled otherwise). ``show_progress``: a progress bar on
    stderr (default: when stderr is a terminal). ``max_memory``: bytes each worker process may
    allocate (Linux ``RLIMIT_DATA``; default: 3/4 of the machine's memory among the workers):
    a record the parser cannot hold within it is a :class:`VcfParseError` naming the file and
    the record, as htslib grows its line buffer without limit. ``batch``: the store is a batch
    ``add`` adds to a cohort, which reads of its batches only their region index and genotype
    counts (per record and per sample): the packed genotypes and the ``stats`` counts per
    variant chunk are not written (``index`` writes them). Raises :class:`VcfParseError` for input that
    cannot be read (and leaves nothing behind), :class:`OutputError` if ``output`` exists and
    ``force`` is not set, if ``force`` is set but ``output`` is not a VCF Zarr store (or is the
    input, holds it, holds anything but Zarr metadata and chunks, or is the working directory
    or a parent of it), if another conversion to
    ``output`` is running, or if writing fails (one line naming the path). The store is built
    beside ``output`` and swapped in atomically (see :mod:`vcfzarr_sql.converter.output`).

    >>> convert("sample.vcf.gz", "sample.vcz", workers=2)  # doctest: +SKIP
    """
    started = time.perf_counter()
    inputs = [str(input)] if isinstance(input, (str, os.PathLike)) else [str(p) for p in input]
    output_path = Path(output)
    if variants_chunk_size < 1 or samples_chunk_size < 1 or workers < 1:
        raise VcfZarrError("variants_chunk_size, samples_chunk_size and workers must be >= 1")
    check_inputs(inputs)
    refuse_to_replace(inputs, output_path, force)
    for path in inputs:
        if path != STDIN:
            _check_bgzf_eof(Path(path))
    if show_progress is None:
        show_progress = sys.stderr.isatty()
    settings = dict(variants_chunk_size=variants_chunk_size, samples_chunk_size=samples_chunk_size,
                    workers=workers, compressor=None if compressor is None else compressor.get_config(),
                    batch=batch)
    try:
        output_path.parent.mkdir(parents=True, exist_ok=True)
        with output_lock(output_path):
            remove_leftovers(output_path)
            refuse_to_replace(inputs, output_path, force)  # again: it may have changed
            work = Path(tempfile.mkdtemp(prefix=f".{output_path.name}.", suffix=WORK_SUFFIX,
                                         dir=output_path.parent))
            try:
                layout = _build_in(inputs, work, show_progress, settings, max_memory)
                swap_into_place(work / "store", output_path)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    except OSError as err:
        raise os_error(err, output_path) from None
    return ConvertSummary(layout.num_variants, layout.num_samples, _tree_bytes(output_path),
                          time.perf_counter() - started)


def _build_in(inputs: list[str], work: Path, show_progress: bool, settings: dict,
              max_memory: int | None) -> Layout:
    """Build the store in ``work/store`` with a worker pool; its layout."""
    input_path = str(single_input(inputs, work))
    if inputs == [STDIN]:  # spooled to a file: checked as a file is
        _check_bgzf_eof(Path(input_path), "standard input")
    # (forked where safe: this process has imported the converter, so a forked worker starts at
    # once, where a spawned one starts an interpreter, imports, and a resource tracker)
    with WorkerPool(input_path, settings["workers"], work, max_memory, fork=True) as pool:
        progress = _Progress(show_progress, pool)
        try:
            return _build(input_path, work / "store", work, pool, progress, **settings)
        finally:
            progress.close()
