"""Pieces of the simulated GT-only VCFs several benchmarks write: the header, and diploid
calls of biallelic sites with allele frequencies drawn from Beta(0.1, 1), 1% missing.

>>> print(vcf_header(["S1", "S2"], 1000), end="")  # doctest: +NORMALIZE_WHITESPACE
##fileformat=VCFv4.2
##contig=<ID=1,length=1000>
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO	FORMAT	S1	S2
>>> calls = diploid_calls(np.random.default_rng(1), 3, 4)
>>> calls.alleles.shape, calls.text.shape, set(calls.text.ravel()) <= set(CALL_TEXT)
((3, 4, 2), (3, 4), True)
>>> call_columns(calls)[0].decode().split() == calls.text[0].tolist()
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The text of a call by code: missing, hom REF, het, hom ALT, het written ALT first.
CALL_TEXT = np.array(["./.", "0/0", "0/1", "1/1", "1/0"])
#: The same, each followed by a tab, as bytes (one row of 4 per code).
_CALL_BYTES = np.frombuffer("".join(f"{text}\t" for text in CALL_TEXT).encode(), np.uint8).reshape(-1, 4)


def vcf_header(names: list[str], length: int) -> str:
    """The header of a VCF of one contig ``1`` of ``length`` bases, FORMAT/GT and ``names``."""
    return (
        f"##fileformat=VCFv4.2\n##contig=<ID=1,length={length}>\n"
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
        + "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *names])
        + "\n"
    )


@dataclass(frozen=True)
class Calls:
    """(records, samples, 2) int8 alleles (-1 missing) and their (records, samples) text."""

    alleles: np.ndarray
    text: np.ndarray


def diploid_calls(rng: np.random.Generator, records: int, samples: int) -> Calls:
    """Unphased diploid calls of ``records`` biallelic sites, 1% missing."""
    freq = rng.beta(0.1, 1.0, records)[:, None]
    alleles = (rng.random((records, samples, 2)) < freq[..., None]).astype(np.int8)
    alleles[rng.random((records, samples)) < 0.01] = -1
    return Calls(alleles, CALL_TEXT[_codes(alleles)])


def _codes(alleles: np.ndarray) -> np.ndarray:
    """The code of each call (the index of its text in :data:`CALL_TEXT`)."""
    code = np.where(alleles[..., 0] < 0, 0, 1 + alleles[..., 0] + alleles[..., 1])
    return np.where((alleles[..., 0] == 1) & (alleles[..., 1] == 0), 4, code)


def call_columns(calls: Calls) -> list[bytes]:
    """Each record's calls as the end of its VCF line: tab-separated, then a newline (one
    table lookup, not a Python string per call: a cohort of 10,000 samples writes 10^4 calls
    a record)."""
    text = _CALL_BYTES[_codes(calls.alleles)].reshape(len(calls.alleles), -1)
    text[:, -1] = ord("\n")
    return [row.tobytes() for row in text]
