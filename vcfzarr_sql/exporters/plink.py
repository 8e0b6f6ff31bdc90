"""PLINK 1 binary: OUT.bed (SNP-major), OUT.bim, OUT.fam, as ``plink2 --make-bed`` writes them.

A .bed holds two alleles per variant: records with more than one ALT are left out and
counted (as ``plink2 --max-alleles 2``). Each call is two bits, the first sample in the
lowest bits of a variant's first byte: ``00`` homozygous A1 (ALT, the .bim's fifth column),
``10`` heterozygous, ``11`` homozygous A2 (REF), ``01`` missing. A haploid call is written
as its homozygote and a half-missing call (``0/.``) as missing, as ``plink2 --vcf
--vcf-half-call missing`` imports them.

>>> codes = np.array([[0, 1, 2]], dtype=np.uint8)  # (hom A1, missing, het)
>>> packed(codes).tolist()
[[36]]
"""

from __future__ import annotations

from typing import IO

import numpy as np

from vcfzarr_sql.exporters.calls import PAIR_FIRST, PAIR_SECOND, ChunkCalls, low_bits_table
from vcfzarr_sql.format import spec

#: the .bed's magic: PLINK 1 binary, SNP-major
MAGIC = bytes([0x6C, 0x1B, 0x01])

#: two-bit code of a biallelic call by its (first, second) allele, each of -2 (no allele: the
#: second of a haploid call), -1 (missing), 0 (REF), 1 (ALT): ``_CODES[a + 2, b + 2]``
_CODES = np.array([
    #  b: -2  -1  0  1
    [1, 1, 1, 1],   # a = -2 (no call)
    [1, 1, 1, 1],   # a = -1 (missing)
    [3, 1, 3, 2],   # a = 0: REF haploid, 0/., 0/0, 0/1
    [0, 1, 2, 0],   # a = 1: ALT haploid, 1/., 1/0, 1/1
], dtype=np.uint8)


def _codes(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    index = (first + 2).astype(np.uint8) * 4 + (second + 2).astype(np.uint8)
    return _CODES.reshape(-1)[index]


#: the code of each allele pair (:data:`.calls.PAIR_FIRST`) of a biallelic record
_PAIR_CODES = _codes(np.clip(PAIR_FIRST, -2, 1), np.clip(PAIR_SECOND, -2, 1))
#: :data:`_PAIR_CODES` by :func:`.calls.low_bits_table`
_LOW_CODES = low_bits_table(_PAIR_CODES)


def call_codes(calls: ChunkCalls) -> np.ndarray:
    """(records, samples) uint8: the two-bit .bed code of each call of biallelic records."""
    first, second = calls.pairs("a PLINK 1 .bed")
    codes = calls.pair_values(_PAIR_CODES, _LOW_CODES)
    return _codes(first, second) if codes is None else codes


def packed(codes: np.ndarray) -> np.ndarray:
    """(records, ceil(samples / 4)) uint8: four two-bit codes a byte, the first lowest (each
    four codes read as one little-endian uint32, two shift-and-or passes gather their bits
    into its lowest byte)."""
    records, samples = codes.shape
    if samples % 4:
        codes = np.concatenate([codes, np.zeros((records, -samples % 4), np.uint8)], axis=1)
    quads = np.ascontiguousarray(codes).view("<u4")
    bits = quads | quads >> 6
    bits |= bits >> 12
    return bits.astype(np.uint8)


def fam_text(samples: list[str]) -> str:
    """The .fam: ``FID IID father mother sex phenotype``; no family (``0``), sex or phenotype
    known (as plink2 writes it for a VCF)."""
    return "".join(f"0\t{name}\t0\t0\t0\t-9\n" for name in samples)


class BedWriter:
    """Writes OUT.bed, OUT.bim and OUT.fam, one chunk of records after the other."""

    def __init__(self, out: str, samples: list[str]):
        self.written = 0
        self.left_out = 0
        with open(out + ".fam", "w") as fam:
            fam.write(fam_text(samples))
        self._bed: IO[bytes] = open(out + ".bed", "wb")
        self._bim: IO[str] = open(out + ".bim", "w")
        self._bed.write(MAGIC)

    def write(self, calls: ChunkCalls) -> None:
        """Append the biallelic records of ``calls``; count the others as left out."""
        keep = calls.num_alleles <= 2
        self.left_out += int((~keep).sum())
        if not keep.all():
            calls = calls.take(np.flatnonzero(keep))
        if not len(calls):
            return
        self._bed.write(packed(call_codes(calls)).tobytes())
        alt = calls.alleles[:, 1] if calls.alleles.shape[1] > 1 else np.full(len(calls), spec.STR_FILL)
        lines = [f"{chrom}\t{vid}\t0\t{pos}\t{a or '.'}\t{ref}\n" for chrom, vid, pos, a, ref in zip(
            calls.chrom_names().tolist(), calls.ids.tolist(), calls.positions.tolist(), alt.tolist(),
            calls.alleles[:, 0].tolist())]
        self._bim.write("".join(lines))
        self.written += len(calls)

    def close(self) -> None:
        self._bed.close()
        self._bim.close()
