"""HWE and ExcHet equal bcftools +fill-tags to the last bit: computed once per distinct
triple, each row gets what the row alone gets; hand-computed cases; every count of up to 40
samples, and every heterozygote count of 600, with walks cut (or cut too short and walked
again), and large cohorts (Hypothesis), equal a line-for-line transcription of bcftools'
``calc_hwe`` in float64; and the float32 values bcftools writes for 1,500 samples, and for
every count of up to 12 samples, equal ours (the simulated files of test_genotype_stats compare every record with bcftools too).

Every case runs both paths, numpy and the compiled kernel (``VCFZARR_SQL_KERNELS``), which
must give the same bits (:func:`_hwe_tests`); random batches of triples, invalid ones too,
compare the two (Hypothesis)."""

from __future__ import annotations

import functools
import importlib.util
import subprocess

import numpy as np
import pysam
import pytest
from fill_tags import BCFTOOLS, bcftools
from hypothesis import given, settings
from hypothesis import strategies as st

from vcfzarr_sql.query import hwe
from vcfzarr_sql.query.hwe import hwe_tests

#: The paths every case runs (the kernel's where numba is installed).
KERNEL_MODES = ["numpy"] + (["numba"] if importlib.util.find_spec("numba") else [])


def _hwe_tests(nref, nalt, nhet) -> tuple[np.ndarray, np.ndarray]:
    """hwe_tests on each path of :data:`KERNEL_MODES`, which give the same bits."""
    results = []
    with pytest.MonkeyPatch.context() as patch:
        for mode in KERNEL_MODES:
            patch.setenv("VCFZARR_SQL_KERNELS", mode)
            results.append(hwe_tests(nref, nalt, nhet))
    for mode, result in zip(KERNEL_MODES[1:], results[1:]):
        assert [p.tobytes() for p in result] == [p.tobytes() for p in results[0]], mode
    return results[0]


def test_shared_triples_give_each_row_its_own_values():
    rng = np.random.default_rng(3)
    n = 60
    nalt = rng.integers(0, 2 * n, 120)
    nref = 2 * n - nalt - 2 * rng.integers(0, 3, 120)  # some missing calls
    nref = np.maximum(nref, 0)
    rare = np.minimum(nref, nalt)
    nhet = np.minimum(rare, 2 * rng.integers(0, 20, 120) + (rare & 1))
    nhet[::25] += 1  # inconsistent rows: NaN
    hwe, exc_het = _hwe_tests(nref, nalt, nhet)
    assert len(np.unique(np.stack([nref, nalt, nhet], axis=1), axis=0)) < len(nref)
    for k in range(len(nref)):
        alone = _hwe_tests(nref[k:k + 1], nalt[k:k + 1], nhet[k:k + 1])
        assert np.array_equal(alone[0], hwe[k:k + 1], equal_nan=True), k
        assert np.array_equal(alone[1], exc_het[k:k + 1], equal_nan=True), k


def test_hand_computed_values():
    # 5 diploid samples, 2 ALT alleles, no het: P(het=0) = 1/9 (and 8/9 for het=2); 1 ALT: 1.
    hwe, exc_het = _hwe_tests(np.array([8, 8, 7, 10]), np.array([2, 2, 1, 0]), np.array([0, 2, 1, 0]))
    assert np.float32(hwe).tolist() == [np.float32(1 / 9), 1.0, 1.0, 1.0]
    assert np.float32(exc_het).tolist() == [1.0, np.float32(8 / 9), 1.0, 1.0]


def _calc_hwe(nref: int, nalt: int, nhets: list[int]) -> list[tuple[float, float]]:
    """(HWE, ExcHet) of each of ``nhets`` as ``calc_hwe`` of bcftools' fill-tags.c computes
    them: its C, line for line, in Python floats (IEEE doubles, the same operations in the same
    order; ``int`` division where C divides ints)."""
    ngt = (nref + nalt) // 2
    nrare = min(nref, nalt)
    probs = [0.0] * (nrare + 1)
    mid = nrare * (nref + nalt - nrare) // (nref + nalt)
    if (nrare & 1) ^ (mid & 1):
        mid += 1
    het = mid
    hom_r = (nrare - mid) // 2
    hom_c = ngt - het - hom_r
    probs[mid] = 1.0
    total = 1.0
    while het > 1:
        probs[het - 2] = probs[het] * het * (het - 1.0) / (4.0 * (hom_r + 1.0) * (hom_c + 1.0))
        total += probs[het - 2]
        hom_r += 1
        hom_c += 1
        het -= 2
    het = mid
    hom_r = (nrare - mid) // 2
    hom_c = ngt - het - hom_r
    while het <= nrare - 2:
        probs[het + 2] = probs[het] * 4.0 * hom_r * hom_c / ((het + 2.0) * (het + 1.0))
        total += probs[het + 2]
        hom_r -= 1
        hom_c -= 1
        het += 2
    probs = [p / total for p in probs]
    out = []
    for nhet in nhets:
        exc_het = probs[nhet]
        for het in range(nhet + 1, nrare + 1):
            exc_het += probs[het]
        hwe = 0.0
        for het in range(nrare + 1):
            if probs[het] > probs[nhet]:
                continue
            hwe += probs[het]
        out.append((min(hwe, 1.0), exc_het))
    return out


