"""Arrow schemas of the two tables a VCF Zarr store exposes: ``variants`` and ``calls``.

``variants`` has one row per VCF record::

    contig dictionary<int32, string>, pos int64, end int64, id string, ref string,
    alt list<string>, qual float32, filters list<string>, info_<Name>...,
    fmt_<Name>... (a list over the selected samples of the per-call value),
    fmt_GT list<list<intN>>, fmt_GT_phased list<bool>, fmt_GT_1 ... fmt_GT_<ploidy> list<intN>

``calls`` has one row per (record, sample): the variant columns (no ``fmt_`` lists), then
``sample_id dictionary<int32, string>`` and the per-call ``fmt_<Name>`` values, ``fmt_GT
list<intN>`` (allele indexes), ``fmt_GT_phased bool`` and ``fmt_GT_1`` ... ``fmt_GT_<ploidy>
intN``: allele k as a plain column, equal to ``fmt_GT[k]`` (DuckDB evaluates plain columns
6-8x faster than list elements, and they are built from the decoded chunk with one copy).
A FORMAT field whose own column has one of these names keeps it; the derived column is left
out. In ``calls`` the variant string
columns (``id``, ``ref``, String/Character ``info_``) repeat once per sample, so they are
dictionary<int32, string> over the records of the chunk: building them costs 2x less than
copying, and DuckDB filters and groups them 2.5-9x faster. (List columns stay lists: Arrow
cannot unify dictionaries of lists, which breaks ``to_pandas`` and ``combine_chunks``.)

Value types follow the VCF header: Integer -> int32 (int64 when stored as int64), Float ->
float32, Flag -> bool, Character and String -> string; Number=1 (and Flag) is a scalar, any
other Number a list. Genotype alleles keep the stored integer width (int8 for most stores).
Every INFO/FORMAT column carries its VCF ``Number``, ``Type`` and ``Description`` as field
metadata. There are no string_view, large or run-end-encoded types: DuckDB pushes filters down
only over plain and dictionary strings.

>>> import vcfzarr_sql
>>> store = vcfzarr_sql.open_store("sample.zarr")              # doctest: +SKIP
>>> variants_schema(store).field("pos").type                   # doctest: +SKIP
DataType(int64)
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Protocol

import numpy as np
import pyarrow as pa

from vcfzarr_sql.query import genotype_stats

#: The Arrow type of contig and sample_id columns (and of repeated strings in ``calls``).
DICT_STRING = pa.dictionary(pa.int32(), pa.string())

#: Fixed variant columns: name -> (Arrow type, description).
FIXED_COLUMNS: dict[str, tuple[pa.DataType, str]] = {
    "contig": (DICT_STRING, "CHROM: the contig name"),
    "pos": (pa.int64(), "POS: 1-based position of the first reference base"),
    "end": (pa.int64(), "Last reference base covered (POS + rlen - 1)"),
    "id": (pa.string(), "ID: semicolon-separated identifiers; NULL for '.'"),
    "ref": (pa.string(), "REF: the reference allele"),
    "alt": (pa.list_(pa.string()), "ALT: alternate alleles; empty for '.'"),
    "qual": (pa.float32(), "QUAL: Phred-scaled quality; NULL for '.'"),
    "filters": (pa.list_(pa.string()), "FILTER: filters applied; NULL for '.'"),
}
SAMPLE_ID = "sample_id"
SAMPLE_ID_DESCRIPTION = "The sample of this call"
GT = "GT"
INFO_PREFIX = "info_"
FORMAT_PREFIX = "fmt_"
PHASED_SUFFIX = "_phased"
GT_COLUMN = FORMAT_PREFIX + GT
GT_PHASED_COLUMN = GT_COLUMN + PHASED_SUFFIX


class Field(Protocol):
    """What the schema needs of an INFO/FORMAT field (``vcfzarr_sql.store.FieldInfo`` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def number(self) -> str: ...
    @property
    def vcf_type(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def shape(self) -> tuple[int, ...]: ...


class Store(Protocol):
    """What the schema needs of a store (``vcfzarr_sql.store.VczStore`` is one)."""

    @property
    def info_fields(self) -> Mapping[str, Field]: ...
    @property
    def format_fields(self) -> Mapping[str, Field]: ...


def value_type(field: Field) -> pa.DataType:
    """The Arrow type of one value of ``field`` (before any list)."""
    dtype = np.dtype(field.dtype)
    if field.name == GT:
        return pa.from_numpy_dtype(dtype.newbyteorder("="))
    if field.vcf_type == "Integer":
        return pa.int64() if dtype.itemsize >= 8 else pa.int32()
    if field.vcf_type == "Float":
        return pa.float32()
    if field.vcf_type == "Flag":
        return pa.bool_()
    return pa.string()  # Character, String


def is_scalar(field: Field) -> bool:
    """True when one record (INFO) or one call (FORMAT) holds a single value (not for GT)."""
    return field.vcf_type == "Flag" or field.number == "1"


def per_value_type(field: Field) -> pa.DataType:
    """The Arrow type of the field's value for one record (INFO) or one call (FORMAT)."""
    if field.name == GT:
        return pa.list_(value_type(field))
    return value_type(field) if is_scalar(field) else pa.list_(value_type(field))


def field_metadata(field: Field) -> dict[bytes, bytes]:
    """VCF header attributes of ``field`` as Arrow field metadata."""
    return {
        b"Number": field.number.encode(),
        b"Type": field.vcf_type.encode(),
        b"Description": field.description.encode(),
    }


def _described(name: str, type_: pa.DataType, description: str) -> pa.Field:
    return pa.field(name, type_, metadata={b"Description": description.encode()})


def _fixed_fields() -> list[pa.Field]:
    return [_described(name, t, d) for name, (t, d) in FIXED_COLUMNS.items()]


@functools.lru_cache(maxsize=256)
def _column_names(names: tuple[str, ...], prefix: str) -> tuple[dict[str, str], dict[str, str]]:
    natural = [prefix + name for name in names]
    taken = {column.casefold() for column in natural}
    by_name, by_column, used = {}, {}, set()
    for name, column in zip(names, natural):
        n = 1
        while column.casefold() in used or (n > 1 and column.casefold() in taken):
            n += 1
            column = f"{prefix}{name}_{n}"
        used.add(column.casefold())
        by_name[name], by_column[column] = column, name
    return by_name, by_column


def column_names(fields: Iterable[str], prefix: str) -> dict[str, str]:
    """The column name of each field (by VCF name, in header order): ``prefix`` + name, except
    that SQL names are case-insensitive, so a field whose column would equal an earlier one's
    but for case (INFO ``DP`` and ``dp``) gets the first ``_2``, ``_3``... that no other
    field's column has. The same names in every table and in ``vcf_zarr_fields``.

    >>> column_names(["DP", "dp", "dp_2", "AF"], "info_")
    {'DP': 'info_DP', 'dp': 'info_dp_3', 'dp_2': 'info_dp_2', 'AF': 'info_AF'}
    """
    return _column_names(tuple(fields), prefix)[0]


def field_of_column(fields: Iterable[str], prefix: str, column: str) -> str | None:
    """The VCF name of the field whose column (:func:`column_names`) is ``column``, or None."""
    return _column_names(tuple(fields), prefix)[1].get(column)


def _info_fields(store: Store) -> list[pa.Field]:
    columns = column_names(store.info_fields, INFO_PREFIX)
    return [
        pa.field(columns[f.name], per_value_type(f), metadata=field_metadata(f))
        for f in store.info_fields.values()
    ]


def _phased_field(type_: pa.DataType) -> pa.Field:
    description = "True if the genotype is phased"
    return pa.field(
        GT_PHASED_COLUMN,
        type_,
        metadata={b"Number": b"1", b"Type": b"Flag", b"Description": description.encode()},
    )


def genotype_columns(fields: Mapping[str, Field]) -> dict[str, int | None]:
    """The columns derived from the GT field of ``fields`` (FORMAT fields by VCF name):
    ``fmt_GT_phased`` -> None, ``fmt_GT_<k>`` -> k - 1 for k from 1 to the ploidy (the last
    dimension of the GT array). A FORMAT field named like one (``GT_1``, or ``gt_1``: SQL
    names are case-insensitive) keeps that column.

    >>> from types import SimpleNamespace as F
    >>> genotype_columns({"GT": F(shape=(9, 3, 2)), "GT_2": F(shape=(9, 3))})
    {'fmt_GT_phased': None, 'fmt_GT_1': 0}
    """
    gt = fields.get(GT)
    if gt is None:
        return {}
    ploidy = gt.shape[-1] if len(gt.shape) == 3 else 0
    derived: dict[str, int | None] = {GT_PHASED_COLUMN: None}
    derived.update({f"{GT_COLUMN}_{k + 1}": k for k in range(ploidy)})
    taken = {column.casefold() for column in column_names(fields, FORMAT_PREFIX).values()}
    return {name: index for name, index in derived.items() if name.casefold() not in taken}


def _allele_field(name: str, index: int, type_: pa.DataType) -> pa.Field:
    description = (
        f"Allele {index + 1} of the genotype, as fmt_GT[{index + 1}]: "
        "NULL when missing or when the call has fewer alleles"
    )
    return pa.field(
        name,
        type_,
        metadata={b"Number": b"1", b"Type": b"Integer", b"Description": description.encode()},
    )


def _format_fields(store: Store, *, over_samples: bool) -> list[pa.Field]:
    def per_sample(type_: pa.DataType) -> pa.DataType:
        return pa.list_(type_) if over_samples else type_

    fields = []
    columns = column_names(store.format_fields, FORMAT_PREFIX)
    for f in store.format_fields.values():
        fields.append(
            pa.field(columns[f.name], per_sample(per_value_type(f)), metadata=field_metadata(f))
        )
        if f.name == GT:  # its derived columns follow it
            for name, index in genotype_columns(store.format_fields).items():
                if index is None:
                    fields.append(_phased_field(per_sample(pa.bool_())))
                else:
                    fields.append(_allele_field(name, index, per_sample(value_type(f))))
    return fields


def _summary_fields(store: Store) -> list[pa.Field]:
    """The ``gt_`` summary columns (see :mod:`vcfzarr_sql.query.genotype_stats`), when the
    store has genotypes."""
    gt = store.format_fields.get(GT)
    if gt is None or len(gt.shape) != 3:
        return []
    return [_described(name, t, d) for name, (t, d) in genotype_stats.COLUMNS.items()]


def variants_schema(store: Store) -> pa.Schema:
    """The schema of the ``variants`` table of ``store``: one row per VCF record."""
    return pa.schema(
        _fixed_fields()
        + _info_fields(store)
        + _format_fields(store, over_samples=True)
        + _summary_fields(store)
    )


def _repeated_type(type_: pa.DataType) -> pa.DataType:
    """The type of a variant column of type ``type_`` in ``calls``, where each record repeats."""
    if pa.types.is_string(type_):
        return pa.dictionary(pa.int32(), type_)
    return type_


def calls_schema(store: Store) -> pa.Schema:
    """The schema of the ``calls`` table of ``store``: one row per (record, sample)."""
    return pa.schema(
        [f.with_type(_repeated_type(f.type)) for f in _fixed_fields() + _info_fields(store)]
        + [_described(SAMPLE_ID, DICT_STRING, SAMPLE_ID_DESCRIPTION)]
        + _format_fields(store, over_samples=False)
    )
