"""The records and genotype calls of one variant chunk that an export writes.

Read from the stored arrays of the chunk (the selected samples only, from only the sample
chunks that hold them), the selection's rows kept, the samples in output order.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore

#: every (first, second) int8 allele pair, by its two bytes read as a little-endian uint16
#: (:meth:`ChunkCalls.pair_keys`): a table of a value of each pair turns a chunk's calls into
#: that value in one gather, instead of several passes over the calls
PAIR_FIRST = np.arange(1 << 16, dtype=np.uint16).astype("<u2").view(np.int8)[0::2]
PAIR_SECOND = np.arange(1 << 16, dtype=np.uint16).astype("<u2").view(np.int8)[1::2]


@dataclass
class ChunkCalls:
    """Records of a chunk (``contigs``, ``positions``, ``ids``, ``alleles`` REF first, padded
    with ``""``) and their calls: ``genotypes`` (records, samples, ploidy) with -1 a missing
    allele and -2 padding of a shorter call, ``phased`` (records, samples) or None."""

    store: VczStore
    contigs: np.ndarray
    positions: np.ndarray
    ids: np.ndarray
    alleles: np.ndarray
    genotypes: np.ndarray
    phased: np.ndarray | None

    def __len__(self) -> int:
        return len(self.positions)

    def take(self, rows: np.ndarray) -> ChunkCalls:
        """These calls of records ``rows`` only."""
        return ChunkCalls(self.store, self.contigs[rows], self.positions[rows], self.ids[rows],
                          self.alleles[rows], self.genotypes[rows],
                          None if self.phased is None else self.phased[rows])

    @cached_property
    def num_alleles(self) -> np.ndarray:
        """Alleles of each record, REF included (at least 1)."""
        return np.maximum((self.alleles != spec.STR_FILL).sum(axis=1), 1)

    @cached_property
    def ploidy(self) -> np.ndarray:
        """(records, samples): the alleles of each call (padding not counted)."""
        ploidy = np.zeros(self.genotypes.shape[:2], np.int8)
        for k in range(self.genotypes.shape[2]):  # (a sum over the short last axis is slow)
            ploidy += self.genotypes[:, :, k] != spec.INT_FILL
        return ploidy

    def pair_keys(self) -> np.ndarray | None:
        """(records, samples) uint16: each call's two int8 alleles read as one number, the
        index of a table over :data:`PAIR_FIRST` and :data:`PAIR_SECOND`; None unless the
        calls are int8 of two alleles at most."""
        g = self.genotypes
        if g.dtype != np.int8 or g.shape[2] != 2:
            return None
        return np.ascontiguousarray(g).view("<u2")[:, :, 0]

    @cached_property
    def low_pairs(self) -> np.ndarray | None:
        """(records, samples) uint8: :func:`low_bits` of each call's pair when the calls are
        int8 pairs of alleles -2 to 1 only (a chunk of biallelic records), else None."""
        keys = self.pair_keys()
        return None if keys is None or self.genotypes.max(initial=0) > 1 else low_bits(keys)

    def pair_values(self, table: np.ndarray, low_table: bytes, rows: np.ndarray | None = None) -> np.ndarray | None:
        """(records, samples): ``table`` (one-byte values by allele pair key) of the calls of
        records ``rows`` (None: all): through ``low_table`` (:func:`low_bits_table` of
        ``table``) when every allele of the chunk is -2 to 1, else one gather a call; None
        unless the calls are int8 pairs."""
        keys = self.pair_keys()
        if keys is None:
            return None
        some = slice(None) if rows is None else picked(rows)
        low = self.low_pairs
        if low is None:
            return table[keys[some]]
        part = low[some]
        return np.frombuffer(part.tobytes().translate(low_table), table.dtype).reshape(part.shape)

    @cached_property
    def missing(self) -> np.ndarray:
        """(records, samples): calls with any allele missing (``./.``, ``.``, and the
        half-missing ``0/.``, as plink2 reads them with ``--vcf-half-call missing``), or
        none at all."""
        keys = self.pair_keys()
        if keys is not None:
            return MISSING_PAIRS[keys]
        missing = self.genotypes[:, :, 0] == spec.INT_FILL
        for k in range(self.genotypes.shape[2]):
            missing |= self.genotypes[:, :, k] == spec.INT_MISSING
        return missing

    def pairs(self, what: str) -> tuple[np.ndarray, np.ndarray]:
        """(first, second) allele of each call, (records, samples) each; ``second`` is -2
        for a haploid call. A call of more than two alleles is refused (``what`` holds
        haploid and diploid calls only)."""
        genotypes = self.genotypes
        if genotypes.shape[2] > 2:
            over = np.argwhere(self.ploidy > 2)
            if len(over):
                row, sample = (int(k) for k in over[0])
                raise NotSupportedError(
                    f"{self.store.path}: {self.where(row)}: sample {sample + 1} has ploidy "
                    f"{int(self.ploidy[row, sample])}; {what} holds haploid and diploid calls only")
        if genotypes.shape[2] == 1:
            return genotypes[:, :, 0], np.full(genotypes.shape[:2], spec.INT_FILL, genotypes.dtype)
        return genotypes[:, :, 0], genotypes[:, :, 1]

    def where(self, row: int) -> str:
        """``record CHROM:POS`` of row ``row``, for messages."""
        return f"record {self.store.contigs[int(self.contigs[row])]}:{int(self.positions[row])}"

    def chrom_names(self) -> np.ndarray:
        """The contig name of each record."""
        return np.asarray(self.store.contigs, dtype=object)[self.contigs]


def chunk_calls(source: ChunkSource, chunk: int, rows: np.ndarray,
                samples: np.ndarray | None) -> ChunkCalls:
    """The records ``rows`` of variant chunk ``chunk`` and the calls of ``samples`` (store
    indexes in output order; None: all) read through ``source`` (a store with FORMAT/GT)."""
    store = source.store
    order = None if samples is None else np.unique(samples)
    blocks = BatchBlocks(source, chunk, order)
    back = None if order is None or samples is None else np.searchsorted(order, samples)
    some = picked(rows)  # (every row, often: a view, not a copy)

    def per_sample(array: np.ndarray) -> np.ndarray:
        array = array[some]
        return array if back is None else array[:, back]

    genotypes = per_sample(blocks.read(store.format_fields["GT"].array))
    if genotypes.ndim == 2:
        genotypes = genotypes[..., None]
    phased = (per_sample(blocks.read(spec.CALL_GENOTYPE_PHASED)).astype(bool, copy=False)
              if store.has_array(spec.CALL_GENOTYPE_PHASED) else None)
    ids = (blocks.read(spec.VARIANT_ID)[rows] if store.has_array(spec.VARIANT_ID)
           else np.full(len(rows), spec.STR_MISSING, dtype=object))
    return ChunkCalls(store, blocks.read(spec.VARIANT_CONTIG)[rows],
                      blocks.read(spec.VARIANT_POSITION)[rows], ids,
                      blocks.read(spec.VARIANT_ALLELE)[rows], genotypes, phased)


def picked(rows: np.ndarray) -> slice | np.ndarray:
    """``rows`` as a slice when they are a run (indexing by it is a view, not a copy).

    >>> picked(np.array([3, 4, 5])), picked(np.array([1, 3]))
    (slice(3, 6, None), array([1, 3]))
    """
    run = len(rows) > 0 and bool((np.diff(rows) == 1).all())
    return slice(int(rows[0]), int(rows[-1]) + 1) if run else rows


#: :attr:`ChunkCalls.missing` of each allele pair
MISSING_PAIRS = ((PAIR_FIRST == spec.INT_FILL) | (PAIR_FIRST == spec.INT_MISSING)
                 | (PAIR_SECOND == spec.INT_MISSING))


def low_bits(keys: np.ndarray) -> np.ndarray:
    """uint8: a byte of each allele pair (:meth:`ChunkCalls.pair_keys`) that tells apart the
    16 pairs of alleles -2 to 1 (a biallelic record's): the low byte of ``key + (key >> 2)``,
    one shift and one addition (with the conversion) over a chunk."""
    low = np.empty(keys.shape, np.uint8)
    np.add(keys, keys >> 2, out=low, casting="unsafe")
    return low


def low_bits_table(table: np.ndarray) -> bytes:
    """A table of allele pairs of one-byte values (such as :data:`MISSING_PAIRS`) for the
    pairs of alleles -2 to 1 only, by :func:`low_bits`, as a ``bytes.translate`` table: the
    bits of a chunk once and a translation for each table cost a fraction of a gather
    through the table.

    >>> table = low_bits_table(PAIR_FIRST == PAIR_SECOND)  # homozygous
    >>> [table[low_bits(np.array([pair_key(a, b)], np.uint16))[0]] for a, b in ((0, 0), (1, 0), (1, 1), (0, -1))]
    [1, 0, 1, 0]
    """
    pairs = list(itertools.product(range(-2, 2), repeat=2))
    low = np.zeros(256, table.dtype)
    keys = np.array([pair_key(a, b) for a, b in pairs], np.uint16)
    low[low_bits(keys)] = table[keys]
    return low.tobytes()


def pair_key(first: int, second: int) -> int:
    """The key of the int8 allele pair (``first``, ``second``) (:meth:`ChunkCalls.pair_keys`)."""
    return first & 0xFF | (second & 0xFF) << 8

