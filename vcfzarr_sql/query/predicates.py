"""Bound predicates: a row filter as typed comparisons over a table's columns, which the planner
prunes chunks with (:mod:`.prune`) and plans from (:mod:`.plan`).

No Arrow here: :mod:`.expressions` binds a pushed ``pc.Expression`` to these, and a plan made
from a region set (:func:`.plan.plan_regions`: ``view -r``, the genotype matrix) uses them
without pyarrow loaded.

>>> Compare("pos", FLIPPED["<"], 9)
Compare(column='pos', op='>', value=9)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vcfzarr_sql.query.region_set import RegionSet

#: ``literal op column`` is ``column FLIPPED[op] literal``.
FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class And:
    operands: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    operand: Predicate


@dataclass(frozen=True)
class IfElse:
    """Arrow's ``if_else(condition, then, otherwise)`` (null condition -> null)."""

    condition: Predicate
    then: Predicate
    otherwise: Predicate


@dataclass(frozen=True)
class Compare:
    """``column op value``; ``value`` is a Python value (None for a null literal)."""

    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class In:
    """``column IN values``; ``null_inconclusive``: a null in the set makes a miss null."""

    column: str
    values: frozenset
    null_inconclusive: bool


@dataclass(frozen=True)
class IsNull:
    column: str


@dataclass(frozen=True)
class IsValid:
    column: str


@dataclass(frozen=True)
class Constant:
    """A boolean literal (None: null)."""

    value: bool | None


@dataclass(frozen=True)
class Regions:
    """Records overlapping a set of regions (:mod:`~vcfzarr_sql.query.region_set`)."""

    regions: RegionSet


@dataclass(frozen=True)
class Opaque:
    """A predicate the planner does not reason about (it is still evaluated on every row)."""

    function: str


Predicate = And | Or | Not | IfElse | Compare | In | IsNull | IsValid | Constant | Regions | Opaque
