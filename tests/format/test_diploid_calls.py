"""The calls of a chunk that are not ``0/0`` (:mod:`vcfzarr_sql.format.diploid_calls`), against
their definition walked call by call."""

from __future__ import annotations

import numpy as np
import pytest

from vcfzarr_sql.format.diploid_calls import diploid_calls


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_calls_are_every_call_but_hom_ref(dtype, kernels):
    rng = np.random.default_rng(5)
    genotypes = rng.integers(-2, 2, size=(9, 13, 2)).astype(dtype)
    genotypes[rng.random((9, 13)) < 0.5] = 0
    genotypes[4] = 0  # a record of 0/0 only
    calls = diploid_calls(genotypes)
    assert calls is not None
    expected = [(r, s, 4 * (a + 2) + (b + 2)) for r in range(9) for s in range(13)
                for a, b in [genotypes[r, s].tolist()] if (a, b) != (0, 0)]
    found = sorted(zip(calls.rows.tolist(), calls.cols.tolist(), calls.codes.tolist()))
    assert found == expected
    assert (calls.records, calls.samples) == (9, 13)
    every = [4 * (a + 2) + (b + 2) for a, b in genotypes.reshape(-1, 2).tolist()]
    per_call = np.array(every).reshape(9, 13)
    assert calls.per_record.tolist() == [[int((row == c).sum()) for c in range(16)] for row in per_call]
    assert calls.per_sample.tolist() == [[int((column == c).sum()) for column in per_call.T] for c in range(16)]


@pytest.mark.parametrize("allele", [2, -3, 127, -128])
def test_an_allele_outside_fill_to_one_is_refused(allele, kernels):
    genotypes = np.zeros((3, 4, 2), dtype=np.int8)
    genotypes[2, 3, 1] = allele
    assert diploid_calls(genotypes) is None


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0), (1, 1), (3, 1), (1, 7)])
def test_edge_shapes_give_every_call_and_count(shape, kernels):
    """No record, no sample, one sample: the calls and both counts as by hand, on both paths
    (the compiled one sizes its outputs from the shape)."""
    genotypes = np.random.default_rng(1).integers(-2, 2, size=(*shape, 2)).astype(np.int8)
    calls = diploid_calls(genotypes)
    assert calls is not None and (calls.records, calls.samples) == shape
    per_call = (4 * (genotypes[..., 0].astype(int) + 2) + genotypes[..., 1] + 2).reshape(shape)
    assert sorted(zip(calls.rows.tolist(), calls.cols.tolist(), calls.codes.tolist())) == [
        (r, c, int(per_call[r, c])) for r in range(shape[0]) for c in range(shape[1]) if per_call[r, c] != 10]
    assert calls.per_record.shape == (shape[0], 16) and calls.per_sample.shape == (16, shape[1])
    assert calls.per_record.tolist() == [[int((row == c).sum()) for c in range(16)] for row in per_call]
    assert calls.per_sample.tolist() == [[int((column == c).sum()) for column in per_call.T] for c in range(16)]
