"""bcftools' genotype counts over any sample subset from the packed genotypes
(:mod:`vcfzarr_sql.format.packed_genotypes`): per record, popcounts of the row's 64-bit words
masked to the selected samples' calls, three per word whatever the subset. Records the packed
codes do not hold exactly (not ``summary_gt_packed_exact``) are counted from their decoded
genotypes (:func:`~.genotype_counts.genotype_counts`, the one counting of decoded calls); stores
without the packed arrays (:func:`~vcfzarr_sql.store.packed_arrays.packed_stored`) decode every
record. :func:`packed_class_counts` counts the per-sample call classes of
``vcf_zarr_sample_stats`` likewise (where the stored class counts do not serve: part of a
chunk). :func:`pack_chunk` packs a stored chunk's genotypes (``index``, ``validate``).
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.format import spec
from vcfzarr_sql.format.summaries import CLASSES
from vcfzarr_sql.kernels.masked_popcounts import MASKED_POPCOUNTS
from vcfzarr_sql.query.genotype_counts import AlleleCounts, GenotypeCounts, genotype_counts
from vcfzarr_sql.query.sample_classes import allele_kinds, class_counts
from vcfzarr_sql.store import memory
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.packed_arrays import packed_stored
from vcfzarr_sql.store.source import ChunkSource


def _slot_mask(slots: np.ndarray, row_bytes: int) -> np.ndarray:
    """The words (uint64, as a row of ``row_bytes`` bytes reads) with the low bit of each
    call at ``slots`` set.

    >>> _slot_mask(pg.sample_slots(np.array([0, 2, 33]), 32), 16).tolist()
    [17, 4]
    """
    mask = np.zeros(row_bytes, dtype=np.uint8)
    np.bitwise_or.at(mask, slots // 4, (1 << (2 * (slots % 4))).astype(np.uint8))
    return mask.view(np.uint64)


def _bit_counts(words: np.ndarray, mask: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """(3, records) int64: per row of ``words`` (records, words), the selected calls (``mask``)
    whose low bit is set, whose high bit is set, and whose both bits are set: in-place
    operations over slices that stay in the cache (in ``scratch``, :func:`_scratch` of the
    width: one buffer for a batch's chunks, no page faults), the three popcounts in one
    call."""
    records, width = words.shape
    counts = np.empty((3, records), dtype=np.int64)
    step = _slice_rows(width)
    ones = np.empty((3, min(step, records), width), dtype=np.uint8)
    high_mask = mask << np.uint64(1)
    for start in range(0, records, step):
        part = words[start : start + step]
        n = len(part)
        low, high, both = scratch[0, :n], scratch[1, :n], scratch[2, :n]
        np.bitwise_and(part, mask, out=low)
        np.bitwise_and(part, high_mask, out=high)
        np.right_shift(high, np.uint64(1), out=high)
        np.bitwise_and(low, high, out=both)
        np.bitwise_count(scratch[:, :n], out=ones[:, :n])
        # (each word holds at most 32 selected calls: uint16 holds the sum of 1000 words)
        counts[:, start : start + n] = ones[:, :n].sum(axis=2, dtype=_SUM_DTYPE[width > _UINT16_WORDS])
    return counts


def _slice_rows(width: int) -> int:
    """The rows of a slice of :func:`_bit_counts` over rows of ``width`` words."""
    return max(1, _SLICE_WORDS // max(width, 1))


def _scratch(width: int) -> np.ndarray:
    """Scratch words for :func:`_bit_counts` of rows of ``width`` words (in Arrow's pool,
    whose freed pages are reused)."""
    rows = _slice_rows(width)
    return memory.empty(3 * rows * width, np.uint64).reshape(3, rows, width)


#: Words a slice of :func:`_bit_counts` covers (256 KB).
_SLICE_WORDS = 1 << 15
#: Words per row up to which a row's popcounts are added up in uint16 (2x faster than int64).
_UINT16_WORDS = 1000
_SUM_DTYPE = {False: np.uint16, True: np.int64}


def subset_code_counts(blocks: BatchBlocks, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per record of the batch: the calls of ``samples`` (sorted sample indexes) its packed
    rows code het, hom-alt and missing (int64 each), read a chunk at a time (only the sample
    chunks that hold them, each counted as it is decompressed: no joined copy of the batch),
    by the compiled kernel (:mod:`vcfzarr_sql.kernels.masked_popcounts`) or in numpy."""
    store = blocks.store
    info = store.array_info(pg.PACKED)
    size = store.samples_chunk_size
    chunk_bytes = info.chunks[1]
    masks = _chunk_masks(np.asarray(samples, dtype=np.int64).tobytes(), size, chunk_bytes, info.shape[1])
    records = [info.chunk_bounds((chunk, 0))[0].stop for chunk in blocks.chunks]
    words = sum(len(mask) for _, mask in masks) * sum(records)
    kernel = MASKED_POPCOUNTS.compiled(work=_SAVED_PER_WORD * words)
    counts = np.zeros((3, sum(records)), dtype=np.int64)
    scratch = {} if kernel is not None else {len(mask): _scratch(len(mask)) for _, mask in masks}
    start = 0
    for chunk, rows in zip(blocks.chunks, records):
        found = counts[:, start : start + rows]
        start += rows
        for column, mask in masks:
            chunk_words = blocks.read_chunk(pg.PACKED, (chunk, column)).view(np.uint64)
            if kernel is not None:
                if chunk_words.shape != (rows, len(mask)):  # (the kernel checks no bounds)
                    raise StoreError(f"{store.path}: {pg.PACKED} chunk {(chunk, column)} has shape "
                                     f"{chunk_words.shape} words, not {(rows, len(mask))}")
                kernel(chunk_words, mask, found)
            else:
                found += _bit_counts(chunk_words, mask, scratch[len(mask)])
    low_bits, high_bits, both = counts
    return low_bits - both, high_bits - both, both


#: What the compiled popcounts save per 64-bit word of :func:`subset_code_counts`, in ns
#: (:mod:`vcfzarr_sql.kernels`' unit of work): numpy's passes take ~10, the kernel ~0.7
#: (docs/benchmarks.md, stop 37).
_SAVED_PER_WORD = 10


@lru_cache(maxsize=8)
def _chunk_masks(samples: bytes, samples_chunk_size: int, chunk_bytes: int,
                 row_bytes: int) -> list[tuple[int, np.ndarray]]:
    """(packed chunk column, :func:`_slot_mask` of its bytes) of each chunk column that
    holds one of ``samples`` (int64 sample indexes as bytes): made once per subset (a query's
    batches share it)."""
    indexes = np.frombuffer(samples, dtype=np.int64)
    slots = pg.sample_slots(indexes, samples_chunk_size)
    column = slots // (4 * chunk_bytes)
    masks = []
    for c in np.unique(column).tolist():
        width = min(chunk_bytes, row_bytes - c * chunk_bytes)
        mine = slots[column == c] - c * 4 * chunk_bytes
        masks.append((c, _slot_mask(mine, width)))
    return masks


def packed_counts(blocks: BatchBlocks, num_alleles: int) -> GenotypeCounts | None:
    """The batch's :class:`GenotypeCounts` for its samples over at least ``num_alleles``
    alleles: exact records from the packed codes, the others from their genotypes; None when
    the store has no packed genotypes laid out as written."""
    store = blocks.store
    if not packed_stored(store):
        return None
    exact = blocks.read(pg.PACKED_EXACT).astype(bool)
    samples = np.arange(store.num_samples) if blocks.samples is None else blocks.samples
    het, hom_alt, missing = subset_code_counts(blocks, samples)
    n = len(samples)
    width = max(num_alleles, 2)
    shape = (len(exact), width)
    het_counts, hom_counts = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)
    het_counts[:, 0] = het_counts[:, 1] = het
    hom_counts[:, 0] = 2 * (n - het - hom_alt - missing)
    hom_counts[:, 1] = 2 * hom_alt
    alleles = AlleleCounts(het_counts, hom_counts, np.zeros(shape, dtype=np.int64), n - missing)
    counts = GenotypeCounts(alleles, missing, n)
    if exact.all():
        return counts
    return _with_decoded(blocks, counts, np.flatnonzero(~exact), width)


