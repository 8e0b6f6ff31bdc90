"""PostgreSQL's binary format of result values, for clients that ask for it (pgJDBC does for
prepared statements it runs often: integers, floats, numeric, dates, times, bytea, arrays).

Every type of :mod:`.types` has a binary form here except ``json`` of nested lists, which is
its text (PostgreSQL's binary ``json`` is the text too).

>>> import pyarrow as pa
>>> from vcfzarr_sql.serve.pg.types import column_codec
>>> binary_encoder(column_codec(pa.int32()).pg_type, pa.int32())(pa.array([1, None], pa.int32()))
[b'\\x00\\x00\\x00\\x01', None]
"""

from __future__ import annotations

import decimal
import struct
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.serve.pg import types as pg
from vcfzarr_sql.serve.pg.types import Encoder, PgType, encoded_lists, per_value

#: 2000-01-01, PostgreSQL's epoch, in days and microseconds since 1970-01-01
EPOCH_DAYS = 10957
EPOCH_MICROS = EPOCH_DAYS * 86_400 * 1_000_000

_NULL = struct.pack(">i", -1)
_NUMERIC_POSITIVE, _NUMERIC_NEGATIVE, _NUMERIC_NAN = 0x0000, 0x4000, 0xC000


def _packed(fmt: str, *casts: pa.DataType, offset: int = 0) -> Encoder:
    """Each value, cast through ``casts`` to a number, minus ``offset``, packed as ``fmt``."""
    pack = struct.Struct(fmt).pack

    def encode(values: pa.Array) -> list[bytes | None]:
        for arrow_type in casts:  # widening integer casts, or temporal unit then integer
            values = pc.cast(values, arrow_type, safe=False)
        return [None if v is None else pack(v - offset) for v in values.to_pylist()]

    return encode


def _numeric(value: decimal.Decimal | int) -> bytes:
    """PostgreSQL's numeric: base-10000 digit groups, weight of the first, sign, scale.

    >>> _numeric(decimal.Decimal("-12345.60"))
    b'\\x00\\x03\\x00\\x01@\\x00\\x00\\x02\\x00\\x01\\t)\\x17p'
    """
    number = decimal.Decimal(value)
    if number.is_nan():
        return struct.pack(">hhHh", 0, 0, _NUMERIC_NAN, 0)
    sign, digit_tuple, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)) + "0" * max(exponent, 0)
    scale = max(-exponent, 0)
    digits = digits.zfill(scale + 1)
    whole, fraction = digits[:len(digits) - scale], digits[len(digits) - scale:]
    whole = whole.zfill(-(-len(whole) // 4) * 4)
    fraction = fraction.ljust(-(-len(fraction) // 4) * 4, "0")
    groups = [int((whole + fraction)[i:i + 4]) for i in range(0, len(whole) + len(fraction), 4)]
    weight = len(whole) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    flag = _NUMERIC_NEGATIVE if sign else _NUMERIC_POSITIVE
    return struct.pack(f">hhHh{len(groups)}H", len(groups), weight, flag, scale, *groups)


def _interval(value: pa.MonthDayNano) -> bytes:
    months, days, nanoseconds = value
    return struct.pack(">qii", nanoseconds // 1000, days, months)


def _array(element_type: PgType, element: Encoder) -> Encoder:
    """One-dimensional arrays: dimensions, element OID, then each element's binary value."""

    def array(items: list[bytes | None]) -> bytes:
        body = b"".join(_NULL if v is None else struct.pack(">i", len(v)) + v for v in items)
        has_null = any(v is None for v in items)
        return struct.pack(">iiiii", 1, has_null, element_type.oid, len(items), 1) + body

    return lambda values: [None if items is None else array(items)
                           for items in encoded_lists(values, element)]


def _scalar_encoder(pg_type: PgType, arrow_type: pa.DataType) -> Encoder | None:
    if pa.types.is_dictionary(arrow_type):
        inner = _scalar_encoder(pg_type, arrow_type.value_type)
        return None if inner is None else (lambda values: inner(values.dictionary_decode()))
    by_oid: dict[int, Callable[[], Encoder]] = {
        pg.BOOL.oid: lambda: per_value(lambda v: b"\x01" if v else b"\x00"),
        pg.INT2.oid: lambda: _packed(">h", pa.int16()),
        pg.INT4.oid: lambda: _packed(">i", pa.int32()),
        pg.INT8.oid: lambda: _packed(">q", pa.int64()),
        pg.FLOAT4.oid: lambda: _packed(">f", pa.float32()),
        pg.FLOAT8.oid: lambda: _packed(">d", pa.float64()),
        pg.NUMERIC.oid: lambda: per_value(_numeric),
        pg.DATE.oid: lambda: _packed(">i", pa.date32(), pa.int32(), offset=EPOCH_DAYS),
        pg.TIME.oid: lambda: _packed(">q", pa.time64("us"), pa.int64()),
        pg.TIMESTAMP.oid: lambda: _packed(">q", pa.timestamp("us"), pa.int64(), offset=EPOCH_MICROS),
        pg.TIMESTAMPTZ.oid: lambda: _packed(">q", pa.timestamp("us", tz="UTC"), pa.int64(),
                                            offset=EPOCH_MICROS),
        pg.INTERVAL.oid: lambda: per_value(_interval),
        pg.BYTEA.oid: lambda: per_value(bytes),
    }
    make = by_oid.get(pg_type.oid)
    if make is not None:
        return make()
    if pg_type.oid in (pg.TEXT.oid, pg.VARCHAR.oid, pg.JSON.oid):
        return pg.column_codec(arrow_type).encode  # binary text and json are the text
    return None


def binary_encoder(pg_type: PgType, arrow_type: pa.DataType) -> Encoder:
    """The binary encoder of a column of ``arrow_type`` described as ``pg_type``."""
    scalar = _scalar_encoder(pg_type, arrow_type)
    if scalar is not None:
        return scalar
    if pg_type.name.startswith("_"):
        element_type = pg.column_codec(arrow_type.value_type).pg_type
        element = _scalar_encoder(element_type, arrow_type.value_type)
        if element is not None:
            return _array(element_type, element)
    raise NotSupportedError(f"binary format of type {pg_type.name} is not supported; ask for text")
