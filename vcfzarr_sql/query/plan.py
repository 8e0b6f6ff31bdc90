"""The scan planner: (store layout, filter, columns, samples) -> a :class:`ScanPlan` of chunk tasks.

Pure: it reads the store's metadata and region index (the store builds the index in memory
when the store has none) and returns a plan; nothing is decoded and nothing is mutated. Its
one side effect is a :class:`~vcfzarr_sql.errors.VcfZarrWarning` when the filter asks for a
contig the store lacks but nearly has (``chr1`` for ``1``: :func:`.region.contig_hint`).

Each :class:`ChunkTask` is one variant chunk (times one sample chunk for the ``calls`` table)
whose zones might hold matching rows, with the columns to decode and its residual filter:
the whole pushed filter, or None when every row of the task is known to match (then the
columns only the filter needs are not read either).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from vcfzarr_sql.errors import QueryError, VcfZarrWarning
from vcfzarr_sql.format import spec
from vcfzarr_sql.query import predicates as ex
from vcfzarr_sql.query.prune import Zones, broadcast, prune, prune_compact
from vcfzarr_sql.query.region import contig_hint
from vcfzarr_sql.query.region_set import RegionSet

if TYPE_CHECKING:  # (a plan of a region set is made without Arrow: plan_regions)
    import pyarrow as pa
    import pyarrow.compute as pc

TABLES = ("variants", "calls")


class StoreLayout(Protocol):
    """What the planner needs of a store (``vcfzarr_sql.store.VczStore`` is one)."""

    @property
    def contigs(self) -> list[str]: ...
    @property
    def samples(self) -> np.ndarray: ...
    @property
    def samples_chunk_size(self) -> int: ...
    @property
    def num_sample_chunks(self) -> int: ...
    @property
    def num_variant_chunks(self) -> int: ...
    @property
    def region_index(self) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class ScanRequest:
    """What a scanner asks for: output ``columns`` (None: all), a pushed ``filter`` (already
    ANDed with any ``region``), and ``samples``: sorted indexes of the selected samples (None:
    all); ``sample_order``: the ``variants`` table's ``fmt_`` lists hold the decoded samples
    in this order, positions among them, repeats allowed (None: in store order)."""

    table: str
    schema: pa.Schema
    columns: tuple[str, ...] | None = None
    filter: pc.Expression | None = None
    samples: np.ndarray | None = None
    sample_order: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class ChunkTask:
    """Decode ``columns`` of one chunk, keep the rows satisfying ``filter`` (None: all of them).

    ``samples``: sorted store indexes of the samples to decode (None: all); for the ``calls``
    table, those of ``sample_chunk``. ``num_rows``: rows of the task before filtering.
    ``chunk_count``: for a run of tasks decoded as one (:meth:`ScanPlan.run`), the variant
    chunks from ``variant_chunk`` on that it covers. ``sample_order``: the ``fmt_`` lists'
    order of the decoded samples (:class:`ScanRequest`). ``filtered_by``: the plan whose
    :attr:`filter` the task's rows must satisfy (None: every row is kept).
    """

    variant_chunk: int
    sample_chunk: int | None
    samples: np.ndarray | None
    columns: tuple[str, ...]
    filtered_by: ScanPlan | None
    num_rows: int
    chunk_count: int = 1
    sample_order: np.ndarray | None = None

    @property
    def filter(self) -> pc.Expression | None:
        """The filter the task's rows must satisfy (None: every row is kept)."""
        return None if self.filtered_by is None else self.filtered_by.filter

    @property
    def filtered(self) -> bool:
        """Whether the task's rows must satisfy a filter (``filter`` is not None; asked
        without making a region set's expression)."""
        return self.filtered_by is not None

    @property
    def reads_calls(self) -> bool:
        """Whether the task decodes per-call values: a FORMAT column, or rows of ``calls``."""
        from vcfzarr_sql.query.genotype_stats import PREFIX as GT_SUMMARY_PREFIX  # (both: Arrow's modules)
        from vcfzarr_sql.query.schema import FORMAT_COLUMN_PREFIX

        return self.sample_chunk is not None or any(
            c.startswith((FORMAT_COLUMN_PREFIX, GT_SUMMARY_PREFIX)) for c in self.columns
        )


