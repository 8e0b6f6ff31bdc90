"""DataRow messages for a whole Arrow record batch at once, encoded by Arrow compute kernels.

Each column becomes a binary array of its values' wire form (PostgreSQL text, or binary when
the client asked for it); the fields' length prefixes and each row's ``D`` header are NumPy
arrays; ``binary_join_element_wise`` then lays every row's message out in one buffer, which is
sent as is. No Python code runs per row or per value for the common types (integers, floats,
text, booleans, dates and timestamps without time zone, decimals in text; integers, floats,
dates, times and timestamps in binary); other types use their encoder from :mod:`.types`/:mod:`.binary`, a value at a time.

>>> import pyarrow as pa
>>> batch = pa.record_batch({"n": pa.array([1, None]), "s": pa.array(["a", "bc"])})
>>> data_rows(batch, [wire_values(column_codec(f.type), f.type, False) for f in batch.schema]).to_pybytes()
b'D\\x00\\x00\\x00\\x10\\x00\\x02\\x00\\x00\\x00\\x011\\x00\\x00\\x00\\x01aD\\x00\\x00\\x00\\x10\\x00\\x02\\xff\\xff\\xff\\xff\\x00\\x00\\x00\\x02bc'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.serve.pg import types as pg
from vcfzarr_sql.serve.pg.binary import EPOCH_DAYS, EPOCH_MICROS, binary_encoder
from vcfzarr_sql.serve.pg.types import ColumnCodec, column_codec

__all__ = ["WireValues", "data_rows", "encode_rows", "warm_up", "wire_values"]

#: Per-column wire values: a ``large_binary`` array, NULL where the value is SQL NULL.
WireValues = Callable[[pa.Array], pa.Array]

_ROW_HEADER = np.dtype([("kind", "S1"), ("length", ">i4"), ("width", ">i2")])
_NON_FINITE = ((float("nan"), b"NaN"), (float("inf"), b"Infinity"), (float("-inf"), b"-Infinity"))


def _as_binary(values: pa.Array) -> pa.Array:
    return pc.cast(values, pa.large_binary())


def _text_of_cast(values: pa.Array) -> pa.Array:
    """Arrow's string form of each value (what :func:`.types._utf8` sends, in bulk)."""
    return _as_binary(pc.cast(values, pa.large_string()))


def _text_of_floats(values: pa.Array) -> pa.Array:
    text = _text_of_cast(values)
    finite = pc.is_finite(values)
    if pc.all(pc.or_kleene(finite, pc.is_null(values))).as_py() is not False:
        return text
    for value, word in _NON_FINITE:
        hit = pc.is_nan(values) if value != value else pc.equal(values, value)
        text = pc.if_else(hit, pa.scalar(word, pa.large_binary()), text)
    return text


def _text_of_bools(values: pa.Array) -> pa.Array:
    return pc.if_else(values, pa.scalar(b"t", pa.large_binary()), pa.scalar(b"f", pa.large_binary()))


def _fixed_width(numpy_type: str, *casts: pa.DataType, offset: int = 0) -> WireValues:
    """Values cast through ``casts`` to numbers, minus ``offset``, as big-endian numbers of
    ``numpy_type`` (PostgreSQL's binary integers, floats, dates, times and timestamps)."""
    width = np.dtype(numpy_type).itemsize

    def encode(values: pa.Array) -> pa.Array:
        cast = values
        for arrow_type in casts:  # widening, or temporal unit then integer
            cast = pc.cast(cast, arrow_type, safe=False)
        numbers = pc.fill_null(cast, 0).to_numpy(zero_copy_only=False) - offset
        offsets = np.arange(0, (len(values) + 1) * width, width, dtype=np.int64)
        validity = values.buffers()[0] if values.null_count else None
        if validity is not None and values.offset:
            validity = pc.is_valid(values).buffers()[1]
        return pa.Array.from_buffers(pa.large_binary(), len(values),
                                     [validity, pa.py_buffer(offsets),
                                      pa.py_buffer(numbers.astype(numpy_type).tobytes())],
                                     null_count=values.null_count)

    return encode


