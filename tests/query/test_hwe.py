"""HWE and ExcHet computed once per distinct (nref, nalt, nhet) triple give each row what the
row alone gives, and the p-values of hand-computed cases (bcftools +fill-tags' values; the
simulated files of test_genotype_stats compare every record with bcftools itself)."""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.query.hwe import hwe_tests


def test_shared_triples_give_each_row_its_own_values():
    rng = np.random.default_rng(3)
    n = 60
    nalt = rng.integers(0, 2 * n, 120)
    nref = 2 * n - nalt - 2 * rng.integers(0, 3, 120)  # some missing calls
    nref = np.maximum(nref, 0)
    rare = np.minimum(nref, nalt)
    nhet = np.minimum(rare, 2 * rng.integers(0, 20, 120) + (rare & 1))
    nhet[::25] += 1  # inconsistent rows: NaN
    hwe, exc_het = hwe_tests(nref, nalt, nhet)
    assert len(np.unique(np.stack([nref, nalt, nhet], axis=1), axis=0)) < len(nref)
    for k in range(len(nref)):
        alone = hwe_tests(nref[k:k + 1], nalt[k:k + 1], nhet[k:k + 1])
        assert np.array_equal(alone[0], hwe[k:k + 1], equal_nan=True), k
        assert np.array_equal(alone[1], exc_het[k:k + 1], equal_nan=True), k


def test_hand_computed_values():
    # 5 diploid samples, 2 ALT alleles, no het: P(het=0) = 1/9 (and 8/9 for het=2); 1 ALT: 1.
    hwe, exc_het = hwe_tests(np.array([8, 8, 7, 10]), np.array([2, 2, 1, 0]), np.array([0, 2, 1, 0]))
    assert np.float32(hwe).tolist() == [np.float32(1 / 9), 1.0, 1.0, 1.0]
    assert np.float32(exc_het).tolist() == [1.0, np.float32(8 / 9), 1.0, 1.0]
