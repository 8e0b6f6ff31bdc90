"""Where the table functions are called in a SQL text: spans of the original text plus trees.

The SQL text is tokenized with sqlglot's DuckDB dialect (so strings, comments and quoted
identifiers are never mistaken for calls); each call's own text is then parsed into a sqlglot
expression tree for the rewrite rules. The rest of the query is never parsed, so any SQL that
DuckDB accepts passes through untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS
from vcfzarr_sql.errors import QueryError

DIALECT = "duckdb"

#: Tokens after which a call stands where a table may stand, so it gets its default alias.
_TABLE_POSITION = {TokenType.FROM, TokenType.JOIN, TokenType.COMMA}
#: Tokens that start an alias right after a call.
_ALIAS_START = {TokenType.ALIAS, TokenType.VAR, TokenType.IDENTIFIER}


@dataclass(frozen=True)
class CallSite:
    """One call of a table function in a SQL text."""

    start: int  # offset of the function name
    stop: int  # offset just past the closing parenthesis
    call: exp.Anonymous  # the call, parsed
    first_placeholder: int  # how many positional ``?`` come before it in the text
    needs_alias: bool  # in table position without an alias of its own


@dataclass(frozen=True)
class ParameterRef:
    """A ``$1`` / ``$name`` parameter reference outside every call."""

    start: int
    stop: int
    key: str  # "1" or "name"


def _shifted(token: Token, offset: int) -> Token:
    return Token(
        token.token_type, token.text, token.line, token.col,
        token.start + offset, token.end + offset, token.comments,
    )


def tokenize(sql: str) -> list[Token]:
    """The DuckDB-dialect tokens of ``sql``; QueryError when it cannot be tokenized.

    sqlglot keeps the body of statements it does not parse (``EXPLAIN ...``) as one string
    token; that body is tokenized too, so calls inside it are found.

    >>> [t.text for t in tokenize("EXPLAIN SELECT * FROM vcf_zarr('x')")]
    ['EXPLAIN', 'SELECT', '*', 'FROM', 'vcf_zarr', '(', 'x', ')']
    """
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(sql)
    except TokenError as err:
        raise QueryError(f"cannot read the SQL text: {err}") from None
    out: list[Token] = []
    for k, token in enumerate(tokens):
        if (
            k > 0
            and tokens[k - 1].token_type == TokenType.COMMAND
            and token.token_type == TokenType.STRING
        ):
            start = sql.find(token.text, tokens[k - 1].end + 1)  # its own start is not kept
            out += [_shifted(t, start) for t in tokenize(token.text)]
        else:
            out.append(token)
    return out


def _closing_paren(tokens: list[Token], open_index: int) -> int:
    depth = 0
    for k in range(open_index, len(tokens)):
        kind = tokens[k].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return k
    raise QueryError(f"{tokens[open_index - 1].text}(: missing closing parenthesis")


def _is_call(tokens: list[Token], k: int) -> bool:
    token = tokens[k]
    return (
        token.token_type == TokenType.VAR
        and token.text.lower() in TABLE_FUNCTIONS
        and k + 1 < len(tokens)
        and tokens[k + 1].token_type == TokenType.L_PAREN
        and (k == 0 or tokens[k - 1].token_type != TokenType.DOT)
    )


def _parse_call(text: str) -> exp.Anonymous:
    try:
        call = sqlglot.parse_one(text, read=DIALECT)
    except ParseError as err:
        first = str(err).splitlines()[0]
        raise QueryError(f"cannot parse {text}: {first}") from None
    if not isinstance(call, exp.Anonymous):
        raise QueryError(f"cannot parse {text} as a table function call")
    return call


def find_call_sites(sql: str, tokens: list[Token]) -> list[CallSite]:
    """Every call of a vcfzarr-sql table function in ``sql``, in text order.

    >>> sql = "SELECT * FROM vcf_zarr('x.zarr', region := '1') v WHERE pos > ?"
    >>> [(s.start, s.stop, s.call.sql("duckdb"), s.needs_alias)
    ...  for s in find_call_sites(sql, tokenize(sql))]
    [(14, 47, "VCF_ZARR('x.zarr', region := '1')", False)]
    """
    sites = []
    placeholders = 0
    k = 0
    while k < len(tokens):
        if not _is_call(tokens, k):
            placeholders += tokens[k].token_type == TokenType.PLACEHOLDER
            k += 1
            continue
        close = _closing_paren(tokens, k + 1)
        start, stop = tokens[k].start, tokens[close].end + 1
        after = tokens[close + 1].token_type if close + 1 < len(tokens) else None
        before = tokens[k - 1].token_type if k > 0 else None
        sites.append(
            CallSite(
                start=start,
                stop=stop,
                call=_parse_call(sql[start:stop]),
                first_placeholder=placeholders,
                needs_alias=before in _TABLE_POSITION and after not in _ALIAS_START,
            )
        )
        placeholders += sum(t.token_type == TokenType.PLACEHOLDER for t in tokens[k:close])
        k = close + 1
    return sites


def find_parameter_refs(tokens: list[Token], sites: list[CallSite]) -> list[ParameterRef]:
    """``$1`` and ``$name`` references outside the calls of ``sites``, in text order."""
    refs = []
    for token, following in zip(tokens, tokens[1:]):
        if (
            token.token_type == TokenType.PARAMETER
            and following.start == token.end + 1
            and following.token_type in (TokenType.NUMBER, TokenType.VAR)
            and not any(s.start <= token.start < s.stop for s in sites)
        ):
            refs.append(ParameterRef(token.start, following.end + 1, following.text))
    return refs


def positional_placeholders_outside(tokens: list[Token], sites: list[CallSite]) -> list[int]:
    """Ordinals (0-based, over the whole text) of the ``?`` placeholders outside every call."""
    ordinals = []
    ordinal = 0
    for token in tokens:
        if token.token_type == TokenType.PLACEHOLDER:
            if not any(s.start <= token.start < s.stop for s in sites):
                ordinals.append(ordinal)
            ordinal += 1
    return ordinals
