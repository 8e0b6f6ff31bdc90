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
sentinel at all (or, for integers, no fill). Strings come as a :class:`StringBlock` (one flat
Arrow string array and the position of each value in it): their sentinels are found from the
Arrow offsets and characters, and the characters of the values that end up in the result are
gathered once, with numpy (no Python ``str`` anywhere).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store import memory

_INT32_MAX = np.iinfo(np.int32).max


#: float itemsize -> (unsigned int of that size, missing bits, fill bits)
_FLOAT_SENTINELS = {
    4: (np.uint32, spec.FLOAT32_MISSING_BITS, spec.FLOAT32_FILL_BITS),
    8: (np.uint64, spec.FLOAT64_MISSING_BITS, spec.FLOAT64_FILL_BITS),
}


class StringBlock:
    """A block of strings (any shape): ``strings``, one flat Arrow string array;
    ``positions``, an int array of the block's shape, the index of each value in ``strings``;
    and the block's ``missing`` (``"."``) and ``fill`` (``""``) masks, found once, from the
    Arrow offsets and characters.

    Indexing and reshaping act on the positions and masks (views where numpy can); the
    characters are copied once, by :func:`take_strings` of the positions that end up in an
    array.

    >>> block = StringBlock.of(np.array([["A", "."], ["G", ""]], dtype=object))
    >>> block[:, 1].missing.tolist(), block[:, 1].fill.tolist(), block.shape
    ([True, False], [False, True], (2, 2))
    """

    def __init__(
        self,
        strings: pa.Array,
        positions: np.ndarray,
        masks: tuple[np.ndarray, np.ndarray] | None = None,
    ):
        self.strings = strings
        self.positions = positions
        if masks is None:
            masks = _string_masks(strings)
            if not _is_everything(positions, len(strings)):
                masks = masks[0][positions], masks[1][positions]
        self.missing, self.fill = (m.reshape(positions.shape) for m in masks)

    @classmethod
    def of(cls, values: np.ndarray) -> StringBlock:
        """The block of a numpy array of strings (object ``str``, ``U`` or UTF-8 ``S``)."""
        flat = values.reshape(-1)
        if flat.dtype.kind == "S":
            strings = pa.array(flat, type=pa.binary()).cast(pa.string())
        else:
            strings = pa.array(flat, type=pa.string())
        return cls(strings, np.arange(flat.size).reshape(values.shape))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.positions.shape

    def __getitem__(self, key: Any) -> StringBlock:
        return StringBlock(
            self.strings, self.positions[key], (self.missing[key], self.fill[key])
        )

    def reshape(self, *shape: int) -> StringBlock:
        return StringBlock(
            self.strings,
            self.positions.reshape(*shape),
            (self.missing.reshape(*shape), self.fill.reshape(*shape)),
        )


def _is_everything(positions: np.ndarray, size: int) -> bool:
    """Whether ``positions`` are ``0 .. size - 1`` in C order."""
    flat = positions.reshape(-1)
    return flat.size == size and bool((flat == np.arange(size)).all())


def take_strings(strings: pa.Array, positions: np.ndarray) -> pa.Array:
    """``strings[positions]`` (``strings`` itself when that is all of them, in order).

    Gathered with numpy: Arrow's ``take`` measured 3-8x slower inside a scan (60 us vs 20 us
    for 1000 of 4000 alleles) than in a loop of takes alone (7 us).
    """
    if _is_everything(positions, len(strings)):
        return strings
    if strings.null_count:
        return strings.take(positions)
    offsets, characters = _string_buffers(strings)
    starts = offsets[positions]
    lengths = offsets[positions + 1] - starts
    selected = _offsets(lengths)
    if (lengths == 1).all():  # one byte each (SNV alleles)
        characters = characters[starts]
    else:  # each value's characters: its start, then consecutive
        shift = np.repeat(starts - selected[:-1], lengths)
        characters = characters[shift + np.arange(selected[-1])]
    return pa.Array.from_buffers(
        pa.string(), len(positions), [None, pa.py_buffer(selected), pa.py_buffer(characters)]
    )