def _with_decoded(blocks: BatchBlocks, counts: GenotypeCounts, rows: np.ndarray,
                  width: int) -> GenotypeCounts:
    """``counts`` with records ``rows`` counted from their decoded genotypes."""
    store = blocks.store
    genotypes = blocks.read(store.format_fields["GT"].array)[rows]
    phased = (blocks.read(spec.CALL_GENOTYPE_PHASED)[rows]
              if store.has_array(spec.CALL_GENOTYPE_PHASED) else None)
    decoded = genotype_counts(genotypes, phased, width)
    width = max(width, decoded.alleles.het.shape[1])
    het, hom, hemi = (_widened(getattr(counts.alleles, name), width) for name in ("het", "hom", "hemi"))
    het[rows], hom[rows], hemi[rows] = (_widened(getattr(decoded.alleles, name), width)
                                        for name in ("het", "hom", "hemi"))
    called, missing = counts.alleles.called.copy(), counts.missing.copy()
    called[rows], missing[rows] = decoded.alleles.called, decoded.missing
    return GenotypeCounts(AlleleCounts(het, hom, hemi, called), missing, counts.samples)


def _widened(values: np.ndarray, width: int) -> np.ndarray:
    """A copy of per-allele ``values`` with ``width`` columns (the extra ones 0)."""
    return np.pad(values, ((0, 0), (0, width - values.shape[1])))


