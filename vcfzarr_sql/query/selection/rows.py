"""``-i``/``-e``: which records of a chunk satisfy a bcftools filter expression.

The tree of :mod:`.expression` is evaluated over the stored arrays of the chunk (numpy), with
bcftools' semantics (``filter.c``), checked against bcftools in ``tests/view``:

- a comparison with a vector holds when some element satisfies it; ``!=`` (and ``!~``) also
  holds for a missing element or an absent value, ``="."`` holds where a value is missing,
  ``!="."`` where one is present; other comparisons never hold for a missing value;
- FORMAT values give one answer per sample: ``&`` and ``|`` combine them sample by sample
  (``FMT/DP>10 & FMT/GQ>10`` needs one sample with both), ``&&`` and ``||`` combine
  "some sample" answers; a record passes when some sample does;
- the expression sees every sample of the store, whatever ``-s`` selects (bcftools filters
  before it subsets), and ``AC``, ``AN``, ``AF``, ``MAF``, ``MAC`` absent from INFO are
  computed from the genotypes of every sample.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore

if TYPE_CHECKING:  # (the parser and its tree, ~0.004 CPU-s of classes and a regex: imported for -i/-e only)
    from vcfzarr_sql.query.selection.expression import Compare, Format, Info, Node, Site, Value

_NUMERIC: dict[str, np.ufunc] = {
    "=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
    ">": np.greater, ">=": np.greater_equal,
}


def _float_flags(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bits = values.view(np.uint32 if values.dtype == np.float32 else np.uint64)
    if values.dtype == np.float32:
        return bits == spec.FLOAT32_MISSING_BITS, bits == spec.FLOAT32_FILL_BITS
    return bits == spec.FLOAT64_MISSING_BITS, bits == spec.FLOAT64_FILL_BITS


def flags(
    values: np.ndarray, vcf_type: str, no_value: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(missing, fill) masks of stored values; ``no_value``, the field's ``mask_<array>`` when
    the store has one: elsewhere a value equal to a sentinel is a value (``SVLEN=-1``)."""
    if values.dtype.kind == "f":
        missing, fill = _float_flags(values)
    elif values.dtype.kind in "iu":
        missing, fill = values == spec.INT_MISSING, values == spec.INT_FILL
    elif values.dtype.kind == "b":
        return np.zeros(values.shape, bool), np.zeros(values.shape, bool)
    else:
        missing, fill = values == spec.STR_MISSING, values == spec.STR_FILL
    if no_value is None:
        return missing, fill
    return missing & no_value, fill & no_value


@dataclass
class Operand:
    """Values of a record (shape ``(rows, k)``) or of each sample (``(rows, samples, k)``):
    ``valid`` where an element holds a value, ``missing`` where it is missing (``.``, or the
    whole value absent); padding is neither."""

    values: np.ndarray
    valid: np.ndarray
    missing: np.ndarray


def _operand(values: np.ndarray, valid: np.ndarray, missing: np.ndarray) -> Operand:
    """An operand whose vectors without any element count as one missing element."""
    empty = ~(valid | missing).any(axis=-1)
    missing = missing.copy()
    missing[..., 0] |= empty
    return Operand(values, valid, missing)


