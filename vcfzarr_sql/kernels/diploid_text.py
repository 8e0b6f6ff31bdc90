"""The alleles and phasing of diploid GT calls of one-digit alleles, read from their text in one
pass (the compiled twin of :func:`vcfzarr_sql.converter.genotype_text.parse_genotypes`' numpy
reading of diploid lines).

Each call is four bytes: allele, separator (``|`` or ``/``), allele, tab; an allele is a digit
(its value) or ``.`` (missing: -1). Any other byte makes the whole text refused.
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.kernels import Kernel

_ZERO, _DOT, _BAR, _SLASH, _TAB = (ord(c) for c in "0.|/\t")


def _diploid_text(text: np.ndarray, alleles: np.ndarray, phased: np.ndarray) -> bool:
    """Fill ``alleles`` (calls, 2) int8 and ``phased`` (calls,) bool from ``text``, uint8 of four
    bytes a call; False (the outputs partly filled) at the first byte outside the grammar, or
    when ``text`` is not four bytes for each call of ``phased``."""
    if text.shape[0] != 4 * phased.shape[0] or alleles.shape[0] != phased.shape[0]:
        return False
    for call in range(phased.shape[0]):
        at = 4 * call
        first, mark, second, tab = text[at], text[at + 1], text[at + 2], text[at + 3]
        if tab != _TAB:
            return False
        if mark == _BAR:
            phased[call] = True
        elif mark == _SLASH:
            phased[call] = False
        else:
            return False
        for side, allele in enumerate((first, second)):
            if allele == _DOT:
                alleles[call, side] = -1
            elif _ZERO <= allele <= _ZERO + 9:
                alleles[call, side] = allele - _ZERO
            else:
                return False
    return True


DIPLOID_TEXT = Kernel(_diploid_text)
