"""Column labels as PostgreSQL gives them: a select-list item without an alias is named by
PostgreSQL's ``FigureColname`` (``src/backend/parser/parse_target.c``), not by DuckDB's text
of the expression.

- a column reference: the column's name (``t.pos`` -> ``pos``); a field or subscript of one:
  the field's name, else the column's (``x[1]`` -> ``x``);
- a function call: the function's name as written (``lower(a)`` -> ``lower``, ``count(*)``
  -> ``count``), windowed or filtered alike; ``coalesce``, ``nullif``, ``greatest``, ``least``,
  ``ARRAY[...]``, ``ROW(...)``, ``EXISTS (...)``, ``current_date`` and the like likewise; the
  grammar's own forms as PostgreSQL rewrites them (``trim(x)`` -> ``btrim``, ``x AT TIME ZONE
  z`` -> ``timezone``, ``position(a IN b)`` -> ``position``);
- a cast: the name of what is cast when it has one (``x::int`` -> ``x``), else the type's name
  as PostgreSQL's grammar spells it (``1::int`` -> ``int4``, ``CAST(1 AS bigint)`` -> ``int8``,
  ``'a'::text`` -> ``text``);
- ``CASE``: the ``ELSE`` value's name when it has a good one, else ``case``;
- a scalar subquery: its one column's label;
- anything else (operators, literals, ``x IS NULL``, ``a IN (...)``): ``?column?``.

A ``*`` over a subquery or a WITH query gives that query's labels; the columns a ``*`` over a
table (or ``COLUMNS(...)``, ``* EXCLUDE``) stands for keep DuckDB's names, aggregates renamed
(``count_star()`` -> ``count``), as does every column of a text sqlglot does not read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

import sqlglot.errors
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.parser import Parser
from sqlglot.tokens import Token, TokenType

from vcfzarr_sql.engine import sql_text

#: PostgreSQL's aggregate functions: a call without an alias is labelled by the function's name.
AGGREGATES = frozenset((
    "count", "sum", "avg", "min", "max", "stddev", "stddev_pop", "stddev_samp", "variance",
    "var_pop", "var_samp", "bool_and", "bool_or", "every", "string_agg", "array_agg", "bit_and",
    "bit_or", "bit_xor", "corr", "covar_pop", "covar_samp", "regr_slope", "regr_intercept",
    "regr_count", "regr_r2", "regr_avgx", "regr_avgy", "regr_sxx", "regr_syy", "regr_sxy",
    "mode", "percentile_cont", "percentile_disc", "json_agg", "jsonb_agg", "json_object_agg",
))
_CALL = re.compile(r"([a-z_][a-z0-9_]*)\(.*\)", re.IGNORECASE | re.DOTALL)
#: A DuckDB label that is PostgreSQL's too when it names a column: nothing to parse.
_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*")

#: Type names PostgreSQL's grammar spells otherwise (gram.y's SystemTypeName); any other type
#: is labelled by its last name, as written.
_TYPE_NAMES = {
    "int": "int4", "integer": "int4", "smallint": "int2", "bigint": "int8", "real": "float4",
    "float": "float8", "double precision": "float8", "decimal": "numeric", "dec": "numeric",
    "boolean": "bool", "char": "bpchar", "character": "bpchar", "nchar": "bpchar",
    "character varying": "varchar", "char varying": "varchar", "bit varying": "varbit",
}
_WITH_TIME_ZONE = {"timestamp": "timestamptz", "time": "timetz"}
#: Nodes sqlglot makes of PostgreSQL's special forms, named as PostgreSQL names them.
_FORMS: dict[type[exp.Expression], str] = {
    exp.StrPosition: "position", exp.AtTimeZone: "timezone", exp.Exists: "exists",
    exp.Array: "array", exp.Coalesce: "coalesce", exp.Nullif: "nullif",
}
#: sqlglot nodes that are functions to it but operators to PostgreSQL (``a AND b``).
_OPERATORS = (exp.Connector, exp.Binary, exp.Unary, exp.Predicate)
_TRIMS = {"LEADING": "ltrim", "TRAILING": "rtrim"}


def _aggregate_label(name: str) -> str | None:
    """PostgreSQL's label for a column DuckDB labels ``name``, if it is an aggregate call."""
    call = _CALL.fullmatch(name)
    function = call.group(1).lower() if call else ""
    return "count" if function == "count_star" else function if function in AGGREGATES else None


