"""SQL text as sqlglot's tokenizer reads it: where a statement, a string literal, a quoted
identifier or a comment ends. The one notion of it for the engine, the servers and the CLI
(DuckDB's dialect: ``E'\\''`` escapes, ``$$...$$`` strings, ``--`` and ``/* */`` comments).

>>> statements("SELECT ';' AS x; -- done\\nSELECT 2 /* two; */ ;")
["SELECT ';' AS x", 'SELECT 2']
>>> [text for text, literal in pieces("SELECT 'a;b' || x") if literal]
["'a;b'"]

Tokenizing is Python (about 1.3 s a megabyte, and millions of small objects: the garbage
collector then stops every thread for a while), so a server does not tokenize texts longer
than :data:`MAX_TOKENIZED`: :func:`statements` takes such a text as one statement when it has
no ``;`` before its end (nothing can split it), and refuses it otherwise (as :func:`pieces`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from vcfzarr_sql.errors import VcfZarrError

if TYPE_CHECKING:  # sqlglot is imported when a text needs tokenizing (`query "SELECT 1"` does not)
    from sqlglot.tokens import Token, TokenType

__all__ = ["LONG_LIST", "MAX_TOKENIZED", "LongLists", "SqlTextTooLong", "ends_statement", "long_lists",
           "pieces", "statements", "tokens", "without_trailing_comments"]

#: The longest text a server tokenizes (characters): about 0.4 s of one thread's time, and
#: DuckDB's parser holds the GIL about 0.1 s for a statement of this length.
MAX_TOKENIZED = 1 << 18


@cache
def _literal_types() -> frozenset[TokenType]:
    """Tokens whose text is a string literal (quotes included)."""
    from sqlglot.tokens import TokenType

    return frozenset({
        TokenType.STRING, TokenType.BYTE_STRING, TokenType.NATIONAL_STRING, TokenType.HEREDOC_STRING,
        TokenType.RAW_STRING, TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.UNICODE_STRING,
    })


def _is_semicolon(token: Token) -> bool:
    return token.token_type.name == "SEMICOLON"


class SqlTextTooLong(VcfZarrError):
    """A text too long to tokenize that would need it: it has a ``;`` before its end (the end
    of a statement, or one inside a string: telling which is the tokenizer's work)."""


def tokens(sql: str) -> list[Token] | None:
    """sqlglot's tokens of ``sql`` (each with its ``start`` and ``end`` offsets, inclusive), or
    None when a string, quoted identifier or comment is not closed.

    >>> [t.text for t in tokens("SELECT 'it''s' -- a comment")]
    ['SELECT', "it's"]
    >>> tokens("SELECT 'open") is None
    True
    """
    from sqlglot.dialects.duckdb import DuckDB
    from sqlglot.errors import TokenError

    try:
        return DuckDB().tokenizer().tokenize(sql)
    except TokenError:
        return None


def statements(sql: str) -> list[str]:
    """The statements of ``sql``, each from its first token to its last (no ``;``, no comment
    before or after it); none for a text of blanks and comments. A text that does not
    tokenize (an unclosed string...) is one statement, for DuckDB to report.

    >>> statements("SELECT 1;;\\n/* nothing */;"), statements("-- no statement"), statements("SELECT ';")
    (['SELECT 1'], [], ["SELECT ';"])
    """
    if len(sql) > MAX_TOKENIZED:
        body = sql.rstrip(" \t\r\n;")
        if ";" in body:
            raise SqlTextTooLong(f"SQL text of {len(sql):,} characters with a ';' before its end: too long "
                                 f"to split (at most {MAX_TOKENIZED:,}); send statements one at a time")
        return [body.strip()]
    found = tokens(sql)
    if found is None:
        return [sql.strip()] if sql.strip() else []
    out: list[str] = []
    first: Token | None = None
    for previous, token in zip([None, *found], found):
        if not _is_semicolon(token):
            first = first or token
        elif first is not None and previous is not None:
            out.append(sql[first.start:previous.end + 1])
            first = None
    if first is not None:
        out.append(sql[first.start:found[-1].end + 1])
    return out


def pieces(sql: str) -> Iterator[tuple[str, bool]]:
    """``sql`` cut into code and string literals, in order: ``(text, is_literal)``; the texts
    join to ``sql``. A text that does not tokenize is one piece of code; one longer than
    :data:`MAX_TOKENIZED` is :class:`SqlTextTooLong`.

    >>> list(pieces("x = 'a' AND y"))
    [('x = ', False), ("'a'", True), (' AND y', False)]
    """
    if len(sql) > MAX_TOKENIZED:
        raise SqlTextTooLong(f"SQL text of {len(sql):,} characters: too long to tokenize "
                             f"(at most {MAX_TOKENIZED:,})")
    at = 0
    for token in tokens(sql) or ():
        if token.token_type in _literal_types():
            yield sql[at:token.start], False
            yield sql[token.start:token.end + 1], True
            at = token.end + 1
    yield sql[at:], False


#: A list of at least this many plain string literals is read by :func:`long_lists`, not by
#: the tokenizer (whose Python loop costs ~0.3 CPU-s for a list of 10,000 sample names).
LONG_LIST = 32

#: ``[ 'a', 'b', ... ]`` after ``(``, ``,`` or ``=`` (``samples := [...]``): strings without a
#: quote or backslash (any other list is left to the tokenizer).
_LONG_LIST = re.compile(rf"(?<=[(,=])\s*(\[\s*'[^'\\]*'(?:\s*,\s*'[^'\\]*'){{{LONG_LIST - 1},}}\s*\])")


@dataclass(frozen=True)
class LongLists:
    """A SQL text whose long lists of string literals each stand replaced by a name.

    ``text``: the SQL with the names; ``lists``: name -> the list's strings; ``at``: name -> its
    offset in ``text``; ``originals``: name -> the list's text. A name is a bare identifier that
    the original text does not contain, so it is a ``VAR`` token where the list stood, unless the
    list was inside a string or comment (:meth:`standing`: check before trusting it)."""

    text: str
    lists: dict[str, tuple[str, ...]]
    at: dict[str, int]
    originals: dict[str, str]

    def standing(self, var_tokens: set[tuple[int, str]]) -> bool:
        """Whether every name is a token of ``var_tokens`` ((offset, text) of the ``VAR``
        tokens of :attr:`text`): each list stood where a value can, not in a string or comment."""
        return all((self.at[name], name) in var_tokens for name in self.lists)

    def restored(self, text: str) -> str:
        """``text`` (derived from :attr:`text`) with each name that is left in it back to its list."""
        for name, original in self.originals.items():
            text = text.replace(name, original)
        return text


def long_lists(sql: str) -> LongLists:
    """:class:`LongLists` of ``sql``: lists of :data:`LONG_LIST` or more plain string literals
    (``samples := ['NA1', ...]``) named, so that tokenizing and parsing the text does not
    read them one character at a time (regular expressions read them).

    >>> found = long_lists("SELECT * FROM f(x, s := [" + ", ".join(f"'S{i}'" for i in range(40)) + "])")
    >>> found.text[:28], [found.lists[name][:2] for name in found.lists]
    ('SELECT * FROM f(x, s := vcfz', [('S0', 'S1')])
    >>> found.restored(found.text) == "SELECT * FROM f(x, s := [" + ", ".join(f"'S{i}'" for i in range(40)) + "])"
    True
    """
    if sql.count("'") < 2 * LONG_LIST:
        return LongLists(sql, {}, {}, {})
    marker = "vcfzarr_literal_list_"
    while marker in sql:
        marker += "x_"
    pieces_: list[str] = []
    lists: dict[str, tuple[str, ...]] = {}
    at: dict[str, int] = {}
    originals: dict[str, str] = {}
    length, last = 0, 0
    for match in _LONG_LIST.finditer(sql):
        name = f"{marker}{len(lists)}"
        pieces_.append(sql[last:match.start(1)])
        length += match.start(1) - last
        at[name] = length
        pieces_.append(name)
        length += len(name)
        lists[name] = tuple(match.group(1).split("'")[1::2])  # (no quote in an item: 6x a findall)
        originals[name] = match.group(1)
        last = match.end(1)
    if not lists:
        return LongLists(sql, {}, {}, {})
    pieces_.append(sql[last:])
    return LongLists("".join(pieces_), lists, at, originals)


def ends_statement(sql: str) -> bool:
    """Whether ``sql`` ends with ``;`` (comments aside) outside any string or comment.

    >>> ends_statement("SELECT 1; -- done"), ends_statement("SELECT ';"), ends_statement("SELECT 1")
    (True, False, False)
    """
    if ";" not in sql:
        return False
    found = tokens(sql)
    return found is not None and len(found) > 0 and _is_semicolon(found[-1])


def without_trailing_comments(sql: str) -> str:
    """``sql`` up to the end of its last statement: trailing comments, ``;`` and blanks go
    (a text that does not tokenize stays as it is, for DuckDB to report).

    >>> without_trailing_comments("SELECT '--;' AS x; -- the end\\n/* more */ ;\\n")
    "SELECT '--;' AS x"
    >>> without_trailing_comments("SELECT 1 -- one")
    'SELECT 1'
    """
    if not any(mark in sql for mark in (";", "--", "/*")):
        return sql.rstrip()  # nothing to strip but blanks (and no tokenizer to import)
    found = tokens(sql)
    if found is None:
        return sql
    while found and _is_semicolon(found[-1]):
        found.pop()
    return sql[: found[-1].end + 1] if found else ""
