"""SQL text as typed at a prompt or on a command line, made safe for DuckDB's relation API.

DuckDB runs ``SELECT 1; -- done`` but its relation wraps the text in a subquery to display it,
and the comment then swallows the closing parenthesis.
"""

from __future__ import annotations

import re

#: a quoted string or identifier (unterminated: to the end), a comment, or any other character
_TOKEN = re.compile(r"'(?:[^']|'')*(?:'|$)|\"(?:[^\"]|\"\")*(?:\"|$)|--[^\n]*|/\*.*?(?:\*/|$)|.", re.DOTALL)


def _last_token(sql: str) -> re.Match | None:
    """The last token that is not a blank or a comment."""
    last = None
    for match in _TOKEN.finditer(sql):
        token = match.group()
        if not (token.isspace() or token.startswith(("--", "/*"))):
            last = match
    return last


def ends_statement(sql: str) -> bool:
    """Whether ``sql`` ends with ``;`` (comments aside) outside any string or comment.

    >>> ends_statement("SELECT 1; -- done"), ends_statement("SELECT ';"), ends_statement("SELECT 1")
    (True, False, False)
    """
    last = _last_token(sql)
    return last is not None and last.group() == ";"


def without_trailing_comments(sql: str) -> str:
    """``sql`` up to the end of its last statement: trailing comments, ``;`` and blanks go.

    >>> without_trailing_comments("SELECT '--;' AS x; -- the end\\n/* more */ ;\\n")
    "SELECT '--;' AS x"
    >>> without_trailing_comments("SELECT 1 -- one")
    'SELECT 1'
    """
    while (last := _last_token(sql)) is not None and last.group() == ";":
        sql = sql[: last.start()]
    return sql[: last.end()] if last is not None else ""
