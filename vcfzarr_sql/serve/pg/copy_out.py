"""``COPY ... TO STDOUT``: a query's rows sent as PostgreSQL's COPY text or CSV format.

psql's ``\\copy (...) TO STDOUT`` and psycopg's ``cursor.copy()`` send ``COPY (query) TO
STDOUT`` or ``COPY table [(columns)] TO STDOUT`` with options in either of PostgreSQL's
syntaxes (``WITH (FORMAT csv, HEADER)`` or the older ``WITH CSV HEADER``). The rows go to the
client in CopyData messages, one a row, never to a file: ``COPY ... TO 'file'`` stays with
DuckDB, whose file access is off for clients.

>>> copy = parse("COPY (SELECT 1) TO STDOUT WITH (FORMAT csv, HEADER)")
>>> copy.query, copy.csv, copy.header, copy.delimiter
('SELECT 1', True, True, ',')
>>> parse("COPY t (a, b) TO STDOUT").query
'SELECT a, b FROM t'
>>> parse("COPY t TO '/tmp/x.csv'") is None
True
>>> import pyarrow as pa
>>> batch = pa.record_batch({"a": pa.array([1, None]), "b": pa.array(["x\\ty", 'say "hi", ok'])})
>>> print(lines(batch, parse("COPY t TO STDOUT")).to_pylist())
[b'1\\tx\\\\ty\\n', b'\\\\N\\tsay "hi", ok\\n']
>>> print(lines(batch, parse("COPY t TO STDOUT CSV")).to_pylist())
[b'1,x\\ty\\n', b',"say ""hi"", ok"\\n']
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot.tokens import Token, TokenType

from vcfzarr_sql.engine import sql_text
from vcfzarr_sql.serve.pg import protocol
from vcfzarr_sql.serve.pg.rows import wire_values
from vcfzarr_sql.serve.pg.sqlstate import PgError
from vcfzarr_sql.serve.pg.types import column_codec

__all__ = ["CopyOut", "copy_data", "header_line", "lines", "out_response", "parse"]


@dataclass(frozen=True)
class CopyOut:
    """A ``COPY ... TO STDOUT``: the query whose rows it sends, and the format's options."""

    query: str
    csv: bool = False
    header: bool = False
    delimiter: str = "\t"
    null: str = "\\N"
    quote: str = '"'


def _words(found: Sequence[Token]) -> list[tuple[str, bool]]:
    """The option tokens as (text, is_string): keywords upper case, punctuation dropped."""
    return [(t.text, True) if t.token_type == TokenType.STRING else (t.text.upper(), False)
            for t in found if t.token_type not in (TokenType.L_PAREN, TokenType.R_PAREN,
                                                    TokenType.COMMA, TokenType.SEMICOLON)]


def _options(query: str, words: list[tuple[str, bool]]) -> CopyOut:
    settings: dict[str, str | bool] = {}
    at = 0

    def value() -> str:
        nonlocal at
        if at < len(words) and words[at] == ("AS", False):
            at += 1
        if at >= len(words):
            raise PgError("42601", "COPY option without a value")
        at += 1
        return words[at - 1][0]

    flags = {"TRUE", "ON", "1"}
    while at < len(words):
        word, _ = words[at]
        at += 1
        if word == "WITH":
            continue
        if word in ("CSV", "TEXT", "BINARY"):
            settings["format"] = word
        elif word == "FORMAT":
            settings["format"] = value().upper()
        elif word == "HEADER":
            following = words[at][0].upper() if at < len(words) and not words[at][1] else ""
            settings["header"] = following not in ("FALSE", "OFF", "0")
            at += following in flags | {"FALSE", "OFF", "0"}
        elif word in ("DELIMITER", "NULL", "QUOTE", "ESCAPE", "ENCODING"):
            settings[word.lower()] = value()
        else:
            raise PgError("0A000", f"COPY option {word} is not supported by this server")
    fmt = settings.get("format", "TEXT")
    if fmt not in ("TEXT", "CSV"):
        raise PgError("0A000", f"COPY format {str(fmt).lower()} is not supported by this server "
                               "(text and csv are)")
    csv = fmt == "CSV"
    escape, quote = settings.get("escape"), str(settings.get("quote", '"'))
    if escape is not None and escape != quote:
        raise PgError("0A000", "COPY ESCAPE other than the QUOTE character is not supported")
    if str(settings.get("encoding", "UTF8")).upper().replace("-", "") != "UTF8":
        raise PgError("0A000", "COPY ENCODING other than UTF8 is not supported")
    delimiter = str(settings.get("delimiter", "," if csv else "\t"))
    if len(delimiter) != 1 or len(quote) != 1:
        raise PgError("22023", "COPY delimiter and quote must be a single one-byte character")
    return CopyOut(query, csv, bool(settings.get("header", False)), delimiter,
                   str(settings.get("null", "" if csv else "\\N")), quote)


