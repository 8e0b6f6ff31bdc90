"""The store's arrays: path, dtype, dimensions, shape and chunks, from the header and the data.

Built once parsing has seen every record (:mod:`vcfzarr_sql.converter.stats`), so every
dimension is as wide as the widest value (nothing is truncated) and every integer dtype is
wide enough for the values it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numcodecs.blosc import Blosc

from vcfzarr_sql.converter import columns as col
from vcfzarr_sql.converter.header import FieldDef
from vcfzarr_sql.converter.masks import mask_name
from vcfzarr_sql.converter.stats import ColumnStats
from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.summary_arrays import COMPRESSOR

_INT_DTYPES = (np.int8, np.int16, np.int32, np.int64)
_FILL = {"char": b"", "filter": False, "contig": spec.INT_FILL, "mask": True}


def fill_value(kind: str) -> object:
    """The padding value of an array kind (also used for chunk edges)."""
    return _FILL[kind] if kind in _FILL else col.fill_value(kind)


@dataclass(frozen=True)
class ArraySpec:
    """One array of the store and how its chunks are made from block columns."""

    name: str
    column: str | None  # block column holding its values (None: written whole, not per chunk)
    kind: str  # "int", "float", "str", "char", "bool", "mask" (of a field: padded with True),
    # or "contig"/"filter" (names mapped to ids)
    dtype: str  # numpy/Zarr v2 dtype string
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    squeeze: bool  # the block column's value dimension is dropped (always width 1)
    compressor: dict  # numcodecs codec configuration
    description: str = ""
    min_ratio: float = 0  # (never stored as it is: :class:`vcfzarr_sql.store.writer.NewArray`)

    @property
    def padding(self) -> object:
        """The value padding a chunk beyond the array's edge (:mod:`vcfzarr_sql.store.writer`)."""
        return fill_value(self.kind)

    @property
    def per_call(self) -> bool:
        return len(self.dims) > 1 and self.dims[1] == spec.DIM_SAMPLES

    @property
    def has_value_dim(self) -> bool:
        """The last dimension holds the values of one record (or call)."""
        return len(self.dims) > (2 if self.per_call else 1)


def int_dtype(low: int, high: int, smallest: type[np.signedinteger] = np.int8) -> str:
    """The narrowest signed integer dtype holding ``[low, high]`` and the sentinels.

    >>> int_dtype(0, 3), int_dtype(-1, 300), int_dtype(0, 2**31, smallest=np.int32)
    ('|i1', '<i2', '<i8')
    """
    for dtype in _INT_DTYPES:
        info = np.iinfo(dtype)
        if np.dtype(dtype).itemsize >= np.dtype(smallest).itemsize and info.min <= min(
            low, spec.INT_FILL
        ) and high <= info.max:
            return np.dtype(dtype).str
    raise NotSupportedError(f"integer values {low}..{high} do not fit in 64 bits")


#: Blosc blocks of the bit-shuffled arrays (a default chunk of genotypes, 1000 x 1000 x 2 bytes,
#: is two of them).
BITSHUFFLE_BLOCKSIZE = 1 << 20


def default_compressor(bitshuffle: bool) -> dict:
    """Blosc zstd level 7 with byte shuffle; or, for genotypes and bool arrays, zstd level 4
    with bit shuffle in 1 MiB blocks: measured (``benchmarks/codec_levels.py``, docs/benchmarks.md)
    against level 7 with Blosc's own blocks, the store's default until 2026-11-27 and
    bio2zarr's, it compresses genotypes with 0.37-0.46x the CPU into 0.99-1.01x the bytes
    (a simulated cohort, the 1000 Genomes slice), and decompresses them as fast.

    >>> default_compressor(True)["clevel"], default_compressor(True)["blocksize"]
    (4, 1048576)
    """
    if bitshuffle:
        return Blosc(cname="zstd", clevel=4, shuffle=Blosc.BITSHUFFLE, blocksize=BITSHUFFLE_BLOCKSIZE).get_config()
    return dict(COMPRESSOR)


@dataclass(frozen=True)
class Layout:
    num_variants: int
    num_samples: int
    variants_chunk: int
    samples_chunk: int

    @classmethod
    def of(cls, num_variants: int, num_samples: int, variants_chunk_size: int, samples_chunk_size: int) -> Layout:
        return cls(
            num_variants,
            num_samples,
            max(1, min(variants_chunk_size, num_variants)),
            max(1, min(samples_chunk_size, num_samples)),
        )


