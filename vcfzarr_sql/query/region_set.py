"""A set of regions as one predicate: per contig, interval arrays searched with ``np.searchsorted``.

``region := 'a,b,...'``, ``regions_file :=``, ``query -R`` and ``view -r/-R/-t/-T`` select the
records overlapping any of a list of intervals. Written as an OR of one comparison term per
interval, 10,000 intervals cost seconds to prune and to filter each batch; as one
:class:`RegionSet` they cost a binary search per zone and per record.

A record spans ``[first, last]`` (``pos`` and ``end`` for bcftools ``-r``; ``pos`` and
``pos`` for ``-t``) and matches an interval ``[start, end]`` when ``first <= end`` and
``last >= start``: exactly each OR term of :func:`vcfzarr_sql.query.region.regions_expression`
before it (``-r``: no ``last >= start`` when ``start`` is 1, and records at POS 0 match no
region; ``-t``: ``pos`` between ``start`` and ``end``). "Some interval matches" is answered
without merging intervals (merging would change the answer for a record whose END is before
its POS): the intervals sorted by end, with the least start of every suffix, give the
intervals ending at or after ``first`` and whether one of them starts at or before ``last``.

In a ``pc.Expression`` the set is one call of the function :data:`FUNCTION` (registered with
Arrow here, so Acero and ``Table.filter`` evaluate it too) on ``contig`` (cast to string),
``first``, ``last`` and a literal holding the intervals (:meth:`RegionSet.scalar`); the
binder makes it a bound predicate that pruning and the residual answer with this module.

>>> import pyarrow as pa
>>> regions = RegionSet.of([("1", 100, 200), ("1", 150, None), ("2", 1, 5)], targets=False)
>>> names = pa.array(["1", "1", "1", "2", "2", "3"]).dictionary_encode()
>>> regions.matches(names, np.array([90, 95, 300, 0, 5, 1]), np.array([99, 100, 300, 4, 9, 1])).tolist()
[False, True, True, False, True, False]
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # (Arrow is imported where an expression or a literal is made: -r needs none)
    import pyarrow as pa
    import pyarrow.compute as pc

#: The Arrow function of a region set: ``vcfzarr_regions(contig, first, last, intervals)``.
FUNCTION = "vcfzarr_sql_regions"


@functools.cache
def scalar_type() -> pa.StructType:
    """The literal's type: one entry per interval as given (``end`` null: to the end of the
    contig)."""
    import pyarrow as pa

    return pa.struct(
        [
            ("contig", pa.list_(pa.string())),
            ("start", pa.list_(pa.int64())),
            ("end", pa.list_(pa.int64())),
            ("targets", pa.bool_()),
        ]
    )
_LOWEST, _HIGHEST = np.iinfo(np.int64).min, np.iinfo(np.int64).max


@dataclass(frozen=True, eq=False)
class _Intervals:
    """The intervals of one contig: ends ascending with the least start from each on
    (``least_start_from``, one more entry: +inf), starts ascending with the greatest end up
    to each (``greatest_end_before``, one more entry first: -inf)."""

    ends: np.ndarray
    least_start_from: np.ndarray
    starts: np.ndarray
    greatest_end_before: np.ndarray

    @classmethod
    def of(cls, starts: np.ndarray, ends: np.ndarray) -> _Intervals:
        by_end = np.argsort(ends, kind="stable")
        least = np.minimum.accumulate(starts[by_end][::-1])[::-1]
        by_start = np.argsort(starts, kind="stable")
        greatest = np.maximum.accumulate(ends[by_start])
        return cls(  # (np.concatenate, not np.r_: 5 us each, which a one-region query notices)
            ends[by_end], np.concatenate((least, [_HIGHEST])), starts[by_start], np.concatenate(([_LOWEST], greatest))
        )

    def might(self, first_lowest: np.ndarray, last_highest: np.ndarray) -> np.ndarray:
        """Whether an interval ends at or after ``first_lowest`` and starts at or before
        ``last_highest`` (for one record, lowest and highest are its values)."""
        return self.least_start_from[np.searchsorted(self.ends, first_lowest, "left")] <= last_highest

    def must(self, first_highest: np.ndarray, last_lowest: np.ndarray) -> np.ndarray:
        """Whether one interval starts at or before ``last_lowest`` and ends at or after
        ``first_highest``: every record within those bounds matches it."""
        return self.greatest_end_before[np.searchsorted(self.starts, last_lowest, "right")] >= first_highest


@dataclass(frozen=True, eq=False)
class RegionSet:
    """Intervals by contig; ``targets``: bcftools ``-t`` (POS within), else ``-r`` (overlap)."""

    targets: bool
    contigs: dict[str, _Intervals]
    #: The intervals as given, for :meth:`scalar`.
    given: tuple[tuple[str, ...], np.ndarray, np.ndarray]

    @classmethod
    def of(cls, intervals: Sequence[tuple[str, int, int | None]], targets: bool) -> RegionSet:
        """The set of ``(contig, start, end)`` intervals (1-based inclusive, end None: open)."""
        contig, start, end = zip(*intervals) if len(intervals) else ((), (), ())
        starts = np.array(start, dtype=np.int64)
        ends = np.array([_HIGHEST if e is None else e for e in end], dtype=np.int64)
        return cls._build(tuple(contig), starts, ends, targets)

    @classmethod
    def _build(cls, contig: tuple[str, ...], starts: np.ndarray, ends: np.ndarray, targets: bool) -> RegionSet:
        # bcftools -r: a region starting at 1 has no END condition (END may be 0 at POS 1).
        effective = starts if targets else np.where(starts <= 1, _LOWEST, starts)
        rows: dict[str, list[int]] = {}  # (each contig's intervals in the order given)
        for i, name in enumerate(contig):
            rows.setdefault(str(name), []).append(i)
        contigs = {name: _Intervals.of(effective[rows[name]], ends[rows[name]]) for name in sorted(rows)}
        return cls(targets, contigs, (contig, starts, ends))

    @classmethod
    def from_scalar(cls, scalar: pa.Scalar) -> RegionSet:
        """The set :meth:`scalar` wrote."""
        if scalar.type != scalar_type() or not scalar.is_valid:
            raise ValueError(f"{FUNCTION}: expected a {scalar_type()} literal, got {scalar.type}")
        contig = tuple(scalar["contig"].values.to_pylist())
        starts = scalar["start"].values.to_numpy(zero_copy_only=False).astype(np.int64)
        ends = scalar["end"].values.fill_null(_HIGHEST).to_numpy(zero_copy_only=False).astype(np.int64)
        return cls._build(contig, starts, ends, bool(scalar["targets"].as_py()))

    def scalar(self) -> pa.StructScalar:
        """The literal of the set in an expression, built from buffers (converting Python or
        numpy values, ``pa.array`` and ``pa.scalar`` import pandas when it is installed: ~50
        MiB and ~0.3 CPU-s for a genotype matrix that never uses it).

        >>> RegionSet.of([("1", 5, 9), ("X", 3, None)], targets=False).scalar().as_py()
        {'contig': ['1', 'X'], 'start': [5, 3], 'end': [9, None], 'targets': False}
        """
        import pyarrow as pa

        from vcfzarr_sql.query.arrays import elements_array, string_array

        contig, starts, ends = self.given
        names = string_array(contig)
        one = elements_array(np.array([0, len(names)], np.int32), None, pa.int32())

        def listed(values: pa.Array) -> pa.Array:
            return pa.ListArray.from_arrays(one, values)

        fields = [listed(names), listed(elements_array(starts, None, pa.int64())),
                  listed(elements_array(ends, ends == _HIGHEST, pa.int64())),
                  elements_array(np.array([self.targets]), None, pa.bool_())]
        return pa.StructArray.from_arrays(fields, fields=list(scalar_type()))[0]

    @property
    def columns(self) -> frozenset[str]:
        """The columns the row filter of the set reads (``end`` for ``-r``, not for ``-t``)."""
        return frozenset({"contig", "pos", "pos" if self.targets else "end"})

    def expression(self) -> pc.Expression:
        """The row filter of the set: one call of :data:`FUNCTION` (registered with Arrow)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        register()
        contig = pc.field("contig").cast(pa.string())
        last = pc.field("pos" if self.targets else "end")
        return pc.Expression._call(FUNCTION, [contig, pc.field("pos"), last, pc.scalar(self.scalar())])

    # -- answers -----------------------------------------------------------------------

    def zones(
        self, contig_names: Sequence[str], contig: np.ndarray, pos_min: np.ndarray, pos_max: np.ndarray,
        end_max: np.ndarray, end_min: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(might, must) match for zones of one contig index each, with POS in ``[pos_min,
        pos_max]`` and END in ``[end_min, end_max]`` (``end_min`` None: unknown, as the region
        index keeps none), as the OR of one comparison term per interval prunes them (each
        comparison on its own bounds).

        >>> regions = RegionSet.of([("1", 100, 200)], targets=False)
        >>> zone = [np.array([0]), np.array([100]), np.array([150]), np.array([150])]
        >>> regions.zones(["1"], *zone), regions.zones(["1"], *zone, end_min=np.array([100]))
        ((array([ True]), array([False])), (array([ True]), array([ True])))
        """
        might = np.zeros(len(contig), bool)
        must = np.zeros(len(contig), bool)
        one = len(contig) > 0 and bool((contig == contig[0]).all())  # (a region's zones: one contig)
        for index, intervals in self._indexed(contig_names):
            if one and index != contig[0]:
                continue
            rows = slice(None) if one else np.flatnonzero(contig == index)
            lo, hi = pos_min[rows], pos_max[rows]
            if self.targets:
                might[rows] = intervals.might(lo, hi)
                must[rows] = intervals.must(hi, lo)
            else:
                might[rows] = intervals.might(lo, end_max[rows]) & (hi >= 1)
                least = np.full_like(lo, _LOWEST) if end_min is None else end_min[rows]
                must[rows] = intervals.must(hi, least) & (lo >= 1)
        return might, must

    def _indexed(self, contig_names: Sequence[str]) -> list[tuple[int, _Intervals]]:
        """(index in ``contig_names``, its intervals) of each contig of the set that the
        list names (every index of a name listed twice): one search per contig of the set,
        not a look-up per name listed (a store of GRCh38 lists 3,300).

        >>> [(i, len(v.ends)) for i, v in RegionSet.of([("2", 1, 5), ("3", 1, 5)], False)._indexed(["1", "2", "2"])]
        [(1, 1), (2, 1)]
        """
        found = []
        for name, intervals in self.contigs.items():
            index = -1
            while True:
                try:
                    index = contig_names.index(name, index + 1)
                except ValueError:
                    break
                found.append((index, intervals))
        return found

    def matches(self, contig: pa.Array, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Whether each record (its ``contig`` a string or dictionary array, ``first`` and
        ``last`` its span) matches the set."""
        import pyarrow as pa

        if pa.types.is_dictionary(contig.type):
            codes = contig.indices.to_numpy(zero_copy_only=False)
            names = contig.dictionary.to_pylist()
        else:
            names, codes = np.unique(contig.to_numpy(zero_copy_only=False), return_inverse=True)
            names = names.tolist()
        return self.matches_ids(names, codes, first, last)

    def matches_ids(self, names: Sequence[str | None], ids: np.ndarray, first: np.ndarray,
                    last: np.ndarray) -> np.ndarray:
        """:meth:`matches` for records whose contig is given as an index into ``names`` (a
        store's contig indexes, without an Arrow array); an index out of range matches nothing.

        >>> regions = RegionSet.of([("2", 10, 20)], targets=False)
        >>> regions.matches_ids(["1", "2"], np.array([1, 1, 0, 5]), np.array([5, 21, 10, 10]),
        ...                     np.array([10, 30, 10, 10])).tolist()
        [True, False, False, False]
        """
        ids = np.asarray(ids).reshape(-1)
        result = np.zeros(len(ids), bool)
        one = len(ids) > 0 and bool((ids == ids[0]).all())  # (the usual batch: one contig)
        for index in ids[:1].tolist() if one else sorted(set(ids.tolist())):  # (np.unique imports numpy.ma)
            name = names[index] if 0 <= index < len(names) else None
            intervals = self.contigs.get(name) if isinstance(name, str) else None
            if intervals is None:
                continue
            rows = slice(None) if one else np.flatnonzero(ids == index)
            result[rows] = intervals.might(first[rows], last[rows])
        return result if self.targets else result & (first >= 1)


def _evaluate(ctx: pc.UdfContext, contig: pa.Array, first: pa.Array, last: pa.Array, regions: pa.Scalar) -> pa.Array:
    """:data:`FUNCTION` for Acero (a filter evaluated outside the residual)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(contig, pa.Scalar):
        contig = pa.array([contig.as_py()], pa.string())
    length = max(len(a) if isinstance(a, pa.Array) else 1 for a in (contig, first, last))
    arrays = [a if isinstance(a, pa.Array) else pa.array([a.as_py()] * length, a.type) for a in (contig, first, last)]
    contig, first, last = arrays
    matched = RegionSet.from_scalar(regions).matches(
        contig, first.to_numpy(zero_copy_only=False), last.to_numpy(zero_copy_only=False)
    )
    nulls = pc.or_(pc.or_(contig.is_null(), first.is_null()), last.is_null())
    return pa.array(matched, mask=nulls.to_numpy(zero_copy_only=False))


@functools.cache
def register() -> None:
    """Register :data:`FUNCTION` with Arrow (once): before any expression holds a call of it
    (:meth:`RegionSet.expression`), and where filters are parsed (:mod:`.expressions`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if FUNCTION in pc.list_functions():
        return
    pc.register_scalar_function(
        _evaluate, FUNCTION,
        {"summary": "vcfzarr-sql region set", "description": "Whether records overlap a set of regions."},
        {"contig": pa.string(), "first": pa.int64(), "last": pa.int64(), "regions": scalar_type()},
        pa.bool_(),
    )
