"""The spec's rules for its fixed arrays: dimension names and dtype kind (no I/O).

``validate`` reports every array that breaks them; opening a store refuses one whose fixed
numeric arrays have the wrong dtype kind or a filter that changes values (a damaged or
hand-edited ``.zarray`` would otherwise decode to wrong rows).

>>> import numpy as np
>>> dtype_kind(np.dtype("<f4"), "0.4", vlen=False), dtype_kind(np.dtype(">i4"), "0.4", vlen=False)
('float', 'int')
>>> kind_matches(dtype_kind(np.dtype("<f4"), "0.4", vlen=False), MANDATORY_ARRAYS["variant_position"].kind, "0.4")
False
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec

# The spec's dtype shorthands.
INT, FLOAT, BOOL, CHAR, STR = "int", "float", "bool", "char", "str"
#: Versions in which ``vcf_header`` is mandatory (0.4 replaced it by ``vcf_meta_information``).
HEADER_VERSIONS = ("0.2", "0.3")

V, S = spec.DIM_VARIANTS, spec.DIM_SAMPLES


@dataclass(frozen=True)
class ArrayRule:
    """The dimension names and dtype kind of one of the spec's fixed arrays."""

    dims: tuple[str, ...]
    kind: str


#: Arrays every store must have, with their dimension names and dtype kind.
MANDATORY_ARRAYS = {
    spec.VARIANT_CONTIG: ArrayRule((V,), INT),
    spec.VARIANT_POSITION: ArrayRule((V,), INT),
    spec.VARIANT_ID: ArrayRule((V,), STR),
    spec.VARIANT_ALLELE: ArrayRule((V, spec.DIM_ALLELES), STR),
    spec.VARIANT_QUALITY: ArrayRule((V,), FLOAT),
    spec.VARIANT_FILTER: ArrayRule((V, spec.DIM_FILTERS), BOOL),
    spec.CONTIG_ID: ArrayRule((spec.DIM_CONTIGS,), STR),
    spec.FILTER_ID: ArrayRule((spec.DIM_FILTERS,), STR),
    spec.SAMPLE_ID: ArrayRule((S,), STR),
}
#: Arrays a store may have, with their rules.
OPTIONAL_ARRAYS = {
    spec.FILTER_DESCRIPTION: ArrayRule((spec.DIM_FILTERS,), STR),
    spec.CONTIG_LENGTH: ArrayRule((spec.DIM_CONTIGS,), INT),
    spec.VARIANT_LENGTH: ArrayRule((V,), INT),
    spec.CALL_GENOTYPE: ArrayRule((V, S, spec.DIM_PLOIDY), INT),
    spec.CALL_GENOTYPE_PHASED: ArrayRule((V, S), BOOL),
    spec.REGION_INDEX: ArrayRule(
        (spec.DIM_REGION_INDEX_VALUES, spec.DIM_REGION_INDEX_FIELDS), INT
    ),
}
#: Every fixed array's rule.
FIXED_ARRAYS = {**MANDATORY_ARRAYS, **OPTIONAL_ARRAYS}

#: Filters that change the values of a numeric array (not only its bytes). No VCF Zarr writer
#: puts them on the fixed arrays, and one added to a ``.zarray`` by hand or damage decodes
#: the stored values to other numbers without any error: refused there.
VALUE_FILTERS = frozenset({"delta", "fixedscaleoffset", "bitround", "quantize", "astype"})


def dtype_kind(dtype: np.dtype, version: str, *, vlen: bool) -> str | None:
    """The spec's dtype shorthand of ``dtype`` in ``version``, ``None`` if it has none.

    0.2/0.3: ``char`` is ``|S1``; 0.4+ also allows ``<U1`` and variable-length strings, which
    need a variable-length codec (``vlen``: the array has one).
    """
    kind = dtype.kind
    if kind == "i":
        return INT
    if kind == "f" and dtype.itemsize in (4, 8):
        return FLOAT
    if kind == "b":
        return BOOL
    if kind == "S" and dtype.itemsize == 1:
        return CHAR
    if kind == "U" and dtype.itemsize == 4 and version not in HEADER_VERSIONS:
        return CHAR
    if kind in ("T", "O"):
        return STR if vlen else None
    return None


def kind_matches(actual: str | None, expected: str, version: str) -> bool:
    """Whether an array of kind ``actual`` may hold what the spec types ``expected``."""
    if actual == expected:
        return True
    # 0.4+ stores may hold Character fields as variable-length strings.
    return expected == CHAR and actual == STR and version not in HEADER_VERSIONS
