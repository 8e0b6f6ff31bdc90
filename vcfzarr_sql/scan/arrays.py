"""Arrow arrays from decoded VCF Zarr chunk values, with the VCF sentinels turned into nulls.

VCF Zarr marks a missing value (VCF ``.``) with a sentinel (int -1, float NaN 0x7F800001,
string ``"."``) and pads variable-length values with a fill sentinel (int -2, float NaN
0x7F800002, string ``""``). Here missing becomes an Arrow null and fill is trimmed away:

* scalar: missing or fill -> null.
* list (the last axis of the values): fill elements are dropped, missing elements become null
  elements; a list left empty, or holding only missing elements, is null (VCF ``.``): bcftools
  prints ``.`` for ``AF=.`` on a Number=A field, and a record without the field is stored the
  same way. Genotypes keep their missing alleles (``./.`` is ``[null, null]``); a genotype
  of one missing allele (``.``, stored as missing then fill) is null. ALT is never null.

Everything is vectorised over whole chunks: numbers stay in their numpy buffers when the
stored dtype is the Arrow type (zero-copy), validity bitmaps come from ``np.packbits``, list
offsets are a range when no row is padded (computed once per shape and shared by every batch)
and a cumulative sum of row lengths otherwise, and one ``min()`` usually shows a chunk has no
sentinel at all (or, for integers, no fill).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql import spec
from vcfzarr_sql.errors import NotSupportedError

_INT32_MAX = np.iinfo(np.int32).max


#: float itemsize -> (unsigned int of that size, missing bits, fill bits)
_FLOAT_SENTINELS = {
    4: (np.uint32, spec.FLOAT32_MISSING_BITS, spec.FLOAT32_FILL_BITS),
    8: (np.uint64, spec.FLOAT64_MISSING_BITS, spec.FLOAT64_FILL_BITS),
}


class Values(NamedTuple):
    """The values of a chunk (any shape) as one flat vector plus missing/fill masks.

    ``data`` is a numpy vector for numbers and booleans, a ``pa.StringArray`` for strings;
    ``missing`` and ``fill`` are boolean numpy arrays of the chunk's shape, or None when the
    chunk has no such sentinel.
    """

    data: np.ndarray | pa.Array
    missing: np.ndarray | None
    fill: np.ndarray | None


def _values(values: np.ndarray) -> Values:
    if values.dtype.kind in "OUST":
        return Values(*_strings(values))
    return Values(values.reshape(-1), *_numeric_masks(values))


def _any(mask: np.ndarray) -> np.ndarray | None:
    return mask if mask.any() else None


def _numeric_masks(values: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    # Sentinels are negative ints or NaNs: one reduction (no temporary) usually rules them out.
    kind = values.dtype.kind
    if kind == "b" or values.size == 0:
        return None, None
    if kind == "i":
        lowest = values.min()
        if lowest >= 0:
            return None, None
        missing = values == spec.INT_MISSING
        if lowest == spec.INT_MISSING:  # missing is there, and nothing below it (no fill)
            return missing, None
        return _any(missing), _any(values == spec.INT_FILL)
    if kind == "f":
        if not np.isnan(values.min()):
            return None, None
        bits_type, missing, fill = _FLOAT_SENTINELS[values.dtype.itemsize]
        bits = values.astype(values.dtype.newbyteorder("="), copy=False).view(bits_type)
        return _any(bits == missing), _any(bits == fill)
    raise NotSupportedError(f"VCF Zarr values of dtype {values.dtype} are not supported")


def _strings(values: np.ndarray) -> tuple[pa.Array, np.ndarray | None, np.ndarray | None]:
    flat = values.reshape(-1)
    if flat.dtype.kind == "S":
        data = pa.array(flat, type=pa.binary()).cast(pa.string())
    else:
        data = pa.array(flat, type=pa.string())
    # A chunk that was never written decodes to its fill value (None for vlen strings).
    absent = data.is_null() if data.null_count else None
    missing = pc.equal(data, spec.STR_MISSING)
    fill = pc.equal(data, spec.STR_FILL)
    if absent is not None:
        fill = pc.or_(pc.fill_null(fill, True), absent)
        missing = pc.fill_null(missing, False)
    return (
        data,
        _any(_bools(missing).reshape(values.shape)),
        _any(_bools(fill).reshape(values.shape)),
    )


def _bools(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False)


def _validity(null: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    """An Arrow validity bitmap and null count for the mask of nulls ``null`` (None: none)."""
    if null is None:
        return None, 0
    null_count = int(np.count_nonzero(null))
    if null_count == 0:
        return None, 0
    # Inverting the packed bits touches an eighth of the memory inverting the mask would.
    packed = np.packbits(null, bitorder="little")
    return pa.py_buffer(np.invert(packed, out=packed)), null_count


def _elements(
    data: np.ndarray | pa.Array, null: np.ndarray | None, type_: pa.DataType
) -> pa.Array:
    """``data`` as an Arrow array of ``type_`` with nulls where ``null`` is True."""
    validity, null_count = _validity(null)
    if isinstance(data, pa.Array):  # strings: reuse offsets and characters
        if validity is None and data.null_count == 0:
            return data
        return pa.Array.from_buffers(
            type_, len(data), [validity, *data.buffers()[1:]], null_count, data.offset
        )
    if pa.types.is_boolean(type_):
        values = pa.py_buffer(np.packbits(data, bitorder="little"))
    else:
        values = pa.py_buffer(np.ascontiguousarray(data, dtype=type_.to_pandas_dtype()))
    return pa.Array.from_buffers(type_, len(data), [validity, values], null_count)


def _take(data: np.ndarray | pa.Array, keep: np.ndarray) -> np.ndarray | pa.Array:
    if isinstance(data, pa.Array):
        return data.filter(pa.array(keep))
    return data[keep]


def scalar_array(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """One value per element of the vector ``values``; missing and fill -> null."""
    v = _values(values)
    return _elements(v.data, _or(v.missing, v.fill), type_)


def _or(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None or b is None:
        return a if b is None else b
    return a | b


#: When ``list_array`` makes a row null (VCF ``.``).
NULL_IF_NO_VALUE = "no value"  # INFO/FORMAT: empty, or only missing elements
NULL_IF_LONE_MISSING = "lone missing"  # GT: empty, or one missing allele ("." but not "./.")
NEVER_NULL = "never"  # ALT: "." is no alternate allele, an empty list


def list_array(
    values: np.ndarray, type_: pa.DataType, null_rows: str = NULL_IF_NO_VALUE
) -> pa.Array:
    """One list per row of ``values`` (shape (rows, width)): fill trimmed, missing -> null
    element, and the row null as ``null_rows`` says."""
    v = _values(values)
    rows, width = values.shape
    if v.fill is None and width > 0:  # every row full: offsets need no counting
        keep, lengths = None, None
        data, element_missing = v.data, None if v.missing is None else v.missing.reshape(-1)
        offsets = _regular_offsets(rows, width)
    else:
        keep = np.ones((rows, width), dtype=bool) if v.fill is None else ~v.fill
        lengths = keep.sum(axis=1, dtype=np.int32)
        data = _take(v.data, keep.reshape(-1))
        element_missing = None if v.missing is None else v.missing[keep]
        offsets = _offsets(lengths)
    elements = _elements(data, element_missing, type_)
    return _lists(elements, offsets, _null_rows(v.missing, keep, lengths, null_rows))


def _null_rows(
    missing: np.ndarray | None, keep: np.ndarray | None, lengths: np.ndarray | None, null_rows: str
) -> np.ndarray | None:
    """Which lists are null; ``lengths`` None means every row is full and non-empty."""
    if null_rows == NEVER_NULL:
        return None
    empty = None if lengths is None else lengths == 0
    if missing is None:
        return empty
    if null_rows == NULL_IF_NO_VALUE:
        no_value = (missing if keep is None else missing | ~keep).all(axis=1)
    elif lengths is None:  # full rows: only a row of width 1 can be a lone missing allele
        no_value = missing[:, 0] if missing.shape[1] == 1 else None
    else:
        no_value = (lengths == 1) & missing[:, 0]
    return _or(empty, no_value)


def _check_offset(total: int) -> None:
    if total > _INT32_MAX:
        raise NotSupportedError(
            f"a batch of {total} list values exceeds Arrow's 32-bit offsets; "
            "select fewer samples or use smaller chunks"
        )


def _regular_offsets(rows: int, width: int) -> np.ndarray:
    _check_offset(rows * width)
    return _cached_regular_offsets(rows, width)


@functools.lru_cache(maxsize=16)
def _cached_regular_offsets(rows: int, width: int) -> np.ndarray:
    """Offsets of ``rows`` lists of ``width``: read-only, shared by every batch of that shape
    (Arrow buffers are immutable; every full chunk has the same ones)."""
    if width == 0:
        offsets = np.zeros(rows + 1, dtype=np.int32)
    else:
        offsets = np.arange(0, (rows + 1) * width, width, dtype=np.int32)
    offsets.setflags(write=False)
    return offsets


def _offsets(lengths: np.ndarray) -> np.ndarray:
    _check_offset(int(lengths.sum(dtype=np.int64)))
    offsets = np.empty(len(lengths) + 1, dtype=np.int32)
    offsets[0] = 0
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _lists(elements: pa.Array, offsets: np.ndarray, null: np.ndarray | None) -> pa.Array:
    validity, null_count = _validity(null)
    return pa.Array.from_buffers(
        pa.list_(elements.type),
        len(offsets) - 1,
        [validity, pa.py_buffer(offsets)],
        null_count,
        children=[elements],
    )


def lists_array(elements: pa.Array, lengths: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """Consecutive runs of ``elements``, ``lengths[i]`` long, as a list array (null where not
    ``valid``; None: no nulls)."""
    return _lists(elements, _offsets(lengths), None if valid is None else ~valid)


def fixed_lists(values: pa.Array, rows: int, width: int) -> pa.Array:
    """``values`` (``rows * width`` of them) as ``rows`` lists of ``width`` (never null)."""
    return _lists(values, _regular_offsets(rows, width), None)


def dictionary_array(
    indices: np.ndarray, dictionary: pa.Array, valid: np.ndarray | None = None
) -> pa.Array:
    """A dictionary<int32, ...> array of ``dictionary[indices]`` (null where not ``valid``).

    The indices must be in range: they are not checked (that costs more than building).
    """
    codes = _elements(indices, None if valid is None else ~valid, pa.int32())
    return pa.DictionaryArray.from_arrays(codes, dictionary, safe=False)


def _repeat(values: np.ndarray, times: int) -> np.ndarray:
    """Each element of the vector ``values`` ``times`` times in a row."""
    out = np.empty((len(values), times), dtype=values.dtype)
    out[:] = values[:, None]
    return out.reshape(-1)


def tiled_dictionary(dictionary: pa.Array, times: int) -> pa.Array:
    """``dictionary`` ``times`` times over, dictionary-encoded."""
    codes = np.empty((times, len(dictionary)), dtype=np.int32)
    codes[:] = np.arange(len(dictionary), dtype=np.int32)
    return dictionary_array(codes.reshape(-1), dictionary)


def repeat_rows(array: pa.Array, times: int) -> pa.Array:
    """Each row of ``array`` ``times`` times in a row; strings dictionary-encoded.

    Dictionaries hold no nulls (a null row is a null index), so Arrow can unify them. Lists
    are copied with Arrow's take (Arrow cannot unify dictionaries of lists; and a numpy
    version of the take measured no faster).
    """
    if pa.types.is_list(array.type):
        return array.take(pa.array(_repeat(np.arange(len(array), dtype=np.int32), times)))
    if pa.types.is_dictionary(array.type):
        return dictionary_array(_repeat(np.asarray(array.indices), times), array.dictionary)
    valid = _bools(array.is_valid()) if array.null_count else None
    repeated_valid = None if valid is None else _repeat(valid, times)
    if pa.types.is_string(array.type):
        if valid is None:
            return dictionary_array(_repeat(np.arange(len(array), dtype=np.int32), times), array)
        codes = np.cumsum(valid, dtype=np.int32) - 1
        return dictionary_array(_repeat(codes, times), array.filter(valid), repeated_valid)
    if valid is not None:
        array = array.fill_null(False if pa.types.is_boolean(array.type) else 0)
    values = _repeat(array.to_numpy(zero_copy_only=False), times)
    return _elements(values, None if repeated_valid is None else ~repeated_valid, array.type)
