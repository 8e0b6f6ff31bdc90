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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.server import types as pg
from vcfzarr_sql.server.binary import EPOCH_DAYS, EPOCH_MICROS, binary_encoder
from vcfzarr_sql.server.types import ColumnCodec, column_codec

__all__ = ["WireValues", "data_rows", "encode_rows", "wire_values"]

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


def _big_endian_int32s(numbers: np.ndarray) -> pa.Array:
    """Each number as 4 big-endian bytes, one binary value per number."""
    offsets = np.arange(0, (len(numbers) + 1) * 4, 4, dtype=np.int64)
    return pa.Array.from_buffers(pa.large_binary(), len(numbers),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(numbers.astype(">i4").tobytes())])


def encode_rows(columns: Sequence[pa.Array]) -> pa.Buffer:
    """DataRow messages of rows whose fields are ``columns`` (wire values, NULL for NULL), in
    the buffer Arrow joined them into (not copied: it goes to the socket as it is)."""
    rows = len(columns[0])
    total = np.full(rows, 4 + 2 + 4 * len(columns), dtype=np.int64)
    parts = []
    for values in columns:
        lengths = pc.fill_null(pc.binary_length(values), -1).to_numpy(zero_copy_only=False)
        total += np.maximum(lengths, 0)
        if values.null_count:
            values = pc.fill_null(values, pa.scalar(b"", pa.large_binary()))
        parts += [_big_endian_int32s(lengths), values]
    header = np.empty(rows, _ROW_HEADER)
    header["kind"], header["length"], header["width"] = b"D", total, len(columns)
    header_offsets = np.arange(0, (rows + 1) * _ROW_HEADER.itemsize, _ROW_HEADER.itemsize, dtype=np.int64)
    headers = pa.Array.from_buffers(pa.large_binary(), rows,
                                    [None, pa.py_buffer(header_offsets), pa.py_buffer(header.tobytes())])
    joined = pc.binary_join_element_wise(headers, *parts, pa.scalar(b"", pa.large_binary()))
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int64, count=rows + 1, offset=joined.offset * 8)
    return joined.buffers()[2][int(offsets[0]):int(offsets[-1])]


def data_rows(batch: pa.RecordBatch, wire: Sequence[WireValues]) -> pa.Buffer:
    """DataRow messages for every row of ``batch``, each column made wire values by ``wire``
    (see :func:`wire_values`)."""
    if batch.num_columns == 0:
        return pa.py_buffer(b"D\x00\x00\x00\x06\x00\x00" * batch.num_rows)
    return encode_rows([encode(column) for encode, column in zip(wire, batch.columns)])