_TEXT_BY_OID: dict[int, WireValues] = {
    pg.BOOL.oid: _text_of_bools,
    pg.INT2.oid: _text_of_cast, pg.INT4.oid: _text_of_cast, pg.INT8.oid: _text_of_cast,
    pg.NUMERIC.oid: _text_of_cast, pg.FLOAT4.oid: _text_of_floats, pg.FLOAT8.oid: _text_of_floats,
    pg.TEXT.oid: _text_of_cast, pg.DATE.oid: _text_of_cast, pg.TIME.oid: _text_of_cast,
    pg.TIMESTAMP.oid: _text_of_cast,
}

_BINARY_BY_OID: dict[int, WireValues] = {
    pg.INT2.oid: _fixed_width(">i2", pa.int16()), pg.INT4.oid: _fixed_width(">i4", pa.int32()),
    pg.INT8.oid: _fixed_width(">i8", pa.int64()), pg.FLOAT4.oid: _fixed_width(">f4", pa.float32()),
    pg.FLOAT8.oid: _fixed_width(">f8", pa.float64()), pg.TEXT.oid: _text_of_cast,
    pg.DATE.oid: _fixed_width(">i4", pa.date32(), pa.int32(), offset=EPOCH_DAYS),
    pg.TIME.oid: _fixed_width(">i8", pa.time64("us"), pa.int64()),
    pg.TIMESTAMP.oid: _fixed_width(">i8", pa.timestamp("us"), pa.int64(), offset=EPOCH_MICROS),
    pg.TIMESTAMPTZ.oid: _fixed_width(">i8", pa.timestamp("us", tz="UTC"), pa.int64(),
                                     offset=EPOCH_MICROS),
}


def _one_at_a_time(encode: Callable[[pa.Array], list[bytes | None]]) -> WireValues:
    return lambda values: pa.array(encode(values), pa.large_binary())


def wire_values(codec: ColumnCodec, arrow_type: pa.DataType, binary: bool) -> WireValues:
    """How a column of ``arrow_type`` described by ``codec`` becomes wire values, in text or
    (``binary``) in binary format.

    >>> wire_values(column_codec(pa.float64()), pa.float64(), False)(pa.array([1.5, float("inf"), None]))
    <pyarrow.lib.LargeBinaryArray object at ...>
    [
      312E35,
      496E66696E697479,
      null
    ]
    """
    plain = not (pa.types.is_dictionary(arrow_type) or pa.types.is_nested(arrow_type))
    fast = (_BINARY_BY_OID if binary else _TEXT_BY_OID).get(codec.pg_type.oid)
    if plain and fast is not None:
        return fast
    return _one_at_a_time(binary_encoder(codec.pg_type, arrow_type) if binary else codec.encode)


#: One field (or run of fields) of every row: a (rows, width) byte matrix when all have one
#: width, else a ``large_binary`` array.
Piece: TypeAlias = np.ndarray | pa.Array


def _as_matrix(values: pa.Array, lengths: np.ndarray) -> Piece:
    """``values`` as a byte matrix when none is NULL and all have the same length."""
    rows = len(values)
    width = int(lengths[0]) if rows else -1
    if values.null_count or width < 0 or not (lengths == width).all():
        return values
    if width == 0:
        return np.empty((rows, 0), np.uint8)
    start = int(np.frombuffer(values.buffers()[1], np.int64, 1, values.offset * 8)[0])
    return np.frombuffer(values.buffers()[2], np.uint8, rows * width, start).reshape(rows, width)


def _as_binary_array(piece: Piece) -> pa.Array:
    if isinstance(piece, pa.Array):
        return piece
    rows, width = piece.shape
    offsets = np.arange(0, (rows + 1) * width, width, dtype=np.int64)
    return pa.Array.from_buffers(pa.large_binary(), rows,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(piece))])


