"""Arrow result types as PostgreSQL types: the type OID a client sees and the text it parses.

Every value is sent in PostgreSQL's text format, the one every client reads:

- ``bool`` is ``t``/``f``; integers, floats (``NaN``, ``Infinity``), ``numeric``, ``date``,
  ``time`` and ``timestamp`` are written as PostgreSQL writes them; ``bytea`` is hex (``\\x0a1b``).
- A list of scalars is a one-dimensional PostgreSQL array of the element type, in array text
  syntax (``{1,2,NULL}``, ``{"a b","\\"q\\""}``).
- A list of lists (``fmt_GT``), a struct or a map is ``json`` (OID 114): PostgreSQL arrays must
  be rectangular and genotypes of mixed ploidy are not, so ``[[0,1],[1]]`` is sent as that JSON
  text (psycopg returns Python lists; JDBC a string).
- Anything else is ``text`` holding the value's string form.

>>> import pyarrow as pa
>>> codec = column_codec(pa.list_(pa.string()))
>>> codec.pg_type.name, codec.encode(pa.array([["a b", None, ""], None], pa.list_(pa.string())))
('_text', [b'{"a b",NULL,""}', None])
"""

from __future__ import annotations

import datetime
import decimal
import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import NotSupportedError

#: One column's values as PostgreSQL text (``None`` is SQL NULL).
Encoder = Callable[[pa.Array], list[bytes | None]]


@dataclass(frozen=True)
class PgType:
    """A PostgreSQL type as RowDescription names it: OID, name and ``typlen`` (-1: variable)."""

    name: str
    oid: int
    size: int = -1
    array_oid: int = 0


BOOL = PgType("bool", 16, 1, 1000)
BYTEA = PgType("bytea", 17, -1, 1001)
INT8 = PgType("int8", 20, 8, 1016)
INT2 = PgType("int2", 21, 2, 1005)
INT4 = PgType("int4", 23, 4, 1007)
TEXT = PgType("text", 25, -1, 1009)
JSON = PgType("json", 114, -1, 199)
FLOAT4 = PgType("float4", 700, 4, 1021)
FLOAT8 = PgType("float8", 701, 8, 1022)
VARCHAR = PgType("varchar", 1043, -1, 1015)
DATE = PgType("date", 1082, 4, 1182)
TIME = PgType("time", 1083, 8, 1183)
TIMESTAMP = PgType("timestamp", 1114, 8, 1115)
TIMESTAMPTZ = PgType("timestamptz", 1184, 8, 1185)
INTERVAL = PgType("interval", 1186, 16, 1187)
NUMERIC = PgType("numeric", 1700, -1, 1231)
UNKNOWN = PgType("unknown", 0)

BY_OID = {t.oid: t for t in (BOOL, BYTEA, INT8, INT2, INT4, TEXT, JSON, FLOAT4, FLOAT8, VARCHAR,
                              DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, NUMERIC)}


@dataclass(frozen=True)
class ColumnCodec:
    """How one result column is described (``pg_type``) and written (``encode``)."""

    pg_type: PgType
    encode: Encoder


def _utf8(values: pa.Array) -> list[bytes | None]:
    """Arrow's own string form of each value, as UTF-8 bytes."""
    return pc.cast(pc.cast(values, pa.string()), pa.binary()).to_pylist()


_FLOAT_WORDS = {b"inf": b"Infinity", b"-inf": b"-Infinity", b"nan": b"NaN"}


def _floats(values: pa.Array) -> list[bytes | None]:
    return [_FLOAT_WORDS.get(v, v) if v is not None else None for v in _utf8(values)]


def _bools(values: pa.Array) -> list[bytes | None]:
    return pc.if_else(values, b"t", b"f").cast(pa.binary()).to_pylist()


def per_value(text: Callable[[Any], str | bytes]) -> Encoder:
    """An encoder applying ``text`` to each non-NULL value (as Python value: ``to_pylist``'s,
    of the column's type)."""
    def encode(values: pa.Array) -> list[bytes | None]:
        out: list[bytes | None] = []
        for value in values.to_pylist():
            if value is None:
                out.append(None)
            else:
                encoded = text(value)
                out.append(encoded if isinstance(encoded, bytes) else encoded.encode())
        return out

    return encode


def _bytea(value: bytes) -> bytes:
    return b"\\x" + value.hex().encode()


def _interval(value: pa.MonthDayNano) -> str:
    months, days, nanoseconds = value
    sign = "-" if nanoseconds < 0 else ""
    seconds, nanos = divmod(abs(nanoseconds), 1_000_000_000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    fraction = f".{nanos // 1000:06d}".rstrip("0").rstrip(".")
    return f"{months} mons {days} days {sign}{hours:02d}:{minutes:02d}:{seconds:02d}{fraction}"


def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return _bytea(value).decode()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.date, datetime.time, datetime.datetime, datetime.timedelta)):
        return str(value)
    return repr(value)


