"""Decode one chunk of a VCF Zarr store into an Arrow record batch of the requested columns.

``decode_variants`` gives the ``variants`` rows of a variant chunk; ``decode_calls`` the
``calls`` rows of a (variant chunk, sample chunk) pair, variant-major (all samples of the
first record, then the next record). Only the arrays the requested columns need are read,
each once. The batch has exactly the types of :mod:`vcfzarr_sql.query.schema` (the VCF
definitions in its field metadata stay on the dataset's schema, not on every batch).

What the values mean (bcftools' view of the record):

* ``contig`` is the contig name; ``pos`` the 1-based POS; ``end`` = POS + rlen - 1.
* ``id`` is NULL for ``.``; ``qual`` is NULL for ``.``; ``alt`` is empty for ``.`` (no ALT);
  ``filters`` lists the FILTER names set, NULL for ``.`` (no filter applied).
* INFO/FORMAT Number=1 values are scalars, NULL when missing (``.``) or absent. Other
  Numbers are lists: padding is trimmed, missing elements are NULL elements (``1,.`` is
  ``[1, NULL]``, ``.,.`` is ``[NULL, NULL]``, as bcftools prints them), and ``.`` or an
  absent value is NULL. A store that cannot tell ``.,.`` from ``.`` (bio2zarr's: see
  ``VczStore.spells_missing_vectors``) gives NULL for any list with no present element.
  Flags are ``true``/``false``, never NULL.
* ``fmt_GT`` is the list of allele indexes; a missing allele is a NULL element (``./.`` is
  ``[NULL, NULL]``, ``./1`` is ``[NULL, 1]``); mixed-ploidy padding is trimmed (haploid ``0``
  is ``[0]``); ``.`` (one missing allele) is NULL. ``fmt_GT_phased`` is the stored phasing
  (false when the store has none). ``fmt_GT_<k>`` is ``fmt_GT[k]`` as a plain integer.

``source`` is a :class:`~vcfzarr_sql.store.source.ChunkSource` (a store, or a source that
counts or fetches ahead): chunks are read with its ``read_chunk`` (string arrays whose codec
decodes straight to Arrow with its ``read_chunk_strings``), metadata from its ``store``.

>>> import vcfzarr_sql
>>> store = vcfzarr_sql.open_store("sample.zarr")                          # doctest: +SKIP
>>> decode_variants(store, 0, ["contig", "pos", "fmt_GT"]).num_rows       # doctest: +SKIP
5
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from vcfzarr_sql.errors import QueryError, StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.query import arrays, genotype_counts, genotype_stats, schema
from vcfzarr_sql.query.packed_counts import packed_counts
from vcfzarr_sql.query.record_spans import chunk_records as _rows
from vcfzarr_sql.query.record_spans import contig_ids, record_ends
from vcfzarr_sql.query.record_spans import positions as _positions
from vcfzarr_sql.query.stored_counts import stored_counts, stored_hwe, stored_num_alleles
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.fields import FieldInfo
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore


def decode_variants(
    source: ChunkSource,
    chunk_index: int,
    columns: Sequence[str],
    samples: np.ndarray | None = None,
    chunk_count: int = 1,
    sample_order: np.ndarray | None = None,
    rows: slice | None = None,
) -> pa.RecordBatch:
    """The ``variants`` rows of variant chunk ``chunk_index`` (and the next ``chunk_count - 1``
    chunks), with ``columns`` in that order.

    ``samples`` are the sorted indexes of the samples decoded (None: all): the ``gt_``
    columns count each once. The ``fmt_`` lists hold them in ``sample_order`` (positions
    among them, repeats allowed; None: in order). ``rows``: only those records of the chunks
    (a slice with a step of 1; None: all): the chunks are decoded whole, the Arrow columns
    built for those records alone. Not with ``gt_`` columns (they count whole chunks).
    """
    blocks = _Blocks(source, chunk_index, samples, chunk_count)
    rows_total = _rows(blocks.store, blocks.chunks)
    assert rows is None or not any(name in genotype_stats.COLUMNS for name in columns)
    blocks.rows = rows
    count = len(range(rows_total)[rows]) if rows is not None else rows_total
    summaries = _summaries(blocks)
    listed = _listed_calls(count, blocks.num_samples, sample_order)
    width = blocks.num_samples if sample_order is None else len(sample_order)
    out = []
    for name in columns:
        if name.startswith(schema.FORMAT_COLUMN_PREFIX):
            calls = _call_array(blocks, name)
            out.append(arrays.fixed_lists(calls if listed is None else calls.take(listed), count, width))
        elif name in genotype_stats.COLUMNS:
            out.append(summaries.column(name))
        else:
            out.append(_variant_array(blocks, name))
    return _batch(columns, out, count)


def decode_calls(
    source: ChunkSource,
    chunk_index: int,
    sample_chunk_index: int,
    columns: Sequence[str],
    samples: np.ndarray | None = None,
) -> pa.RecordBatch:
    """The ``calls`` rows of variant chunk ``chunk_index`` and sample chunk
    ``sample_chunk_index``, with ``columns`` in that order.

    ``samples`` are the sorted indexes of the samples to keep (None: all); those outside the
    sample chunk are ignored.
    """
    store = source.store
    lo = sample_chunk_index * store.samples_chunk_size
    hi = min(lo + store.samples_chunk_size, store.num_samples)
    in_chunk = np.arange(lo, hi) if samples is None else _within(np.asarray(samples), lo, hi)
    blocks = _Blocks(source, chunk_index, in_chunk)
    rows = _rows(store, blocks.chunks)
    out = []
    for name in columns:
        if name == schema.SAMPLE_ID:
            out.append(_sample_ids(store, in_chunk, rows))
        elif name.startswith(schema.FORMAT_COLUMN_PREFIX):
            out.append(_call_array(blocks, name))
        else:
            out.append(arrays.repeat_rows(_variant_array(blocks, name), len(in_chunk)))
    return _batch(columns, out, rows * len(in_chunk))


class _Blocks(BatchBlocks):
    """The blocks of one batch; string blocks (:meth:`values`) as Arrow where the codec can."""

    def __init__(
        self, source: ChunkSource, chunk_index: int, samples: np.ndarray | None, chunk_count: int = 1
    ):
        super().__init__(source, chunk_index, samples, chunk_count)
        self._strings: dict[str, arrays.StringBlock] = {}
        self._positions: _StringPositions | None = None

    def values(self, name: str) -> np.ndarray | arrays.StringBlock:
        """The block of array ``name``: numpy, or a StringBlock for strings (read once)."""
        if self.store.array_info(name).dtype.kind not in "OUS":
            return self.read(name)
        return self.strings(name)

    def strings(self, name: str) -> arrays.StringBlock:
        """The block of string array ``name`` as a StringBlock (read once)."""
        block = self._strings.get(name)
        if block is None:
            block = self._strings[name] = self._string_block(name)
        return block

    def _string_block(self, name: str) -> arrays.StringBlock:
        if not self.store.array_info(name).codec.arrow_strings:
            return arrays.StringBlock.of(self.read(name))
        if self._positions is None:
            self._positions = _StringPositions(self.source, self.chunk_index, self.samples, len(self.chunks))
            self._positions.rows = self.rows
        positions = self._positions.read(name)
        return arrays.StringBlock(self._positions.strings(name), positions)


class _StringPositions(BatchBlocks):
    """The blocks of a batch's string arrays as positions: the chunks are read as Arrow
    (``read_chunk_strings``), and a chunk stands for the positions of its strings in
    ``strings(name)``, so that a block's positions are assembled exactly as its values would
    be (chunks joined, samples taken)."""

    def __init__(
        self, source: ChunkSource, chunk_index: int, samples: np.ndarray | None, chunk_count: int
    ):
        super().__init__(source, chunk_index, samples, chunk_count)
        self._chunks: dict[str, list[pa.Array]] = {}

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        """The positions of the strings of the chunk (read as Arrow) in ``strings(name)``."""
        strings = self.source.read_chunk_strings(name, chunk)
        chunks = self._chunks.setdefault(name, [])
        start = sum(len(c) for c in chunks)
        chunks.append(strings)
        shape = tuple(s.stop for s in self.store.array_info(name).chunk_bounds(chunk))
        return np.arange(start, start + len(strings)).reshape(shape)

    def strings(self, name: str) -> pa.Array:
        """The strings of every chunk of ``name`` read so far, in reading order."""
        chunks = self._chunks[name]
        if len(chunks) > 1:
            self._chunks[name] = chunks = [pa.concat_arrays(chunks)]
        return chunks[0]


def _listed_calls(rows: int, num_samples: int, sample_order: np.ndarray | None) -> pa.Array | None:
    """Where, among ``rows * num_samples`` calls (variant-major), each call of the ``fmt_``
    lists is when they hold the samples in ``sample_order`` (None: as they are).

    >>> _listed_calls(2, 3, np.array([2, 0, 2])).to_pylist()
    [2, 0, 2, 5, 3, 5]
    """
    if sample_order is None:
        return None
    starts = np.arange(rows, dtype=np.int64)[:, None] * num_samples
    return pa.array((starts + np.asarray(sample_order, dtype=np.int64)[None, :]).reshape(-1))


def _within(samples: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return samples[(samples >= lo) & (samples < hi)]


def _batch(columns: Sequence[str], out: list[pa.Array], rows: int) -> pa.RecordBatch:
    """The batch of ``out``; its types are the schema's (field metadata is the dataset's)."""
    if not columns:
        return arrays.rows_only(rows)
    return pa.RecordBatch.from_arrays(out, names=list(columns))


# Variant columns: one value per record.


def _contig(blocks: _Blocks) -> pa.Array:
    ids = contig_ids(blocks)
    contigs = blocks.store.contigs
    lo, hi = (int(ids.min()), int(ids.max())) if len(ids) else (0, 0)
    if len(ids) and not 0 <= lo <= hi < len(contigs):
        raise StoreError(f"{blocks.store.path}: variant_contig in variant chunks "
                         f"{blocks.chunks.start}-{blocks.chunks.stop - 1} names a contig the store "
                         f"does not have (of {len(contigs)})")
    indices: np.ndarray
    if len(ids) and lo == hi:  # the usual chunk: one contig
        used, indices = ids[:1], np.zeros(len(ids), dtype=np.int32)
    else:
        used, indices = np.unique(ids, return_inverse=True)
    names = [contigs[i] for i in used.tolist()]
    return arrays.dictionary_array(indices, arrays.string_array(names))


def _pos(blocks: _Blocks) -> pa.Array:
    return arrays.elements_array(_positions(blocks), None, pa.int64())


def _end(blocks: _Blocks) -> pa.Array:
    return arrays.elements_array(record_ends(blocks), None, pa.int64())


def _id(blocks: _Blocks) -> pa.Array:
    return arrays.scalar_array(blocks.strings(spec.VARIANT_ID), pa.string())


def _ref(blocks: _Blocks) -> pa.Array:
    return arrays.scalar_array(blocks.strings(spec.VARIANT_ALLELE)[:, 0], pa.string())


def _alt(blocks: _Blocks) -> pa.Array:
    alts = blocks.strings(spec.VARIANT_ALLELE)[:, 1:]
    return arrays.list_array(alts, pa.string(), arrays.NEVER_NULL)


def _qual(blocks: _Blocks) -> pa.Array:
    return arrays.scalar_array(blocks.read(spec.VARIANT_QUALITY), pa.float32())


def _filters(blocks: _Blocks) -> pa.Array:
    applied = blocks.read(spec.VARIANT_FILTER)
    which = np.nonzero(applied)[1]
    names = np.asarray(blocks.store.filters, dtype=object)[which]
    lengths = applied.sum(axis=1)
    return arrays.lists_array(pa.array(names, type=pa.string()), lengths, lengths > 0)


_FIXED: dict[str, Callable[[_Blocks], pa.Array]] = {
    "contig": _contig,
    "pos": _pos,
    "end": _end,
    "id": _id,
    "ref": _ref,
    "alt": _alt,
    "qual": _qual,
    "filters": _filters,
}


def _variant_array(blocks: _Blocks, name: str) -> pa.Array:
    build = _FIXED.get(name)
    if build is not None:
        return build(blocks)
    field = _field(blocks.store.info_fields, name, schema.INFO_COLUMN_PREFIX)
    return _field_values(blocks, field, cell_axes=1)


# FORMAT columns: one value per call, variant-major.


def _call_array(blocks: _Blocks, name: str) -> pa.Array:
    fields = blocks.store.format_fields
    derived = schema.genotype_columns(fields)
    if name in derived:
        allele = derived[name]
        if allele is None:
            return _phased(blocks)
        gt = fields[schema.GT]
        return arrays.allele_array(_genotypes(blocks, gt), allele, schema.value_type(gt))
    field = _field(fields, name, schema.FORMAT_COLUMN_PREFIX)
    if field.name == schema.GT:
        return arrays.genotype_array(_genotypes(blocks, field), schema.value_type(field))
    return _field_values(blocks, field, cell_axes=2)


def _genotypes(blocks: _Blocks, gt: FieldInfo) -> np.ndarray:
    """The batch's genotypes, one row of alleles per call (shape (calls, ploidy))."""
    values = blocks.read(gt.array)
    return values.reshape(-1, values.shape[-1])