class _Builder:
    def __init__(self, layout: Layout, stats: dict[str, ColumnStats], compressor: dict | None,
                 columns: Mapping[str, str]):
        self.layout = layout
        self.stats = stats
        self.compressor = compressor
        self.columns = columns
        self.specs: list[ArraySpec] = []
        alleles = max(2, self.width(col.ALLELES))  # so that alt_alleles is not empty
        self.reserved = {spec.DIM_ALLELES: alleles, spec.DIM_ALT_ALLELES: alleles - 1}

    def width(self, column: str) -> int:
        return self.stats[column].width if column in self.stats else 1

    def add(self, name: str, column: str | None, kind: str, dtype: npt.DTypeLike,
            value_dims: Sequence[str] = (), value_shape: Sequence[int] = (), *,
            per_call: bool = False, squeeze: bool = False, description: str = "") -> None:
        lay = self.layout
        dims = (spec.DIM_VARIANTS,) + ((spec.DIM_SAMPLES,) if per_call else ()) + tuple(value_dims)
        shape = (lay.num_variants,) + ((lay.num_samples,) if per_call else ()) + tuple(value_shape)
        chunks = (lay.variants_chunk,) + ((lay.samples_chunk,) if per_call else ()) + tuple(
            max(1, n) for n in value_shape
        )
        bitshuffle = kind in ("bool", "filter", "mask") or name == spec.CALL_GENOTYPE
        self.specs.append(
            ArraySpec(
                name=name,
                column=column,
                kind=kind,
                dtype=np.dtype(dtype).str,
                dims=dims,
                shape=shape,
                chunks=chunks,
                squeeze=squeeze,
                compressor=self.compressor or default_compressor(bitshuffle),
                description=description,
            )
        )

    def fixed(self, num_filters: int) -> None:
        position = self.stats.get(col.POSITION, ColumnStats())
        length = self.stats.get(col.LENGTH, ColumnStats())
        last_end = position.high + max(length.high, 1)  # region index max end
        position_dtype = int_dtype(min(position.low, length.low), last_end, np.int32)
        self.add(spec.VARIANT_CONTIG, col.CONTIG, "contig", np.int32)
        self.add(spec.VARIANT_POSITION, col.POSITION, "int", position_dtype)
        self.add(spec.VARIANT_LENGTH, col.LENGTH, "int", position_dtype)
        self.add(spec.VARIANT_ID, col.ID, "str", object)
        self.add(spec.VARIANT_ALLELE, col.ALLELES, "str", object, [spec.DIM_ALLELES],
                 [self.reserved[spec.DIM_ALLELES]])
        self.add(spec.VARIANT_QUALITY, col.QUALITY, "float", np.float32)
        self.add(spec.VARIANT_FILTER, col.FILTERS, "filter", bool, [spec.DIM_FILTERS], [num_filters])

    def genotypes(self) -> None:
        gt = self.stats.get(col.GENOTYPE, ColumnStats())
        self.add(spec.CALL_GENOTYPE, col.GENOTYPE, "int", int_dtype(gt.low, gt.high),
                 [spec.DIM_PLOIDY], [gt.width], per_call=True)
        self.add(spec.CALL_GENOTYPE_PHASED, col.PHASED, "bool", bool, per_call=True)

    def value_dim(self, field: FieldDef, width: int) -> tuple[str, int]:
        unique = f"{field.category}_{field.name}_dim"
        reserved = spec.NUMBER_DIMENSION.get(field.number)
        if reserved is None:
            declared = int(field.number) if field.number.isdigit() else 1
            return unique, max(width, declared)
        size = self.reserved[reserved]
        return (reserved, size) if width <= size else (unique, width)

    def field(self, field: FieldDef) -> None:
        kind = col.value_kind(field.vcf_type)
        stats = self.stats.get(field.array, ColumnStats())
        dtype: npt.DTypeLike
        if kind == "str" and field.vcf_type == "Character" and stats.max_bytes <= 1:
            kind, dtype = "char", "S1"
        else:
            dtypes: dict[str, npt.DTypeLike] = {"int": int_dtype(stats.low, stats.high),
                                                "float": np.float32, "str": object, "bool": bool}
            dtype = dtypes[kind]
        dim, width = self.value_dim(field, stats.width)
        squeeze = field.number in ("0", "1") and width == 1 or kind == "bool"
        value_dims, value_shape = ([], []) if squeeze else ([dim], [width])
        per_call = field.category == "FORMAT"
        column = self.columns.get(field.array, field.array)
        self.add(field.array, column, kind, dtype, value_dims, value_shape,
                 per_call=per_call, squeeze=squeeze, description=field.description)
        mask = mask_name(field.array)
        if mask in self.stats:  # some real value equals a sentinel
            self.add(mask, mask, "mask", bool, value_dims, value_shape, per_call=per_call,
                     squeeze=squeeze, description=f"True where {field.array} holds no value "
                     "(missing or fill): its other elements equal to a sentinel are values")