def parse(sql: str) -> CopyOut | None:
    """The ``COPY ... TO STDOUT`` that ``sql`` is, or None (another statement; a ``COPY`` to
    or from elsewhere). PgError for options this server does not write (``FORMAT binary``)."""
    found = sql_text.tokens(sql) if len(sql) <= sql_text.MAX_TOKENIZED else None
    if not found or found[0].text.upper() != "COPY" or len(found) < 4:
        return None
    depth, to = 0, None
    for i, token in enumerate(found[1:], start=1):
        depth += (token.token_type == TokenType.L_PAREN) - (token.token_type == TokenType.R_PAREN)
        if depth == 0 and token.text.upper() in ("TO", "FROM"):
            to = i
            break
    if to is None or found[to].text.upper() != "TO" or to + 1 >= len(found) \
            or found[to + 1].text.upper() != "STDOUT":
        return None
    target = sql[found[1].start:found[to - 1].end + 1].strip()
    if found[1].token_type == TokenType.L_PAREN:
        query = target[1:-1].strip()
    elif "(" in target:
        table, columns = target.split("(", 1)
        query = f"SELECT {columns.rstrip().removesuffix(')').strip()} FROM {table.strip()}"
    else:
        query = f"SELECT * FROM {target}"
    return _options(query, _words(found[to + 2:]))


def out_response(columns: int) -> bytes:
    """CopyOutResponse: text format, every column text."""
    return protocol.message(b"H", struct.pack(f">bh{columns}h", 0, columns, *([0] * columns)))


def _text_field(values: pa.Array, copy: CopyOut) -> pa.Array:
    escapes = [("\\", "\\\\"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")]
    if copy.delimiter not in "\\\n\r\t":
        escapes.append((copy.delimiter, "\\" + copy.delimiter))
    for plain, escaped in escapes:
        values = pc.replace_substring(values, plain, escaped)
    return pc.fill_null(values, copy.null)


def _csv_field(values: pa.Array, copy: CopyOut) -> pa.Array:
    special = pc.or_(pc.match_substring_regex(values, "[" + "".join(
        "\\" + c if c in "\\]^-[" else c for c in (copy.delimiter, copy.quote, "\r\n")) + "]"),
        pc.equal(values, copy.null))
    quote = _large(copy.quote)
    quoted = pc.binary_join_element_wise(
        quote, pc.replace_substring(values, copy.quote, copy.quote * 2), quote, _large(""))
    return pc.fill_null(pc.if_else(special, quoted, values), copy.null)


def _large(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def lines(batch: pa.RecordBatch, copy: CopyOut) -> pa.Array:
    """Each row of ``batch`` as one line of ``copy``'s format (bytes ending in a newline)."""
    field = _csv_field if copy.csv else _text_field
    fields = [field(pc.cast(wire_values(column_codec(f.type), f.type, False)(column),
                            pa.large_string()), copy)
              for f, column in zip(batch.schema, batch.columns)]
    if not fields:
        return pa.array([b"\n"] * batch.num_rows, pa.large_binary())
    joined = pc.binary_join_element_wise(*fields, _large(copy.delimiter))
    return pc.cast(pc.binary_join_element_wise(joined, _large("\n"), _large("")), pa.large_binary())


def header_line(names: Sequence[str], copy: CopyOut) -> bytes:
    """The CSV header line (column names)."""
    row = pa.record_batch([pa.array([name]) for name in names], names=[f"c{i}" for i in range(len(names))])
    return lines(row, copy)[0].as_py() if names else b"\n"


def copy_data(rows: pa.Array) -> bytes:
    """One CopyData message a line."""
    return b"".join(b"d" + struct.pack(">i", len(line) + 4) + line for line in rows.to_pylist())
