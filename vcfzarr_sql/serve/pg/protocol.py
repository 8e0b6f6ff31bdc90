"""PostgreSQL frontend/backend protocol v3: reading client messages, building server messages.

A message is a type byte, a big-endian int32 length (counting itself) and a payload; the
startup packet has no type byte. Builders return the bytes of one complete message.

>>> command_complete("SELECT 1")
b'C\\x00\\x00\\x00\\rSELECT 1\\x00'
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Protocol

from vcfzarr_sql.serve.pg.sqlstate import PgError
from vcfzarr_sql.serve.pg.types import PgType

PROTOCOL_3_0 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

#: Bytes read from the socket at a time: memory follows what a client sent, not what it claimed.
_READ_STEP = 1 << 16


class Readable(Protocol):
    """What messages are read from: a binary file, buffered (``BinaryIO``) or not (a socket's
    ``SocketIO``, whose ``read`` may answer None)."""

    def read(self, size: int, /) -> bytes | None: ...


class ProtocolError(Exception):
    """The client broke the protocol (or hung up); the session ends."""


def _read_exact(stream: Readable, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        piece = stream.read(min(n - len(data), _READ_STEP))
        if not piece:
            raise ProtocolError("client closed the connection")
        data += piece
    return bytes(data)


def _read_length(stream: Readable, max_length: int) -> int:
    (length,) = struct.unpack(">i", _read_exact(stream, 4))
    if length < 4 or length > max_length:
        raise ProtocolError(f"bad message length {length}")
    return length - 4


def read_startup(stream: Readable, max_length: int) -> tuple[int, bytes]:
    """The startup packet: (request code or protocol version, rest of the payload).

    ``max_length``: the largest packet accepted (a longer claim ends the session).
    """
    payload = _read_exact(stream, _read_length(stream, max_length))
    if len(payload) < 4:
        raise ProtocolError("startup packet too short")
    (code,) = struct.unpack(">i", payload[:4])
    return code, payload[4:]


def read_message(stream: Readable, max_length: int) -> tuple[bytes, bytes]:
    """One regular message: (type byte, payload), at most ``max_length`` bytes long."""
    kind = stream.read(1)
    if not kind:
        raise ProtocolError("client closed the connection")
    return kind, _read_exact(stream, _read_length(stream, max_length))


class Payload:
    """Reads the fields of a message payload in order."""

    def __init__(self, data: bytes):
        self._data = data
        self._at = 0

    def cstring(self) -> str:
        end = self._data.find(b"\x00", self._at)
        if end < 0:
            raise ProtocolError("unterminated string in message")
        try:
            text = self._data[self._at:end].decode()
        except UnicodeDecodeError:
            raise PgError("22021", "invalid byte sequence for encoding \"UTF8\"") from None
        self._at = end + 1
        return text

    def rest(self) -> bytes:
        """The bytes not read yet."""
        return self._data[self._at:]

    def byte(self) -> bytes:
        self._at += 1
        return self._data[self._at - 1:self._at]

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def int16s(self) -> list[int]:
        return [self.int16() for _ in range(self.int16())]

    def int32s(self) -> list[int]:
        return [self.int32() for _ in range(self.int16())]

    def values(self) -> list[bytes | None]:
        """A count then that many length-prefixed values (length -1 is NULL)."""
        out: list[bytes | None] = []
        for _ in range(self.int16()):
            length = self.int32()
            if length < 0:
                out.append(None)
            else:
                out.append(self._data[self._at:self._at + length])
                self._at += length
        return out

    def _unpack(self, fmt: str, size: int) -> int:
        if self._at + size > len(self._data):
            raise ProtocolError("message too short")
        (value,) = struct.unpack_from(fmt, self._data, self._at)
        self._at += size
        return value


def startup_parameters(payload: bytes) -> dict[str, str]:
    """The name/value pairs of a StartupMessage (user, database, options...)."""
    fields = payload.split(b"\x00")
    pairs = zip(fields[0::2], fields[1::2])
    try:
        return {name.decode(): value.decode() for name, value in pairs if name}
    except UnicodeDecodeError:
        raise ProtocolError("startup parameters are not UTF-8") from None


def message(kind: bytes, payload: bytes = b"") -> bytes:
    """One message of type ``kind``."""
    return kind + struct.pack(">i", len(payload) + 4) + payload


def _cstring(text: str) -> bytes:
    return text.encode() + b"\x00"


AUTH_OK = 0
AUTH_SASL = 10
AUTH_SASL_CONTINUE = 11
AUTH_SASL_FINAL = 12


def authentication(code: int, data: bytes = b"") -> bytes:
    """An Authentication message: Ok (0), SASL with its mechanisms (10), SASLContinue (11) or
    SASLFinal (12) with their SASL data."""
    return message(b"R", struct.pack(">i", code) + data)


def sasl_mechanisms(*names: str) -> bytes:
    """The data of AuthenticationSASL: each mechanism's name, then an empty one."""
    return b"".join(_cstring(name) for name in names) + b"\x00"


def sasl_initial_response(payload: bytes) -> tuple[str, bytes]:
    """(mechanism, client's first message) of a SASLInitialResponse."""
    data = Payload(payload)
    mechanism = data.cstring()
    length = data.int32()
    return mechanism, data.rest()[:max(length, 0)]


def parameter_status(name: str, value: str) -> bytes:
    return message(b"S", _cstring(name) + _cstring(value))


def backend_key_data(process_id: int, secret: int) -> bytes:
    return message(b"K", struct.pack(">ii", process_id, secret))


def negotiate_protocol_version(minor: int, unknown_options: Sequence[str]) -> bytes:
    return message(b"v", struct.pack(">ii", minor, len(unknown_options))
                   + b"".join(_cstring(o) for o in unknown_options))


def ready_for_query(status: str) -> bytes:
    """``status``: ``I`` idle, ``T`` in a transaction block, ``E`` in a failed one."""
    return message(b"Z", status.encode())


def row_description(columns: Sequence[tuple[str, PgType, int]]) -> bytes:
    """Column names, types and format codes (0 text, 1 binary)."""
    fields = b"".join(
        _cstring(name) + struct.pack(">ihihih", 0, 0, pg_type.oid, pg_type.size, -1, code)
        for name, pg_type, code in columns
    )
    return message(b"T", struct.pack(">h", len(columns)) + fields)


def parameter_description(oids: Sequence[int]) -> bytes:
    return message(b"t", struct.pack(f">h{len(oids)}i", len(oids), *oids))


_NULL = struct.pack(">i", -1)


def command_complete(tag: str) -> bytes:
    return message(b"C", _cstring(tag))


def error_response(severity: str, sqlstate: str, text: str, detail: str | None = None) -> bytes:
    """ErrorResponse (severity ``ERROR`` or ``FATAL``)."""
    fields = [(b"S", severity), (b"V", severity), (b"C", sqlstate), (b"M", text)]
    if detail:
        fields.append((b"D", detail))
    return message(b"E", b"".join(code + _cstring(value) for code, value in fields) + b"\x00")


EMPTY_QUERY_RESPONSE = message(b"I")
PARSE_COMPLETE = message(b"1")
BIND_COMPLETE = message(b"2")
CLOSE_COMPLETE = message(b"3")
NO_DATA = message(b"n")
PORTAL_SUSPENDED = message(b"s")