def header_deviations(fields: Sequence[FieldDef], arrays: Sequence[ArraySpec]) -> list[str]:
    """Fields whose values do not fit their header declaration or the spec's sentinels, one
    sentence each.

    Their values are kept whole (bcftools reads them whole), so their arrays cannot follow the
    spec's dimension or dtype for the declared Number/Type; ``vcfzarr-sql validate`` reports them.
    Values equal to a sentinel are kept with a mask array (:mod:`.masks`).
    """
    by_name = {a.name: a for a in arrays}
    found = []
    for field in fields:
        array = by_name.get(field.array)
        if array is None or field.name == "GT" and field.category == "FORMAT":
            continue
        where = f"{field.category}/{field.name}"
        width = array.shape[-1] if array.has_value_dim else 1
        reserved = spec.NUMBER_DIMENSION.get(field.number)
        too_wide = (
            array.dims[-1] != reserved
            if reserved is not None
            else field.number in ("0", "1") and array.has_value_dim
        )
        if too_wide:
            found.append(f"{where} is declared Number={field.number} but a record has up to {width} "
                         f"values; kept whole in dimension {array.dims[-1]}")
        if field.vcf_type == "Character" and array.kind == "str":
            found.append(f"{where} is declared Type=Character but a value is longer than one "
                         "character; stored as String")
        if mask_name(field.array) in by_name:
            equal = "an empty string in a list" if array.kind == "str" else "-1 or -2"
            found.append(f"{where} has values ({equal}) equal to VCF Zarr's missing/fill "
                         f"sentinels; kept with the mask array {mask_name(field.array)} "
                         "(readers that ignore it see them as missing or fill)")
    return found


def build_arrays(
    fields: Sequence[FieldDef],
    stats: dict[str, ColumnStats],
    layout: Layout,
    num_filters: int,
    compressor: dict | None = None,
    *,
    columns: Mapping[str, str] | None = None,
) -> list[ArraySpec]:
    """The per-variant arrays of the store (the small contig/filter/sample arrays excepted);
    ``columns``: the block column of an array that is not made of its own (by array name)."""
    builder = _Builder(layout, stats, compressor, columns or {})
    builder.fixed(num_filters)
    g_width = max((stats[f.array].width for f in fields if f.number == "G" and f.array in stats), default=1)
    builder.reserved[spec.DIM_GENOTYPES] = g_width
    fixed_names = {s.name for s in builder.specs}
    for field in fields:
        if field.category == "FORMAT" and layout.num_samples == 0:
            continue
        if field.array in fixed_names:
            raise NotSupportedError(f"INFO field {field.name} would overwrite array {field.array}")
        if field.name == "GT" and field.category == "FORMAT":
            builder.genotypes()
        else:
            builder.field(field)
    return builder.specs


def whole_array(name: str, values: np.ndarray, dim: str, compressor: dict | None = None,
                chunk: int | None = None) -> ArraySpec:
    """A small array written from memory (contig, filter and sample tables, region index), in one
    chunk unless ``chunk`` is given (``sample_id`` is chunked like the samples dimension)."""
    kind = "str" if values.dtype == object else "int"
    return ArraySpec(
        name=name,
        column=None,
        kind=kind,
        dtype=values.dtype.str,
        dims=(dim,) if values.ndim == 1 else (dim, spec.DIM_REGION_INDEX_FIELDS),
        shape=values.shape,
        chunks=(chunk or max(1, len(values)),) + tuple(max(1, n) for n in values.shape[1:]),
        squeeze=False,
        compressor=compressor or default_compressor(False),
    )