def _summaries(blocks: _Blocks) -> genotype_stats.ChunkSummaries:
    """The ``gt_`` columns of the batch: from the counts stored in the store when it has them
    and the batch covers all samples, else from its packed genotypes when it has them, else
    from its genotypes, when first asked for."""
    fields = blocks.store.format_fields
    stored: list[genotype_counts.GenotypeCounts | None] = []

    def stored_or_none() -> genotype_counts.GenotypeCounts | None:
        if not stored:
            stored.append(stored_counts(blocks))
        return stored[0]

    def num_alleles() -> np.ndarray:
        found = stored_num_alleles(blocks)
        if found is not None:
            return found
        alleles = blocks.strings(spec.VARIANT_ALLELE)
        return alleles.shape[1] - alleles.fill.sum(axis=1)

    packed: list[genotype_counts.GenotypeCounts | None] = []

    def packed_or_none(width: int) -> genotype_counts.GenotypeCounts | None:
        """The batch's counts from its packed genotypes, when the store has them."""
        if not packed:
            packed.append(packed_counts(blocks, width))
        found = packed[0]
        return None if found is None else found.widened(width)

    computed: list[genotype_counts.CallCounts] = []

    def from_genotypes(width: int) -> genotype_counts.CallCounts:
        """The batch's counts from its genotypes (one table for the counts and F_MISSING)."""
        if not computed:
            if schema.GT not in fields:
                raise QueryError("the gt_ columns need genotypes (FORMAT/GT); the store has none")
            computed.append(genotype_counts.CallCounts(blocks.read(fields[schema.GT].array), width))
        return computed[0]

    def counts(width: int) -> genotype_counts.AlleleCounts:
        found = stored_or_none() or packed_or_none(width)
        return from_genotypes(width).alleles if found is None else found.alleles

    def missing() -> np.ndarray:
        found = stored_or_none() or packed_or_none(1)
        if found is not None:
            return found.missing
        phased = (blocks.read(spec.CALL_GENOTYPE_PHASED)
                  if blocks.store.has_array(spec.CALL_GENOTYPE_PHASED) else None)
        return from_genotypes(1).missing(phased)

    def hwe() -> np.ndarray | None:
        return None if stored_or_none() is None else stored_hwe(blocks)

    return genotype_stats.ChunkSummaries(num_alleles, counts, missing, blocks.num_samples, hwe)


