"""gVCF reference blocks in a cohort, split and joined as ``bcftools merge --gvcf -m none`` does;
no I/O.

A reference block is a record whose ALT alleles are none or include ``<*>``, ``<NON_REF>`` or
``<X>`` and which spans more than its REF (INFO/END beyond POS): bcftools' ``is_gvcf_block``
(:func:`block_mask`). A cohort of batches holding blocks has *segments* among its records:
the merged blocks as bcftools writes them (vcfmerge.c ``gvcf_flush``): a segment starts and
ends wherever a block of any batch starts or ends, and no segment covers a position where any
batch has a record that is not a block (there the blocks' samples are missing, ``./.``, as
bcftools 1.16 ``-m none`` writes them; the block resumes at the next position).
:func:`refine` computes them from the cohort's segments and a new batch's blocks; a segment
covered by several batches' blocks holds each batch's block values, its ALT the union of theirs
(:func:`union_alleles`) and its REF the base at its first position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec

#: ALT alleles that mark a reference block (vcfmerge.c ``is_gvcf_block``).
SYMBOLIC = ("<*>", "<NON_REF>", "<X>")
#: INFO fields (of bcftools mpileup's gVCFs) bcftools merge --gvcf merges by these rules
#: (vcfmerge.c ``info_rules_init``), beside the rules of every merge.
INFO_RULES = {"QS": "sum", "MinDP": "min", "I16": "sum", "IDV": "max", "IMF": "max"}


def block_mask(alleles: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Which records (rows of ``alleles``, REF then ALTs, ``""`` padding; ``length``: the span
    from POS to END) are reference blocks.

    >>> block_mask(np.array([["A", "<*>", ""], ["A", "C", "<*>"], ["AT", "<*>", ""],
    ...                      ["A", "", ""], ["A", "<DEL>", ""]], dtype=object),
    ...            np.array([10, 1, 2, 5, 8])).tolist()
    [True, False, False, True, False]
    """
    n = len(length)
    if n == 0:
        return np.zeros(0, dtype=bool)
    ref_length = np.array([len(a) for a in alleles[:, 0]], dtype=np.int64)
    alts = alleles[:, 1:]
    symbolic = np.isin(alts, SYMBOLIC).any(axis=1) if alts.shape[1] else np.zeros(n, dtype=bool)
    no_alt = (alts == "").all(axis=1) if alts.shape[1] else np.ones(n, dtype=bool)
    return np.asarray((length > 1) & (ref_length != length) & (symbolic | no_alt), dtype=bool)


def union_alleles(ref: str, *alt_lists: tuple[str, ...]) -> tuple[str, ...]:
    """REF, then the ALT alleles of ``alt_lists`` in order of first appearance (vcfmerge.c
    ``gvcf_set_alleles``).

    >>> union_alleles("C", ("<*>",), ("<NON_REF>",), ("<*>",))
    ('C', '<*>', '<NON_REF>')
    """
    out = [ref]
    for alts in alt_lists:
        out += [a for a in alts if a and a not in out]
    return tuple(out)


@dataclass(frozen=True)
class Pieces:
    """Segments after :func:`refine`, sorted: first and last position keys (contig and POS, as
    :func:`keys` makes them), and the index of the old segment and of the new block covering
    each (-1: none)."""

    start: np.ndarray
    end: np.ndarray
    old: np.ndarray
    new: np.ndarray


def keys(contig: np.ndarray, position: np.ndarray) -> np.ndarray:
    """One sortable int64 per position: contig id, then POS."""
    return (np.asarray(contig, dtype=np.int64) << 33) + np.asarray(position, dtype=np.int64)


