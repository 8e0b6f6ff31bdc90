"""bcftools ``-i``/``-e`` filter expressions -> a tree that :mod:`.rows` evaluates.

The supported subset: comparisons (``= == != < <= > >= ~ !~``) of a value with a number or a
quoted string. Values: ``QUAL``, ``POS``, ``CHROM``, ``ID``, ``REF``, ``ALT``, ``FILTER``,
``INFO/TAG`` (or a bare ``TAG``), ``FORMAT/TAG`` (``FMT/TAG``), ``TAG[i]`` (one element of an
INFO vector), ``GT`` (with ``"het"``, ``"hom"``, ``"alt"``, ``"ref"``, ``"mis"``, ``"hap"``),
``TYPE`` (``"snp"``, ``"mnp"``, ``"indel"``, ``"ref"``, ``"other"``, ``"bnd"``, ``"overlap"``), ``ILEN``, ``N_ALT``,
``N_SAMPLES``, ``AC``, ``AN``, ``AF``, ``MAF``, ``MAC`` (computed from GT when the INFO tag
is absent), ``N_MISSING``, ``F_MISSING``, and the functions ``N_PASS(expr)``,
``F_PASS(expr)``, ``MIN/MAX/AVG/SUM(value)`` (over every value of the record) and
``sMIN/sMAX/sAVG/sSUM(FMT/TAG)`` (per sample, Number=1 fields). They combine with ``&&`` and ``||`` (over the
record) and ``&`` and ``|`` (within one sample, for FORMAT values), ``!( )`` and parentheses.

Anything else is a :class:`~vcfzarr_sql.errors.NotSupportedError` naming the construct,
raised by :func:`parse` before anything is read or written.

>>> fields = {"DP": [("INFO", "1", "Integer")], "AF": [("INFO", "A", "Float")]}
>>> parse('QUAL>=30 && (INFO/DP>10 || AF<0.1)', fields)
Logic(op='&&', left=Compare(value=Site(name='QUAL', index=None), op='>=', literal=30.0), right=Logic(op='||', left=Compare(value=Info(tag='DP', number='1', vcf_type='Integer', index=None), op='>', literal=10.0), right=Compare(value=Info(tag='AF', number='A', vcf_type='Float', index=None), op='<', literal=0.1)))
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from vcfzarr_sql.errors import NotSupportedError, QueryError
from vcfzarr_sql.store.vcz import VczStore

#: name -> its INFO and/or FORMAT definitions (category "INFO"/"FORMAT", Number, Type)
Fields = Mapping[str, list[tuple[str, str, str]]]

_TOKEN = re.compile(
    r"\s*(?:(?P<string>\"[^\"]*\"|'[^']*')|(?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|!~|[=<>~!&|(),])"
    r"|(?P<name>%?[A-Za-z_][\w/.]*(?:\[[^\]]*\])?))"
)
COMPARISONS = ("=", "==", "!=", "<", "<=", ">", ">=", "~", "!~")
#: values of the record itself (not INFO or FORMAT fields)
SITE = ("QUAL", "POS", "CHROM", "ID", "REF", "ALT", "FILTER", "TYPE", "ILEN", "N_ALT",
        "N_SAMPLES", "N_MISSING", "F_MISSING")
#: allele counts bcftools computes from GT when the INFO tag is absent
COUNTS = ("AC", "AN", "AF", "MAF", "MAC")
GT_CLASSES = ("het", "hom", "alt", "ref", "mis", "hap")
TYPES = ("snp", "mnp", "indel", "ref", "other", "bnd", "overlap")
_FUNCTIONS = ("N_PASS", "F_PASS", "MIN", "MAX", "AVG", "MEAN", "SUM", "sMIN", "sMAX", "sAVG",
              "sMEAN", "sSUM")


@dataclass(frozen=True)
class Site:
    """A value of the record: one of :data:`SITE`, or a count of :data:`COUNTS`."""

    name: str
    index: int | None = None


@dataclass(frozen=True)
class Info:
    tag: str
    number: str
    vcf_type: str
    index: int | None = None


@dataclass(frozen=True)
class Format:
    tag: str
    number: str
    vcf_type: str


@dataclass(frozen=True)
class Reduce:
    """``MIN/MAX/AVG/SUM`` of every value (``per_sample``: ``sMIN``... of each sample's)."""

    how: str
    value: Info | Format
    per_sample: bool


@dataclass(frozen=True)
class Passing:
    """``N_PASS(expr)`` (``fraction``: ``F_PASS``): samples for which ``expr`` holds."""

    condition: Node
    fraction: bool


Value = Site | Info | Format | Reduce | Passing


@dataclass(frozen=True)
class Compare:
    value: Value
    op: str
    literal: float | str


@dataclass(frozen=True)
class Logic:
    """``&&``/``||`` (over the record) or ``&``/``|`` (within a sample)."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Not:
    inner: Node


Node = Compare | Logic | Not


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


class _Parser:
    def __init__(self, text: str, fields: Fields):
        self.text = text
        self.fields = fields
        self.tokens = _tokens(text)
        self.k = 0

    def refuse(self, what: str) -> NotSupportedError:
        return NotSupportedError(f"filter expression {self.text!r}: {what}")

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

    def parse(self) -> Node:
        node = self.logic(0)
        following = self.peek()
        if following is not None:
            raise QueryError(f"filter expression {self.text!r}: unexpected {following[1]!r}")
        return node

    #: operator precedence, loosest first (as bcftools: || then && then | then &)
    _LEVELS = ("||", "&&", "|", "&")

    def logic(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        op = self._LEVELS[level]
        node = self.logic(level + 1)
        while self.peek() == ("op", op):
            self.take()
            node = Logic(op, node, self.logic(level + 1))
        return node

    def unary(self) -> Node:
        if self.peek() == ("op", "!"):
            self.take()
            self.expect("(")
            inner = self.logic(0)
            self.expect(")")
            return Not(inner)
        if self.peek() == ("op", "("):
            self.take()
            inner = self.logic(0)
            self.expect(")")
            return inner
        return self.comparison()

    def comparison(self) -> Node:
        value = self.value()
        following = self.peek()
        if following is None or following[0] != "op" or following[1] not in COMPARISONS:
            name = getattr(value, "tag", getattr(value, "name", "a value"))
            raise self.refuse(f"{name} alone is not supported (write {name}=1 for a Flag)")
        _, op = self.take()
        kind, text = self.take()
        if kind == "name":
            raise self.refuse(f"comparing two values ({text}) is not supported")
        if kind not in ("number", "string"):
            raise self.refuse(f"only numbers and quoted strings can be compared with, got {text!r}")
        literal: float | str = float(text) if kind == "number" else text[1:-1]
        return self.checked(Compare(value, "=" if op == "==" else op, literal))

    def value(self) -> Value:
        kind, name = self.take()
        if kind != "name":
            raise self.refuse(f"a comparison must start with a value, got {name!r}")
        if name.startswith("%"):
            raise self.refuse(f"{name} is not supported (bcftools' -i/-e reject it too; write {name[1:]})")
        if self.peek() == ("op", "("):
            return self.function(name)
        base, index = _index(name, self)
        upper = base.upper()
        if "/" not in base and upper in SITE:
            if index is not None:
                raise self.refuse(f"{name}: an index is not supported on {upper}")
            return Site(upper)
        if "/" not in base and upper in COUNTS and not self.declared(upper, "INFO"):
            if index is not None:  # (bcftools 1.16 indexes ALTs, 1.24 ignores the index)
                raise self.refuse(f"{name}: an index on {upper} computed from GT is not supported")
            return Site(upper)
        gt = "/" not in base and upper == "GT" or base.upper() in ("FMT/GT", "FORMAT/GT")
        category, number, vcf_type = ("FORMAT", "1", "String") if gt else self.field(base)
        tag = "GT" if gt else base.rpartition("/")[2]
        if category == "INFO":
            return Info(tag, number, vcf_type, index)
        if index is not None:  # (GT[0] too: not every sample's GT)
            raise self.refuse(f"{name}: FORMAT indexes ([sample:i]) are not supported")
        return Format(tag, number, vcf_type)

    def function(self, name: str) -> Value:
        upper = name.upper()
        if name not in _FUNCTIONS:
            raise self.refuse(f"the function {name}() is not supported")
        self.expect("(")
        if upper in ("N_PASS", "F_PASS"):
            condition = self.logic(0)
            self.expect(")")
            return Passing(condition, upper == "F_PASS")
        argument = self.value()
        self.expect(")")
        if not isinstance(argument, (Info, Format)) or argument.tag == "GT" or argument.vcf_type not in ("Integer", "Float"):
            raise self.refuse(f"{name}() takes a numeric INFO or FORMAT field")
        per_sample = name[0] == "s"
        if per_sample and (not isinstance(argument, Format) or argument.number != "1"):
            raise self.refuse(f"{name}() takes a FORMAT field of Number=1")
        how = {"MEAN": "AVG"}.get(upper[per_sample:], upper[per_sample:])
        return Reduce(how, argument, per_sample)

    def declared(self, tag: str, category: str) -> bool:
        return any(c == category for c, _, _ in self.fields.get(tag, ()))

    def field(self, name: str) -> tuple[str, str, str]:
        prefix, _, tag = name.rpartition("/")
        category = {"INFO": "INFO", "FMT": "FORMAT", "FORMAT": "FORMAT", "": None}.get(prefix.upper(), "?")
        if category == "?":
            raise self.refuse(f"{name} is not supported")
        for candidate in self.fields.get(tag, ()):
            if category is None or candidate[0] == category:
                return candidate
        raise QueryError(f"filter expression {self.text!r}: no field {name} in the store")

    def checked(self, node: Compare) -> Compare:
        """``node``, refused when bcftools would compare it otherwise than :mod:`.rows` does."""
        value, op, literal = node.value, node.op, node.literal
        name = getattr(value, "tag", getattr(value, "name", ""))
        text = isinstance(literal, str)
        if isinstance(value, Format) and value.tag == "GT":
            if not text or literal not in GT_CLASSES or op not in ("=", "!="):
                raise self.refuse(f'GT is compared (= or !=) with one of {", ".join(GT_CLASSES)} only, got GT{op}{literal!r}')
        elif isinstance(value, Site) and value.name == "TYPE":
            if not text or literal not in TYPES or op not in ("=", "!=", "~", "!~"):
                raise self.refuse(f"TYPE is compared with one of {', '.join(TYPES)}, got TYPE{op}{literal!r}")
        elif isinstance(value, Site) and value.name == "FILTER":
            if not text or op not in ("=", "!=", "~", "!~"):
                raise QueryError(f"filter expression {self.text!r}: FILTER is compared (=, !=, ~, !~) with a quoted string")
        elif op in ("~", "!~"):
            if not _is_text(value) or not text:
                raise self.refuse(f"regular expressions (~) apply to strings, not {name}")
        elif text and literal != "." and not _is_text(value):
            raise QueryError(f"filter expression {self.text!r}: {name} is a number, compared with {literal!r}")
        elif not text and _is_text(value):
            raise QueryError(f"filter expression {self.text!r}: {name} is a string, compared with a number")
        elif text and op not in ("=", "!=") and literal != ".":
            raise self.refuse(f"{name}{op}{literal!r}: strings are compared with = and != only")
        return node


def _is_text(value: Value) -> bool:
    if isinstance(value, Site):
        return value.name in ("CHROM", "ID", "REF", "ALT", "FILTER", "TYPE")
    return isinstance(value, (Info, Format)) and value.vcf_type in ("String", "Character")


def _index(name: str, parser: _Parser) -> tuple[str, int | None]:
    base, bracket, rest = name.partition("[")
    if not bracket:
        return name, None
    inner = rest.rstrip("]")
    if not inner.isdigit():
        raise parser.refuse(f"{name}: only a single 0-based index ([2]) is supported")
    return base, int(inner)


def parse(expression: str, fields: Fields) -> Node:
    """The tree of a bcftools filter expression (see the module docstring)."""
    return _Parser(expression, fields).parse()


def store_fields(store: VczStore) -> dict[str, list[tuple[str, str, str]]]:
    """Field name -> its INFO and/or FORMAT definitions, as :func:`parse` wants them."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for category in (store.info_fields, store.format_fields):
        for name, field in category.items():
            out.setdefault(name, []).append((field.category, field.number, field.vcf_type))
    return out