class ValueReader:
    """The values an expression (or an option of :mod:`.sites`) reads from one variant
    chunk (every sample, read once)."""

    def __init__(self, source: ChunkSource, chunk: int):
        self.store: VczStore = source.store
        self.blocks = BatchBlocks(source, chunk, None)
        self.rows = len(self.blocks.read(spec.VARIANT_POSITION))

    def read(self, name: str) -> np.ndarray:
        return self.blocks.read(name)

    # -- record values

    def alleles(self) -> np.ndarray:
        return self.read(spec.VARIANT_ALLELE)

    def site(self, value: Site) -> Operand:
        name = value.name
        if name == "QUAL":
            if not self.store.has_array(spec.VARIANT_QUALITY):
                return _absent(self.rows)
            with np.errstate(invalid="ignore"):
                qual = self.read(spec.VARIANT_QUALITY).astype(np.float64)[:, None]
            return _operand(qual, ~np.isnan(qual), np.isnan(qual))
        if name == "POS":
            pos = self.read(spec.VARIANT_POSITION).astype(np.float64)[:, None]
            return _operand(pos, np.ones(pos.shape, bool), np.zeros(pos.shape, bool))
        if name in ("CHROM", "ID", "REF", "ALT"):
            return self.text(name)
        if name == "N_ALT":
            alts = (self.alleles()[:, 1:] != spec.STR_FILL).sum(axis=1).astype(np.float64)
            return _number(alts)
        if name == "N_SAMPLES":
            return _number(np.full(self.rows, float(self.store.num_samples)))
        if name in ("N_MISSING", "F_MISSING"):
            missing = self.gt_missing().sum(axis=1).astype(np.float64)
            return _number(missing if name == "N_MISSING" else missing / max(self.store.num_samples, 1))
        if name == "ILEN":
            return self.indel_lengths()
        return self.counts(value)

    def text(self, name: str) -> Operand:
        if name == "CHROM":
            contigs = np.asarray(self.store.contigs, dtype=object)
            texts = contigs[self.read(spec.VARIANT_CONTIG)][:, None]
        elif name == "ID":
            if not self.store.has_array(spec.VARIANT_ID):
                return _absent(self.rows)
            texts = self.read(spec.VARIANT_ID).astype(object)[:, None]
        elif name == "REF":
            texts = self.alleles()[:, :1].astype(object)
        else:
            texts = self.alleles()[:, 1:].astype(object)
            if texts.shape[1] == 0:
                return _absent(self.rows)
        return _operand(texts, (texts != spec.STR_MISSING) & (texts != spec.STR_FILL),
                        texts == spec.STR_MISSING)

    def indel_lengths(self) -> Operand:
        """bcftools ILEN: per ALT, its length minus REF's (0 for a substitution); missing for
        a symbolic or breakend allele."""
        alleles = self.alleles()
        lengths = np.vectorize(len, otypes=[np.int64])(alleles) if alleles.size else np.zeros(alleles.shape, np.int64)
        alts = alleles[:, 1:]
        symbolic = np.vectorize(_symbolic, otypes=[bool])(alts) if alts.size else np.zeros(alts.shape, bool)
        present = alts != spec.STR_FILL
        ilen = (lengths[:, 1:] - lengths[:, :1]).astype(np.float64)
        valid = present & ~symbolic
        return _operand(ilen, valid, np.zeros(valid.shape, bool))

    def types(self) -> list[set[str]]:
        """bcftools' variant types of each record (``snp``, ``mnp``, ``indel``, ``other``,
        or ``ref`` when it has no ALT)."""
        out = []
        for row in self.alleles():
            ref, kinds = row[0], set()
            for alt in row[1:]:
                if alt == spec.STR_FILL:
                    continue
                kinds.add(_allele_type(ref, alt))
            kinds.discard("ref")
            out.append(kinds or {"ref"})
        return out

    # -- genotypes and allele counts

    def genotypes(self, samples: np.ndarray | None = None) -> np.ndarray:
        """``(rows, samples, ploidy)`` alleles of every sample (or of ``samples``)."""
        if "GT" not in self.store.format_fields:
            raise NotSupportedError(f"{self.store.path}: the store has no FORMAT/GT for the filter expression")
        genotypes = self.read(spec.CALL_GENOTYPE)
        genotypes = genotypes if genotypes.ndim == 3 else genotypes[..., None]
        return genotypes if samples is None else genotypes[:, samples]

    def gt_missing(self, samples: np.ndarray | None = None) -> np.ndarray:
        """Per sample: some allele of its genotype is missing (bcftools ``GT="mis"``)."""
        genotypes = self.genotypes(samples)
        return ((genotypes == spec.INT_MISSING).any(axis=2)
                | (genotypes == spec.INT_FILL).all(axis=2))

    def phased(self, samples: np.ndarray | None = None) -> np.ndarray:
        """Per sample: its genotype is phased (a haploid one counts as phased; ``.|.``, no
        allele called, does not: bcftools 1.24 looks for the phase of a called allele)."""
        genotypes = self.genotypes(samples)
        haploid = (genotypes != spec.INT_FILL).sum(axis=2) == 1
        if not self.store.has_array(spec.CALL_GENOTYPE_PHASED):
            return haploid
        flags = self.read(spec.CALL_GENOTYPE_PHASED)
        called = (genotypes >= 0).any(axis=2)
        return np.asarray((flags if samples is None else flags[:, samples]).astype(bool) & called | haploid)

    def gt_class(self, name: str, samples: np.ndarray | None = None) -> np.ndarray:
        """Per sample: its genotype is of class ``name`` (bcftools ``GT="het"``...)."""
        genotypes = self.genotypes(samples)
        called = genotypes >= 0
        ploidy = (genotypes != spec.INT_FILL).sum(axis=2)
        missing = self.gt_missing(samples)
        if name == "mis":
            return missing
        if name == "hap":
            return ~missing & (ploidy == 1)
        high = np.where(called, genotypes, -1).max(axis=2)
        low = np.where(called, genotypes, np.iinfo(genotypes.dtype).max).min(axis=2)
        diploid = ~missing & (ploidy >= 2)
        if name == "het":
            return diploid & (low != high)
        if name == "hom":
            return diploid & (low == high)
        if name == "ref":
            return diploid & (high == 0)
        return ~missing & (high > 0)  # alt

    def allele_counts(self, samples: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(AC per ALT ``(rows, alts)``, AN ``(rows,)``): INFO/AC and INFO/AN where the store
        has both and the record has AN, else counted from the genotypes of every sample (as
        htslib's ``bcf_calc_ac``); with ``samples``, counted from theirs."""
        alleles = self.alleles()
        alts = max(alleles.shape[1] - 1, 1)
        counted_an = counted_ac = None
        info = self.store.info_fields
        if "GT" in self.store.format_fields:
            genotypes = self.genotypes(samples)
            counted_an = (genotypes >= 0).sum(axis=(1, 2))
            counted_ac = np.stack([(genotypes == a).sum(axis=(1, 2)) for a in range(1, alts + 1)], axis=1)
            if samples is not None:
                return counted_ac, counted_an
        if "AC" in info and "AN" in info:
            an = self.read(info["AN"].array).astype(np.int64).reshape(self.rows)
            ac = self.read(info["AC"].array).astype(np.int64).reshape(self.rows, -1)[:, :alts]
            ac = np.pad(ac, ((0, 0), (0, alts - ac.shape[1])), constant_values=0)
            has = an >= 0
            if counted_an is None or counted_ac is None:
                return np.where(ac >= 0, ac, 0), np.where(has, an, 0)
            return (np.where(has[:, None], np.maximum(ac, 0), counted_ac),
                    np.where(has, an, counted_an))
        if counted_an is None or counted_ac is None:
            raise NotSupportedError(f"{self.store.path}: AC/AN need FORMAT/GT or INFO/AC and INFO/AN")
        return counted_ac, counted_an

    def counts(self, value: Site) -> Operand:
        ac, an = self.allele_counts()
        n_alts = (self.alleles()[:, 1:] != spec.STR_FILL).sum(axis=1)
        present = np.arange(ac.shape[1])[None, :] < np.maximum(n_alts, 1)[:, None]
        none = np.zeros(ac.shape, bool)
        acf, anf = ac.astype(np.float64), an.astype(np.float64)[:, None]
        if value.name == "AN":
            result = _number(an.astype(np.float64))
        elif value.name == "AC":
            result = _operand(acf, present, none)
        elif value.name == "MAC":
            result = _operand(np.where(acf > anf * 0.5, anf - acf, acf), present, none)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                af = acf / anf
                if value.name == "AF":
                    result = _operand(af, present & (anf > 0), present & (anf == 0))
                else:
                    result = self.minor_frequency(acf, anf, present)
        return result

    @staticmethod
    def minor_frequency(ac: np.ndarray, an: np.ndarray, present: np.ndarray) -> Operand:
        """bcftools MAF: over the alleles seen (REF included), the least ``min(f, 1 - f)``;
        missing when no allele is called."""
        counts = np.concatenate([an - np.where(present, ac, 0).sum(axis=1, keepdims=True),
                                 np.where(present, ac, 0)], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            freq = counts / an
        minor = np.where(counts > 0, np.minimum(freq, 1 - freq), np.inf).min(axis=1, keepdims=True)
        called = an > 0
        return _operand(np.where(called, minor, 0.0), called, ~called)

    # -- INFO and FORMAT fields

    def field(self, value: Info | Format) -> Operand:
        from vcfzarr_sql.query.selection.expression import Info

        fields = self.store.info_fields if isinstance(value, Info) else self.store.format_fields
        field = fields.get(value.tag)
        if field is None:  # declared by the header view writes (AC/AN for -s), in no record
            return _absent(self.rows)
        values = self.read(field.array)
        no_value = None if field.mask is None else self.read(field.mask)
        depth = 1 if isinstance(value, Info) else 2
        if values.ndim == depth:
            values = values[..., None]
            no_value = None if no_value is None else no_value[..., None]
        if field.vcf_type == "Flag":
            flagged = values.astype(np.float64)
            return _operand(flagged, np.ones(flagged.shape, bool), np.zeros(flagged.shape, bool))
        missing, fill = flags(values, field.vcf_type, no_value)
        valid = ~missing & ~fill
        if values.dtype.kind in "iuf":
            with np.errstate(invalid="ignore"):
                values = values.astype(np.float64)
        else:
            values = values.astype(object)
        result = _operand(values, valid, missing)
        return _indexed(result, value.index) if isinstance(value, Info) else result

#: ``MIN/MAX/SUM/AVG`` over the values that are not missing
_REDUCE: dict[str, Callable[..., np.ndarray]] = {
    "MIN": np.nanmin, "MAX": np.nanmax, "SUM": np.nansum, "AVG": np.nanmean,
}


def _number(column: np.ndarray) -> Operand:
    return _operand(column[:, None], np.ones((len(column), 1), bool), np.zeros((len(column), 1), bool))


def _absent(rows: int) -> Operand:
    return Operand(np.zeros((rows, 1), object), np.zeros((rows, 1), bool), np.ones((rows, 1), bool))


def _indexed(operand: Operand, index: int | None) -> Operand:
    """Element ``index`` of each vector (missing where the vector is shorter)."""
    if index is None:
        return operand
    if index >= operand.values.shape[-1]:
        shape = (*operand.values.shape[:-1], 1)
        return Operand(np.zeros(shape), np.zeros(shape, bool), np.ones(shape, bool))
    pick = slice(index, index + 1)
    valid = operand.valid[..., pick]
    return Operand(operand.values[..., pick], valid, operand.missing[..., pick] | ~valid)


def _symbolic(allele: str) -> bool:
    return allele.startswith("<") or "[" in allele or "]" in allele or allele in ("*", ".")


def _allele_type(ref: str, alt: str) -> str:
    """htslib's type of one ALT against REF (``bcf_set_variant_type``: after the common
    prefix and suffix, what is left), as bcftools' TYPE names it."""
    if alt == "*":
        return "overlap"
    if alt in (".", "X", "<X>", "<*>", "<NON_REF>") or (len(ref) == 1 and alt.upper() == ref.upper()):
        return "ref"
    if alt.startswith("<"):
        return "other"
    if alt.startswith(("[", "]")):
        return "bnd"
    r, a = ref.upper(), alt.upper()
    k = 0
    while k < len(r) and k < len(a) and r[k] == a[k]:
        k += 1
    if k == len(r) or k == len(a):
        if k == len(r) and k == len(a):
            return "ref"
        if k == len(r) and a[k] in "[]":
            return "bnd"
        return "indel"
    re_, ae = len(r) - 1, len(a) - 1  # trim the common suffix of what is left
    while re_ > k and ae > k and r[re_] == a[ae]:
        re_, ae = re_ - 1, ae - 1
    if ae == k:
        if re_ == k:
            return "snp"
        return "indel" if r[re_] == a[ae] else "other"
    if re_ == k:
        return "indel" if r[re_] == a[ae] else "other"
    return "mnp" if re_ - k == ae - k else "other"


# ---------------------------------------------------------------------------------------------
# evaluation: a bool per record ``(rows,)`` or per sample ``(rows, samples)``


def _any_sample(result: np.ndarray) -> np.ndarray:
    return result if result.ndim == 1 else np.asarray(result.any(axis=1))


def _evaluate(node: Node, chunk: ValueReader) -> np.ndarray:
    from vcfzarr_sql.query.selection.expression import Logic, Not

    if isinstance(node, Not):
        return ~_any_sample(_evaluate(node.inner, chunk))
    if isinstance(node, Logic):
        left, right = _evaluate(node.left, chunk), _evaluate(node.right, chunk)
        if node.op in ("&&", "||"):
            left, right = _any_sample(left), _any_sample(right)
        elif left.ndim != right.ndim:
            left = left if left.ndim == 2 else left[:, None]
            right = right if right.ndim == 2 else right[:, None]
        return np.asarray((left & right) if node.op in ("&&", "&") else (left | right))
    return _compare(node, chunk)


def _compare(node: Compare, chunk: ValueReader) -> np.ndarray:
    from vcfzarr_sql.query.selection.expression import Format, Site

    value, op, literal = node.value, node.op, node.literal
    if isinstance(value, Format) and value.tag == "GT":
        test = chunk.gt_class(str(literal))
        return test if op == "=" else ~test
    if isinstance(value, Site) and value.name == "TYPE":
        kinds = chunk.types()
        if op in ("=", "!="):
            test = np.array([k == {literal} for k in kinds], bool)
        else:
            test = np.array([literal in k for k in kinds], bool)
        return test if op in ("=", "~") else ~test
    if isinstance(value, Site) and value.name == "FILTER":
        return _filter_test(chunk, op, str(literal))
    operand = _value(value, chunk)
    if literal == ".":
        test = operand.missing if op == "=" else operand.valid
    elif op in ("~", "!~"):
        pattern = re.compile(str(literal))
        search = np.vectorize(lambda v: bool(pattern.search(str(v))), otypes=[bool])
        found = search(operand.values) if operand.values.size else np.zeros(operand.values.shape, bool)
        test = operand.valid & (found if op == "~" else ~found)
    else:
        with np.errstate(invalid="ignore"):
            test = operand.valid & _NUMERIC[op](operand.values, literal)
    if op in ("!=", "!~") and literal != ".":
        test = test | operand.missing
    return np.asarray(test.any(axis=-1))


def _value(value: Value, chunk: ValueReader) -> Operand:
    from vcfzarr_sql.query.selection.expression import Format, Info, Passing, Site

    if isinstance(value, Site):
        return chunk.site(value)
    if isinstance(value, (Info, Format)):
        return chunk.field(value)
    if isinstance(value, Passing):
        passing = _evaluate(value.condition, chunk)
        count = (passing.sum(axis=1) if passing.ndim == 2
                 else passing * chunk.store.num_samples).astype(np.float64)
        return _number(count / max(chunk.store.num_samples, 1) if value.fraction else count)
    operand = chunk.field(value.value)
    axes = (-1,) if value.per_sample else tuple(range(1, operand.values.ndim))
    numbers = np.where(operand.valid, operand.values, np.nan).astype(np.float64)
    has = operand.valid.any(axis=axes)
    has = np.asarray(has)
    reduce = _REDUCE[value.how]
    with np.errstate(invalid="ignore"):
        reduced = np.asarray(reduce(np.where(has.reshape(has.shape + (1,) * len(axes)), numbers, 0.0), axis=axes))
    return _operand(reduced[..., None], has[..., None], ~has[..., None])


def _filter_test(chunk: ValueReader, op: str, literal: str) -> np.ndarray:
    """``FILTER="A;B"``: exactly those filters; ``~``: all of them among others; ``"."``:
    no FILTER at all."""
    store = chunk.store
    names = list(store.filters)
    if store.has_array(spec.VARIANT_FILTER):
        on = chunk.read(spec.VARIANT_FILTER).astype(bool)
    else:
        on = np.zeros((chunk.rows, len(names)), bool)
    wanted = [n for n in literal.split(";") if n]
    if wanted == ["."]:
        test = np.asarray(~on.any(axis=1))
        return test if op in ("=", "~") else ~test
    unknown = [n for n in wanted if n not in names]
    chosen = np.isin(names, wanted)
    if op in ("~", "!~"):
        test = np.zeros(chunk.rows, bool) if unknown else np.asarray(on[:, chosen].all(axis=1))
    else:
        test = np.zeros(chunk.rows, bool) if unknown else np.asarray((on == chosen[None, :]).all(axis=1))
    return test if op in ("=", "~") else ~test


class ExpressionFilter:
    """A parsed ``-i``/``-e`` expression; :meth:`mask` evaluates it on a chunk."""

    def __init__(self, tree: Node, include: bool):
        self.tree = tree
        self.include = include

    @classmethod
    def of(cls, store: VczStore, include: str | None, exclude: str | None,
           added: tuple[str, ...] = ()) -> ExpressionFilter | None:
        """The filter of ``-i include`` or ``-e exclude`` (None when neither is given); a
        construct it cannot evaluate is refused here, before anything is written.

        ``added``: the INFO tags the written header declares and the store does not (AC and
        AN for ``-s``): as in bcftools, the expression reads them from the records, where
        they are absent (so ``AC>0`` holds nowhere, ``AC!=0`` everywhere)."""
        expression = include if include is not None else exclude
        if expression is None:
            return None
        from vcfzarr_sql.query.selection.expression import parse, store_fields

        fields = store_fields(store)
        for tag in added:
            fields.setdefault(tag, []).append(("INFO", "A" if tag == "AC" else "1", "Integer"))
        return cls(parse(expression, fields), include is not None)

    def mask(self, source: ChunkSource, chunk: int) -> np.ndarray:
        """Per record of variant chunk ``chunk`` (read through ``source``): whether it is
        kept (the expression holds under ``-i``, does not under ``-e``)."""
        holds = _any_sample(_evaluate(self.tree, ValueReader(source, chunk)))
        return holds if self.include else ~holds
