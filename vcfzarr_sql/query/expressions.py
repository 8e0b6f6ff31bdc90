"""Filters pushed down by DuckDB and Polars: ``pyarrow.compute.Expression`` -> a bound predicate tree.

A pushed filter is a ``pc.Expression``. pyarrow offers no public way to walk one, so
:func:`parse` reads Arrow's own serialization of it (the buffer behind ``pickle``): an Arrow
IPC file whose schema metadata lists the tree in prefix order (``call`` name, arguments,
``options``, ``end``; ``field_ref`` name; ``literal`` column index) and whose columns hold
the literals and function options as exact Arrow scalars. Unlike ``str(expr)``, that needs no
guessing about string quoting; unlike Substrait, it works for dictionary columns.

:func:`bind` then turns the generic call tree into typed predicates over the table's columns
(pyiceberg-style); any call it does not know becomes :class:`Opaque`, which pruning treats as
"might be anything". The filter itself is never rewritten: each scan task evaluates the
original ``pc.Expression`` on its batches, so an unknown predicate is never dropped.

>>> import pyarrow as pa, pyarrow.compute as pc
>>> schema = pa.schema([("contig", pa.string()), ("pos", pa.int64())])
>>> bind(parse((pc.field("contig") == "1") & (pc.field("pos") < 9)), schema)
And(operands=(Compare(column='contig', op='==', value='1'), Compare(column='pos', op='<', value=9)))
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query import region_set
from vcfzarr_sql.query.predicates import (  # noqa: F401 (the bound predicates, named here too: ex.And...)
    FLIPPED,
    And,
    Compare,
    Constant,
    IfElse,
    In,
    IsNull,
    IsValid,
    Not,
    Opaque,
    Or,
    Predicate,
    Regions,
)

region_set.register()  # (a filter holding a region set's call is evaluated by Arrow: its function must exist)

# -- the call tree, as Arrow serializes it -------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A reference to a column by name (``nested``: a struct field path joined by ``.``)."""

    name: str
    nested: bool = field(default=False, repr=False)


@dataclass(frozen=True, eq=False)
class Literal:
    """A literal value (an Arrow scalar)."""

    value: pa.Scalar


@dataclass(frozen=True, eq=False)
class Call:
    """A call of an Arrow compute function; ``options`` is its FunctionOptions as a struct scalar."""

    function: str
    arguments: tuple[Column | Literal | Call, ...]
    options: pa.StructScalar | None


Node = Column | Literal | Call


class _ArrowSchema(ctypes.Structure):
    """The Arrow C data interface's ``struct ArrowSchema`` (a stable ABI)."""

    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


# Our own prototype of PyCapsule_GetPointer (setting argtypes on ctypes.pythonapi's is global).
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


def _metadata_items(schema: pa.Schema) -> list[tuple[str, str]]:
    """Schema metadata in order, duplicate keys kept (``Schema.metadata`` is a dict: it loses both).

    Read through the C data interface, whose metadata encoding is: int32 count, then per pair an
    int32 length and bytes for the key and the value.
    """
    capsule = schema.__arrow_c_schema__()
    c_schema = _ArrowSchema.from_address(_capsule_pointer(capsule, b"arrow_schema"))
    if not c_schema.metadata:
        return []
    address = c_schema.metadata

    def int32() -> int:
        nonlocal address
        value = ctypes.c_int32.from_address(address).value
        address += 4
        return value

    def text() -> str:
        nonlocal address
        size = int32()
        value = ctypes.string_at(address, size).decode()
        address += size
        return value

    return [(text(), text()) for _ in range(int32())]


def parse(expression: pc.Expression) -> Node:
    """The call tree of ``expression``.

    >>> parse(pc.field("pos") >= 5)  # doctest: +ELLIPSIS
    Call(function='greater_equal', arguments=(Column(name='pos'), Literal(value=<pyarrow.Int64Scalar: 5>)), options=None)
    """
    _, (buffer,) = expression.__reduce__()
    return _parse_serialized(buffer.to_pybytes())


@functools.lru_cache(maxsize=256)
def _parse_serialized(serialized: bytes) -> Node:
    """The call tree of a serialized expression (trees are immutable, so they are shared: a
    scan parses its filter more than once, and a warm session sees the same filters again)."""
    reader = ipc.open_file(pa.py_buffer(serialized))
    batch = reader.get_batch(0) if reader.num_record_batches else None
    tokens = _metadata_items(reader.schema)
    position = 0

    def scalar(index: str) -> pa.Scalar:
        assert batch is not None  # (an expression with scalars serializes them in a batch)
        return batch.column(int(index))[0]

    def node() -> Node:
        nonlocal position
        key, value = tokens[position]
        position += 1
        if key == "literal":
            return Literal(scalar(value))
        if key == "field_ref":
            return Column(value)
        if key == "nested_field_ref":
            names = [node() for _ in range(int(value))]
            return Column(".".join(n.name for n in names if isinstance(n, Column)), nested=True)
        if key != "call":
            raise ValueError(f"unexpected token {key!r}")
        arguments, options = [], None
        while tokens[position][0] not in ("end", "options"):
            arguments.append(node())
        if tokens[position][0] == "options":
            options = scalar(tokens[position][1])
            position += 1
        position += 1  # "end"
        return Call(value, tuple(arguments), options)

    tree = node()
    if position != len(tokens):
        raise ValueError("trailing tokens in a serialized expression")
    return tree