def _covering(start: np.ndarray, end: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each key of ``at``: the interval (sorted, not overlapping) holding it, or -1."""
    if len(start) == 0:
        return np.full(len(at), -1, dtype=np.int64)
    i = np.searchsorted(start, at, side="right") - 1
    found = (i >= 0) & (end[np.maximum(i, 0)] >= at)
    return np.where(found, i, -1).astype(np.int64)


def refine(old_start: np.ndarray, old_end: np.ndarray, new_start: np.ndarray,
           new_end: np.ndarray, records: np.ndarray) -> Pieces:
    """The segments of old segments and a new batch's blocks (each sorted and not overlapping
    among themselves; keys of their first and last positions), cut wherever any of them starts
    or ends, and with no segment at the keys ``records`` (records other than blocks).

    >>> p = refine(np.array([1]), np.array([20]), np.array([5, 31]), np.array([30, 45]),
    ...            np.array([10, 21]))
    >>> [(int(s), int(e), int(o), int(n)) for s, e, o, n in zip(p.start, p.end, p.old, p.new)]
    [(1, 4, 0, -1), (5, 9, 0, 0), (11, 20, 0, 0), (22, 30, -1, 0), (31, 45, -1, 1)]
    """
    cuts = np.unique(np.concatenate([old_start, old_end + 1, new_start, new_end + 1,
                                     records, records + 1]).astype(np.int64))
    if len(cuts) < 2:
        empty = np.zeros(0, dtype=np.int64)
        return Pieces(empty, empty, empty, empty)
    start, end = cuts[:-1], cuts[1:] - 1
    old = _covering(np.asarray(old_start, np.int64), np.asarray(old_end, np.int64), start)
    new = _covering(np.asarray(new_start, np.int64), np.asarray(new_end, np.int64), start)
    keep = ((old >= 0) | (new >= 0)) & ~np.isin(start, records)
    return Pieces(start[keep], end[keep], old[keep], new[keep])


def allele_map(own: tuple[str, ...], union: tuple[str, ...]) -> np.ndarray:
    """The index in ``union`` of each allele of ``own`` (REF first in both).

    >>> allele_map(("C", "<NON_REF>"), ("C", "<*>", "<NON_REF>")).tolist()
    [0, 2]
    """
    return np.array([0, *(union.index(a) for a in own[1:])], dtype=np.int64)


def _equal(values: np.ndarray, value: object) -> np.ndarray:
    """Which elements are ``value`` (floats: bit for bit, missing and fill being NaNs)."""
    if values.dtype.kind == "f":
        return np.asarray(values.view(np.uint32) == np.asarray(value, dtype=np.float32).view(np.uint32))
    return np.asarray(values == value)


def _genotype(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """VCF's index of the unordered diploid genotype ``a/b``."""
    low, high = np.minimum(a, b), np.maximum(a, b)
    return high * (high + 1) // 2 + low


def widen(values: np.ndarray, mapping: np.ndarray, size: int, dim: str | None, *,
          missing: object, fill: object) -> np.ndarray:
    """One record's FORMAT values (samples first) of a batch whose alleles map to a segment's
    ``size`` alleles by ``mapping`` (:func:`allele_map`), as bcftools merge writes them: GT's
    allele indexes mapped; values per allele (``dim``: alleles, alt_alleles, genotypes; a
    sample's genotype values are per allele when it has as many as alleles, as for a haploid
    call) moved to the segment's alleles, missing where the batch has none; others unchanged.

    >>> widen(np.array([[0, 12, 120]]), np.array([0, 2]), 3, "genotypes", missing=-1, fill=-2).tolist()
    [[0, -1, -1, 12, -1, 120]]
    >>> widen(np.array([[0, 0]]), np.array([0, 2]), 3, None, missing=-1, fill=-2).tolist()
    [[0, 0]]
    >>> widen(np.array([[-1, -2, -2]]), np.array([0, 1]), 3, "genotypes", missing=-1, fill=-2).tolist()
    [[-1, -2, -2, -2, -2, -2]]
    """
    own = len(mapping)
    if dim is None:
        if values.dtype.kind != "i":
            return values
        return np.where(values >= 0, mapping[np.clip(values, 0, own - 1)], values)
    if dim == spec.DIM_ALLELES:
        targets, count = [mapping], size
    elif dim == spec.DIM_ALT_ALLELES:
        targets, count = [mapping[1:] - 1], size - 1
    else:
        pairs = [(j, k) for k in range(own) for j in range(k + 1)]
        diploid = _genotype(np.array([mapping[j] for j, _ in pairs], dtype=np.int64),
                            np.array([mapping[k] for _, k in pairs], dtype=np.int64))
        targets, count = [diploid, mapping], size * (size + 1) // 2
    width = max(values.shape[1], count)
    out = np.full((len(values), width), fill, dtype=values.dtype)
    out[:, :count] = missing
    given = values.shape[1]
    filled, absent = _equal(values, fill), _equal(values, missing)
    held = (~filled).sum(axis=1)  # (a sample's values: as many as its genotypes, or alleles)
    held[(filled | absent).all(axis=1)] = -1  # (no value: kept as it is, ".")
    empty = held < 0
    out[empty] = fill
    out[empty, :given] = values[empty]
    for target in targets:
        n = min(len(target), given)
        rows = np.flatnonzero(held == len(target)) if len(targets) > 1 else np.arange(len(values))
        out[rows[:, None], target[:n]] = values[rows, :n]
        if len(targets) > 1:
            held = np.where(held == len(target), -1, held)
    return out


def record_key(alleles: str) -> str:
    """What makes records of gVCF batches at one position one record: REF and ALT alleles
    (joined by ``,``) without the symbolic ones (bcftools merge -m none merges ``A G,<*>`` with
    ``A G`` and ``A G,<NON_REF>`` into ``A G,<*>`` and ``A G,<NON_REF>,<*>``).

    >>> record_key("A,G,<NON_REF>"), record_key("A,<*>")
    ('A,G', 'A')
    """
    return ",".join(a for a in alleles.split(",") if a not in SYMBOLIC)
