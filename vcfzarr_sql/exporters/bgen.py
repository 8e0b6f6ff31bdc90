"""BGEN 1.2 (layout 2, zlib or zstd): OUT.bgen and OUT.sample, hard calls as probabilities.

The layout (https://www.well.ox.ac.uk/~gav/bgen_format/spec/v1.2.html): a header block (the
variant count written last, when it is known), the sample identifiers, then one block per
variant: its identifiers, position and alleles, and its probabilities compressed with zlib
or zstd (a plain zstd frame: flag 2): 8 bits a probability (a hard call is 255 at its
genotype, 0 elsewhere; the last of each sample's probabilities is implied). Each sample has
its own ploidy (up to 63, any mix in a record). A record whose calls of two alleles or more
are all phased is written phased (a probability per allele of each haplotype), otherwise
unphased (one per genotype, in BGEN's colex order of the allele counts: diploid ``0/0, 0/1,
1/1, 0/2, 1/2, 2/2, ...``, triploid ``0/0/0, 0/0/1, 0/1/1, 1/1/1, ...``). Multi-allelic
records are kept; a missing or half-missing call (``0/.``) is a missing sample (as ``plink2
--vcf-half-call missing``). A record without ALT is written with ALT ``.``, as ``plink2
--export bgen-1.2`` does.

>>> genotype_index(np.array([[0, 0], [0, 1], [1, 1], [0, 2], [1, 2], [2, 2]]), np.array([2] * 6)).tolist()
[0, 1, 2, 3, 4, 5]
>>> genotype_index(np.array([[0, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 1]]), np.array([3] * 4)).tolist()
[0, 1, 2, 3]
"""

from __future__ import annotations

import functools
import math
import struct
import zlib
from collections.abc import Callable
from typing import IO

import numpy as np
from numcodecs import Zstd

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.exporters.calls import ChunkCalls
from vcfzarr_sql.format import spec

#: compression name -> (the flags' compression bits, the compressor of a block's probabilities)
COMPRESSIONS: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "zlib": (1, lambda data: zlib.compress(data, 6)),
    "zstd": (2, lambda data: bytes(Zstd(level=3).encode(data))),
}
#: flags but the compression: layout 2 (bits 2-5), sample identifiers present (bit 31)
_LAYOUT_FLAGS = (2 << 2) | (1 << 31)
#: bits per stored probability
BITS = 8
#: the most alleles of a call BGEN holds (its ploidy byte keeps 6 bits)
MAX_PLOIDY = 63
_ONE = 255
_HEADER_LENGTH = 20


@functools.cache
def _binomials(n: int, k: int) -> np.ndarray:
    """``table[a, b] = C(a, b)`` for ``a < n``, ``b < k`` (one table for every record alike)."""
    return np.array([[math.comb(a, b) for b in range(k)] for a in range(n)], np.int64)


def genotype_index(alleles: np.ndarray, ploidy: np.ndarray) -> np.ndarray:
    """BGEN's (colex) index of each unphased genotype: the sum over its alleles, sorted
    ascending, of ``C(a_i + i - 1, i)`` (``i`` from 1); ``alleles`` (calls, width), the first
    ``ploidy`` of each call its alleles (none missing)."""
    width = alleles.shape[1]
    ordered = np.sort(np.where(np.arange(width) < ploidy[:, None], alleles, np.iinfo(np.int64).max), axis=1)
    table = _binomials(int(alleles.max(initial=0)) + width + 1, width + 1)
    index = np.zeros(len(alleles), np.int64)
    for i in range(width):
        held = ploidy > i
        index[held] += table[ordered[held, i] + i, i + 1]
    return index


