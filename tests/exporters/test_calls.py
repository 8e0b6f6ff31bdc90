"""The codes of each call that ``.pgen`` and ``.bed`` exports write, for every pair of alleles
-2 (no allele), -1 (missing), 0 (REF) and 1 (ALT): made by ``bytes.translate`` of one byte
a call when every allele of the chunk is -2 to 1, by a gather through the 65,536-entry tables
when the chunk holds a larger allele; both equal the codes written out here by hand (plink2's
reading of a VCF with ``--vcf-half-call missing``: a haploid call is its homozygote, a
half-missing call missing)."""

from __future__ import annotations

import itertools
from typing import cast

import numpy as np
import pytest

from vcfzarr_sql.exporters.calls import ChunkCalls
from vcfzarr_sql.exporters.pgen import _Codes
from vcfzarr_sql.exporters.plink import call_codes
from vcfzarr_sql.store.vcz import VczStore

PAIRS = [(a, b) for a, b in itertools.product((-2, -1, 0, 1), repeat=2)]
#: (first, second) -> (ALT count, -9 missing; heterozygous; .bed code: 0 ALT/ALT, 2 het, 3 REF/REF, 1 missing)
BY_HAND = {
    (0, -2): (0, False, 3), (0, 0): (0, False, 3), (0, 1): (1, True, 2), (1, 0): (1, True, 2),
    (1, -2): (2, False, 0), (1, 1): (2, False, 0),
}
MISSING = (-9, False, 1)


def _calls(pairs: list[tuple[int, int]]) -> ChunkCalls:
    """One record whose calls are ``pairs`` (the store is not read)."""
    genotypes = np.array([pairs], np.int8)
    return ChunkCalls(cast(VczStore, None), np.zeros(1, np.int32), np.ones(1, np.int32),
                      np.array(["."], object), np.array([["A", "G"]], object), genotypes, None)


@pytest.mark.parametrize("larger_allele", [False, True], ids=["translated", "gathered"])
def test_codes_of_every_pair_of_alleles(larger_allele):
    calls = _calls(PAIRS + [(2, 0)] * larger_allele)
    assert (calls.low_pairs is None) == larger_allele
    codes, row = _Codes(calls), np.array([0])
    got = zip(codes.genotypes(row)[0].tolist(), codes.heterozygous(row)[0].tolist(), call_codes(calls)[0].tolist())
    assert dict(zip(PAIRS, got)) == {pair: BY_HAND.get(pair, MISSING) for pair in PAIRS}
