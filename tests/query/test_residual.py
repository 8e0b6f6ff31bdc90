"""The residual filter evaluated without Acero keeps exactly the rows pyarrow's own filter keeps.

A pushed filter is a ``pyarrow.compute.Expression``, whose meaning is what pyarrow's filter
does with it: that is the reference here (DuckDB and Polars push filters expecting it), for
filters of the shapes DuckDB pushes (its IN and float translations included) over columns
with nulls, NaN and dictionary strings.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcfzarr_sql.query import residual
from vcfzarr_sql.query.expressions import parse

CONTIGS = pa.DictionaryArray.from_arrays(
    pa.array([0, 0, 1, 1, 2, None, 0, 2], pa.int32()), pa.array(["1", "2", "X"])
)
BATCH = pa.record_batch(
    {
        "contig": CONTIGS,
        "pos": pa.array([5, 10, 15, 20, 25, 30, 35, 40], pa.int64()),
        "end": pa.array([5, 12, 15, 22, 25, 30, 40, 41], pa.int64()),
        "qual": pa.array([1.5, None, math.nan, 30.0, 0.0, -0.0, 99.0, 7.0], pa.float32()),
        "id": pa.array(["a", None, "c", "d", "e", "f", None, "h"]),
        "dp": pa.array([1, 2, None, 4, 5, None, 7, 8], pa.int32()),
        "gt": pa.array([[0, 1]] * 8, pa.list_(pa.int8())),
        "row": pa.array(range(8), pa.int64()),
    }
)
_NULL = pa.scalar(None, pa.bool_())


def _duckdb_in(name: str, values: list, type_: pa.DataType) -> pc.Expression:
    member = pc.field(name).isin(pa.array(values, type_))
    return pc.if_else(pc.field(name).is_valid(), member, _NULL)


FILTERS = {
    "region": (pc.field("contig") == "1") & (pc.field("pos") <= 30) & (pc.field("end") >= 10),
    "regions or": ((pc.field("contig") == "1") & (pc.field("pos") <= 9))
    | ((pc.field("contig") == "X") & (pc.field("end") >= 30)),
    "between": (pc.field("pos") >= 10) & (pc.field("pos") <= 35),
    "contig in": _duckdb_in("contig", ["2", "X"], pa.string()),
    "int in with null": _duckdb_in("dp", [2, 4, None], pa.int32()),
    "not equal nullable": pc.field("dp") != 4,
    "not": ~((pc.field("contig") == "1") & (pc.field("dp") > 1)),
    "float greater (DuckDB's NaN rule)": (pc.field("qual") > 1.0) | (pc.field("qual") != pc.field("qual")),
    "is null": pc.field("id").is_null() | pc.field("contig").is_null(),
    "is valid": pc.field("dp").is_valid() & (pc.field("id") >= "c"),
    "nan is null": pc.field("qual").is_null(nan_is_null=True),
    "kleene with null literal": (pc.field("pos") > 20) | _NULL,
    "and with null literal": ~((pc.field("pos") > 20) & _NULL),
    "literal true": pc.scalar(True),
    "literal false": pc.scalar(False),
    "nothing matches": pc.field("pos") > 1000,
    "unknown function": pc.field("id").isin(pa.array(["a", "h"])) & pc.starts_with(pc.field("id"), "a"),
}


@pytest.mark.parametrize("name", FILTERS)
def test_rows_kept_are_those_pyarrow_keeps(name) -> None:
    expression = FILTERS[name]
    expected = BATCH.filter(expression)
    columns = frozenset(BATCH.schema.names) - {"gt", "row"}
    got = residual.matching_rows(BATCH, parse(expression), expression, columns)
    assert got.column("row").to_pylist() == expected.column("row").to_pylist()
    assert got.schema == BATCH.schema


@pytest.mark.parametrize(
    "name", [n for n in FILTERS if n not in ("unknown function",)]
)
def test_known_functions_skip_acero(name) -> None:
    assert residual._selected(BATCH.select(["contig", "pos", "end", "qual", "id", "dp"]), parse(FILTERS[name])) is not None


def test_unknown_function_is_left_to_acero() -> None:
    assert residual._selected(BATCH, parse(FILTERS["unknown function"])) is None


def test_run_of_matching_rows_is_a_slice_and_all_rows_the_batch_itself() -> None:
    between = FILTERS["between"]
    columns = frozenset(["pos"])
    got = residual.matching_rows(BATCH, parse(between), between, columns)
    assert got.column("pos").to_pylist() == [10, 15, 20, 25, 30, 35]
    assert got.column("gt").buffers()[1].address == BATCH.column("gt").buffers()[1].address
    everything = pc.field("pos") > 0
    assert residual.matching_rows(BATCH, parse(everything), everything, columns) is BATCH


_INT_COLUMNS = ("pos", "end", "dp")
_STRING_COLUMNS = ("contig", "id")


def _leaves() -> st.SearchStrategy[pc.Expression]:
    compare = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    ints = st.builds(
        lambda column, op, value: _compared(pc.field(column), op, pa.scalar(value)),
        st.sampled_from(_INT_COLUMNS), compare, st.integers(-(2**40), 2**40) | st.integers(0, 45),
    )
    strings = st.builds(
        lambda column, op, value: _compared(pc.field(column), op, pa.scalar(value)),
        st.sampled_from(_STRING_COLUMNS), compare, st.sampled_from(["1", "2", "X", "a", "d", "zz", ""]),
    )
    floats = st.builds(
        lambda op, value: _compared(pc.field("qual"), op, pa.scalar(value, pa.float32())),
        compare, st.sampled_from([0.0, -0.0, 1.5, 30.0, math.nan, math.inf]),
    )
    membership = st.builds(
        lambda column, values, skip: pc.is_in(pc.field(column), pa.array(values, pa.int64()), skip_nulls=skip),
        st.sampled_from(_INT_COLUMNS), st.lists(st.none() | st.integers(0, 45), min_size=1, max_size=4),
        st.booleans(),
    )
    nulls = st.builds(
        lambda column, valid: pc.field(column).is_valid() if valid else pc.field(column).is_null(),
        st.sampled_from(_INT_COLUMNS + _STRING_COLUMNS + ("qual",)), st.booleans(),
    )
    literals = st.sampled_from([pc.scalar(True), pc.scalar(False), pc.scalar(_NULL)])
    return ints | strings | floats | membership | nulls | literals


def _compared(left: pc.Expression, op: str, right: pa.Scalar) -> pc.Expression:
    right = pc.scalar(right)
    return {
        "==": left == right, "!=": left != right, "<": left < right,
        "<=": left <= right, ">": left > right, ">=": left >= right,
    }[op]


_TREES = st.recursive(
    _leaves(),
    lambda children: st.builds(lambda a, b: a & b, children, children)
    | st.builds(lambda a, b: a | b, children, children)
    | st.builds(lambda a: ~a, children)
    | st.builds(lambda a, b: pc.if_else(a, b, _NULL), children, children),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(_TREES)
def test_random_filters_keep_the_rows_pyarrow_keeps(expression) -> None:
    try:
        expected = BATCH.filter(expression).column("row").to_pylist()
    except pa.ArrowException:
        return  # not a valid filter for pyarrow either
    columns = frozenset(BATCH.schema.names) - {"gt", "row"}
    got = residual.matching_rows(BATCH, parse(expression), expression, columns)
    assert got.column("row").to_pylist() == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.none() | st.integers(-1, 3), max_size=70),
    st.integers(0, 9),
    st.integers(-1, 3),
    st.booleans(),
)
def test_masks_at_any_offset_and_length_keep_the_rows_pyarrow_keeps(values, offset, cut, drop) -> None:
    """Bitmaps of any length (padding bits), offset (a sliced batch) and null pattern; runs,
    scattered rows, all rows, none; with and without the filter column in the output."""
    column = pa.array([None] * offset + values, pa.int8()).slice(offset)
    batch = pa.record_batch({"gt": column, "row": pa.array(range(len(values)), pa.int64())})
    expression = pc.field("gt") > cut
    expected = batch.filter(expression)
    keep = ["row"] if drop else None
    got = residual.matching_rows(batch, parse(expression), expression, frozenset(["gt"]), keep)
    got.validate(full=True)
    assert got.column("row").to_pylist() == expected.column("row").to_pylist()
    assert got.schema.names == (["row"] if drop else ["gt", "row"])
    counted = residual.matching_rows(batch, parse(expression), expression, frozenset(["gt"]), [])
    assert counted.num_rows == expected.num_rows and counted.num_columns == 0


def test_a_mask_of_a_boolean_result_with_an_offset_is_exact() -> None:
    """A boolean column read straight by the filter (its array may start mid-byte)."""
    flags = pa.array([True, None, False, True, True, None, True, False, True, True, False], pa.bool_())
    for offset in range(len(flags)):
        sliced = flags.slice(offset)
        batch = pa.record_batch({"flag": sliced, "row": pa.array(range(len(sliced)), pa.int64())})
        expression = pc.field("flag")
        got = residual.matching_rows(batch, parse(expression), expression, frozenset(["flag"]))
        assert got.column("row").to_pylist() == batch.filter(expression).column("row").to_pylist()


_NUMERIC = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64()]


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(_NUMERIC),
    st.sampled_from(_NUMERIC + [pa.uint8(), pa.float16()]),
    st.lists(st.none() | st.floats(-300, 300, width=32) | st.sampled_from([0.1, 2**53 + 1, math.nan, -math.inf])),
    st.none() | st.floats(allow_nan=True) | st.integers(-(2**63), 2**63 - 1) | st.sampled_from([0.1, -1, 127, 128, 2**53 + 1]),
    st.sampled_from(["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]),
    st.booleans(),
    st.integers(0, 9),
)
def test_numeric_comparisons_equal_arrows(column_type, literal_type, values, literal, function, swap, offset):
    """The numpy comparisons answer exactly as Arrow's kernels, for every pairing of column and
    literal types (those numpy would compare in another type are left to Arrow)."""
    try:
        column = pa.array([None] * offset + values, pa.float64()).cast(column_type, safe=False).slice(offset)
        number = pa.scalar(literal, pa.float64() if isinstance(literal, float) else pa.int64()).cast(literal_type, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        return
    arguments = [number, column] if swap else [column, number]
    try:
        expected = pc.call_function(function, arguments)
    except pa.ArrowException:
        return
    got = residual._numeric_comparison(function, *arguments)
    if got is not None:
        got.validate(full=True)
        assert got.to_pylist() == expected.to_pylist()


def test_float_comparison_with_the_specs_missing_and_fill_nans_gives_no_warning() -> None:
    """The spec's float32 missing (0x7F800001) and fill (0x7F800002) are signalling NaNs;
    comparing them with a float64 literal must not print numpy's "invalid value in cast"."""
    bits = np.array([0x7F800001, 0x7F800002, 0x41F40000], dtype=np.uint32)  # ., fill, 30.5
    column = pa.Array.from_buffers(pa.float32(), 3, [None, pa.py_buffer(bits.tobytes())])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = residual._numeric_comparison("greater_equal", column, pa.scalar(30.5))
    assert got is not None
    assert got.to_pylist() == [False, False, True]