def pack_chunk(source: ChunkSource, gt_array: str, chunk_index: int) -> tuple[np.ndarray, np.ndarray]:
    """The packed rows and exact flags of variant chunk ``chunk_index`` of ``source``, from its
    genotypes (array ``gt_array``) read one sample chunk at a time."""
    store = source.store
    size, samples = store.samples_chunk_size, store.num_samples
    chunks = (BatchBlocks(source, chunk_index, np.arange(lo, min(lo + size, samples))).read(gt_array)
              for lo in range(0, max(samples, 1), size))
    return pg.pack_chunks(chunks, samples, size)


def packed_class_counts(blocks: BatchBlocks, keep: np.ndarray | None) -> np.ndarray | None:
    """The call classes of ``vcf_zarr_sample_stats`` (:data:`~vcfzarr_sql.format.summaries.CLASSES`)
    per sample of the batch, (classes, samples) int64, over its records (those ``keep`` marks,
    when given): exact records from their codes (0/0 hom-ref, 0/1 het, 1/1 hom-alt, ./.
    missing; het and hom-alt not counted where the ALT is neither a SNP nor ref-like, bcftools'
    gate), the others decoded (:func:`~.sample_classes.class_counts`); None when the store has
    no packed genotypes laid out as written."""
    store = blocks.store
    if not packed_stored(store):
        return None
    rows = blocks.read(pg.PACKED)
    exact = blocks.read(pg.PACKED_EXACT).astype(bool)
    kinds = allele_kinds(blocks.read(spec.VARIANT_ALLELE))
    if keep is not None:
        rows, exact, kinds = rows[keep], exact[keep], kinds[keep]
    samples = np.arange(store.num_samples) if blocks.samples is None else blocks.samples
    counts = np.zeros((len(CLASSES), len(samples)), dtype=np.int64)
    if not exact.all():
        genotypes = blocks.read(store.format_fields["GT"].array)
        genotypes = genotypes if keep is None else genotypes[keep]
        counts += class_counts(genotypes[~exact], kinds[~exact])
        rows, kinds = rows[exact], kinds[exact]
    codes = np.take(_byte_codes(), rows.astype(np.intp)).view(np.uint8).reshape(len(rows), 4 * rows.shape[1])
    codes = np.take(codes, pg.sample_slots(samples, store.samples_chunk_size), axis=1)
    gated = kinds[:, 1] == _OTHER if kinds.shape[1] > 1 else np.zeros(len(rows), dtype=bool)
    ungated = codes[~gated]
    for k, code in ((0, pg.HOM_REF), (1, pg.HOM_ALT), (2, pg.HET)):  # (n_hom_ref, n_hom_alt, n_het)
        counts[k] += (ungated == code).sum(axis=0, dtype=np.int64)
    counts[0] += (codes[gated] == pg.HOM_REF).sum(axis=0, dtype=np.int64)
    counts[len(CLASSES) - 1] += (codes == pg.MISSING).sum(axis=0, dtype=np.int64)
    return counts


#: :func:`~.sample_classes.allele_kinds`' kind of an ALT that is neither a SNP nor ref-like.
_OTHER = 2


@cache
def _byte_codes() -> np.ndarray:
    """(256,) uint32: the four codes (uint8) of each byte's calls, in call order in memory."""
    return np.ascontiguousarray(pg.byte_codes()).view(np.uint32).reshape(256)