#: What :func:`parse` raises on a serialization it does not know.
_UNPARSABLE = (ValueError, IndexError, KeyError, pa.ArrowException)


def parse_or_none(expression: pc.Expression) -> Node | None:
    """The call tree of ``expression``, or None when its serialization is not understood."""
    try:
        return parse(expression)
    except _UNPARSABLE:
        return None


def columns_of(expression: pc.Expression | None, schema: pa.Schema) -> frozenset[str]:
    """Names of the columns of ``schema`` that ``expression`` reads (all of them if unparsable).

    >>> schema = pa.schema([("a", pa.int8()), ("b", pa.int8()), ("c", pa.int8())])
    >>> sorted(columns_of((pc.field("a") == 1) | pc.field("b").is_null(), schema))
    ['a', 'b']
    """
    if expression is None:
        return frozenset()
    tree = parse_or_none(expression)
    if tree is None:
        return frozenset(schema.names)

    def walk(node: Node) -> frozenset[str]:
        if isinstance(node, Column):
            return frozenset([node.name])
        if isinstance(node, Call):
            return frozenset().union(*(walk(a) for a in node.arguments))
        return frozenset()

    return walk(tree) & frozenset(schema.names)


# -- binding: the call tree -> bound predicates (:mod:`.predicates`) --------------------------

COMPARISONS = {
    "equal": "==",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}

@functools.lru_cache(maxsize=16)
def regions_of(call: Call) -> region_set.RegionSet | None:
    """The region set of a :data:`~.region_set.FUNCTION` call on ``contig`` (cast to
    string), ``pos``, ``end`` (or ``pos``) and its literal, None for any other call (calls are
    shared by parsed trees, so a scan builds its set once)."""
    if call.function != region_set.FUNCTION or len(call.arguments) != 4:
        return None
    contig, first, last, intervals = call.arguments
    if not (
        isinstance(contig, Call) and contig.function == "cast" and len(contig.arguments) == 1
        and isinstance(contig.arguments[0], Column) and contig.arguments[0].name == "contig"
        and isinstance(first, Column) and first.name == "pos"
        and isinstance(last, Column) and last.name in ("pos", "end")
        and isinstance(intervals, Literal)
    ):
        return None
    try:
        regions = region_set.RegionSet.from_scalar(intervals.value)
    except ValueError:
        return None
    return regions if (last.name == "pos") == regions.targets else None


#: FunctionOptions null_matching_behavior values of is_in (arrow::compute::SetLookupOptions).
_NULL_MATCHING_INCONCLUSIVE = 3


def bind(tree: Node, schema: pa.Schema, argument: str = "filter") -> Predicate:
    """Typed predicates over ``schema``'s columns; QueryError names an unknown column."""
    names = set(schema.names)

    def column(node: Node) -> str | None:
        if not isinstance(node, Column):
            return None
        if node.name not in names:
            raise QueryError(f"{argument}: no column named {node.name!r}")
        return node.name

    def visit(node: Node) -> Predicate:
        if isinstance(node, Literal):
            value = node.value.as_py()
            return Constant(value) if value is None or isinstance(value, bool) else Opaque("literal")
        if isinstance(node, Column):
            column(node)
            return Opaque("column")
        name, args = node.function, node.arguments
        if name in ("and", "and_kleene"):
            return And(tuple(visit(a) for a in args))
        if name in ("or", "or_kleene"):
            return Or(tuple(visit(a) for a in args))
        if name == "invert":
            return Not(visit(args[0]))
        if name == "if_else":
            return IfElse(*(visit(a) for a in args))
        if name in COMPARISONS and len(args) == 2:
            left, right = args
            if isinstance(right, Literal) and (named := column(left)):
                return Compare(named, COMPARISONS[name], right.value.as_py())
            if isinstance(left, Literal) and (named := column(right)):
                return Compare(named, FLIPPED[COMPARISONS[name]], left.value.as_py())
        if name == "is_in" and len(args) == 1 and (named := column(args[0])) and node.options is not None:
            options = node.options
            value_set = options["value_set"].as_py()
            inconclusive = options["null_matching_behavior"].as_py() == _NULL_MATCHING_INCONCLUSIVE
            return In(named, frozenset(value_set), inconclusive and None in value_set)
        if name in ("is_null", "is_valid") and len(args) == 1 and (named := column(args[0])):
            return (IsNull if name == "is_null" else IsValid)(named)
        if name == region_set.FUNCTION and (regions := regions_of(node)) is not None:
            for a in (Column("contig"), *args[1:3]):
                column(a)
            return Regions(regions)
        for a in args:  # still check that every column exists
            if isinstance(a, Column):
                column(a)
            elif isinstance(a, Call):
                visit(a)
        return Opaque(name)

    return visit(tree)


def bind_filter(expression: pc.Expression | None, schema: pa.Schema) -> Predicate:
    """The bound predicate of a pushed filter (None: always true)."""
    if expression is None:
        return Constant(True)
    tree = parse_or_none(expression)
    return Opaque("unparsed") if tree is None else bind(tree, schema)


def conjunction(*expressions: pc.Expression | None) -> pc.Expression | None:
    """The AND of the given filters, skipping None (None when all are None)."""
    present = [e for e in expressions if e is not None]
    if not present:
        return None
    result = present[0]
    for e in present[1:]:
        result = result & e
    return result


def disjunction(*expressions: pc.Expression) -> pc.Expression:
    """The OR of the given filters (at least one)."""
    result = expressions[0]
    for e in expressions[1:]:
        result = result | e
    return result