@cache
def _parser_class() -> type:
    """DuckDB's parser, noting the name each function call was written with (sqlglot reads
    ``string_agg`` as ``GroupConcat``) and where each type's text starts (sqlglot reads
    ``varchar``, ``text`` and ``string`` as one type; PostgreSQL labels them apart)."""

    base: type[Parser] = DuckDB.Parser

    class Noting(base):  # type: ignore[misc,valid-type]
        def _parse_function_call(self, *args: object, **kwargs: object) -> exp.Expression | None:
            first = self._curr
            node = super()._parse_function_call(*args, **kwargs)
            if isinstance(node, exp.Expression) and first is not None:
                node.meta.setdefault("called_as", first.text if first.token_type == TokenType.IDENTIFIER
                                     else first.text.lower())
            return node

        def _parse_types(self, *args: object, **kwargs: object) -> exp.Expression | None:
            first = self._curr
            node = super()._parse_types(*args, **kwargs)
            if isinstance(node, exp.DataType) and first is not None:
                node.meta.setdefault("written_at", first.start)
            return node

    return Noting


class _Reader:
    """``FigureColname`` over one parsed text: each rule returns (strength, name), strength 2
    for a good name, 1 for a second-best one (a type's, ``case``), 0 for none."""

    def __init__(self, sql: str, tokens: list[Token]):
        self.sql = sql
        self.tokens = tokens
        self.at = {token.start: index for index, token in enumerate(tokens)}

    def type_name(self, to: exp.Expression) -> str:
        """PostgreSQL's label of a cast to ``to``: the type's last name, as its grammar spells it."""
        index = self.at.get(to.meta.get("written_at", -1))
        if index is None:  # not noted: sqlglot's name of it
            return to.sql("duckdb").split("(")[0].split("[")[0].lower()
        tokens = self.tokens[index:]
        while len(tokens) > 2 and tokens[1].token_type == TokenType.DOT:
            tokens = tokens[2:]
        first = tokens[0]
        if first.token_type == TokenType.IDENTIFIER:  # "quoted"
            return first.text
        word = " ".join(first.text.lower().split())
        after = [token.text.lower() for token in tokens[1:4]]
        if word in _WITH_TIME_ZONE and after == ["with", "time", "zone"]:
            return _WITH_TIME_ZONE[word]
        if word == "float" and len(after) == 3 and after[0] == "(" and after[1].isdigit():
            return "float4" if int(after[1]) <= 24 else "float8"
        return _TYPE_NAMES.get(word, word)

    def figure(self, node: exp.Expression | None) -> tuple[int, str | None]:
        """PostgreSQL's ``FigureColnameInternal`` of ``node``."""
        if node is None:
            return 0, None
        if isinstance(node, exp.Column):
            return (0, None) if isinstance(node.this, exp.Star) else (2, _identifier(node.this))
        if isinstance(node, exp.Dot):  # schema.function(...) or (record).field
            last = node.expression
            return (2, _identifier(last)) if isinstance(last, exp.Identifier) else self.figure(last)
        if isinstance(node, (exp.Paren, exp.Bracket, exp.Collate, exp.Window, exp.Filter,
                             exp.WithinGroup)):
            return self.figure(node.this)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            strength, name = self.figure(node.this)
            return (strength, name) if strength > 1 else (1, self.type_name(node.to))
        if isinstance(node, exp.Case):
            strength, name = self.figure(node.args.get("default"))
            return (strength, name) if strength > 1 else (1, "case")
        if isinstance(node, exp.Subquery):
            select = _first_select(node)
            items = select.expressions if select is not None else []
            if items and not isinstance(items[0], exp.Star):
                return 2, self.label(items[0])
            return 0, None
        if isinstance(node, exp.Trim):
            return 2, _TRIMS.get(str(node.args.get("position") or "").upper(), "btrim")
        if "called_as" in node.meta:
            return 2, node.meta["called_as"]
        if type(node) in _FORMS:
            return 2, _FORMS[type(node)]
        if isinstance(node, exp.Func) and not isinstance(node, _OPERATORS):
            return 2, node.sql_name().lower()
        return 0, None

    def label(self, item: exp.Expression) -> str:
        """The label of one select-list item."""
        if isinstance(item, exp.Alias):
            return item.alias
        return self.figure(item)[1] or "?column?"


def _identifier(node: exp.Expression) -> str:
    """A name as PostgreSQL folds it: lower case unless quoted."""
    name = node.name
    return name if isinstance(node, exp.Identifier) and node.quoted else name.lower()


def _first_select(node: exp.Expression) -> exp.Select | None:
    """The SELECT whose list names a query's columns (the first of a UNION's, inside parentheses)."""
    while isinstance(node, (exp.Subquery, exp.SetOperation)):
        node = node.this
    return node if isinstance(node, exp.Select) else None


def _expands(item: exp.Expression) -> bool:
    """Whether a select-list item stands for a number of columns (``*``, ``t.*``, ``COLUMNS``)."""
    return isinstance(item, (exp.Star, exp.Columns)) or \
        (isinstance(item, exp.Column) and isinstance(item.this, exp.Star))


