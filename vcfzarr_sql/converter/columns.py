"""Columns of a block of records: cyvcf2 records -> numpy arrays with block-local widths.

Every column has a trailing value dimension (alleles, ploidy, the values of a field) whose
width is the largest in the block; shorter values are padded with the fill sentinel and
absent values are stored as htslib stores them: one missing value, then fill.
INFO columns are ``(records, width)``, FORMAT columns ``(records, samples, width)``.
Where a cyvcf2 accessor cannot read a record that htslib reads (non-ASCII FORMAT strings,
a GT declared with a non-String type), the values are taken from htslib's text of the record.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.converter.header import FieldDef
from vcfzarr_sql.converter.masks import mask_name, no_value_mask
from vcfzarr_sql.format import spec

if TYPE_CHECKING:
    from cyvcf2 import Variant

#: One INFO value as cyvcf2 gives it: a scalar, a tuple (several values), a bool for a Flag
#: or a key without a value, None when absent.
InfoValue = bool | int | float | str | tuple[int | float | None, ...] | None

BCF_INT32_MISSING = np.iinfo(np.int32).min
BCF_INT32_VECTOR_END = BCF_INT32_MISSING + 1
FLOAT32_MISSING = np.uint32(spec.FLOAT32_MISSING_BITS).view(np.float32)
FLOAT32_FILL = np.uint32(spec.FLOAT32_FILL_BITS).view(np.float32)

#: Block column names of the fixed fields (not arrays of the store: see converter.arrays).
CONTIG = "contig"
POSITION = "position"
ID = "id"
ALLELES = "alleles"
QUALITY = "quality"
FILTERS = "filters"
LENGTH = "length"
GENOTYPE = "genotype"
PHASED = "phased"


#: How one record uses an INFO key the header does not declare, in the key's ``use:<array>``
#: column: without a value (``;K;``, or ``K=`` which htslib writes back as ``K``), not at all,
#: or with a value. htslib declares such a key ``Number=1,Type=String``; one that no record
#: gives a value is what bcftools shows as a flag (``view`` writes the bare key, ``query`` prints
#: ``1``), and the store keeps it as a Flag made of this column.
KEY_BARE, KEY_ABSENT, KEY_VALUED = -1, 0, 1


def key_use_column(array: str) -> str:
    """The block column saying how each record uses the undeclared INFO key of ``array``."""
    return "use:" + array


def key_use(variants: Sequence[Variant], name: str) -> np.ndarray:
    """``(records, 1)`` :data:`KEY_BARE`/:data:`KEY_ABSENT`/:data:`KEY_VALUED` of INFO key ``name``."""
    out = np.full((len(variants), 1), KEY_ABSENT, dtype=np.int8)
    for i, v in enumerate(variants):
        value = v.INFO.get(name)
        if value is not None:  # cyvcf2: False for a bare key of a String field, "" for ``K=``
            out[i, 0] = KEY_BARE if isinstance(value, bool) or value == "" else KEY_VALUED
    return out


def fill_value(kind: str) -> object:
    """The fill (padding) sentinel of a column kind: "int", "float", "str" or "bool"."""
    return {"int": spec.INT_FILL, "float": FLOAT32_FILL, "str": spec.STR_FILL, "bool": False}[kind]


def missing_value(kind: str) -> object:
    return {"int": spec.INT_MISSING, "float": FLOAT32_MISSING, "str": spec.STR_MISSING}[kind]


def value_kind(vcf_type: str) -> str:
    return {"Integer": "int", "Float": "float", "Flag": "bool"}.get(vcf_type, "str")


def numpy_dtype(kind: str) -> type:
    return {"int": np.int32, "float": np.float32, "str": object, "bool": bool}[kind]


def splits(field: FieldDef) -> bool:
    """Whether string values hold comma-separated vectors (every Number but 1)."""
    return field.number != "1"


def _ragged(rows: Sequence[Sequence[object] | None], kind: str) -> np.ndarray:
    """Stack 1-D sequences (None: absent; None elements: missing) into ``(len(rows), width)``,
    padded with fill."""
    width = max((len(r) for r in rows if r is not None), default=1) or 1
    out: np.ndarray = np.full((len(rows), width), fill_value(kind), dtype=numpy_dtype(kind))
    missing = missing_value(kind)
    for i, row in enumerate(rows):
        if row is None or len(row) == 0:
            out[i, 0] = missing
        else:
            out[i, : len(row)] = [missing if x is None else x for x in row]
    return out


def _info_values(value: InfoValue, field: FieldDef, kind: str) -> Sequence[int | float | str | None] | None:
    # cyvcf2 gives a bool for a key without a value (``;KEY;``) of a non-Flag field: present
    # but missing, as bcftools' expressions and pysam read it.
    if value is None or isinstance(value, bool):
        return None
    if kind == "str":
        text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        return text.split(",") if splits(field) else [text]
    return list(value) if isinstance(value, tuple) else [value]


def info_column(variants: Sequence[Variant], field: FieldDef) -> tuple[np.ndarray, np.ndarray | None]:
    """``(records, width)`` values of one INFO field, and their no-value mask when some real
    value equals a sentinel (:mod:`.masks`)."""
    kind = value_kind(field.vcf_type)
    name = field.name
    if kind == "bool":
        return np.array([[v.INFO.get(name) is not None] for v in variants], dtype=bool), None
    rows = [_info_values(v.INFO.get(name), field, kind) for v in variants]
    values = _ragged(rows, kind)
    return values, no_value_mask(rows, values.shape, kind)


def _text_format_values(variant: Variant, name: str, n_samples: int) -> list[str]:
    """Per-sample raw text of FORMAT field ``name`` from htslib's VCF line of the record."""
    columns = str(variant).rstrip("\n").split("\t")
    keys = columns[8].split(":") if len(columns) > 8 else []
    if name not in keys:
        return [spec.STR_MISSING] * n_samples
    k = keys.index(name)
    out = []
    for sample in columns[9 : 9 + n_samples]:
        parts = sample.split(":")
        out.append(parts[k] if k < len(parts) else spec.STR_MISSING)
    return out + [spec.STR_MISSING] * (n_samples - len(out))