def _string_buffers(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The int32 offsets (``len(strings) + 1`` of them) and characters of ``strings``."""
    _, offsets, characters = strings.buffers()
    return (
        np.frombuffer(offsets, dtype=np.int32, count=len(strings) + 1, offset=4 * strings.offset),
        np.frombuffer(characters or b"", dtype=np.uint8),
    )


class Values(NamedTuple):
    """The values of a chunk (any shape) as one flat vector plus missing/fill masks.

    ``data`` is a numpy vector: the numbers or booleans, or for strings the positions of the
    values in the flat Arrow array ``strings`` (None for other values); ``missing`` and
    ``fill`` are boolean numpy arrays of the chunk's shape, or None when the chunk has no such
    sentinel.
    """

    data: np.ndarray
    missing: np.ndarray | None
    fill: np.ndarray | None
    strings: pa.Array | None = None

    def arrow_data(self, data: np.ndarray) -> np.ndarray | pa.Array:
        """``data`` (a selection of ``self.data``) as the values to build an array from."""
        return data if self.strings is None else take_strings(self.strings, data)


def _values(values: np.ndarray | StringBlock, no_value: np.ndarray | None = None) -> Values:
    """The values of a chunk; ``no_value`` (a field's mask array, of the chunk's shape): True
    where an element holds no value, so that the others are values even when they equal a
    sentinel."""
    if isinstance(values, StringBlock):
        found = _string_values(values)
    elif values.dtype.kind in "OUST":
        found = _string_values(StringBlock.of(values))
    else:
        found = Values(values.reshape(-1), *_numeric_masks(values))
    if no_value is None:
        return found
    return found._replace(
        missing=None if found.missing is None else _any(found.missing & no_value),
        fill=None if found.fill is None else _any(found.fill & no_value),
    )


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


#: The missing string (``"."``) is one byte; the fill string (``""``) has none.
_MISSING_BYTE = ord(spec.STR_MISSING)


def _string_values(block: StringBlock) -> Values:
    positions = block.positions.reshape(-1)
    return Values(positions, _any(block.missing), _any(block.fill), block.strings)


def _string_masks(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Missing (``"."``) and fill (``""``, or null: a never-written vlen chunk) masks of the
    flat ``strings``, from their offsets and characters."""
    offsets, characters = _string_buffers(strings)
    lengths = np.diff(offsets)
    fill = lengths == 0
    missing = lengths == 1
    if missing.any():
        missing &= characters[np.minimum(offsets[:-1], characters.size - 1)] == _MISSING_BYTE
    if strings.null_count:
        valid = _bools(strings.is_valid())
        fill |= ~valid
        missing &= valid
    return missing, fill


def _bools(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False)


#: An Arrow validity bitmap (None: no nulls) and its null count (-1: Arrow counts on demand).
Validity = tuple[pa.Buffer | None, int]


def _validity(null: np.ndarray | None) -> Validity:
    """The validity of the mask of nulls ``null`` (None: none)."""
    if null is None:
        return None, 0
    null_count = int(np.count_nonzero(null))
    if null_count == 0:
        return None, 0
    # Inverting the packed bits touches an eighth of the memory inverting the mask would.
    packed = np.packbits(null, bitorder="little")
    return pa.py_buffer(np.invert(packed, out=packed)), null_count


def numpy_dtype(type_: pa.DataType) -> np.dtype:
    """The numpy dtype of a fixed-width integer or floating-point Arrow type.

    (``pa.DataType.to_pandas_dtype`` imports pandas in recent pyarrow; pandas is not ours.)

    >>> numpy_dtype(pa.int16()), numpy_dtype(pa.uint8()), numpy_dtype(pa.float32())
    (dtype('int16'), dtype('uint8'), dtype('float32'))
    """
    if pa.types.is_integer(type_):
        kind = "i" if pa.types.is_signed_integer(type_) else "u"
    elif pa.types.is_floating(type_):
        kind = "f"
    else:
        raise TypeError(f"no fixed-width numpy dtype for Arrow type {type_}")
    return np.dtype(f"{kind}{type_.bit_width // 8}")


def elements_array(
    data: np.ndarray | pa.Array, null: np.ndarray | Validity | None, type_: pa.DataType
) -> pa.Array:
    """``data`` as an Arrow array of ``type_`` with nulls where ``null`` is True (or with the
    ready ``Validity``): numpy values are wrapped, not converted by ``pa.array`` (which
    imports ``numpy.ma`` to look for a masked array: 0.007 CPU-s of a CLI process)."""
    validity, null_count = null if isinstance(null, tuple) else _validity(null)
    if isinstance(data, pa.Array):  # strings: reuse offsets and characters
        if validity is None and data.null_count == 0:
            return data
        return pa.Array.from_buffers(
            type_, len(data), [validity, *data.buffers()[1:]], null_count, data.offset
        )
    if pa.types.is_boolean(type_):
        values = pa.py_buffer(np.packbits(data, bitorder="little"))
    else:
        values = pa.py_buffer(np.ascontiguousarray(data, dtype=numpy_dtype(type_)))
    return pa.Array.from_buffers(type_, len(data), [validity, values], null_count)


def string_array(values: Sequence[str]) -> pa.Array:
    """``values`` as an Arrow string array, built from buffers (``pa.array`` of Python
    strings imports pandas, when it is installed: ~50 MiB and ~0.3 CPU-s, in a process that
    may never use it).

    >>> string_array(["1", "chrX", ""]).to_pylist()
    ['1', 'chrX', '']
    """
    encoded = [value.encode() for value in values]
    offsets = np.cumsum([0, *map(len, encoded)], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def scalar_array(
    values: np.ndarray | StringBlock, type_: pa.DataType, no_value: np.ndarray | None = None
) -> pa.Array:
    """One value per element of the vector ``values``; missing and fill -> null (where
    ``no_value`` says so, when given: see :func:`_values`)."""
    v = _values(values, no_value)
    return elements_array(v.arrow_data(v.data), _or(v.missing, v.fill), type_)


def _or(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None or b is None:
        return a if b is None else b
    return a | b


#: When ``list_array`` makes a row null (VCF ``.``).
NULL_IF_NO_VALUE = "no value"  # INFO/FORMAT: empty, or only missing elements
NULL_IF_LONE_MISSING = "lone missing"  # GT: empty, or one missing allele ("." but not "./.")
NEVER_NULL = "never"  # ALT: "." is no alternate allele, an empty list


def list_array(
    values: np.ndarray | StringBlock,
    type_: pa.DataType,
    null_rows: str = NULL_IF_NO_VALUE,
    no_value: np.ndarray | None = None,
) -> pa.Array:
    """One list per row of ``values`` (shape (rows, width)): fill trimmed, missing -> null
    element, and the row null as ``null_rows`` says (sentinels only where ``no_value`` says,
    when given: see :func:`_values`)."""
    v = _values(values, no_value)
    rows, width = values.shape
    if v.fill is None and width > 0:  # every row full: offsets need no counting
        keep, lengths = None, None
        data, element_missing = v.data, None if v.missing is None else v.missing.reshape(-1)
        offsets = _regular_offsets(rows, width)
    else:
        keep = np.ones((rows, width), dtype=bool) if v.fill is None else ~v.fill
        lengths = _row_counts(keep)
        data = v.data[keep.reshape(-1)]
        element_missing = None if v.missing is None else v.missing[keep]
        offsets = _offsets(lengths)
    elements = elements_array(v.arrow_data(data), element_missing, type_)
    return _lists(elements, offsets, _null_rows(v.missing, keep, lengths, null_rows))


def genotype_array(genotypes: np.ndarray, type_: pa.DataType) -> pa.Array:
    """One list of allele indexes per row of ``genotypes`` (shape (calls, ploidy)), as
    ``list_array`` with ``NULL_IF_LONE_MISSING`` makes it.

    Most chunks hold no mixed-ploidy fill; for those the lists are all ``ploidy`` long and
    never null, and the element validity is packed straight from ``!= missing``: two passes
    over the alleles instead of five (this is the hot path of every genotype scan).
    """
    calls, ploidy = genotypes.shape
    lowest = genotypes.min() if genotypes.size else 0
    if ploidy < 2 or lowest < spec.INT_MISSING:
        return list_array(genotypes, type_, NULL_IF_LONE_MISSING)
    flat = genotypes.reshape(-1)
    validity: Validity = (None, 0)
    if lowest == spec.INT_MISSING:
        valid = np.not_equal(flat, spec.INT_MISSING, out=memory.empty(flat.size, bool))
        validity = pa.py_buffer(np.packbits(valid, bitorder="little")), -1
    return _lists(elements_array(flat, validity, type_), _regular_offsets(calls, ploidy), None)


def allele_array(genotypes: np.ndarray, index: int, type_: pa.DataType) -> pa.Array:
    """Allele ``index`` (0-based) of each row of ``genotypes`` (shape (calls, ploidy)): element
    ``index`` of the list :func:`genotype_array` gives, null where that list is null, shorter,
    or has a missing allele there (what DuckDB's ``fmt_GT[index + 1]`` returns), as a plain
    column.

    Without padding (most chunks) this is column ``index`` with ``missing`` -> null; with
    mixed-ploidy padding it is the ``index``-th allele that is not fill.

    >>> g = np.array([[0, 1], [-1, 1], [1, -2], [-1, -2]], dtype=np.int8)
    >>> allele_array(g, 0, pa.int8()).to_pylist(), allele_array(g, 1, pa.int8()).to_pylist()
    ([0, None, 1, None], [1, 1, None, None])
    """
    calls = genotypes.shape[0]
    alleles = memory.empty(calls, genotypes.dtype)
    if genotypes.size and genotypes.min() < spec.INT_MISSING:  # padded (or malformed) rows
        kept = genotypes != spec.INT_FILL
        at_index = kept & (np.cumsum(kept, axis=1) == index + 1)
        found = at_index.any(axis=1)
        alleles[:] = np.where(found, genotypes[np.arange(calls), at_index.argmax(axis=1)], -1)
    else:
        np.copyto(alleles, genotypes[:, index])
    missing = alleles == spec.INT_MISSING if alleles.size and alleles.min() < 0 else None
    return elements_array(alleles, missing, type_)


def _row_counts(mask: np.ndarray) -> np.ndarray:
    """The number of true values in each row of the 2-D boolean ``mask`` (int32).

    Narrow rows are counted column by column: numpy's sum along a short last axis measured
    ~4x slower (11 us vs 3 us for 1000 x 3).
    """
    rows, width = mask.shape
    if width > 8:
        return mask.sum(axis=1, dtype=np.int32)
    counts = np.zeros(rows, dtype=np.int32)
    for column in range(width):
        counts += mask[:, column]
    return counts


def _null_rows(
    missing: np.ndarray | None, keep: np.ndarray | None, lengths: np.ndarray | None, null_rows: str
) -> np.ndarray | None:
    """Which lists are null; ``lengths`` None means every row is full and non-empty."""
    if null_rows == NEVER_NULL:
        return None
    empty = None if lengths is None else lengths == 0
    if missing is None:
        return empty
    no_value: np.ndarray | None
    if null_rows == NULL_IF_NO_VALUE:
        no_value = np.asarray((missing if keep is None else missing | ~keep).all(axis=1))
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


def fixed_lists(values: pa.Array, rows: int, width: int, null: np.ndarray | None = None) -> pa.Array:
    """``values`` (``rows * width`` of them) as ``rows`` lists of ``width`` (null where
    ``null``; None: never null)."""
    return _lists(values, _regular_offsets(rows, width), null)


def dictionary_array(
    indices: np.ndarray, dictionary: pa.Array, valid: np.ndarray | None = None
) -> pa.Array:
    """A dictionary<int32, ...> array of ``dictionary[indices]`` (null where not ``valid``).

    The indices must be in range: they are not checked (that costs more than building).
    """
    codes = elements_array(indices, None if valid is None else ~valid, pa.int32())
    return pa.DictionaryArray.from_arrays(codes, dictionary, safe=False)


def rows_only(rows: int) -> pa.RecordBatch:
    """A batch of ``rows`` rows and no columns (what ``count(*)`` reads)."""
    return pa.RecordBatch.from_arrays([pa.nulls(rows)], names=["_"]).select([])


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


@functools.lru_cache(maxsize=8)
def _repeated_rows(rows: int, times: int, constant: bool) -> np.ndarray:
    """``0 .. rows - 1``, each ``times`` times in a row (``constant``: ``rows * times`` zeros):
    read-only and shared by every batch of that shape, like :func:`_cached_regular_offsets`."""
    if constant:
        codes = np.zeros(rows * times, dtype=np.int32)
    else:
        codes = _repeat(np.arange(rows, dtype=np.int32), times)
    codes.setflags(write=False)
    return codes


def repeat_rows(array: pa.Array, times: int) -> pa.Array:
    """Each row of ``array`` ``times`` times in a row; strings dictionary-encoded.

    Dictionaries hold no nulls (a null row is a null index), so Arrow can unify them. Lists
    are copied with Arrow's take (Arrow cannot unify dictionaries of lists; and a numpy
    version of the take measured no faster). Row numbers, and a contig column's codes when
    the chunk holds one contig (all 0), come from a cache: the ``calls`` table repeats them
    for every batch of the same shape.
    """
    if pa.types.is_list(array.type):
        return array.take(pa.array(_repeated_rows(len(array), times, False)))
    if pa.types.is_dictionary(array.type):
        indices = np.asarray(array.indices)
        if array.null_count == 0 and len(indices) and not indices.any():
            return dictionary_array(_repeated_rows(len(indices), times, True), array.dictionary)
        return dictionary_array(_repeat(indices, times), array.dictionary)
    valid = _bools(array.is_valid()) if array.null_count else None
    repeated_valid = None if valid is None else _repeat(valid, times)
    if pa.types.is_string(array.type):
        if valid is None:
            return dictionary_array(_repeated_rows(len(array), times, False), array)
        codes = np.cumsum(valid, dtype=np.int32) - 1
        return dictionary_array(_repeat(codes, times), array.filter(pa.array(valid)), repeated_valid)
    if valid is not None:
        array = array.fill_null(False if pa.types.is_boolean(array.type) else 0)
    values = _repeat(array.to_numpy(zero_copy_only=False), times)
    return elements_array(values, None if repeated_valid is None else ~repeated_valid, array.type)
