"""The counts of the ``gt_`` columns (from tables of allele pairs, :mod:`vcfzarr_sql.query.call_pairs`)
equal bcftools' rules applied call by call, over random sample subsets of chunks that mix
biallelic and multiallelic records, missing, half-missing, haploid and phased calls, in int8 (the
packed path) and int16; and the per-sample call classes counted from allele pairs equal those of
:func:`~vcfzarr_sql.query.sample_classes.call_classes`, call by call."""

from __future__ import annotations

import numpy as np
import pytest

from vcfzarr_sql.format.summaries import CLASSES
from vcfzarr_sql.query.genotype_counts import genotype_counts
from vcfzarr_sql.query.sample_classes import allele_kind, allele_kinds, call_classes, class_counts

FILL, MISSING = -2, -1


def bcftools_counts(genotypes: np.ndarray, phased: np.ndarray | None, num_alleles: int):
    """(het, hom, hemi, called, missing) by bcftools +fill-tags' rules, one call at a time: the
    alleles before the first fill; distinct called ones; two or more: het (+1 each); one: hom
    (+2) when every allele is called and there are two, else hemi (+1). F_MISSING: the first
    allele missing, or a later one missing in an unphased call."""
    records, samples, ploidy = genotypes.shape
    het, hom, hemi = (np.zeros((records, num_alleles), dtype=np.int64) for _ in range(3))
    called = np.zeros(records, dtype=np.int64)
    missing = np.zeros(records, dtype=np.int64)
    for r in range(records):
        for s in range(samples):
            call = [int(a) for a in genotypes[r, s]]
            is_phased = phased is not None and bool(phased[r, s])
            if call[0] == MISSING or (MISSING in call[1:] and not is_phased):
                missing[r] += 1
            before_end = call[: call.index(FILL)] if FILL in call else call
            alleles = [a for a in before_end if a >= 0]
            if not alleles:
                continue
            called[r] += 1
            distinct = set(alleles)
            if len(distinct) > 1:
                for a in distinct:
                    het[r, a] += 1
            elif len(alleles) == len(before_end) and len(alleles) > 1:
                hom[r, alleles[0]] += 2
            else:
                hemi[r, alleles[0]] += 1
    return het, hom, hemi, called, missing


def random_genotypes(rng: np.random.Generator, records: int, samples: int, ploidy: int,
                     max_allele: int, multiallelic_rows: float, dtype: type) -> np.ndarray:
    """Mostly biallelic records (some with alleles up to ``max_allele``), 5% missing alleles,
    diploid calls with some haploid ones (second allele the fill)."""
    highest = np.where(rng.random(records) < multiallelic_rows, max_allele, 1)
    genotypes = (rng.random((records, samples, ploidy)) * (highest[:, None, None] + 1)).astype(dtype)
    genotypes[rng.random(genotypes.shape) < 0.05] = MISSING
    if ploidy == 2:
        genotypes[..., 1][rng.random((records, samples)) < 0.1] = FILL
    return genotypes


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("ploidy", [1, 2])
def test_counts_equal_bcftools_rules_over_random_subsets(dtype, ploidy):
    rng = np.random.default_rng(29)
    for case in range(12):
        multiallelic = (0.0, 0.2, 1.0)[case % 3]
        genotypes = random_genotypes(rng, 23, 31, ploidy, 1 + case % 4, multiallelic, dtype)
        phased = rng.random(genotypes.shape[:2]) < 0.5 if case % 2 else None
        subset = np.sort(rng.choice(31, rng.integers(1, 31), replace=False))
        chosen = genotypes[:, subset]
        chosen_phased = None if phased is None else phased[:, subset]
        num_alleles = int(chosen.max(initial=0)) + 1 + case % 2  # (sometimes wider than called)
        counts = genotype_counts(chosen, chosen_phased, num_alleles)
        het, hom, hemi, called, missing = bcftools_counts(chosen, chosen_phased, num_alleles)
        got = counts.alleles
        assert got.het[:, :num_alleles].tolist() == het.tolist(), case
        assert got.hom[:, :num_alleles].tolist() == hom.tolist(), case
        assert got.hemi[:, :num_alleles].tolist() == hemi.tolist(), case
        assert got.called.tolist() == called.tolist(), case
        assert counts.missing.tolist() == missing.tolist(), case


def test_sample_classes_from_pairs_equal_call_classes():
    """Biallelic diploid SNP chunks (counted from allele pairs) against the class of each call."""
    rng = np.random.default_rng(5)
    kinds = np.array([[0, 1]] * 40, dtype=np.int8)  # REF, a SNP
    for _ in range(6):
        genotypes = random_genotypes(rng, 40, 27, 2, 1, 0.0, np.int8)
        subset = np.sort(rng.choice(27, rng.integers(1, 27), replace=False))
        chosen = genotypes[:, subset]
        classes = call_classes(chosen, kinds)
        expected = [(classes == k).sum(axis=0).tolist() for k in range(len(CLASSES))]
        assert class_counts(chosen, kinds).tolist() == expected


@pytest.mark.parametrize("ploidy", [1, 2])
def test_chunks_of_reference_and_missing_calls_over_one_allele(ploidy):
    """No ALT called anywhere, counted over one allele (as F_MISSING asks first, and an export
    of a monomorphic chunk): the table still holds the biallelic pairs it compares."""
    genotypes = np.zeros((3, 4, ploidy), dtype=np.int8)
    genotypes[0, 1] = MISSING
    genotypes[1, :, -1] = MISSING
    for num_alleles in (1, 2):
        counts = genotype_counts(genotypes, None, num_alleles)
        het, hom, hemi, called, missing = bcftools_counts(genotypes, None, num_alleles)
        got = counts.alleles
        assert got.hom[:, :num_alleles].tolist() == hom.tolist()
        assert got.hemi[:, :num_alleles].tolist() == hemi.tolist()
        assert got.het[:, :num_alleles].tolist() == het.tolist()
        assert got.called.tolist() == called.tolist()
        assert counts.missing.tolist() == missing.tolist()


def test_allele_kinds_are_allele_kind_of_each_allele():
    """The kinds of whole records (one-base ones classed at once) are :func:`allele_kind`'s of
    each allele: bases, lower case, ``*``, ``.``, ``X``, symbolic alleles, indels, padding."""
    alleles = ["", "A", "C", "N", "a", "*", ".", "X", "<*>", "<DEL>", "AC", "CA", "ACG"]
    rows = np.array([(r, a, b) for r in ("A", "C", "a", "N", "AC", "ACG") for a in alleles for b in alleles],
                    dtype=object)
    kinds = {"ref": 0, "snp": 1, "other": 2}
    expected = [[0, *(kinds[allele_kind(r, a)] if a else 0 for a in (a1, a2))] for r, a1, a2 in rows.tolist()]
    assert allele_kinds(rows).tolist() == expected