def _string_format(variant: Variant, field: FieldDef, n_samples: int) -> list[list[str]] | None:
    try:
        values = variant.format(field.name)
    except UnicodeDecodeError:
        values = _text_format_values(variant, field.name, n_samples)
    if values is None:
        return None
    values = [str(x) for x in np.asarray(values).reshape(n_samples, -1)[:, 0]]
    if splits(field):
        return [x.split(",") for x in values]
    return [[x] for x in values]


def format_column(
    variants: Sequence[Variant], field: FieldDef, n_samples: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(records, samples, width)`` values of one FORMAT field (not GT), and their no-value
    mask when some real value equals a sentinel (:mod:`.masks`)."""
    kind = value_kind(field.vcf_type)
    n = len(variants)
    if kind == "str":
        per_record = [_string_format(v, field, n_samples) for v in variants]
        width = max(
            (max(map(len, r)) for r in per_record if r is not None and n_samples), default=1
        )
        out = np.full((n, n_samples, width), spec.STR_FILL, dtype=object)
        for i, rec in enumerate(per_record):
            if rec is None:
                out[i, :, 0] = spec.STR_MISSING
                continue
            for j, vals in enumerate(rec):
                out[i, j, : len(vals)] = vals
        absent: list[list[str] | None] = [None] * n_samples
        calls = [vals for rec in per_record for vals in (rec or absent)]
        return out, no_value_mask(calls, out.shape, kind)
    arrays = [v.format(field.name) for v in variants]
    width = max((a.shape[1] for a in arrays if a is not None), default=1)
    if kind != "int":
        out = np.full((n, n_samples, width), fill_value(kind), dtype=numpy_dtype(kind))
        for i, a in enumerate(arrays):
            if a is None:
                out[i, :, 0] = missing_value(kind)
            else:
                out[i, :, : a.shape[1]] = a
        return out, None
    out = np.full((n, n_samples, width), BCF_INT32_VECTOR_END, dtype=np.int32)
    for i, a in enumerate(arrays):
        if a is None:
            out[i, :, 0] = BCF_INT32_MISSING
        else:
            out[i, :, : a.shape[1]] = a
    no_value = out <= BCF_INT32_VECTOR_END  # htslib's missing and end-of-vector
    literal = (out == spec.INT_MISSING) | (out == spec.INT_FILL)
    out[out == BCF_INT32_MISSING] = spec.INT_MISSING
    out[out == BCF_INT32_VECTOR_END] = spec.INT_FILL
    return out, no_value if literal.any() else None


def _text_genotypes(variant: Variant, n_samples: int) -> np.ndarray:
    """``(samples, ploidy)`` BCF-encoded GT values (``(allele + 1) << 1 | phased``, vector end
    padding), from htslib's text of the record."""
    calls = []
    for text in _text_format_values(variant, "GT", n_samples):
        encoded: list[int] = []
        token, phase = "", 0
        for ch in text + "/":
            if ch in "/|":
                if token or encoded:
                    allele = 0 if token in (".", "") else int(token) + 1
                    encoded.append(allele << 1 | phase)
                token, phase = "", int(ch == "|")
            else:
                token += ch
        calls.append(encoded)
    width = max(map(len, calls), default=1)
    out = np.full((n_samples, width), BCF_INT32_VECTOR_END, dtype=np.int32)
    for j, call in enumerate(calls):
        out[j, : len(call)] = call
    return out


def _raw_genotypes(variant: Variant, n_samples: int) -> np.ndarray | None:
    raw = variant.format("GT", int)  # raw BCF encoding even when GT is declared Type=String
    if raw is None and "GT" in variant.FORMAT:  # e.g. GT declared Type=Integer
        return _text_genotypes(variant, n_samples)
    return raw


def decode_genotypes(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BCF-encoded GT ``(..., ploidy)`` -> allele indexes (-1 missing, -2 fill) and phasing.

    A call is phased when every allele after the first carries the phase bit (a haploid call:
    when its only allele does, i.e. a VCF 4.4 ``|`` prefix).

    >>> alleles, phased = decode_genotypes(np.array([[2, 5], [4, BCF_INT32_VECTOR_END], [0, 2]]))
    >>> alleles.tolist(), phased.tolist()
    ([[0, 1], [1, -2], [-1, 0]], [True, False, False])
    """
    valid = raw != BCF_INT32_VECTOR_END
    alleles = (raw >> 1) - 1
    if raw.shape[-1] == 2 and valid.all():  # the usual diploid block: no padding
        return alleles, (raw[..., 1] & 1).astype(bool)
    alleles[~valid] = spec.INT_FILL
    bits = (raw & 1).astype(bool)
    phased = bits[..., 0] & valid[..., 0]  # haploid calls
    if raw.shape[-1] > 1:
        later = np.ones(raw.shape[:-1], dtype=bool)
        for j in range(1, raw.shape[-1]):  # ploidy is small: no reductions over a short axis
            later &= bits[..., j] | ~valid[..., j]
        phased = np.where(valid[..., 1], later, phased)
    return alleles, phased


def genotype_columns(variants: Sequence[Variant], n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """``(records, samples, ploidy)`` allele indexes and ``(records, samples)`` phasing."""
    arrays = [_raw_genotypes(v, n_samples) for v in variants]
    width = max((a.shape[1] for a in arrays if a is not None), default=1)
    raw = np.full((len(variants), n_samples, width), BCF_INT32_VECTOR_END, dtype=np.int32)
    for i, a in enumerate(arrays):
        if a is None:
            raw[i, :, 0] = 0  # absent GT: one missing allele
        else:
            raw[i, :, : a.shape[1]] = a
    return decode_genotypes(raw)


def fixed_columns(variants: Sequence[Variant]) -> dict[str, np.ndarray]:
    """CHROM, POS, ID, REF+ALT, QUAL, FILTER and rlen of a block of records."""
    n = len(variants)
    contig = np.empty(n, dtype=object)
    position = np.empty(n, dtype=np.int64)
    ids = np.empty(n, dtype=object)
    quality = np.empty(n, dtype=np.float32)
    filters = np.empty(n, dtype=object)
    length = np.empty(n, dtype=np.int64)
    alleles = []
    for i, v in enumerate(variants):
        contig[i] = v.CHROM
        position[i] = v.start + 1  # v.POS is 32-bit in cyvcf2
        ids[i] = v.ID or spec.STR_MISSING
        q = v.QUAL
        quality[i] = FLOAT32_MISSING if q is None else q
        filters[i] = ";".join(v.FILTERS)
        length[i] = v.end - v.start
        alleles.append([v.REF, *v.ALT])
    return {
        CONTIG: contig,
        POSITION: position,
        ID: ids,
        ALLELES: _ragged(alleles, "str"),
        QUALITY: quality,
        FILTERS: filters,
        LENGTH: length,
    }


def block_columns(variants: Sequence[Variant], fields: Sequence[FieldDef], n_samples: int,
                  undeclared: Collection[str] = (),
                  genotypes: tuple[np.ndarray, np.ndarray] | None = None,
                  sites: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Every column of a block of records, keyed by fixed column name or field array name;
    for the INFO keys named in ``undeclared`` (htslib declared them), their :func:`key_use` too.
    ``genotypes``: the GT columns (alleles, phasing) when they were parsed from the text
    (:mod:`.genotype_text`), else they come from the records; ``sites``: likewise the fixed
    columns (:mod:`.site_text`)."""
    columns = fixed_columns(variants) if sites is None else dict(sites)
    for field in fields:
        if field.category == "INFO":
            columns[field.array], no_value = info_column(variants, field)
            if field.name in undeclared:
                columns[key_use_column(field.array)] = key_use(variants, field.name)
        elif n_samples == 0:
            continue  # sites-only: no call arrays
        elif field.name == "GT":
            columns[GENOTYPE], columns[PHASED] = genotypes or genotype_columns(variants, n_samples)
            continue
        else:
            columns[field.array], no_value = format_column(variants, field, n_samples)
        if no_value is not None:
            columns[mask_name(field.array)] = no_value
    return columns