def _assert_bcftools_formula(nref: list[int], nalt: list[int], nhet: list[int]) -> None:
    """hwe_tests of these rows equals :func:`_calc_hwe` to the last bit."""
    hwe, exc_het = _hwe_tests(np.array(nref), np.array(nalt), np.array(nhet))
    assert list(zip(hwe.tolist(), exc_het.tolist())) == _expected(tuple(zip(nref, nalt, nhet)))


@functools.cache
def _expected(rows: tuple[tuple[int, int, int], ...]) -> list[tuple[float, float]]:
    by_shape: dict[tuple[int, int], list[int]] = {}
    for k, (nref, nalt, _) in enumerate(rows):
        by_shape.setdefault((nref, nalt), []).append(k)
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(rows)
    for (nref, nalt), ks in by_shape.items():
        for k, expected in zip(ks, _calc_hwe(nref, nalt, [rows[k][2] for k in ks])):
            out[k] = expected
    return out


def test_every_count_of_up_to_32_samples_equals_bcftools_formula():
    rows = [(2 * n - a, a, h) for n in range(1, 33) for a in range(1, 2 * n)
            for h in range(min(a, 2 * n - a) & 1, min(a, 2 * n - a) + 1, 2)]
    _assert_bcftools_formula(*(list(column) for column in zip(*rows)))


def _every_place_alone(n: int, alts: list[float]) -> tuple[list[int], list[int], list[int]]:
    """For each ALT count (a fraction of the alleles, or a number), rows with every
    heterozygote count from none to all, each in a shape of its own (one more sample each: a
    walk reaches every count tested with it, so a count tested alone is where walks are cut)."""
    rows = []
    for alt in alts:
        for i in range(n):
            nalt = max(1, round(alt * 2 * (n + i))) if alt < 1 else int(alt)
            rare = min(nalt, 2 * (n + i) - nalt)
            if (rare & 1) + 2 * i > rare:
                break
            rows.append((2 * (n + i) - nalt, nalt, (rare & 1) + 2 * i))
    refs, alt_counts, hets = (list(column) for column in zip(*rows))
    return refs, alt_counts, hets


@pytest.mark.parametrize("far", [2.0**-60, 2.0**-40, 2.0**-8])
def test_cut_walks_of_600_samples_equal_bcftools_formula(monkeypatch, far):
    # Walks of 600 samples are cut (the default), or cut too short to be exact and walked again
    # (the larger ``far``): every heterozygote count of rare, common and the commonest ALTs.
    monkeypatch.setattr(hwe, "_FAR", far)
    _assert_bcftools_formula(*_every_place_alone(600, [1, 2, 9, 0.11, 0.5]))


