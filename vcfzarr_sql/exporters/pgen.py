"""PLINK 2 binary: OUT.pgen (written by ``pgenlib``, plink2's own library), OUT.pvar, OUT.psam.

Multi-allelic records are kept (up to 255 alleles, pgenlib's limit), and the phase of
phased heterozygous calls. A haploid call is written as its homozygote and a half-missing
call (``0/.``) as missing, as ``plink2 --vcf --vcf-half-call missing`` imports them. A .pgen
declares its variant count first: the selection is counted in a first pass (which reads
only what its filters read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.errors import NotSupportedError, QueryError
from vcfzarr_sql.exporters.calls import (
    MISSING_PAIRS,
    PAIR_FIRST,
    PAIR_SECOND,
    ChunkCalls,
    low_bits_table,
    picked,
)
from vcfzarr_sql.format import spec
from vcfzarr_sql.query.selection import SelectedRecords

if TYPE_CHECKING:
    import pgenlib

#: pgenlib's missing allele code
MISSING = -9
#: the most alleles pgenlib writes for one variant
MAX_ALLELES = 255


def allele_codes(first: np.ndarray, second: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """(records, 2 * samples) int32: each call's two alleles (:meth:`.ChunkCalls.pairs`, a
    haploid call as its homozygote), as pgenlib's ``append_alleles`` takes them (of no
    record too: a chunk's records of one kind may be none).

    >>> allele_codes(np.array([[0, 1]]), np.array([[1, -2]]), np.array([[False, False]])).tolist()
    [[0, 1, 1, 1]]
    >>> allele_codes(np.zeros((0, 3), np.int16), np.zeros((0, 3), np.int16), np.zeros((0, 3), bool)).shape
    (0, 6)
    """
    codes = np.empty((*first.shape, 2), np.int32)
    codes[:, :, 0] = first
    codes[:, :, 1] = np.where(second == spec.INT_FILL, first, second)
    codes[missing] = MISSING
    return codes.reshape(len(first), 2 * first.shape[1])


def genotype_codes(first: np.ndarray, second: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """(records, samples) int8: the ALT count of each call of biallelic records, as pgenlib's
    ``append_biallelic`` takes them (8 times less to convert than allele codes)."""
    codes = first + np.where(second == spec.INT_FILL, first, second)
    codes[missing] = MISSING
    return np.ascontiguousarray(codes, dtype=np.int8)


#: :func:`genotype_codes` of each allele pair (:data:`.calls.PAIR_FIRST`)
GENOTYPE_PAIRS = genotype_codes(PAIR_FIRST, PAIR_SECOND, MISSING_PAIRS)
#: :func:`allele_codes` of each allele pair, the two codes as int8 read as one uint16 (one
#: two-byte gather a call, then one conversion to int32: a quarter of an int32-pair gather's bytes)
ALLELE_PAIRS = allele_codes(PAIR_FIRST[None], PAIR_SECOND[None], MISSING_PAIRS[None]).astype(np.int8).view("<u2")[0]
#: the allele pairs that are heterozygous calls (whose phase a .pgen keeps)
HETEROZYGOUS_PAIRS = (PAIR_FIRST != PAIR_SECOND) & (PAIR_SECOND >= 0) & ~MISSING_PAIRS
#: :data:`GENOTYPE_PAIRS` and :data:`HETEROZYGOUS_PAIRS` by :func:`.calls.low_bits_table`
LOW_GENOTYPES, LOW_HETEROZYGOUS = low_bits_table(GENOTYPE_PAIRS), low_bits_table(HETEROZYGOUS_PAIRS)


def runs(flags: np.ndarray) -> list[tuple[int, int, bool]]:
    """(start, stop, flag) of each run of equal ``flags``.

    >>> runs(np.array([False, False, True, False]))
    [(0, 2, False), (2, 3, True), (3, 4, False)]
    """
    cuts = [0, *(np.flatnonzero(np.diff(flags.astype(np.int8))) + 1).tolist(), len(flags)]
    return [(a, b, bool(flags[a])) for a, b in zip(cuts[:-1], cuts[1:])]


def variant_lines(calls: ChunkCalls) -> str:
    """The .pvar lines of the records: CHROM POS ID REF ALT (``.``: no ALT), formatted from
    Python lists (iterating numpy object arrays costs 5 times as much)."""
    alleles = calls.alleles
    alts = ([a or "." for a in alleles[:, 1].tolist()] if alleles.shape[1] == 2 else
            [",".join(a for a in row[1:] if a != spec.STR_FILL) or "." for row in alleles.tolist()])
    return "".join([f"{chrom}\t{pos}\t{vid}\t{ref}\t{alt}\n" for chrom, pos, vid, ref, alt in zip(
        calls.chrom_names().tolist(), calls.positions.tolist(), calls.ids.tolist(), alleles[:, 0].tolist(), alts)])


class PgenFileWriter:
    """Writes OUT.pgen, OUT.pvar and OUT.psam, one chunk of records after the other."""

    def __init__(self, out: str, selected: SelectedRecords):
        import pgenlib

        store = selected.store
        count = selected.count()
        if count == 0:
            raise QueryError(f"{store.path}: the selection keeps no record; a .pgen holds at least one")
        widest = store.array_info(spec.VARIANT_ALLELE).shape[1]
        if widest > MAX_ALLELES:
            raise NotSupportedError(f"{store.path}: records of up to {widest} alleles; a .pgen holds up to {MAX_ALLELES}")
        self.written = 0
        self.left_out = 0
        self._count = count
        self._phase = store.has_array(spec.CALL_GENOTYPE_PHASED)
        with open(out + ".psam", "w") as psam:
            psam.write("#IID\tSEX\n" + "".join(f"{name}\tNA\n" for name in selected.sample_names))
        self._pvar = open(out + ".pvar", "w")
        self._pvar.write("#CHROM\tPOS\tID\tREF\tALT\n")
        self._pgen: pgenlib.PgenWriter = pgenlib.PgenWriter(
            (out + ".pgen").encode(), len(selected.sample_names), variant_ct=count, nonref_flags=False,
            allele_ct_limit=max(2, widest), hardcall_phase_present=self._phase)

    def write(self, calls: ChunkCalls) -> None:
        """Append the records of ``calls``: biallelic records without a phased heterozygous
        call as ALT counts, others (multi-allelic, phased) as allele codes and phase. The codes
        of each kind are made for the whole chunk at once, then each run of records of one
        kind is one call to pgenlib (records of the two kinds often alternate)."""
        if not len(calls):
            return
        codes = _Codes(calls)
        full = calls.num_alleles > 2
        phased = None
        if self._phase and calls.phased is not None:  # (phase is kept for heterozygous calls)
            rows = np.flatnonzero(calls.phased.any(axis=1))  # (only these can have one)
            phased = np.zeros(calls.phased.shape, bool)
            phased[rows] = calls.phased[rows] & codes.heterozygous(rows)
            full[rows] |= phased[rows].any(axis=1)
        simple, rich = np.flatnonzero(~full), np.flatnonzero(full)
        genotypes, alleles = codes.genotypes(simple), codes.alleles(rich)
        counts = np.maximum(calls.num_alleles[rich], 2).astype(np.uint32)
        rich_phased = None if phased is None else phased[rich]
        done = [0, 0]  # (records of each kind written)
        for start, stop, kind in runs(full):
            part = slice(done[kind], done[kind] + stop - start)
            done[kind] = part.stop
            if not kind:
                self._pgen.append_biallelic_batch(genotypes[part])
            elif rich_phased is not None:
                self._pgen.append_partially_phased_batch(alleles[part], rich_phased[part], counts[part])
            else:
                self._pgen.append_alleles_batch(alleles[part], False, counts[part])
        self._pvar.write(variant_lines(calls))
        self.written += len(calls)

    def close(self) -> None:
        self._pvar.close()
        if self.written == self._count:  # (else an error stopped the export: pgenlib would refuse)
            self._pgen.close()


class _Codes:
    """pgenlib's codes of the calls of a chunk: through the tables of allele pairs
    (:meth:`.ChunkCalls.pair_values`) when the calls are int8 pairs, else from their alleles
    (:meth:`.ChunkCalls.pairs`, which refuses a polyploid call)."""

    def __init__(self, calls: ChunkCalls):
        self.calls = calls
        self.keys = calls.pair_keys()
        if self.keys is None:
            self.first, self.second = calls.pairs("a .pgen")

    def heterozygous(self, rows: np.ndarray) -> np.ndarray:
        """(rows, samples): the heterozygous calls of records ``rows``."""
        values = self.calls.pair_values(HETEROZYGOUS_PAIRS, LOW_HETEROZYGOUS, rows)
        if values is not None:
            return values
        return (self.first[rows] != self.second[rows]) & (self.second[rows] >= 0) & ~self.calls.missing[rows]

    def genotypes(self, rows: np.ndarray) -> np.ndarray:
        """(records, samples) int8: :func:`genotype_codes` of records ``rows`` (biallelic)."""
        values = self.calls.pair_values(GENOTYPE_PAIRS, LOW_GENOTYPES, rows)
        if values is not None:
            return values
        return genotype_codes(self.first[rows], self.second[rows], self.calls.missing[rows])

    def alleles(self, rows: np.ndarray) -> np.ndarray:
        """(records, 2 * samples) int32: :func:`allele_codes` of records ``rows``."""
        if self.keys is not None:
            pairs = ALLELE_PAIRS[self.keys[picked(rows)]]
            return pairs.view(np.int8).astype(np.int32)  # ((records, samples) pairs as 2 * samples int8)
        return allele_codes(self.first[rows], self.second[rows], self.calls.missing[rows])

