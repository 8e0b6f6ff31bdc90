"""htslib's variant type of an ALT allele against REF (``bcf_set_variant_type``), as bcftools
counts records by it (``bcftools stats`` SN, ``view -v``, the PSC gates).

The type is a bit set, with the length of an indel (negative: a deletion), :func:`variant_type`;
:func:`allele_types` types every allele of a block of records.
"""

from __future__ import annotations

import functools

import numpy as np

#: htslib's VCF_* type bits (REF: no bit).
REF, SNP, MNP, INDEL, OTHER, BND, OVERLAP, INS, DEL = 0, 1, 2, 4, 8, 16, 32, 64, 128


@functools.lru_cache(maxsize=1 << 16)
def variant_type(ref: str, alt: str) -> tuple[int, int]:
    """(type bits, length) of ``alt`` against ``ref``, as htslib's ``bcf_set_variant_type``:
    the length is the indel's (ALT minus REF after trimming the common ends, negative for a
    deletion), 1 for a SNP, 0 otherwise.

    >>> [variant_type("A", a) for a in ("C", ".", "AT", "<DEL>", "*", "<NON_REF>")]
    [(1, 1), (0, 0), (68, 1), (8, 0), (32, 0), (0, 0)]
    >>> variant_type("ATG", "A"), variant_type("ATG", "AGG"), variant_type("AC", "GT")
    ((132, -2), (1, 1), (2, 2))
    >>> variant_type("A", "A[2:10["), variant_type("ACT", "TCGA")
    ((16, 0), (8, 4))
    """
    if alt == "*":
        return OVERLAP, 0
    if len(ref) == 1 and len(alt) == 1:
        if alt in (".", "X") or ref == alt:
            return REF, 0
        return SNP, 1
    if alt.startswith("<"):
        if alt in ("<X>", "<*>", "<NON_REF>"):
            return REF, 0
        return OTHER, 0
    if alt[0] in "[]" or "[" in alt or "]" in alt:
        return BND, 0
    r, a = ref.upper(), alt.upper()
    i = 0
    while i < len(r) and i < len(a) and r[i] == a[i]:
        i += 1
    if i < len(a) and i == len(r):
        return INDEL | INS, len(a) - len(r)
    if i < len(r) and i == len(a):
        return INDEL | DEL, len(a) - len(r)
    if i == len(r) and i == len(a):
        return REF, 0
    re, ae = len(r) - 1, len(a) - 1
    while re > i and ae > i and r[re] == a[ae]:
        re, ae = re - 1, ae - 1
    if ae == i:
        if re == i:
            return SNP, 1
        return (INDEL | DEL if r[re] == a[ae] else OTHER), -(re - i)
    if re == i:
        return (INDEL | INS if r[re] == a[ae] else OTHER), ae - i
    if re - i == ae - i:
        return MNP, (-(re - i + 1) if re - i > ae - i else ae - i + 1)
    return OTHER, (-(re - i + 1) if re - i > ae - i else ae - i + 1)


def allele_types(alleles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(type bits, lengths) of each allele of ``alleles`` (records, REF then ALTs; ``""`` is
    padding), int16 each; REF and padding are type REF, length 0. An ALT of one base against a
    REF of one base is typed by array operations (:func:`variant_type`'s first cases: ``*``,
    then SNP unless it is REF, ``.`` or ``X``); only the others one by one.

    >>> types, lengths = allele_types(np.array([["A", "C", "*"], ["A", "A", "."], ["AT", "A", ""],
    ...                                         ["A", "<DEL>", "X"]], dtype=object))
    >>> types.tolist(), lengths.tolist()
    ([[0, 1, 32], [0, 0, 0], [0, 132, 0], [0, 8, 0]], [[0, 1, 0], [0, 0, 0], [0, -1, 0], [0, 0, 0]])
    """
    types = np.zeros(alleles.shape, dtype=np.int16)
    lengths = np.zeros(alleles.shape, dtype=np.int16)
    if alleles.size == 0:
        return types, lengths
    refs = alleles[:, 0]
    one_base = np.fromiter(map(len, refs), np.int64, len(refs)) == 1
    for k in range(1, alleles.shape[1]):
        alts = alleles[:, k]
        size = np.fromiter(map(len, alts), np.int64, len(alts))
        star = alts == "*"
        single = one_base & (size == 1) & ~star
        snp = single & (alts != refs) & (alts != ".") & (alts != "X")
        types[star, k] = OVERLAP
        types[snp, k] = SNP
        lengths[snp, k] = 1
        others = np.flatnonzero(~single & ~star & (size > 0))
        if len(others):  # (set at once: an item assignment per allele costs more than typing it)
            typed = list(map(variant_type, map(str, refs[others].tolist()), map(str, alts[others].tolist())))
            types[others, k], lengths[others, k] = np.array(typed, dtype=np.int16).T
    return types, lengths
