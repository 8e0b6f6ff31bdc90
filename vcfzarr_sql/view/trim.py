"""``bcftools view -a``: the ALT alleles no selected sample's GT calls are removed from each
record, with their values of Number=A, R and G fields, and GT renumbered (htslib's
``bcf_trim_alleles`` and ``bcf_remove_allele_set``), for a whole chunk at once.

A Number=G value vector is a diploid one (pairs ``a<=b`` in VCF order), or a haploid one
(one value per allele) for a sample with as many values as alleles; a trimmed record whose
G field has another count (a polyploid's) is refused, as bcftools refuses it.

>>> trim = Trim.of(np.array([[[0, 2], [0, -1]]]), np.array([3]))
>>> trim.old.tolist(), trim.genotypes(np.array([[[0, 2], [0, -1]]])).tolist()
([[0, 2, -1]], [[[0, 1], [0, -1]]])
>>> trim.values(np.array([[0, 1, 2, 3, 4, 5]]), "G", None)[0].tolist()
[[0, 3, 5, -2, -2, -2]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.format import spec


def _fill(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        bits = spec.FLOAT32_FILL_BITS if dtype == np.float32 else spec.FLOAT64_FILL_BITS
        return np.array(bits, np.uint32 if dtype == np.float32 else np.uint64).view(dtype)
    if dtype.kind in "iu":
        return np.array(spec.INT_FILL, dtype)
    return np.array(spec.STR_FILL, dtype)


def _counts(values: np.ndarray, no_value: np.ndarray | None) -> np.ndarray:
    """Per cell: how many values its vector holds (before the fill)."""
    size = f"u{values.dtype.itemsize}"
    fill = (values.view(size) == _fill(values.dtype).view(size)) if values.dtype.kind == "f" \
        else values == _fill(values.dtype)
    return np.asarray((~(fill if no_value is None else fill & no_value)).sum(axis=-1))


@dataclass(frozen=True)
class Trim:
    """Per row: ``old[r, j]``, the original index of allele ``j`` after trimming (-1 past
    the last), ``new[r, i]``, the index allele ``i`` gets (-1: removed), and the number of
    alleles before (``original``)."""

    old: np.ndarray
    new: np.ndarray
    original: np.ndarray
    #: each row's record, ``CHROM:POS``, for errors
    records: np.ndarray | None = None

    @classmethod
    def of(cls, genotypes: np.ndarray, num_alleles: np.ndarray, records: np.ndarray | None = None) -> Trim:
        """The trimming of rows whose selected samples have ``genotypes`` ``(rows, samples,
        ploidy)`` and that have ``num_alleles`` alleles (REF included)."""
        rows, width = len(num_alleles), max(int(num_alleles.max(initial=1)), 1)
        calls = genotypes.reshape(rows, -1)
        called = (calls >= 0) & (calls < width)
        seen = np.zeros((rows, width), bool)
        seen[np.broadcast_to(np.arange(rows)[:, None], calls.shape)[called], calls[called]] = True
        seen[:, 0] = True
        keep = seen & (np.arange(width)[None, :] < num_alleles[:, None])
        new = np.where(keep, np.cumsum(keep, axis=1) - 1, -1)
        order = np.argsort(~keep, axis=1, kind="stable")
        old = np.where(np.arange(width)[None, :] < keep.sum(axis=1)[:, None], order, -1)
        return cls(old, new, num_alleles, records)

    @property
    def num_alleles(self) -> np.ndarray:
        return (self.old >= 0).sum(axis=1)

    def alleles(self, alleles: np.ndarray) -> np.ndarray:
        taken = np.take_along_axis(alleles, np.maximum(self.old, 0), axis=1)
        return np.where(self.old >= 0, taken, spec.STR_FILL)

    def genotypes(self, genotypes: np.ndarray) -> np.ndarray:
        rows = np.arange(len(genotypes)).reshape(-1, *([1] * (genotypes.ndim - 1)))
        index = np.clip(genotypes, 0, self.new.shape[1] - 1)
        return np.where(genotypes >= 0, self.new[rows, index], genotypes).astype(genotypes.dtype)

    def _sources(self, number: str, width: int) -> np.ndarray:
        """(rows, width): the original position of each new position of a Number=A or R
        vector (-1: none)."""
        if number == "A":
            old = self.old[:, 1:]
            old = np.where(old > 0, old - 1, -1)
        else:
            old = self.old
        old = old[:, :width]
        return np.pad(old, ((0, 0), (0, width - old.shape[1])), constant_values=-1)

    def _pairs(self, width: int) -> np.ndarray:
        """(rows, width): the original position of each new position of a diploid G vector."""
        b = np.floor((np.sqrt(8 * np.arange(width) + 1) - 1) / 2).astype(np.int64)
        a = np.arange(width) - b * (b + 1) // 2
        alleles = self.old.shape[1]
        inside = b < alleles
        oa = np.where(inside, self.old[:, np.minimum(a, alleles - 1)], -1)
        ob = np.where(inside, self.old[:, np.minimum(b, alleles - 1)], -1)
        return np.where((oa >= 0) & (ob >= 0), ob * (ob + 1) // 2 + oa, -1)

    def values(self, values: np.ndarray, number: str, no_value: np.ndarray | None, where: str = "",
               every: tuple[np.ndarray, np.ndarray | None] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """A field's values (``(rows, width)`` INFO or ``(rows, samples, width)`` FORMAT)
        and its ``mask_`` array, trimmed when its Number is A, R or G; ``where`` names the
        field in a refusal; ``every``: the values and mask of every sample of the store (a G
        vector's count is the widest of any sample's, as htslib's, also after ``-s``)."""
        if number not in ("A", "R", "G") or values.ndim < 2:
            return values, no_value
        width = values.shape[-1]
        if number == "G":
            sources = self._pairs(width)
            if values.ndim == 3:
                sources = self._g_sources(values, no_value, sources, where, every)
        else:
            sources = self._sources(number, width)
        sources = np.where(sources < width, sources, -1)  # past the stored vector: none
        if values.ndim == 3 and sources.ndim == 2:
            sources = np.broadcast_to(sources[:, None, :], values.shape)
        taken = np.take_along_axis(values, np.maximum(sources, 0), axis=-1)
        out = np.ascontiguousarray(np.where(sources >= 0, taken, _fill(values.dtype)))
        if no_value is None:
            return out, None
        taken_mask = np.take_along_axis(no_value, np.maximum(sources, 0), axis=-1)
        return out, np.ascontiguousarray(np.where(sources >= 0, taken_mask, True))

    def _g_sources(self, values: np.ndarray, no_value: np.ndarray | None, diploid: np.ndarray,
                   where: str, every: tuple[np.ndarray, np.ndarray | None] | None) -> np.ndarray:
        """Per sample: the haploid sources where a sample has one value per allele (or the
        record's widest vector has), else the diploid ones; a trimmed record with more values
        than a diploid's (a polyploid's) is refused."""
        counts = _counts(values, no_value)  # (rows, samples)
        original = self.original[:, None]
        widest = (counts if every is None else _counts(*every)).max(axis=1, initial=0)  # htslib's vector size
        trimmed = self.num_alleles < self.original
        odd = trimmed & (widest > self.original * (self.original + 1) // 2)
        if odd.any():
            row = int(np.flatnonzero(odd)[0])
            record = "" if self.records is None else f" at {self.records[row]}"
            raise NotSupportedError(f"{where}{record}: -a cannot trim a Number=G value of {int(widest[row])}"
                                    f" values for {int(self.original[row])} alleles (more than"
                                    " diploid; bcftools refuses it too)")
        haploid = ((counts == original) | (widest == self.original)[:, None])[..., None]
        return np.where(haploid, self._sources("R", values.shape[-1])[:, None, :], diploid[:, None, :])