def _phased(blocks: _Blocks) -> pa.Array:
    if blocks.store.has_array(spec.CALL_GENOTYPE_PHASED):
        phased = blocks.read(spec.CALL_GENOTYPE_PHASED).reshape(-1)
    else:
        rows = len(blocks.kept(np.arange(_rows(blocks.store, blocks.chunks))))
        phased = np.zeros(rows * blocks.num_samples, dtype=bool)
    return arrays.scalar_array(phased, pa.bool_())


def _sample_ids(store: VczStore, samples: np.ndarray, rows: int) -> pa.Array:
    names = pa.array(np.asarray(store.samples, dtype=object)[samples], type=pa.string())
    return arrays.tiled_dictionary(names, rows)


# INFO and FORMAT fields.


def _field(fields: dict[str, FieldInfo], column: str, prefix: str) -> FieldInfo:
    name = schema.field_of_column(fields, prefix, column)
    if name is None:
        raise QueryError(f"unknown column {column!r}")
    return fields[name]


def _field_values(blocks: _Blocks, field: FieldInfo, *, cell_axes: int) -> pa.Array:
    """One value per cell (record for INFO, call for FORMAT) of ``field``, as Arrow (its
    mask array, when the store has one, says which elements hold no value)."""
    values = blocks.values(field.array)
    cells = int(np.prod(values.shape[:cell_axes]))
    shape = (cells, int(np.prod(values.shape[cell_axes:])))
    values = values.reshape(*shape)
    mask = getattr(field, "mask", None)
    no_value = None if mask is None else blocks.read(mask).reshape(shape)
    type_ = schema.value_type(field)
    if schema.is_scalar(field):
        return arrays.scalar_array(values[:, 0], type_, None if no_value is None else no_value[:, 0])
    # ``.`` and absent are NULL; ``.,.`` a list of NULLs where the store keeps it apart
    rows = arrays.NULL_IF_LONE_MISSING if blocks.store.spells_missing_vectors else arrays.NULL_IF_NO_VALUE
    return arrays.list_array(values, type_, rows, no_value=no_value)