def _json(value: object) -> str:
    if isinstance(value, list) and value and isinstance(value[0], tuple):  # a map's (key, value)
        value = dict(value)
    return json.dumps(value, separators=(",", ":"), default=_json_default)


#: Elements that PostgreSQL's array syntax needs in double quotes.
_NEEDS_QUOTES = re.compile(rb'[{}",\\\s]|^$|^[Nn][Uu][Ll][Ll]$')


def _array_element(text: bytes | None) -> bytes:
    if text is None:
        return b"NULL"
    if not _NEEDS_QUOTES.search(text):
        return text
    return b'"' + text.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def encoded_lists(values: pa.Array, element: Encoder) -> list[list[bytes | None] | None]:
    """Each list of a list column as its elements encoded by ``element`` (None: a NULL list)."""
    encoded = iter(element(pc.list_flatten(values)))
    return [
        None if length is None else [next(encoded) for _ in range(length)]
        for length in pc.list_value_length(values).to_pylist()
    ]


def _array_encoder(element: Encoder) -> Encoder:
    """A list column as one-dimensional arrays whose elements ``element`` writes."""
    return lambda values: [
        None if items is None else b"{" + b",".join(map(_array_element, items)) + b"}"
        for items in encoded_lists(values, element)
    ]


def _scalar_codec(arrow_type: pa.DataType) -> ColumnCodec | None:
    """The codec of a non-nested type, None for a nested one."""
    t = pa.types
    if t.is_dictionary(arrow_type):
        value = _scalar_codec(arrow_type.value_type)
        if value is None:
            return None
        return ColumnCodec(value.pg_type, lambda values: value.encode(values.dictionary_decode()))
    if t.is_boolean(arrow_type):
        return ColumnCodec(BOOL, _bools)
    if t.is_int8(arrow_type) or t.is_int16(arrow_type) or t.is_uint8(arrow_type):
        return ColumnCodec(INT2, _utf8)
    if t.is_int32(arrow_type) or t.is_uint16(arrow_type):
        return ColumnCodec(INT4, _utf8)
    if t.is_int64(arrow_type) or t.is_uint32(arrow_type):
        return ColumnCodec(INT8, _utf8)
    if t.is_uint64(arrow_type) or t.is_decimal(arrow_type):
        return ColumnCodec(NUMERIC, _utf8)
    if t.is_float16(arrow_type) or t.is_float32(arrow_type):
        return ColumnCodec(FLOAT4, _floats)
    if t.is_float64(arrow_type):
        return ColumnCodec(FLOAT8, _floats)
    if t.is_string(arrow_type) or t.is_large_string(arrow_type) or t.is_string_view(arrow_type):
        return ColumnCodec(TEXT, _utf8)
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or t.is_fixed_size_binary(arrow_type):
        return ColumnCodec(BYTEA, per_value(_bytea))
    if t.is_date(arrow_type):
        return ColumnCodec(DATE, _utf8)
    if t.is_time(arrow_type):
        return ColumnCodec(TIME, _utf8)
    if t.is_timestamp(arrow_type):
        if arrow_type.tz is None:
            return ColumnCodec(TIMESTAMP, _utf8)
        return ColumnCodec(TIMESTAMPTZ, per_value(lambda v: v.isoformat(sep=" ")))
    if t.is_interval(arrow_type):
        return ColumnCodec(INTERVAL, per_value(_interval))
    if t.is_nested(arrow_type):
        return None
    return ColumnCodec(TEXT, per_value(str))


def column_codec(arrow_type: pa.DataType) -> ColumnCodec:
    """The PostgreSQL type and text encoder of a result column of ``arrow_type``.

    >>> column_codec(pa.int8()).pg_type.name
    'int2'
    >>> column_codec(pa.float32()).encode(pa.array([1.5, float("nan")], pa.float32()))
    [b'1.5', b'NaN']
    >>> column_codec(pa.list_(pa.list_(pa.int8()))).encode(pa.array([[[0, 1], [1]], [[None]]]))
    [b'[[0,1],[1]]', b'[[null]]']
    """
    scalar = _scalar_codec(arrow_type)
    if scalar is not None:
        return scalar
    t = pa.types
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        element = _scalar_codec(arrow_type.value_type)
        if element is not None:
            array_type = PgType("_" + element.pg_type.name, element.pg_type.array_oid or TEXT.array_oid)
            return ColumnCodec(array_type, _array_encoder(element.encode))
    return ColumnCodec(JSON, per_value(_json))


