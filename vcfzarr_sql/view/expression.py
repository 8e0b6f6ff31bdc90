"""bcftools ``-i``/``-e`` filter expressions -> a SQL condition over the ``vcf_zarr`` columns.

The supported subset: comparisons (``= == != < <= > >=``) of ``QUAL``, ``POS``, ``CHROM``,
``ID``, ``REF``, ``INFO/TAG`` (or a bare ``TAG``) and ``FORMAT/TAG`` (``FMT/TAG``) with
numbers or quoted strings (a Flag: ``INFO/DB=1``); ``FILTER="PASS"`` (``=``/``!=`` an exact set such as ``"q10;s50"``,
``~``/``!~`` containment, ``"."`` for no filter); ``&&``, ``||``
(``&``/``|`` too), ``!( )`` and parentheses. As in bcftools, a comparison with a vector
(``INFO/AF``, ``FORMAT/DP``) holds when any value satisfies it, and a missing value satisfies
nothing. Anything else is a :class:`~vcfzarr_sql.errors.NotSupportedError` naming it.

>>> fields = {"DP": ("INFO", "1", "Integer"), "AF": ("INFO", "A", "Float")}
>>> to_sql('QUAL>=30 && (INFO/DP>10 || AF<0.1) && FILTER="PASS"', fields)
"(coalesce(qual >= 30, false) AND (coalesce(info_DP > 10, false) OR coalesce(list_min(info_AF) < 0.1, false)) AND coalesce(filters = ['PASS'], false))"
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from vcfzarr_sql.errors import NotSupportedError, QueryError
from vcfzarr_sql.store.vcz import VczStore

#: name -> (category "INFO"/"FORMAT", Number, Type), or a list of them (INFO and FORMAT
#: fields of one name)
Fields = Mapping[str, tuple[str, str, str] | list[tuple[str, str, str]]]

_TOKEN = re.compile(
    r"\s*(?:(?P<string>\"[^\"]*\"|'[^']*')|(?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|!~|[=<>~!&|()])|(?P<name>[A-Za-z_][\w/.]*(?:\[[^\]]*\])?))"
)
_SQL_OP = {"=": "=", "==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_SITE = {"QUAL": "qual", "POS": "pos", "CHROM": "contig", "ID": "id", "REF": "ref"}


def _tokens(text: str) -> list[tuple[str, str]]:
    out, position = [], 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise QueryError(f"cannot read the filter expression {text!r} at character {position + 1}")
        kind = match.lastgroup or ""  # (every alternative is a named group)
        out.append((kind, match.group(kind)))
        position = match.end()
    return out


def _literal(kind: str, text: str) -> str:
    if kind == "number":
        return text
    return "'" + text[1:-1].replace("'", "''") + "'"


class _Parser:
    def __init__(self, text: str, fields: Fields):
        self.text = text
        self.fields = fields
        self.tokens = _tokens(text)
        self.k = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.k] if self.k < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise QueryError(f"filter expression {self.text!r} ends too early")
        self.k += 1
        return token

    def expect(self, value: str) -> None:
        if self.take() != ("op", value):
            raise QueryError(f"filter expression {self.text!r}: expected {value!r}")

    def parse(self) -> str:
        sql = self.disjunction()
        following = self.peek()
        if following is not None:
            raise QueryError(f"filter expression {self.text!r}: unexpected {following[1]!r}")
        return sql

    def disjunction(self) -> str:
        parts = [self.conjunction()]
        while self.peek() in (("op", "||"), ("op", "|")):
            self.take()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"

    def conjunction(self) -> str:
        parts = [self.unary()]
        while self.peek() in (("op", "&&"), ("op", "&")):
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    def unary(self) -> str:
        if self.peek() == ("op", "!"):
            self.take()
            self.expect("(")
            inner = self.disjunction()
            self.expect(")")
            return f"(NOT {inner})"
        if self.peek() == ("op", "("):
            self.take()
            inner = self.disjunction()
            self.expect(")")
            return inner
        return self.comparison()

    def comparison(self) -> str:
        kind, left = self.take()
        if kind != "name":
            raise NotSupportedError(f"filter expression {self.text!r}: a comparison must start with a field name, got {left!r}")
        following = self.peek()
        if following is None or following[0] != "op" or following[1] not in (*_SQL_OP, "~", "!~"):
            raise NotSupportedError(
                f"filter expression {self.text!r}: {left} alone is not supported (write {left}=1 for a Flag)"
            )
        _, op = self.take()
        value_kind, value = self.take()
        if value_kind not in ("number", "string"):
            raise NotSupportedError(f"filter expression {self.text!r}: only numbers and quoted strings can be compared with, got {value!r}")
        return f"coalesce({self.compare(left, op, value_kind, value)}, false)"

    def field(self, name: str) -> tuple[str, str, str]:
        prefix, _, tag = name.rpartition("/")
        category = {"INFO": "INFO", "FMT": "FORMAT", "FORMAT": "FORMAT", "": None}.get(prefix.upper(), "?")
        if "[" in name or category == "?":
            raise NotSupportedError(f"filter expression {self.text!r}: {name} is not supported")
        found = self.fields.get(tag)
        candidates = [found] if found and not isinstance(found, list) else (found or [])
        for candidate in candidates:
            if category is None or candidate[0] == category:
                return candidate
        raise QueryError(f"filter expression {self.text!r}: no field {name} in the store")

    def compare(self, name: str, op: str, value_kind: str, value: str) -> str:
        upper = name.upper()
        if upper == "FILTER":
            return self.filter_test(op, value_kind, value)
        if upper in ("TYPE", "GT", "N_ALT", "N_SAMPLES", "AC", "AF") and upper not in self.fields:
            raise NotSupportedError(f"filter expression {self.text!r}: {name} is not supported (not a stored field)")
        if op in ("~", "!~"):
            raise NotSupportedError(f"filter expression {self.text!r}: regular expressions (~) are supported for FILTER only")
        literal = _literal(value_kind, value)
        if upper in _SITE:
            if upper == "ID" and value in ('"."', "'.'"):
                return "id IS NULL" if op in ("=", "==") else "id IS NOT NULL"
            return f"{_SITE[upper]} {_SQL_OP[op]} {literal}"
        category, number, vcf_type = self.field(name)
        tag = name.split("/")[-1]
        if category == "INFO":
            column = f"info_{tag}"
            if number == "1" or vcf_type == "Flag":
                return f"{column} {_SQL_OP[op]} {literal}"
            return _any(column, op, literal)
        if number != "1" or tag == "GT":
            raise NotSupportedError(f"filter expression {self.text!r}: FORMAT/{tag} (Number={number}) comparisons are not supported")
        return _any(f"fmt_{tag}", op, literal)

    def filter_test(self, op: str, value_kind: str, value: str) -> str:
        if value_kind != "string":
            raise QueryError(f"filter expression {self.text!r}: FILTER is compared with a quoted string")
        names = [n for n in value[1:-1].split(";") if n]
        if names == ["."]:
            test = "filters IS NULL"
        elif op in ("~", "!~"):
            listed = ", ".join(_literal("string", f"'{n}'") for n in names)
            test = f"list_has_all(coalesce(filters, []), [{listed}])"
        elif op in ("=", "==", "!="):
            listed = ", ".join(_literal("string", f"'{n}'") for n in sorted(names))
            test = f"list_sort(filters) = [{listed}]" if len(names) > 1 else f"filters = [{listed}]"
        else:
            raise NotSupportedError(f"filter expression {self.text!r}: FILTER {op} is not supported")
        return f"NOT coalesce({test}, false)" if op in ("!=", "!~") else test


def _any(column: str, op: str, literal: str) -> str:
    """Some non-missing value of list ``column`` satisfies ``op literal``."""
    if op in (">", ">="):
        return f"list_max({column}) {op} {literal}"
    if op in ("<", "<="):
        return f"list_min({column}) {op} {literal}"
    if op in ("=", "=="):
        return f"list_contains({column}, {literal})"
    return f"(list_min({column}) <> {literal} OR list_max({column}) <> {literal})"


def to_sql(expression: str, fields: Fields) -> str:
    """The SQL condition of a bcftools filter expression (see the module docstring)."""
    return _Parser(expression, fields).parse()


def store_fields(store: VczStore) -> dict[str, list[tuple[str, str, str]]]:
    """Field name -> its INFO and/or FORMAT definitions, as :func:`to_sql` wants them."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for category in (store.info_fields, store.format_fields):
        for name, field in category.items():
            out.setdefault(name, []).append((field.category, field.number, field.vcf_type))
    return out
