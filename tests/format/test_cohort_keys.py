"""Allele keys (:func:`vcfzarr_sql.format.cohort.allele_keys`) are exact: two texts have one
packed key only if they are the same text, and a text packs exactly when it is 1 to 21
characters of ``ACGTN*,`` (hand facts, checked over random texts)."""

from __future__ import annotations

import random

import numpy as np

from vcfzarr_sql.format.cohort import KEY_UNPACKED, allele_keys, allele_keys_of, joined_alleles


def test_packed_keys_are_equal_only_for_equal_texts():
    rng = random.Random(25)
    alphabet = "ACGTN*,acgt<>.\u00c5\x00"
    texts = ["".join(rng.choice(alphabet[:7] if rng.random() < 0.8 else alphabet)
                     for _ in range(rng.randrange(0, 25))) for _ in range(3000)]
    texts += texts[:500]  # (equal texts: equal keys)
    keys = allele_keys(np.array(texts, dtype=object)).tolist()
    packs = [0 < len(t) <= 21 and set(t) <= set("ACGTN*,") for t in texts]
    assert [k != KEY_UNPACKED for k in keys] == packs
    text_of: dict[int, str] = {}
    for key, text in zip(keys, texts):
        if key != KEY_UNPACKED:
            assert text_of.setdefault(key, text) == text
    assert keys[3000:] == keys[:500]
    assert sum(packs) > 500


def test_keys_of_allele_columns_are_the_keys_of_the_joined_alleles():
    # (allele_keys_of packs the columns without joining them; blank ALTs are skipped as
    # joined_alleles skips them, whatever their place)
    rng = random.Random(38)
    alphabet = "ACGTN*,acgt<>.\u00c5\x00"
    rows = []
    for _ in range(3000):
        width = rng.randrange(1, 5)
        row = ["".join(rng.choice(alphabet[:6] if rng.random() < 0.85 else alphabet)
                       for _ in range(rng.randrange(0 if rng.random() < 0.1 else 1, 13))) for _ in range(width)]
        rows.append(row + [""] * (4 - width))
    alleles = np.array(rows, dtype=object)
    keys = allele_keys_of(alleles)
    assert keys.tolist() == allele_keys(joined_alleles(alleles)).tolist()
    assert (keys != KEY_UNPACKED).sum() > 500