# ---------------------------------------------------------------------------------------------
# Parameters: what a client's Bind values mean


_BINARY_PARAMETERS: dict[int, Callable[[bytes], object]] = {
    BOOL.oid: lambda data: data != b"\x00",
    INT2.oid: lambda data: struct.unpack(">h", data)[0],
    INT4.oid: lambda data: struct.unpack(">i", data)[0],
    INT8.oid: lambda data: struct.unpack(">q", data)[0],
    FLOAT4.oid: lambda data: struct.unpack(">f", data)[0],
    FLOAT8.oid: lambda data: struct.unpack(">d", data)[0],
    BYTEA.oid: bytes,
    TEXT.oid: lambda data: data.decode(),
    VARCHAR.oid: lambda data: data.decode(),
    UNKNOWN.oid: lambda data: data.decode(),
}


def _text_bool(text: str) -> bool:
    return text.strip().lower() in ("t", "true", "y", "yes", "on", "1")


def _text_bytea(text: str) -> bytes:
    return bytes.fromhex(text[2:]) if text.startswith("\\x") else text.encode()


_TEXT_PARAMETERS: dict[int, Callable[[str], object]] = {
    BOOL.oid: _text_bool,
    INT2.oid: int,
    INT4.oid: int,
    INT8.oid: int,
    FLOAT4.oid: float,
    FLOAT8.oid: float,
    NUMERIC.oid: decimal.Decimal,
    BYTEA.oid: _text_bytea,
}


_ELEMENT_OF_ARRAY = {t.array_oid: t.oid for t in BY_OID.values()}


def parse_array(text: str) -> list:
    """The elements of a PostgreSQL array literal, as strings (None for NULL; nested lists for
    a multi-dimensional array).

    >>> parse_array('{1,NULL,"a b",{2,3}}')
    ['1', None, 'a b', ['2', '3']]
    """
    stack: list[list] = []
    at = 0
    while at < len(text):
        char = text[at]
        if char == "{":
            stack.append([])
            at += 1
        elif char == "}":
            done = stack.pop()
            if not stack:
                return done
            stack[-1].append(done)
            at += 1
        elif char in ", \t\n":
            at += 1
        elif char == '"':
            value, at = [], at + 1
            while text[at] != '"':
                if text[at] == "\\":
                    at += 1
                value.append(text[at])
                at += 1
            stack[-1].append("".join(value))
            at += 1
        else:
            end = at
            while text[end] not in ",}":
                end += 1
            word = text[at:end].strip()
            stack[-1].append(None if word.upper() == "NULL" else word)
            at = end
    raise NotSupportedError(f"cannot read array parameter {text!r}")


def _typed_elements(values: list, parse: Callable[[str], object] | None) -> list:
    return [
        _typed_elements(v, parse) if isinstance(v, list)
        else v if v is None or parse is None else parse(v)
        for v in values
    ]


def _untyped_array(text: str) -> bool:
    """Whether an untyped parameter is an array literal (psycopg sends a list of str so)
    rather than a string: ``{...}`` that parses as an array and is not a JSON object."""
    if not (text.startswith("{") and text.endswith("}")):
        return False
    try:
        json.loads(text)
        return False
    except ValueError:
        pass
    try:
        parse_array(text)
        return True
    except (IndexError, NotSupportedError):
        return False


def parameter_value(oid: int, binary: bool, data: bytes | None) -> object:
    """The Python value DuckDB gets for one Bind parameter of declared type ``oid``.

    Text values of types without a parser here stay strings (DuckDB casts them where the query
    needs another type); arrays become lists, also untyped ones (not JSON objects); binary
    values are read for bool, integers, floats, bytea and text.

    >>> parameter_value(INT4.oid, False, b"42"), parameter_value(0, False, b"chr1")
    (42, 'chr1')
    >>> parameter_value(INT8.array_oid, False, b"{1,NULL}")
    [1, None]
    """
    if data is None:
        return None
    if binary:
        read = _BINARY_PARAMETERS.get(oid)
        if read is None:
            name = BY_OID[oid].name if oid in BY_OID else f"OID {oid}"
            raise NotSupportedError(
                f"binary format for parameters of type {name} is not supported; send text")
        return read(data)
    text = data.decode()
    if oid == UNKNOWN.oid and _untyped_array(text):
        return parse_array(text)
    if oid in _ELEMENT_OF_ARRAY:
        return _typed_elements(parse_array(text), _TEXT_PARAMETERS.get(_ELEMENT_OF_ARRAY[oid]))
    parse = _TEXT_PARAMETERS.get(oid)
    return text if parse is None else parse(text)
