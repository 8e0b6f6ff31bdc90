"""SQL-level cursors: ``DECLARE name CURSOR FOR query``, ``FETCH n FROM name``, ``CLOSE name``.

Server-side cursors of drivers (psycopg's named cursors, ``cursor.itersize``) read a big
result in slices this way. DuckDB has no such statements: a declared cursor is a portal of
the session whose rows stream from DuckDB as they are fetched.

>>> cursor_command(Statement('DECLARE "c" CURSOR WITH HOLD FOR SELECT $1', "UNPARSED", 1))
CursorCommand(verb='DECLARE', name='c', query=Statement(sql='SELECT $1', kind='SELECT', parameters=1), hold=True, count=None)
>>> cursor_command(Statement('FETCH FORWARD 100 FROM "c"', "UNPARSED")).count
100
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.serve.pg.statements import Statement

_NAME = r'("(?:[^"]|"")+"|[A-Za-z_][\w$]*)'
_DECLARE = re.compile(
    rf"\s*DECLARE\s+{_NAME}\s+(BINARY\s+)?(?:(?:IN|A)?SENSITIVE\s+)?(NO\s+SCROLL\s+|SCROLL\s+)?"
    rf"CURSOR\s+(?:(WITH|WITHOUT)\s+HOLD\s+)?FOR\s+(.*?)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_FETCH = re.compile(rf"\s*FETCH\s+(?:(?:FORWARD|NEXT)\s+)?(ALL|\d+)?\s*(?:FROM|IN)\s+{_NAME}\s*;?\s*$",
                    re.IGNORECASE)
_CLOSE = re.compile(rf"\s*CLOSE\s+{_NAME}\s*;?\s*$", re.IGNORECASE)
_MOVE = re.compile(r"\s*MOVE\b", re.IGNORECASE)


@dataclass(frozen=True)
class CursorCommand:
    """A cursor statement: ``DECLARE name [WITH HOLD] CURSOR FOR query``, ``FETCH [FORWARD]
    count FROM name`` (``count`` None: ALL) or ``CLOSE name`` (``name`` None: ALL)."""

    verb: str
    name: str | None
    query: Statement | None = None
    hold: bool = False
    count: int | None = None


def _name(text: str) -> str:
    return text[1:-1].replace('""', '"') if text.startswith('"') else text.lower()


def cursor_command(statement: Statement) -> CursorCommand | None:
    """The cursor statement ``statement`` is, or None for any other statement."""
    if statement.kind != "UNPARSED":
        return None
    if declare := _DECLARE.match(statement.sql):
        name, binary, scroll, hold, query = declare.groups()
        if binary:
            raise NotSupportedError("BINARY cursors are not supported; declare a text cursor")
        if scroll and not scroll.upper().startswith("NO"):
            raise NotSupportedError("SCROLL cursors are not supported; cursors only move forward")
        return CursorCommand("DECLARE", _name(name), Statement(query, "SELECT", statement.parameters),
                             hold=(hold or "").upper() == "WITH")
    if fetch := _FETCH.match(statement.sql):
        count, name = fetch.groups()
        return CursorCommand("FETCH", _name(name),
                             count=None if count is None or count.upper() == "ALL" else int(count))
    if close := _CLOSE.match(statement.sql):
        name = close.group(1)
        return CursorCommand("CLOSE", None if name.upper() == "ALL" else _name(name))
    if _MOVE.match(statement.sql):
        raise NotSupportedError("MOVE is not supported; cursors only FETCH forward")
    return None
