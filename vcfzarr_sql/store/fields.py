"""INFO and FORMAT fields of a store: which arrays they are, with their VCF Number/Type/Description.

Definitions come from the stored VCF header when there is one (VCF Zarr 0.2/0.3); bio2zarr's
0.4+ stores may have none, so Number is inferred from the array's dimensions (``alt_alleles``
-> A, ``alleles`` -> R, ``genotypes`` -> G, no extra dimension -> 1, a bool INFO array -> 0,
any other dimension -> the header's fixed N or ``.``; without a header, ``.``), Type from the
dtype, and Description from the array's ``description`` attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.header import HeaderDefinitions, HeaderField
from vcfzarr_sql.store.metadata import ArrayInfo

INFO = "INFO"
FORMAT = "FORMAT"
GT = "GT"

#: Dimension name -> VCF Number, for the Numbers with a reserved dimension.
_DIMENSION_NUMBER = {dim: number for number, dim in spec.NUMBER_DIMENSION.items()}
#: Arrays named like a FORMAT field that are not one.
_NOT_FORMAT_FIELDS = frozenset({spec.CALL_GENOTYPE_PHASED})
_COMPANION_SUFFIXES = ("_mask", "_fill")


@dataclass(frozen=True)
class FieldInfo:
    """One INFO or FORMAT field of a store."""

    name: str  # VCF name: "DP", "GT", "AD"
    category: str  # "INFO" or "FORMAT"
    array: str  # "variant_DP", "call_DP", "call_genotype" (for GT)
    number: str  # VCF Number: "0", "1", "2", ..., "A", "R", "G", "."
    vcf_type: str  # "Integer", "Float", "Flag", "Character", "String"
    description: str
    dtype: np.dtype  # as stored
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dims: tuple[str, ...]
    #: ``mask_<array>`` when the store has it: True where an element holds no value, so that
    #: the others are values even when equal to a sentinel (our converter writes it where
    #: real values equal -1, -2 or "")
    mask: str | None = None


def _is_companion(name: str, arrays: Mapping[str, ArrayInfo]) -> bool:
    """``<name>_mask``/``<name>_fill`` arrays that accompany an array ``<name>``."""
    return any(
        name.endswith(suffix) and name[: -len(suffix)] in arrays for suffix in _COMPANION_SUFFIXES
    )


def _vcf_name(category: str, array: str) -> str | None:
    """The VCF field an array holds, or None when it holds no INFO/FORMAT field."""
    if category == INFO:
        if array.startswith(spec.INFO_PREFIX) and array not in spec.FIXED_VARIANT_ARRAYS:
            return array[len(spec.INFO_PREFIX) :]
        return None
    if array == spec.CALL_GENOTYPE:
        return GT
    if array.startswith(spec.FORMAT_PREFIX) and array not in _NOT_FORMAT_FIELDS:
        return array[len(spec.FORMAT_PREFIX) :]
    return None


def _number(category: str, info: ArrayInfo, declared: HeaderField | None) -> str:
    leading = 1 if category == INFO else 2
    extra = info.dims[leading:]
    if info.name == spec.CALL_GENOTYPE:
        return "1"
    if not extra:
        return "0" if category == INFO and info.dtype == np.bool_ else "1"
    if extra[-1] in _DIMENSION_NUMBER:
        return _DIMENSION_NUMBER[extra[-1]]
    if declared is not None and declared.number in (".", str(info.shape[-1])):
        return declared.number
    return "."


def _dtype_type(dtype: np.dtype) -> str:
    if dtype == np.bool_:
        return "Flag"
    if dtype.kind in "iu":
        return "Integer"
    if dtype.kind == "f":
        return "Float"
    if dtype.kind in "US" and dtype.str[2:] == "1":
        return "Character"
    return "String"


#: dtype kinds that can hold each VCF Type (VCF Zarr: signed integers, floats, bools, strings).
_TYPE_KINDS = {"Integer": "i", "Float": "f", "Flag": "b", "Character": "OUS", "String": "OUS"}


def _check_type(info: ArrayInfo, declared: HeaderField) -> None:
    """StoreError when ``info``'s dtype cannot hold the header's Type (a changed dtype would
    otherwise silently change values, e.g. an Integer field read as floats)."""
    kinds = _TYPE_KINDS.get(declared.vcf_type)
    if kinds is not None and info.dtype.kind not in kinds:
        raise StoreError(f"array {info.name}: dtype {info.dtype} cannot hold the header's "
                         f"Type={declared.vcf_type}")


def _mask(info: ArrayInfo, arrays: Mapping[str, ArrayInfo]) -> str | None:
    mask = arrays.get(spec.MASK_PREFIX + info.name)
    if mask is None or (mask.shape, mask.chunks, mask.dtype) != (info.shape, info.chunks, np.bool_):
        return None
    return mask.name


def _field(
    category: str, name: str, info: ArrayInfo, declared: HeaderField | None, mask: str | None
) -> FieldInfo:
    if declared is not None:
        if info.name != spec.CALL_GENOTYPE:
            _check_type(info, declared)
        vcf_type, description = declared.vcf_type, declared.description
    elif info.name == spec.CALL_GENOTYPE:
        vcf_type, description = "String", info.attrs.get("description") or "Genotype"
    else:
        vcf_type, description = _dtype_type(info.dtype), info.attrs.get("description", "")
    return FieldInfo(
        name=name,
        category=category,
        array=info.name,
        number=_number(category, info, declared),
        vcf_type=vcf_type,
        description=description,
        dtype=info.dtype,
        shape=info.shape,
        chunks=info.chunks,
        dims=info.dims,
        mask=mask,
    )


def describe_fields(
    category: str, arrays: Mapping[str, ArrayInfo], header: HeaderDefinitions | None
) -> dict[str, FieldInfo]:
    """The fields of ``category`` ("INFO" or "FORMAT") held in ``arrays``, by VCF name.

    Order: the header's, then fields the header does not declare (GT first, then by name).
    """
    leading = (spec.DIM_VARIANTS,) if category == INFO else (spec.DIM_VARIANTS, spec.DIM_SAMPLES)
    found: dict[str, ArrayInfo] = {}
    for array, info in arrays.items():
        name = _vcf_name(category, array)
        if name is None or _is_companion(array, arrays):
            continue
        if len(info.dims) != len(info.shape):
            raise StoreError(f"array {array} has no dimension names ({spec.ARRAY_DIMENSIONS})")
        if info.dims[: len(leading)] == leading:
            found[name] = info
    declared = {} if header is None else (header.info if category == INFO else header.format)
    order = [n for n in declared if n in found]
    order += sorted(set(found) - set(declared), key=lambda n: (n != GT, n))
    return {
        n: _field(category, n, found[n], declared.get(n), _mask(found[n], arrays)) for n in order
    }
