"""Encode one variant chunk of the store from spilled blocks (in a worker process).

A variant chunk's records may come from several blocks (of one or more partitions); each
block column is cut to the chunk's rows, padded to the final width, cast to the final dtype,
split into sample chunks, compressed and written. The chunk's summaries
(:mod:`vcfzarr_sql.format.summaries`) are computed from its genotypes here, in memory, so
that nothing is read back from the store. Returns the chunk's region index rows and summaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.converter import columns as col
from vcfzarr_sql.converter.arrays import ArraySpec, fill_value
from vcfzarr_sql.converter.masks import implied_mask
from vcfzarr_sql.converter.spill import read_block
from vcfzarr_sql.converter.workers import add_progress
from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.format import packed_genotypes, spec
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.format.diploid_calls import DiploidCalls, diploid_calls
from vcfzarr_sql.format.region_index import chunk_region_index
from vcfzarr_sql.query.call_stats import ALLELE_DEPTH, DEPTH, summarise_call_stats
from vcfzarr_sql.query.summarise import ChunkSummary, sample_chunks, summarise
from vcfzarr_sql.store.summary_arrays import PER_RECORD
from vcfzarr_sql.store.writer import ArrayLayout, write_rows


@dataclass(frozen=True)
class Piece:
    """Rows ``[start, stop)`` of the spilled block at ``path``; ``last``: no later chunk reads
    the block."""

    path: str
    start: int
    stop: int
    last: bool = True


def _padded(values: np.ndarray, array: ArraySpec) -> np.ndarray:
    if array.squeeze:
        return values[..., 0]
    width = array.shape[-1]
    if not array.has_value_dim or values.shape[-1] == width:
        return values
    out = np.full(values.shape[:-1] + (width,), fill_value(array.kind), dtype=values.dtype)
    out[..., : values.shape[-1]] = values
    return out


def _filter_matrix(names: np.ndarray, filter_ids: dict[str, int]) -> np.ndarray:
    """``(records, filters)``: which filters each record's FILTER text (``;``-separated) names
    (each distinct text split once: a file has few).

    >>> _filter_matrix(np.array(["PASS", "", "q10;s50", "PASS"], dtype=object), {"PASS": 0, "q10": 1, "s50": 2}).tolist()
    [[True, False, False], [False, False, False], [False, True, True], [True, False, False]]
    """
    texts = list(dict.fromkeys(names.tolist()))
    table = np.zeros((len(texts), len(filter_ids)), dtype=bool)
    for k, text in enumerate(texts):
        for name in text.split(";") if text else ():
            table[k, filter_ids[name]] = True
    index = {text: k for k, text in enumerate(texts)}
    return table[np.fromiter(map(index.__getitem__, names.tolist()), dtype=np.intp, count=len(names))]


def _values(array: ArraySpec, column: np.ndarray, contig_ids: dict[str, int],
            filter_ids: dict[str, int]) -> np.ndarray:
    if array.kind == "contig":
        return np.array([contig_ids[c] for c in column], dtype=array.dtype)
    if array.kind == "filter":
        return _filter_matrix(column, filter_ids)
    if array.kind == "char":
        return _padded(column, array).astype("S1")
    return _padded(column, array).astype(array.dtype, copy=False)


def _absent(array: ArraySpec, rows: int) -> np.ndarray:
    """The column of a field that no record of a block has: htslib declared it (an undeclared
    key) only at a later record, or while parsing another partition. One missing value per
    record (or call), as for an absent field; for a Flag or a key-use column, absent."""
    shape = (rows,) + ((array.shape[1],) if array.per_call else ()) + (
        (1,) if array.has_value_dim or array.squeeze else ())
    if array.kind == "bool":
        return np.zeros(shape, dtype=bool)
    if array.kind == "mask":
        return np.ones(shape, dtype=bool)
    kind = "str" if array.kind == "char" else array.kind
    return np.full(shape, col.missing_value(kind), dtype=col.numpy_dtype(kind))


def _column(block: dict[str, np.ndarray], array: ArraySpec) -> np.ndarray:
    """The block column of ``array``; for a mask a block did not need, the one its values imply;
    for a field the block has no column of, :func:`_absent`."""
    if array.column is None:
        raise VcfZarrError(f"array {array.name} is not made of block columns")
    if array.column in block:
        return block[array.column]
    values = array.column[len(spec.MASK_PREFIX) :] if array.kind == "mask" else None
    if values is not None and values in block:
        return implied_mask(block[values])
    return _absent(array, len(block[col.CONTIG]))


def _summary(arrays: dict[str, ArraySpec], values: dict[str, np.ndarray],
             calls: DiploidCalls | None) -> ChunkSummary:
    """The summary arrays' blocks of the chunk, from its alleles and genotypes in memory (and
    their ``calls`` that are not ``0/0``)."""
    genotypes, phased = values[spec.CALL_GENOTYPE], values.get(spec.CALL_GENOTYPE_PHASED)
    samples_chunk, num_samples = arrays[spec.CALL_GENOTYPE].chunks[1], genotypes.shape[1]
    sample_calls = (
        (genotypes[:, lo : lo + samples_chunk],
         None if phased is None else phased[:, lo : lo + samples_chunk])
        for lo in sample_chunks(samples_chunk, num_samples)
    )
    variants_chunk = arrays[spec.VARIANT_ALLELE].chunks[0]
    return summarise(values[spec.VARIANT_ALLELE], sample_calls, num_samples, variants_chunk, calls)


def _write_call_stats(root: str, chunk_index: int, layouts: dict[str, ArrayLayout],
                      values: dict[str, np.ndarray], calls: DiploidCalls | None) -> None:
    """Write the chunk's row of each array of ``layouts`` (:mod:`vcfzarr_sql.query.call_stats`),
    counted from its alleles, genotypes (and their ``calls`` that are not ``0/0``), and
    integer FORMAT/DP and AD in ``values``."""
    stats = summarise_call_stats(values[spec.VARIANT_ALLELE], values[spec.CALL_GENOTYPE],
                                 values.get(DEPTH), values.get(ALLELE_DEPTH),
                                 layouts[sc.HWE_GENOTYPE_COUNTS].shape[1], calls)
    for name, layout in layouts.items():
        write_rows(root, layout, chunk_index, stats.block(name))


def _write_packed(
    root: str, packed: dict[str, ArrayLayout], chunk_index: int, genotypes: np.ndarray,
    samples_chunk: int, calls: DiploidCalls | None,
) -> None:
    """Variant chunk ``chunk_index`` of the packed genotype arrays, from its genotypes (and
    their ``calls`` that are not ``0/0``)."""
    rows, exact = packed_genotypes.pack_rows(genotypes, samples_chunk, calls)
    write_rows(root, packed[packed_genotypes.PACKED], chunk_index, rows)
    write_rows(root, packed[packed_genotypes.PACKED_EXACT], chunk_index, exact)


def encode_variant_chunk(
    root: str,
    chunk_index: int,
    pieces: Sequence[Piece],
    arrays: Sequence[ArraySpec],
    contig_ids: dict[str, int],
    filter_ids: dict[str, int],
    class_counts: ArrayLayout | None,
    call_stats: dict[str, ArrayLayout] | None = None,
    packed: dict[str, ArrayLayout] | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Write variant chunk ``chunk_index`` of every array and, when the store has genotypes,
    its row of ``class_counts`` (``summary_sample_class_counts``) and of the ``call_stats``
    arrays (:mod:`vcfzarr_sql.query.call_stats`; None or empty: none). Returns the chunk's region
    index rows and its blocks of the per-record summary arrays (:data:`PER_RECORD`, none
    without genotypes), computed from the genotypes before they are compressed. Also writes its
    rows of the ``packed`` genotype arrays (:mod:`vcfzarr_sql.format.packed_genotypes`)."""
    blocks: dict[str, dict[str, np.ndarray]] = {}
    for piece in pieces:
        if piece.path not in blocks:
            blocks[piece.path] = read_block(piece.path, release=piece.last)
    kept = {spec.VARIANT_CONTIG, spec.VARIANT_POSITION, spec.VARIANT_LENGTH}
    summarised = {spec.VARIANT_ALLELE, spec.CALL_GENOTYPE, spec.CALL_GENOTYPE_PHASED}
    by_name, for_summary, for_stats = {}, {}, {}
    # the arrays the call stats count (written once all are here: then the genotypes can go)
    counted = {a.name for a in arrays if call_stats and (
        a.name in (spec.VARIANT_ALLELE, spec.CALL_GENOTYPE)
        or (a.name in (DEPTH, ALLELE_DEPTH) and a.kind == "int"))}
    summary = None
    calls: DiploidCalls | None = None  # the genotypes' calls that are not 0/0, found once for every count
    for array in arrays:
        parts = [
            _values(array, _column(blocks[p.path], array)[p.start : p.stop], contig_ids, filter_ids)
            for p in pieces
        ]
        values = parts[0] if len(parts) == 1 else np.concatenate(parts)
        write_rows(root, array, chunk_index, values)
        if array.name == spec.CALL_GENOTYPE and (call_stats or packed is not None or class_counts is not None):
            calls = diploid_calls(values)
        if array.name in kept:
            by_name[array.name] = values
        if array.name in counted:
            for_stats[array.name] = values
            if call_stats and len(for_stats) == len(counted):
                _write_call_stats(root, chunk_index, call_stats, for_stats, calls)
                for_stats.clear()
        if packed is not None and array.name == spec.CALL_GENOTYPE:
            _write_packed(root, packed, chunk_index, values, array.chunks[1], calls)
        if class_counts is not None and array.name in summarised:
            for_summary[array.name] = values
            if len(for_summary) == len(summarised):  # (then the genotypes can go)
                summary = _summary({a.name: a for a in arrays}, for_summary, calls)
                for_summary.clear()
    per_record = {}
    if summary is not None and class_counts is not None:
        write_rows(root, class_counts, chunk_index, summary.block(class_counts.name))
        per_record = {name: summary.block(name) for name in PER_RECORD}
    add_progress(1)
    index = chunk_region_index(
        chunk_index,
        by_name[spec.VARIANT_CONTIG],
        by_name[spec.VARIANT_POSITION],
        by_name[spec.VARIANT_LENGTH],
        dtype=by_name[spec.VARIANT_POSITION].dtype,
    )
    return index, per_record