@dataclass(frozen=True, eq=False)
class ScanPlan:
    """The chunk tasks of a scan, in store order, and the schema of the batches it yields.

    The tasks are held as parallel arrays (one entry per task: ``variant_chunks``,
    ``groups`` into ``sample_groups``, ``whole``: no row filter needed, ``rows`` before
    filtering), so a plan over a million chunks makes no Python object per chunk;
    :meth:`task` (or ``tasks``) makes a :class:`ChunkTask` when one is run.
    """

    table: str
    #: The table's schema (None: a plan of :func:`plan_regions` made without one, of no
    #: column) and the output columns, in the order asked (:attr:`schema`).
    table_schema: pa.Schema | None
    columns: tuple[str, ...]
    #: The pushed filter (or the region set whose expression it is: :attr:`filter`), and the
    #: columns to decode when it must be evaluated (``filtered``) or not (``unfiltered``:
    #: exactly the output columns).
    pushed_filter: pc.Expression | None
    regions: RegionSet | None
    filter_columns: frozenset[str]
    filtered_columns: tuple[str, ...]
    unfiltered_columns: tuple[str, ...]
    #: (sample chunk or None, sorted sample indexes or None) of each sample group.
    sample_groups: tuple[tuple[int | None, np.ndarray | None], ...]
    variant_chunks: np.ndarray
    groups: np.ndarray
    whole: np.ndarray
    rows: np.ndarray
    variant_chunks_total: int
    sample_chunks_total: int
    #: The ``fmt_`` lists' order of the decoded samples (``variants``; :class:`ScanRequest`).
    sample_order: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.variant_chunks)

    @functools.cached_property
    def schema(self) -> pa.Schema:
        """The schema of the batches the plan yields: its output columns'."""
        import pyarrow as pa

        if self.table_schema is None:
            return pa.schema([])
        return pa.schema([self.table_schema.field(c) for c in self.columns])

    @functools.cached_property
    def filter(self) -> pc.Expression | None:
        """The pushed filter (a region set's: made when asked, which loads Arrow)."""
        return self.pushed_filter if self.regions is None else self.regions.expression()

    def task(self, i: int) -> ChunkTask:
        """The ``i``-th task of the plan."""
        sample_chunk, samples = self.sample_groups[self.groups[i]]
        whole = bool(self.whole[i])
        return ChunkTask(
            variant_chunk=int(self.variant_chunks[i]),
            sample_chunk=sample_chunk,
            samples=samples,
            columns=self.unfiltered_columns if whole else self.filtered_columns,
            filtered_by=None if whole else self,
            num_rows=int(self.rows[i]),
            sample_order=self.sample_order,
        )

    def run(self, start: int, stop: int) -> ChunkTask:
        """Tasks ``start:stop`` as one task: they must be consecutive variant chunks of one
        sample group, all needing the row filter or none (see :func:`batch_runs`)."""
        first = self.task(start)
        if stop - start == 1:  # (the usual run of a small region: no copy)
            return first
        return dataclasses.replace(
            first,
            num_rows=int(self.rows[start:stop].sum()),
            chunk_count=int(self.variant_chunks[stop - 1]) - first.variant_chunk + 1,
        )

    @property
    def tasks(self) -> tuple[ChunkTask, ...]:
        """Every task as a :class:`ChunkTask` (one object each: for small plans and tests)."""
        return tuple(self.task(i) for i in range(len(self)))

    @property
    def reads_calls(self) -> bool:
        """Whether the tasks decode per-call values: a FORMAT column, or rows of ``calls``."""
        from vcfzarr_sql.query.schema import FORMAT_COLUMN_PREFIX  # (Arrow's module)

        return self.table == "calls" or any(
            c.startswith(FORMAT_COLUMN_PREFIX) for c in self.filtered_columns
        )

    def slice(self, start: int, stop: int) -> ScanPlan:
        """The plan of tasks ``start:stop``, keeping only the sample groups they use."""
        groups, sample_groups = self.groups[start:stop], self.sample_groups
        if len(sample_groups) > 1:
            used, groups = np.unique(groups, return_inverse=True)
            sample_groups = tuple(sample_groups[g] for g in used)
            groups = groups.reshape(-1).astype(np.int32)
        return dataclasses.replace(
            self,
            sample_groups=sample_groups,
            variant_chunks=self.variant_chunks[start:stop],
            groups=groups,
            whole=self.whole[start:stop],
            rows=self.rows[start:stop],
        )