def _arg(node: exp.Expression, name: str) -> exp.Expression | None:
    """Argument ``name`` of ``node`` (sqlglot 29 renamed ``from`` and ``with`` to ``from_``, ``with_``)."""
    found = node.args.get(name) or node.args.get(f"{name}_")
    return found if isinstance(found, exp.Expression) else None


def _star_source(select: exp.Select, ctes: dict[str, exp.Expression]) -> exp.Expression | None:
    """The query a ``SELECT *`` reads when it reads one subquery or one WITH query."""
    source = _arg(select, "from")
    if source is None or select.args.get("joins"):
        return None
    relation = source.this
    if isinstance(relation, exp.Subquery):
        return relation.this
    if isinstance(relation, exp.Table) and not relation.args.get("db"):
        return ctes.get(relation.name.lower())
    return None


def _labels(query: exp.Expression, reader: _Reader, ctes: dict[str, exp.Expression], depth: int = 0) -> list[str | None]:
    """PostgreSQL's label of each column of ``query``, a None where columns of unknown
    number stand (a ``*`` over a table); a ``*`` over a subquery or a WITH query takes its labels."""
    select = _first_select(query)
    if select is None or depth > 8:
        return [None]
    with_ = _arg(select, "with")
    if with_ is not None:
        ctes = {**ctes, **{cte.alias.lower(): cte.this for cte in with_.expressions
                           if not cte.args["alias"].columns}}
    labels: list[str | None] = []
    for item in select.expressions:
        if not _expands(item):
            labels.append(reader.label(item))
            continue
        plain = isinstance(item, exp.Star) and not any(item.args.values())  # no EXCLUDE, REPLACE...
        source = _star_source(select, ctes) if plain else None
        labels.extend(_labels(source, reader, ctes, depth + 1) if source is not None else [None])
    return labels


def _select_labels(sql: str) -> list[str | None] | None:
    """PostgreSQL's label of each column of the result of ``sql`` (:func:`_labels`), or None
    when it is not a query sqlglot reads."""
    if len(sql) > sql_text.MAX_TOKENIZED:
        return None
    lists = sql_text.long_lists(sql)  # a long literal list would cost the tokenizer seconds
    tokens = sql_text.tokens(lists.text)
    if tokens is None:
        return None
    try:
        trees = _parser_class()(dialect=DuckDB()).parse(tokens, lists.text)
    except sqlglot.errors.SqlglotError:
        return None
    if len(trees) != 1 or trees[0] is None or _first_select(trees[0]) is None:
        return None
    labels = _labels(trees[0], _Reader(lists.text, tokens), {})
    return [("array" if label in lists.lists else label) for label in labels]


def postgres_labels(names: Sequence[str], sql: str) -> list[str]:
    """The labels PostgreSQL gives the columns DuckDB labels ``names`` in the result of
    ``sql`` (see the module's description). When the select list cannot be read, an
    aggregate call DuckDB names is renamed unless the query quotes that name (an alias).

    >>> postgres_labels(["count_star()", "sum(q)", "n", "lower(a)", "CAST(x AS INTEGER)", "(x + 1)"],
    ...                 "SELECT count(*), sum(q), count(*) AS n, lower(a), x::int, x + 1 FROM t")
    ['count', 'sum', 'n', 'lower', 'x', '?column?']
    >>> postgres_labels(["sum(q)", "sum(q)"], 'SELECT sum(q), sum(q) AS "sum(q)" FROM t')
    ['sum', 'sum(q)']
    >>> postgres_labels(["count_star()"], "SELECT * FROM (SELECT count(*) FROM t)")
    ['count']
    >>> postgres_labels(["a", "b", "lower(b)"], "SELECT *, lower(b) FROM t")
    ['a', 'b', 'lower']
    """
    if all(_PLAIN.fullmatch(name) and name not in ("true", "false") for name in names):
        return list(names)  # column names (no expression DuckDB labels so is labelled otherwise)
    labels = _select_labels(sql)
    fallback = [name if f'"{name}"' in sql else _aggregate_label(name) or name for name in names]
    expanding = [index for index, label in enumerate(labels or ()) if label is None]  # a * over a table
    if labels is None or len(expanding) > 1 or len(labels) - len(expanding) > len(names) or \
            (not expanding and len(labels) != len(names)):
        return fallback
    if not expanding:
        return [label or name for label, name in zip(labels, names)]
    star = expanding[0]
    after = len(labels) - star - 1
    width = len(names) - star - after
    return [*(label or "" for label in labels[:star]), *fallback[star:star + width],
            *(label or "" for label in labels[star + 1:])]