@settings(max_examples=25, deadline=None)
@given(st.integers(300, 4000), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.sampled_from([2.0**-60, 2.0**-45]))
def test_large_cohorts_equal_bcftools_formula(n, frequency, where, far):
    nalt = max(1, round(frequency * 2 * n))
    rare = min(nalt, 2 * n - nalt)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hwe, "_FAR", far)
        _assert_bcftools_formula([2 * n - nalt], [nalt], [rare - 2 * round(where * (rare // 2))])


def _fill_tags(tmp_path, n: int, counts: list[tuple[int, int, int]]) -> list[tuple[float, float]]:
    """bcftools +fill-tags' (HWE, ExcHet) of records of ``n`` samples with these (hom_ref,
    het, hom_alt) counts (the other samples missing), its BCF float32 values read back exactly."""
    lines = ["##fileformat=VCFv4.2", "##contig=<ID=1>", '##FORMAT=<ID=GT,Number=1,Type=String,Description="GT">',
             "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT"]
                       + [f"s{i}" for i in range(n)])]
    for pos, (hom_ref, het, hom_alt) in enumerate(counts, 1):
        calls = ["0/0"] * hom_ref + ["0/1"] * het + ["1/1"] * hom_alt
        calls += ["./."] * (n - len(calls))
        lines.append("\t".join(["1", str(pos), ".", "A", "G", ".", ".", ".", "GT", *calls]))
    vcf, bcf = tmp_path / "counts.vcf", tmp_path / "filled.bcf"
    vcf.write_text("\n".join(lines) + "\n")
    subprocess.run(bcftools("+fill-tags", str(vcf), "-Ob", "-o", str(bcf), "--", "-t", "HWE,ExcHet"), check=True)
    with pysam.VariantFile(str(bcf)) as filled:
        expected = [(record.info["HWE"][0], record.info["ExcHet"][0]) for record in filled]
    assert len(expected) == len(counts)
    return expected


def _ours_in_float32(counts: list[tuple[int, int, int]]) -> list[tuple[float, float]]:
    hom_ref, het, hom_alt = np.array(counts).T
    ours = _hwe_tests(2 * hom_ref + het, 2 * hom_alt + het, het)
    hwe, exc_het = (p.astype(np.float32).tolist() for p in ours)
    return list(zip(hwe, exc_het))


@pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools (+fill-tags)")
def test_float32_bits_equal_bcftools_fill_tags(tmp_path):
    # 1,500 samples (walks cut), genotype counts from a rare to the commonest ALT, heterozygotes
    # from none to all, with missing calls; bcftools' BCF float32 values read back exactly.
    n = 1500
    counts = []  # (hom_ref, het, hom_alt) of the called samples
    for called in (n, n - 37):
        for nalt in (1, 2, 31, 400, called - 3, called, 2 * called - 1):
            rare = min(nalt, 2 * called - nalt)
            for het in sorted({rare & 1, rare, *(rare - 2 * (rare // 2 * k // 6) for k in range(1, 6))}):
                hom_alt = (nalt - het) // 2
                counts.append((called - het - hom_alt, het, hom_alt))
    assert _ours_in_float32(counts) == _fill_tags(tmp_path, n, counts)


def test_every_count_of_33_to_40_samples_equals_bcftools_formula():
    # (up to 32: above), every (hom_ref, het, hom_alt) of 33 to 40 called samples
    rows = [(2 * n - a, a, h) for n in range(33, 41) for a in range(1, 2 * n)
            for h in range(min(a, 2 * n - a) & 1, min(a, 2 * n - a) + 1, 2)]
    _assert_bcftools_formula(*(list(column) for column in zip(*rows)))


@pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools (+fill-tags)")
def test_every_count_of_up_to_12_samples_equals_bcftools_fill_tags(tmp_path):
    # Every (hom_ref, het, hom_alt) of 1 to 12 called samples of 12 (the others missing),
    # monomorphic ones too, through bcftools itself.
    counts = [(called - het - hom_alt, het, hom_alt) for called in range(1, 13)
              for het in range(called + 1) for hom_alt in range(called - het + 1)]
    assert _ours_in_float32(counts) == _fill_tags(tmp_path, 12, counts)


_COUNTS = st.tuples(st.integers(1, 3000), st.floats(0.0, 1.0), st.floats(0.0, 1.0))


@settings(max_examples=40, deadline=None)
@given(st.lists(_COUNTS, min_size=1, max_size=60), st.integers(0, 8),
       st.lists(st.tuples(*[st.integers(0, 40)] * 3), max_size=20), st.booleans())
def test_the_kernel_equals_the_numpy_path(counts, repeats, anything, huge):
    # Batches of valid triples from rare to the commonest ALT (some repeated, as in a cohort),
    # small triples of any kind (monomorphic, odd totals, heterozygotes of the wrong parity or
    # too many: 1 or NaN), and a total too large to sort triples by one integer (each alone).
    rows = []
    for n, frequency, where in counts:
        nalt = round(frequency * 2 * n)
        rare = min(nalt, 2 * n - nalt)
        rows.append((2 * n - nalt, nalt, rare - 2 * round(where * (rare // 2))))
    rows += rows[:repeats] + anything + ([(2**21 + 5, 3, 1)] if huge else [])
    nref, nalt, nhet = (np.array(column, dtype=np.int64) for column in zip(*rows))
    _hwe_tests(nref, nalt, nhet)


def test_counts_beyond_a_c_int_are_nan_and_never_overflow():
    # Stored counts are data (docs/security.md): counts a C int (bcftools' type) cannot hold
    # are NaN on both paths; their sum overflowed int64 and the kernel, which checks no
    # bounds, wrote its walk far outside its array (a segfault), or sized it from a wrapped sum.
    big, most = 2**62, 2**31 - 1
    nref = np.array([big, -(2**63), 8, most + 1, 3, most], dtype=np.int64)
    nalt = np.array([big, -1, 2, 1, most + 1, 1], dtype=np.int64)
    nhet = np.array([0, 0, 0, 1, 1, 1], dtype=np.int64)
    hwe, exc_het = _hwe_tests(nref, nalt, nhet)
    assert np.isnan(hwe[[0, 3, 4]]).all() and np.isnan(exc_het[[0, 3, 4]]).all()
    assert hwe[1] == exc_het[1] == 1.0  # (no reference allele: 1, bcftools' rule)
    assert np.float32(hwe[2]) == np.float32(1 / 9)
    assert hwe[5] == 1.0 and np.isfinite(exc_het[5])  # (a C int's most: tested)