def _side_by_side(matrices: list[np.ndarray]) -> np.ndarray:
    """Byte matrices of as many rows, each row's bytes one after the other (a structured
    array's fields: NumPy copies each field in one pass, not a few bytes at a time)."""
    matrices = [m for m in matrices if m.shape[1]]
    if len(matrices) == 1:
        return matrices[0]
    rows = len(matrices[0]) if matrices else 0
    row = np.dtype([(f"f{i}", f"V{m.shape[1]}") for i, m in enumerate(matrices)])
    out = np.empty(rows, row)
    for i, matrix in enumerate(matrices):
        out[f"f{i}"] = np.ascontiguousarray(matrix).view(f"V{matrix.shape[1]}").ravel()
    return out.view(np.uint8).reshape(rows, row.itemsize)


def _joined(pieces: list[Piece]) -> pa.Buffer:
    """Each row's pieces one after the other, row after row. Runs of byte matrices are laid
    side by side by NumPy first: Arrow's join costs about as much per piece as per byte."""
    runs: list[Piece | list[np.ndarray]] = []
    for piece in pieces:
        if isinstance(piece, np.ndarray) and runs and isinstance(runs[-1], list):
            runs[-1].append(piece)
        else:
            runs.append([piece] if isinstance(piece, np.ndarray) else piece)
    laid: list[Piece] = [_side_by_side(run) if isinstance(run, list) else run for run in runs]
    if len(laid) == 1 and isinstance(laid[0], np.ndarray):
        return pa.py_buffer(np.ascontiguousarray(laid[0]))
    joined = pc.binary_join_element_wise(*map(_as_binary_array, laid), pa.scalar(b"", pa.large_binary()))
    offsets = np.frombuffer(joined.buffers()[1], np.int64, len(joined) + 1, joined.offset * 8)
    return joined.buffers()[2][int(offsets[0]):int(offsets[-1])]


def encode_rows(columns: Sequence[pa.Array]) -> pa.Buffer:
    """DataRow messages of rows whose fields are ``columns`` (wire values, NULL for NULL), in
    the buffer they were laid out in (not copied: it goes to the socket as it is).

    >>> encode_rows([pa.array([b"\\x01", None], pa.large_binary())]).to_pybytes()
    b'D\\x00\\x00\\x00\\x0b\\x00\\x01\\x00\\x00\\x00\\x01\\x01D\\x00\\x00\\x00\\n\\x00\\x01\\xff\\xff\\xff\\xff'
    """
    rows = len(columns[0])
    total = np.full(rows, 4 + 2 + 4 * len(columns), dtype=np.int64)
    fields: list[Piece] = []
    for values in columns:
        lengths = pc.fill_null(pc.binary_length(values), -1).to_numpy(zero_copy_only=False)
        total += np.maximum(lengths, 0)
        if values.null_count:
            values = pc.fill_null(values, pa.scalar(b"", pa.large_binary()))
        fields += [lengths.astype(">i4").view(np.uint8).reshape(rows, 4), _as_matrix(values, lengths)]
    header = np.empty(rows, _ROW_HEADER)
    header["kind"], header["length"], header["width"] = b"D", total, len(columns)
    return _joined([header.view(np.uint8).reshape(rows, _ROW_HEADER.itemsize), *fields])


def data_rows(batch: pa.RecordBatch, wire: Sequence[WireValues]) -> pa.Buffer:
    """DataRow messages for every row of ``batch``, each column made wire values by ``wire``
    (see :func:`wire_values`)."""
    if batch.num_columns == 0:
        return pa.py_buffer(b"D\x00\x00\x00\x06\x00\x00" * batch.num_rows)
    return encode_rows([encode(column) for encode, column in zip(wire, batch.columns)])


def warm_up() -> None:
    """Encode a row once. pyarrow's compute functions import pandas (when it is installed) on
    their first call, a tenth of a second or more better spent when a server starts than in
    its first query's time to first row."""
    data_rows(pa.record_batch({"n": pa.array([1, None])}),
              [wire_values(column_codec(pa.int64()), pa.int64(), False)])
