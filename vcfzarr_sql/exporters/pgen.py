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
from vcfzarr_sql.exporters.calls import MISSING_PAIRS, PAIR_FIRST, PAIR_SECOND, ChunkCalls
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
    haploid call as its homozygote), as pgenlib's ``append_alleles`` takes them."""
    codes = np.empty((*first.shape, 2), np.int32)
    codes[:, :, 0] = first
    codes[:, :, 1] = np.where(second == spec.INT_FILL, first, second)
    codes[missing] = MISSING
    return codes.reshape(len(first), -1)


def genotype_codes(first: np.ndarray, second: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """(records, samples) int8: the ALT count of each call of biallelic records, as pgenlib's
    ``append_biallelic`` takes them (8 times less to convert than allele codes)."""
    codes = first + np.where(second == spec.INT_FILL, first, second)
    codes[missing] = MISSING
    return np.ascontiguousarray(codes, dtype=np.int8)


#: :func:`genotype_codes` of each allele pair (:data:`.calls.PAIR_FIRST`)
GENOTYPE_PAIRS = genotype_codes(PAIR_FIRST, PAIR_SECOND, MISSING_PAIRS)


def runs(flags: np.ndarray) -> list[tuple[int, int, bool]]:
    """(start, stop, flag) of each run of equal ``flags``.

    >>> runs(np.array([False, False, True, False]))
    [(0, 2, False), (2, 3, True), (3, 4, False)]
    """
    cuts = [0, *(np.flatnonzero(np.diff(flags.astype(np.int8))) + 1).tolist(), len(flags)]
    return [(a, b, bool(flags[a])) for a, b in zip(cuts[:-1], cuts[1:])]


def variant_lines(calls: ChunkCalls) -> str:
    """The .pvar lines of the records: CHROM POS ID REF ALT (``.``: no ALT)."""
    alts = [",".join(a for a in row[1:] if a != spec.STR_FILL) or "." for row in calls.alleles]
    return "".join(f"{chrom}\t{pos}\t{vid}\t{ref}\t{alt}\n" for chrom, pos, vid, ref, alt in zip(
        calls.chrom_names(), calls.positions.tolist(), calls.ids, calls.alleles[:, 0], alts))


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
        call as ALT counts, others (multi-allelic, phased) as allele codes and phase."""
        if not len(calls):
            return
        first, second = calls.pairs("a .pgen")
        missing = calls.missing
        keys = calls.pair_keys()
        phased = None
        if self._phase and calls.phased is not None:  # (phase is kept for heterozygous calls)
            phased = calls.phased & (first != second) & (second >= 0) & ~missing
        full = calls.num_alleles > 2
        if phased is not None:
            full |= phased.any(axis=1)
        for start, stop, alleles in runs(full):
            part = slice(start, stop)
            if not alleles:
                self._pgen.append_biallelic_batch(
                    genotype_codes(first[part], second[part], missing[part]) if keys is None
                    else GENOTYPE_PAIRS[keys[part]])
                continue
            codes = allele_codes(first[part], second[part], missing[part])
            counts = np.maximum(calls.num_alleles[part], 2).astype(np.uint32)
            if phased is not None:
                self._pgen.append_partially_phased_batch(codes, np.ascontiguousarray(phased[part]), counts)
            else:
                self._pgen.append_alleles_batch(codes, False, counts)
        self._pvar.write(variant_lines(calls))
        self.written += len(calls)

    def close(self) -> None:
        self._pvar.close()
        if self.written == self._count:  # (else an error stopped the export: pgenlib would refuse)
            self._pgen.close()