def _output_columns(request: ScanRequest) -> tuple[str, ...]:
    names = () if request.schema is None else request.schema.names  # (None: plan_regions of no column)
    if request.columns is None:
        return tuple(names)
    unknown = [c for c in request.columns if c not in names]
    if unknown:
        raise QueryError(f"columns: no column named {unknown[0]!r} in the {request.table} table")
    return tuple(request.columns)


def _sample_groups(
    layout: StoreLayout, predicate: ex.Predicate, selected: np.ndarray, filters_samples: bool
) -> list[tuple[int | None, np.ndarray | None]]:
    """(sample chunk, sorted sample indexes) of the selected samples the predicate might match
    (every selected sample when the filter does not mention ``sample_id``)."""
    if filters_samples and len(selected):
        names = [np.array([s], dtype=object) for s in layout.samples[selected]]
        might = prune(predicate, Zones(layout.contigs, samples=names)).can_true[0]
        selected = selected[might]
    chunk_of = selected // layout.samples_chunk_size
    chunks, starts = np.unique(chunk_of, return_index=True)
    return [(int(c), part) for c, part in zip(chunks, np.split(selected, starts[1:]))]


def _units(
    layout: StoreLayout,
    predicate: ex.Predicate,
    ri: np.ndarray,
    groups: Sequence[tuple[int | None, np.ndarray | None]],
    table: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(variant chunk, sample group, whole, rows) of every (variant chunk, sample group)
    whose zones might match, chunk-major (store order), computed over all zones at once."""
    zones = Zones(
        layout.contigs,
        contig=ri[:, spec.RI_CONTIG],
        pos_min=ri[:, spec.RI_START],
        pos_max=ri[:, spec.RI_END],
        end_max=ri[:, spec.RI_MAX_END],
        samples=[layout.samples[s] for _, s in groups] if table == "calls" else None,
    )
    truth = prune_compact(predicate, zones)
    might, must = truth.can_true, truth.must_be_true

    # Region index rows grouped by variant chunk: a chunk might match when any of its rows
    # might, and needs no row filter when all of them must. Stores list a chunk's rows
    # together, in chunk order: then no sort is needed, nor any reduction when every chunk
    # has one row.
    chunk_of = ri[:, spec.RI_CHUNK]
    if len(chunk_of) > 1 and (np.diff(chunk_of) < 0).any():
        order = np.argsort(chunk_of, kind="stable")
        ri, chunk_of = ri[order], chunk_of[order]
        might = might if might.shape[0] == 1 else might[order]
        must = must if must.shape[0] == 1 else must[order]
    starts = np.flatnonzero(np.concatenate(([True], chunk_of[1:] != chunk_of[:-1])))
    chunks, records = chunk_of[starts], ri[:, spec.RI_COUNT]
    if len(starts) < len(chunk_of):
        records = np.add.reduceat(records, starts)
        might = might if might.shape[0] == 1 else np.logical_or.reduceat(might, starts, axis=0)
        must = must if must.shape[0] == 1 else np.logical_and.reduceat(must, starts, axis=0)
    shape = (len(chunks), len(groups))
    c, g = np.nonzero(broadcast(might, shape))  # row-major: chunk-major, store order
    sizes = np.array([1 if s is None or table != "calls" else len(s) for _, s in groups])
    whole = broadcast(must, shape)[c, g]
    return chunks[c], g.astype(np.int32), whole, records[c] * sizes[g]


def _contig_names(predicate: ex.Predicate) -> Iterator[str]:
    """The contig names a predicate compares ``contig`` with (``=``, ``IN``, a region set),
    anywhere in it."""
    if isinstance(predicate, (ex.And, ex.Or)):
        for operand in predicate.operands:
            yield from _contig_names(operand)
    elif isinstance(predicate, ex.Not):
        yield from _contig_names(predicate.operand)
    elif isinstance(predicate, ex.IfElse):
        for part in (predicate.condition, predicate.then, predicate.otherwise):
            yield from _contig_names(part)
    elif isinstance(predicate, ex.Compare) and predicate.column == "contig" and predicate.op == "==":
        if isinstance(predicate.value, str):
            yield predicate.value
    elif isinstance(predicate, ex.In) and predicate.column == "contig":
        yield from (v for v in predicate.values if isinstance(v, str))
    elif isinstance(predicate, ex.Regions):
        yield from predicate.regions.contigs


def plan_scan(layout: StoreLayout, request: ScanRequest) -> ScanPlan:
    """The chunk tasks that might hold rows of ``request``.

    >>> import pyarrow as pa, pyarrow.compute as pc
    >>> from types import SimpleNamespace
    >>> layout = SimpleNamespace(contigs=["0", "1", "2"], samples=np.array(["a"], object),
    ...     samples_chunk_size=1, num_sample_chunks=1, num_variant_chunks=3,
    ...     region_index=np.array([[0, 0, 111, 112, 112, 2], [0, 1, 14370, 14370, 14370, 1],
    ...         [1, 1, 17330, 1230237, 1230237, 3], [2, 1, 1234567, 1235237, 1235237, 2],
    ...         [2, 2, 10, 10, 11, 1]]))
    >>> schema = pa.schema([("contig", pa.string()), ("pos", pa.int64()), ("end", pa.int64())])
    >>> region = (pc.field("contig") == "1") & (pc.field("pos") <= 20000) & (pc.field("end") >= 1)
    >>> [t.variant_chunk for t in plan_scan(layout, ScanRequest("variants", schema,
    ...                                                          filter=region)).tasks]
    [0, 1]
    """
    if request.table not in TABLES:
        raise QueryError(f"table: expected one of {', '.join(TABLES)}, got {request.table!r}")
    from vcfzarr_sql.query.expressions import bind_filter, columns_of

    predicate = bind_filter(request.filter, request.schema)
    return _planned(layout, request, predicate, columns_of(request.filter, request.schema))


def plan_regions(
    layout: StoreLayout, schema: pa.Schema | None, columns: Sequence[str], regions: RegionSet | None,
    samples: np.ndarray | None,
) -> ScanPlan:
    """:func:`plan_scan` of the ``variants`` ``columns`` (of table ``schema``) of the records
    overlapping ``regions`` (None: all) for ``samples`` (sorted indexes, None: all), the set
    bound as it is: no Arrow expression is built and parsed back (a tenth of a millisecond of
    the planning of a region, which a genotype matrix of a few chunks notices). The tasks'
    filter is the set's expression, as for a request with that filter, made when asked
    (:attr:`ScanPlan.filter`). ``schema`` None: a plan of no column, for work that reads its
    chunks' arrays itself (``view -r``) and matches the records of its edge chunks on numpy
    (:func:`~.execute.region_rows`): made without loading Arrow.

    >>> import pyarrow as pa
    >>> from types import SimpleNamespace
    >>> layout = SimpleNamespace(contigs=["1", "2"], samples=np.array(["a"], object),
    ...     samples_chunk_size=1, num_sample_chunks=1, num_variant_chunks=3,
    ...     region_index=np.array([[0, 0, 10, 20, 20, 2], [1, 0, 30, 40, 40, 2], [2, 1, 5, 9, 9, 2]]))
    >>> schema = pa.schema([("contig", pa.string()), ("pos", pa.int64()), ("end", pa.int64())])
    >>> regions = RegionSet.of([("1", 15, 35)], targets=False)
    >>> plan = plan_regions(layout, schema, ["pos"], regions, None)
    >>> plan.variant_chunks.tolist(), sorted(plan.filter_columns)
    ([0, 1], ['contig', 'end', 'pos'])
    """
    # (a request of no schema is made here only: _output_columns and _planned take it as no column)
    request = ScanRequest("variants", schema, tuple(columns), samples=samples)
    if regions is None:
        return _planned(layout, request, ex.Constant(True), frozenset())
    return _planned(layout, request, ex.Regions(regions), regions.columns, regions)


def _planned(
    layout: StoreLayout, request: ScanRequest, predicate: ex.Predicate, filter_columns: frozenset[str],
    regions: RegionSet | None = None,
) -> ScanPlan:
    """The plan of ``request``, its filter bound to ``predicate`` (reading ``filter_columns``;
    ``regions``: the filter is that set's expression)."""
    columns = _output_columns(request)
    hint = contig_hint(_contig_names(predicate), layout.contigs)
    if hint is not None:
        warnings.warn(VcfZarrWarning(hint), stacklevel=3)
    ri = np.asarray(layout.region_index, dtype=np.int64).reshape(-1, spec.REGION_INDEX_FIELDS)
    groups: Sequence[tuple[int | None, np.ndarray | None]]
    if request.table == "calls":
        selected = (
            np.arange(len(layout.samples)) if request.samples is None else request.samples
        )
        groups = _sample_groups(
            layout, predicate, np.asarray(selected, dtype=np.int64), "sample_id" in filter_columns
        )
    else:
        groups = [(None, request.samples)]
    empty = np.zeros(0, np.int64)
    chunks, group, whole, rows = (
        _units(layout, predicate, ri, groups, request.table)
        if groups and len(ri)
        else (empty, empty.astype(np.int32), empty.astype(bool), empty)
    )
    wanted = set(columns) | filter_columns
    names = sorted(wanted) if request.schema is None else request.schema.names  # (None: nothing decoded by the plan)
    return ScanPlan(
        table=request.table,
        table_schema=request.schema,
        columns=columns,
        pushed_filter=request.filter,
        regions=regions,
        filter_columns=filter_columns,
        filtered_columns=tuple(c for c in names if c in wanted),
        unfiltered_columns=tuple(c for c in names if c in columns),
        sample_groups=tuple(groups),
        variant_chunks=chunks,
        groups=group,
        whole=whole,
        rows=rows,
        variant_chunks_total=int(layout.num_variant_chunks),
        sample_chunks_total=int(layout.num_sample_chunks),
        sample_order=request.sample_order if request.table == "variants" else None,
    )


def batch_runs(plan: ScanPlan, pieces: range, length: Callable[[], int]) -> Iterator[range]:
    """``pieces`` (task indexes of ``plan``) cut into runs that :meth:`ScanPlan.run` can join:
    consecutive variant chunks of one sample group, with one ``whole`` flag; each run as long
    as ``length()`` says when it starts (and the joinable tasks allow), made as the caller asks.

    >>> from types import SimpleNamespace
    >>> plan = SimpleNamespace(variant_chunks=np.array([0, 1, 2, 3, 4, 5, 6, 9]),
    ...     groups=np.zeros(8, np.int32), whole=np.array([1, 1, 1, 1, 1, 1, 0, 0], bool))
    >>> lengths = iter([1, 2, 4, 4, 4])
    >>> [(r.start, r.stop) for r in batch_runs(plan, range(8), lambda: next(lengths))]
    [(0, 1), (1, 3), (3, 6), (6, 7), (7, 8)]
    """
    breaks: list[int] = []
    if len(pieces) > 1:  # (one task, a small region's: nothing to join)
        chunks = plan.variant_chunks[pieces.start : pieces.stop]
        joins = (
            (np.diff(chunks) == 1)
            & (np.diff(plan.groups[pieces.start : pieces.stop]) == 0)
            & (np.diff(plan.whole[pieces.start : pieces.stop].astype(np.int8)) == 0)
        )
        breaks = (np.flatnonzero(~joins) + 1 + pieces.start).tolist()
    for lo, hi in zip([pieces.start, *breaks], [*breaks, pieces.stop]):
        while lo < hi:
            step = min(max(length(), 1), hi - lo)
            yield range(lo, lo + step)
            lo += step
