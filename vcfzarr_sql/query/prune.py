"""Pruning: which zones of a store might hold rows that satisfy a bound predicate.

A *zone* is a set of rows the planner knows bounds of without reading them: a region index
row (one contig, a POS range, a maximum END) crossed with a group of samples. The visitor
evaluates a predicate over all zones at once, in Kleene's three-valued logic, as the set of
truth values the rows of each zone could take: ``can_true``, ``can_false``, ``can_null``
(boolean arrays). A zone "might match" when ``can_true``; it "must match" (no row filter
needed) when neither ``can_false`` nor ``can_null``. Predicates on other columns, and calls
the binder did not recognise, could be anything.

Columns known here (``contig``, ``pos``, ``end``, ``sample_id``) are never null.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np

from vcfzarr_sql.query import predicates as ex

_OPERATORS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Truth:
    """The truth values a predicate may take in each zone (broadcastable boolean arrays)."""

    can_true: np.ndarray
    can_false: np.ndarray
    can_null: np.ndarray

    @staticmethod
    def exactly(value: np.ndarray) -> Truth:
        value = np.asarray(value, dtype=bool)
        return Truth(value, ~value, np.zeros_like(value))

    @property
    def must_be_true(self) -> np.ndarray:
        return self.can_true & ~self.can_false & ~self.can_null


_ANYTHING = Truth(np.ones((1, 1), bool), np.ones((1, 1), bool), np.ones((1, 1), bool))
_NULL = Truth(np.zeros((1, 1), bool), np.zeros((1, 1), bool), np.ones((1, 1), bool))


@dataclass(frozen=True)
class Zones:
    """Bounds of the rows of a grid of zones: variant zones (axis 0) x sample zones (axis 1).

    Variant zones are region index rows (``contig`` index, POS in ``[pos_min, pos_max]``, END
    at most ``end_max``), or a single unknown zone when ``contig`` is None. Sample zones are
    the sample names of each group (``samples``), or a single unknown zone when None.
    """

    contigs: Sequence[str]
    contig: np.ndarray | None = None
    pos_min: np.ndarray | None = None
    pos_max: np.ndarray | None = None
    end_max: np.ndarray | None = None
    samples: Sequence[np.ndarray] | None = None


def _negation(t: Truth) -> Truth:
    return Truth(t.can_false, t.can_true, t.can_null)


def _interval(lo: np.ndarray, hi: np.ndarray, op: str, v: Real) -> Truth:
    """Truth of ``x op v`` for x in ``[lo, hi]`` (column vectors)."""
    if op == "==":
        return Truth(((lo <= v) & (v <= hi)), ~((lo == v) & (hi == v)), np.zeros_like(lo, bool))
    if op == "!=":
        return _negation(_interval(lo, hi, "==", v))
    if op in ("<", "<="):
        f = _OPERATORS[op]
        return Truth(f(lo, v), ~f(hi, v), np.zeros_like(lo, bool))
    f = _OPERATORS[op]
    return Truth(f(hi, v), ~f(lo, v), np.zeros_like(lo, bool))


def _conjunction(truths: list[Truth]) -> Truth:
    """Kleene AND: false if any is false, else null if any is null, else true."""
    result = Truth.exactly(np.ones((1, 1), bool))
    for b in truths:
        a = result
        result = Truth(
            a.can_true & b.can_true,
            a.can_false | b.can_false,
            (a.can_null & (b.can_true | b.can_null)) | (b.can_null & a.can_true),
        )
    return result


class _Pruner:
    """The pruning visitor: a bound predicate -> :class:`Truth` over :class:`Zones`."""

    def __init__(self, zones: Zones):
        self.zones = zones

    def _named(self, column: str, holds: Callable[[np.ndarray], np.ndarray]) -> Truth | None:
        """Truth of a predicate on contig names or sample ids; ``holds`` maps an array of names
        to a boolean array."""
        z = self.zones
        if column == "contig" and z.contig is not None:
            per_contig = np.asarray(holds(np.array(list(z.contigs), dtype=object)), bool)
            values = per_contig[z.contig][:, None]
            return Truth(values, ~values, np.zeros_like(values))
        if column == "sample_id" and z.samples is not None:
            sizes = np.array([len(names) for names in z.samples])
            values = np.asarray(holds(np.concatenate(z.samples).astype(object)), bool)
            starts = np.r_[0, np.cumsum(sizes)[:-1]]
            can_true = np.logical_or.reduceat(values, starts)[None, :]
            can_false = np.logical_or.reduceat(~values, starts)[None, :]
            return Truth(can_true, can_false, np.zeros_like(can_true))
        return None

    def _bounds(self, column: str) -> tuple[np.ndarray, np.ndarray] | None:
        z = self.zones
        if z.contig is None or z.pos_min is None or z.pos_max is None or z.end_max is None:
            return None
        if column == "pos":
            return z.pos_min[:, None], z.pos_max[:, None]
        if column == "end":
            lowest = np.full_like(z.end_max, np.iinfo(np.int64).min)
            return lowest[:, None], z.end_max[:, None]
        return None

    def visit(self, p: ex.Predicate) -> Truth:
        return getattr(self, "visit_" + type(p).__name__)(p)

    def visit_And(self, p: ex.And) -> Truth:
        return _conjunction([self.visit(operand) for operand in p.operands])

    def visit_Or(self, p: ex.Or) -> Truth:  # De Morgan holds in Kleene logic
        return _negation(_conjunction([_negation(self.visit(o)) for o in p.operands]))

    def visit_Not(self, p: ex.Not) -> Truth:
        return _negation(self.visit(p.operand))

    def visit_IfElse(self, p: ex.IfElse) -> Truth:
        c, a, b = self.visit(p.condition), self.visit(p.then), self.visit(p.otherwise)
        return Truth(
            (c.can_true & a.can_true) | (c.can_false & b.can_true),
            (c.can_true & a.can_false) | (c.can_false & b.can_false),
            (c.can_true & a.can_null) | (c.can_false & b.can_null) | c.can_null,
        )

    def visit_Compare(self, p: ex.Compare) -> Truth:
        if p.value is None:
            return _NULL
        if isinstance(p.value, str):
            f = _OPERATORS[p.op]
            named = self._named(p.column, lambda names: f(names, p.value))
            return _ANYTHING if named is None else named
        bounds = self._bounds(p.column)
        if bounds is None or not isinstance(p.value, Real) or isinstance(p.value, bool):
            return _ANYTHING
        return _interval(*bounds, p.op, p.value)

    def visit_In(self, p: ex.In) -> Truth:
        if p.null_inconclusive:
            return _ANYTHING
        texts = [v for v in p.values if isinstance(v, str)]  # names are strings: 1 is not "1"
        named = self._named(p.column, lambda names: np.isin(names, np.array(texts, dtype=object)))
        if named is not None:
            return named
        numbers = [v for v in p.values if isinstance(v, Real) and not isinstance(v, bool)]
        if self._bounds(p.column) is None or len(numbers) != len(p.values - {None}):
            return _ANYTHING
        return self.visit_Or(ex.Or(tuple(ex.Compare(p.column, "==", v) for v in numbers)))

    def _never_null(self, column: str) -> bool:
        return self._bounds(column) is not None or self._named(column, lambda names: np.ones(len(names), bool)) is not None

    def visit_IsNull(self, p: ex.IsNull) -> Truth:
        return Truth.exactly(np.zeros((1, 1), bool)) if self._never_null(p.column) else _ANYTHING

    def visit_IsValid(self, p: ex.IsValid) -> Truth:
        return Truth.exactly(np.ones((1, 1), bool)) if self._never_null(p.column) else _ANYTHING

    def visit_Constant(self, p: ex.Constant) -> Truth:
        return _NULL if p.value is None else Truth.exactly(np.full((1, 1), p.value))

    def visit_Regions(self, p: ex.Regions) -> Truth:
        z = self.zones
        if z.contig is None or z.pos_min is None or z.pos_max is None or z.end_max is None:
            return _ANYTHING
        might, must = p.regions.zones(z.contigs, z.contig, z.pos_min, z.pos_max, z.end_max)
        return Truth(might[:, None], ~must[:, None], np.zeros((len(might), 1), bool))

    def visit_Opaque(self, p: ex.Opaque) -> Truth:
        return _ANYTHING


def prune_compact(predicate: ex.Predicate, zones: Zones) -> Truth:
    """:func:`prune` without broadcasting: each array has 1 or all variant zones (axis 0) and
    1 or all sample zones (axis 1), so a predicate on variants alone costs one value per
    variant zone however many sample zones there are."""
    t = _Pruner(zones).visit(predicate)
    rows = 1 if zones.contig is None else len(zones.contig)
    columns = 1 if zones.samples is None else len(zones.samples)

    def fitted(a: np.ndarray) -> np.ndarray:
        return broadcast(a, (rows if a.shape[0] > 1 else 1, columns if a.shape[1] > 1 else 1))

    return Truth(*(fitted(a) for a in (t.can_true, t.can_false, t.can_null)))


def broadcast(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` broadcast to ``shape``, to be read only: ``a`` itself when it has that shape
    (``np.broadcast_to`` costs ~5 us, which the plan of a one-region query notices)."""
    return a if a.shape == shape else np.broadcast_to(a, shape)


def prune(predicate: ex.Predicate, zones: Zones) -> Truth:
    """The truth values ``predicate`` may take in each zone, shape (variant zones, sample zones).

    >>> zones = Zones(["1", "2"], contig=np.array([0, 1]), pos_min=np.array([10, 10]),
    ...               pos_max=np.array([20, 20]), end_max=np.array([25, 20]))
    >>> overlap = ex.And((ex.Compare("contig", "==", "1"), ex.Compare("end", ">=", 22)))
    >>> prune(overlap, zones).can_true.ravel().tolist()
    [True, False]
    """
    t = _Pruner(zones).visit(predicate)
    rows = 1 if zones.contig is None else len(zones.contig)
    columns = 1 if zones.samples is None else len(zones.samples)
    shape = (rows, columns)
    return Truth(*(np.broadcast_to(a, shape) for a in (t.can_true, t.can_false, t.can_null)))