def _identifier(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<H", len(raw)) + raw


def sample_text(samples: list[str]) -> str:
    """The .sample file (Oxford format, as plink2 writes it): no family, sex unknown."""
    return "ID_1 ID_2 missing sex\n0 0 0 D\n" + "".join(f"0 {name} 0 NA\n" for name in samples)


class BgenWriter:
    """Writes OUT.bgen and OUT.sample, one chunk of records after the other; ``compression``
    one of :data:`COMPRESSIONS`."""

    def __init__(self, out: str, samples: list[str], compression: str = "zlib"):
        self.written = 0
        self.left_out = 0
        self.samples = len(samples)
        bits, self._compress = COMPRESSIONS[compression]
        with open(out + ".sample", "w") as f:
            f.write(sample_text(samples))
        ids = b"".join(_identifier(name) for name in samples)
        sample_block = struct.pack("<II", 8 + len(ids), len(samples)) + ids
        self._file: IO[bytes] = open(out + ".bgen", "wb")
        self._file.write(struct.pack("<IIII", _HEADER_LENGTH + len(sample_block), _HEADER_LENGTH,
                                     0, len(samples)) + b"bgen" + struct.pack("<I", bits | _LAYOUT_FLAGS)
                         + sample_block)

    def write(self, calls: ChunkCalls) -> None:
        """Append the records of ``calls``."""
        if not len(calls):
            return
        genotypes = calls.genotypes.astype(np.int64)
        missing = calls.missing
        ploidy = np.maximum(calls.ploidy, 1).astype(np.int64)  # (no call at all: a missing haploid)
        if ploidy.max() > MAX_PLOIDY:
            row, sample = (int(k) for k in np.argwhere(ploidy > MAX_PLOIDY)[0])
            raise NotSupportedError(f"{calls.store.path}: {calls.where(row)}: sample {sample + 1} has ploidy "
                                    f"{int(ploidy[row, sample])}; a BGEN call holds up to {MAX_PLOIDY} alleles")
        single_or_phased = ploidy == 1
        if calls.phased is not None:
            single_or_phased = single_or_phased | calls.phased
        phased = (single_or_phased | missing).all(axis=1)
        chroms = calls.chrom_names()
        blocks = []
        for row in range(len(calls)):
            alleles = [a for a in calls.alleles[row] if a != spec.STR_FILL] or [spec.STR_MISSING]
            if len(alleles) == 1:
                alleles.append(spec.STR_MISSING)
            probabilities = _probabilities(genotypes[row], ploidy[row], missing[row], len(alleles),
                                           bool(phased[row]))
            vid = str(calls.ids[row])
            head = (_identifier(vid) + _identifier(vid) + _identifier(str(chroms[row]))
                    + struct.pack("<IH", int(calls.positions[row]), len(alleles))
                    + b"".join(struct.pack("<I", len(a.encode())) + a.encode() for a in alleles))
            packed = self._compress(probabilities)
            blocks.append(head + struct.pack("<II", len(packed) + 4, len(probabilities)) + packed)
        self._file.write(b"".join(blocks))
        self.written += len(calls)

    def close(self) -> None:
        self._file.seek(8)  # the variant count, known now
        self._file.write(struct.pack("<I", self.written))
        self._file.close()


def _probabilities(alleles: np.ndarray, ploidy: np.ndarray, missing: np.ndarray, num_alleles: int,
                   phased: bool) -> bytes:
    """The uncompressed probability data of one record: ``alleles`` (samples, width) its
    calls, ``ploidy`` and ``missing`` of each."""
    k = num_alleles
    if phased:  # per haplotype: a probability per allele but the last
        widths = ploidy * (k - 1)
    else:  # per genotype but the last: C(ploidy + k - 1, k - 1) genotypes
        widths = _binomials(int(ploidy.max()) + k, k)[ploidy + k - 1, k - 1] - 1
    starts = np.concatenate([[0], np.cumsum(widths)[:-1]])
    data = np.zeros(int(widths.sum()), np.uint8)
    called = ~missing
    if phased:
        for h in range(alleles.shape[1]):
            on = called & (ploidy > h) & (alleles[:, h] < k - 1)
            data[(starts + h * (k - 1) + alleles[:, h])[on]] = _ONE
    else:
        index = genotype_index(np.where(called[:, None], alleles, 0), ploidy)
        on = called & (index < widths)
        data[(starts + index)[on]] = _ONE
    states = (ploidy | np.where(missing, 0x80, 0)).astype(np.uint8)
    head = struct.pack("<IHBB", len(ploidy), k, int(ploidy.min(initial=2)), int(ploidy.max(initial=1)))
    return head + states.tobytes() + struct.pack("<BB", phased, BITS) + data.tobytes()
