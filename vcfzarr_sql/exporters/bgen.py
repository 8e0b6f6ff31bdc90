"""BGEN 1.2 (layout 2, zlib): OUT.bgen and OUT.sample, hard calls as probabilities.

The layout (https://www.well.ox.ac.uk/~gav/bgen_format/spec/v1.2.html): a header block (the
variant count written last, when it is known), the sample identifiers, then one block per
variant: its identifiers, position and alleles, and its probabilities compressed with zlib:
8 bits a probability (a hard call is 255 at its genotype, 0 elsewhere; the last of each
sample's probabilities is implied). A record whose diploid calls are all phased is written
phased (a probability per allele of each haplotype), otherwise unphased (one per genotype,
in BGEN's colex order: ``0/0, 0/1, 1/1, 0/2, 1/2, 2/2, ...``). Haploid and diploid calls
are kept as they are, multi-allelic records too; a missing or half-missing call (``0/.``)
is a missing sample (as ``plink2 --vcf-half-call missing``). A record without ALT is written
with ALT ``.``, as ``plink2 --export bgen-1.2`` does.

>>> genotype_index(np.array([0, 0, 1, 0, 1, 2]), np.array([0, 1, 1, 2, 2, 2])).tolist()
[0, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

import struct
import zlib
from typing import IO

import numpy as np

from vcfzarr_sql.exporters.calls import ChunkCalls
from vcfzarr_sql.format import spec

#: flags: zlib (1), layout 2 (bits 2-5), sample identifiers present (bit 31)
FLAGS = 1 | (2 << 2) | (1 << 31)
#: bits per stored probability
BITS = 8
_ONE = 255
_HEADER_LENGTH = 20


def genotype_index(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """BGEN's index of the unphased diploid genotype ``low/high`` (``low <= high``)."""
    return high * (high + 1) // 2 + low


def _identifier(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<H", len(raw)) + raw


def sample_text(samples: list[str]) -> str:
    """The .sample file (Oxford format, as plink2 writes it): no family, sex unknown."""
    return "ID_1 ID_2 missing sex\n0 0 0 D\n" + "".join(f"0 {name} 0 NA\n" for name in samples)


class BgenWriter:
    """Writes OUT.bgen and OUT.sample, one chunk of records after the other."""

    def __init__(self, out: str, samples: list[str]):
        self.written = 0
        self.left_out = 0
        self.samples = len(samples)
        with open(out + ".sample", "w") as f:
            f.write(sample_text(samples))
        ids = b"".join(_identifier(name) for name in samples)
        sample_block = struct.pack("<II", 8 + len(ids), len(samples)) + ids
        self._file: IO[bytes] = open(out + ".bgen", "wb")
        self._file.write(struct.pack("<IIII", _HEADER_LENGTH + len(sample_block), _HEADER_LENGTH,
                                     0, len(samples)) + b"bgen" + struct.pack("<I", FLAGS) + sample_block)

    def write(self, calls: ChunkCalls) -> None:
        """Append the records of ``calls``."""
        if not len(calls):
            return
        first, second = (a.astype(np.int64) for a in calls.pairs("a BGEN export"))
        missing = calls.missing
        ploidy = np.where(second == spec.INT_FILL, 1, 2)
        haploid_or_phased = ploidy == 1
        if calls.phased is not None:
            haploid_or_phased = haploid_or_phased | calls.phased
        phased = (haploid_or_phased | missing).all(axis=1)
        chroms = calls.chrom_names()
        blocks = []
        for row in range(len(calls)):
            alleles = [a for a in calls.alleles[row] if a != spec.STR_FILL] or [spec.STR_MISSING]
            if len(alleles) == 1:
                alleles.append(spec.STR_MISSING)
            probabilities = _probabilities(first[row], second[row], ploidy[row], missing[row],
                                           len(alleles), bool(phased[row]))
            vid = str(calls.ids[row])
            head = (_identifier(vid) + _identifier(vid) + _identifier(str(chroms[row]))
                    + struct.pack("<IH", int(calls.positions[row]), len(alleles))
                    + b"".join(struct.pack("<I", len(a.encode())) + a.encode() for a in alleles))
            packed = zlib.compress(probabilities, 6)
            blocks.append(head + struct.pack("<II", len(packed) + 4, len(probabilities)) + packed)
        self._file.write(b"".join(blocks))
        self.written += len(calls)

    def close(self) -> None:
        self._file.seek(8)  # the variant count, known now
        self._file.write(struct.pack("<I", self.written))
        self._file.close()


def _probabilities(first: np.ndarray, second: np.ndarray, ploidy: np.ndarray, missing: np.ndarray,
                   num_alleles: int, phased: bool) -> bytes:
    """The uncompressed probability data of one record (its samples' calls)."""
    k = num_alleles
    if phased:  # per haplotype: a probability per allele but the last
        widths = ploidy * (k - 1)
        slots = [first, np.where(ploidy == 2, second, 0)]
        starts = np.concatenate([[0], np.cumsum(widths)[:-1]])
        data = np.zeros(int(widths.sum()), np.uint8)
        for h, allele in enumerate(slots):
            on = ~missing & (ploidy > h) & (allele < k - 1)
            data[(starts + h * (k - 1) + allele)[on]] = _ONE
    else:  # per genotype but the last: haploid k, diploid k(k+1)/2
        widths = np.where(ploidy == 1, k - 1, k * (k + 1) // 2 - 1)
        low = np.where(ploidy == 2, np.minimum(first, second), first)
        high = np.where(ploidy == 2, np.maximum(first, second), first)
        index = np.where(ploidy == 2, genotype_index(low, high), first)
        starts = np.concatenate([[0], np.cumsum(widths)[:-1]])
        data = np.zeros(int(widths.sum()), np.uint8)
        on = ~missing & (index < widths)
        data[(starts + index)[on]] = _ONE
    states = (ploidy | np.where(missing, 0x80, 0)).astype(np.uint8)
    head = struct.pack("<IHBB", len(ploidy), k, int(ploidy.min(initial=2)), int(ploidy.max(initial=1)))
    return head + states.tobytes() + struct.pack("<BB", phased, BITS) + data.tobytes()
