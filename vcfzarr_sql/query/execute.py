"""Running a :class:`~vcfzarr_sql.query.plan.ScanPlan`: the one executor of plans.

:func:`run_plan` runs a plan's tasks with any per-task work (prefetching in the scan threads,
remote chunks fetched in windows, results in plan order); every reader of chunks uses it.
:func:`plan_batches` is its Arrow work: decode each task, keep the matching rows (the
residual). The pyarrow Dataset (:mod:`vcfzarr_sql.adapters.dataset`) runs a whole plan in
the caller's process, a scan task (:mod:`vcfzarr_sql.adapters.tasks`) its slice of one
wherever an engine sends it; ``vcf_zarr_sample_stats``, ``view`` and ``validate`` run plans
with work of their own. ``source`` is a :class:`~vcfzarr_sql.store.source.ChunkSource`: the
store, or a source over it that fetches ahead (:mod:`~vcfzarr_sql.store.fetch`) or counts
(:mod:`~vcfzarr_sql.store.counting`; :func:`scan_source` makes both).

Arrow and the modules of Arrow work are imported by the functions that use them: work that
reads its own arrays over every record (``stats`` from stored counts, through
:func:`every_chunk`) runs without loading pyarrow.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH, prefetched
from vcfzarr_sql.store.counting import CountingSource
from vcfzarr_sql.store.fetch import WindowFetches, fetch_windows, fetching
from vcfzarr_sql.store.fields import GT
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore

if TYPE_CHECKING:
    import pyarrow as pa

    from vcfzarr_sql.query.plan import ChunkTask, ScanPlan
    from vcfzarr_sql.query.region_set import RegionSet
    from vcfzarr_sql.store.blocks import BatchBlocks

T = TypeVar("T")

#: Pieces whose chunks a scan over a remote store fetches in one batch: the first window, and
#: the most a window grows to (doubling).
FIRST_FETCH_WINDOW = 2
FETCH_WINDOW = 32
#: Records a batch of a plan with cheap chunks (:func:`chunks_per_batch`) grows to: its
#: fixed cost per batch (Python, Arrow, the engine) is then small against its values.
RUN_RECORDS = 65_536
#: Arrow bytes a run's batch may reach (strings vary: an INFO/CSQ annotation can take kB
#: per record), judged from the bytes per chunk of the batch before.
RUN_BYTES = 32 << 20
#: Genotype bytes a run of ``gt_`` columns may span: a record the stored counts do not count
#: makes its batch decode the run's genotypes.
RUN_GENOTYPE_BYTES = 256 << 20


def _run(source: ChunkSource, plan: ScanPlan, task: ChunkTask, tree: Any) -> pa.RecordBatch:
    """Decode one task, keep its matching rows, project to the output columns."""
    from vcfzarr_sql.query import arrays, decode
    from vcfzarr_sql.query.residual import matching_rows

    if not task.columns:
        batch = arrays.rows_only(task.num_rows)
    elif _filters_first(plan, task) and (kept := _matching_run(source, plan, task, tree)) is not None:
        return decode.decode_variants(source, task.variant_chunk, plan.schema.names, task.samples,
                                      task.chunk_count, task.sample_order, rows=kept)
    elif task.sample_chunk is None:
        batch = decode.decode_variants(
            source, task.variant_chunk, task.columns, task.samples, task.chunk_count, task.sample_order
        )
    else:
        batch = decode.decode_calls(
            source, task.variant_chunk, task.sample_chunk, task.columns, task.samples
        )
    if task.filter is None:
        return batch.select(plan.schema.names)
    return matching_rows(batch, tree, task.filter, plan.filter_columns, plan.schema.names)


def _filters_first(plan: ScanPlan, task: ChunkTask) -> bool:
    """Whether ``task``'s residual filter is best evaluated before its other columns are
    built: a ``variants`` task with per-call columns (a region's edge chunk with ``fmt_GT``:
    lists of every sample for records the filter drops), and no ``gt_`` column (they count
    whole chunks)."""
    from vcfzarr_sql.query.genotype_stats import PREFIX as GT_SUMMARY_PREFIX
    from vcfzarr_sql.query.schema import FORMAT_COLUMN_PREFIX

    return (
        task.filter is not None
        and task.sample_chunk is None
        and any(c.startswith(FORMAT_COLUMN_PREFIX) for c in plan.schema.names)
        and not any(c.startswith(GT_SUMMARY_PREFIX) for c in task.columns)
    )


def _matching_run(source: ChunkSource, plan: ScanPlan, task: ChunkTask, tree: Any) -> slice | None:
    """The records of ``task`` its filter keeps, as a slice, when they are consecutive (as a
    region's are: records are sorted by position), from the filter's columns alone; None
    when they are not."""
    from vcfzarr_sql.query import decode
    from vcfzarr_sql.query.residual import matching_mask, matching_run

    assert task.filter is not None
    probe = decode.decode_variants(source, task.variant_chunk, [c for c in task.columns if c in plan.filter_columns],
                                   task.samples, task.chunk_count, task.sample_order)
    return matching_run(matching_mask(probe, tree, task.filter, plan.filter_columns))


def chunks_per_batch(source: ChunkSource, plan: ScanPlan) -> int:
    """How many consecutive variant chunks a batch of ``plan`` may join: up to
    :data:`RUN_RECORDS` records for a ``variants`` scan that decodes no per-call value (site
    columns, and ``gt_`` columns over all samples of a store with stored counts, within
    :data:`RUN_GENOTYPE_BYTES`), else one."""
    from vcfzarr_sql.query import stored_counts  # (genotype counts: only a scan of gt_ columns reads them)
    from vcfzarr_sql.query.genotype_stats import PREFIX as GT_SUMMARY_PREFIX
    from vcfzarr_sql.store.packed_arrays import packed_stored

    if plan.table != "variants" or plan.reads_calls:
        return 1
    store = source.store
    most = max(1, RUN_RECORDS // max(store.variants_chunk_size, 1))
    if not any(c.startswith(GT_SUMMARY_PREFIX) for c in plan.filtered_columns):
        return most
    gt = store.format_fields.get(GT)
    subset = plan.sample_groups[0][1] is not None  # (then counted from the packed genotypes)
    if gt is None or not (packed_stored(store) if subset else stored_counts.stored(store)):
        return 1
    return min(most, genotype_chunks_per_run(store, gt.array))


def genotype_chunks_per_run(store: VczStore, genotype_array: str) -> int:
    """How many variant chunks of ``genotype_array`` one run may join: at least one, at most
    :data:`RUN_GENOTYPE_BYTES` of genotypes."""
    genotypes = store.array_info(genotype_array)
    per_chunk = genotypes.chunks[0] * math.prod(genotypes.shape[1:]) * genotypes.dtype.itemsize
    return max(1, RUN_GENOTYPE_BYTES // max(per_chunk, 1))


def plan_batches(source: ChunkSource, plan: ScanPlan) -> Iterator[pa.RecordBatch]:
    """The batches of matching rows of ``plan``, in plan order: one per task that has any, or
    per run of tasks (:func:`.plan.batch_runs`) for plans with cheap chunks.

    Plans that decode per-call values run a few tasks ahead in the scan threads (codecs, numpy
    and network waits release the GIL). Others are decoded as the consumer asks: small chunks
    of site columns are mostly Python, and in threads they measured 1.6x slower (GIL
    hand-offs), with nothing to overlap. Each batch's size shortens the runs cut after it
    (:class:`RunLength`).
    """
    from vcfzarr_sql.query.expressions import parse_or_none
    from vcfzarr_sql.query.plan import batch_runs

    tree = None if plan.filter is None else parse_or_none(plan.filter)
    length = RunLength(chunks_per_batch(source, plan))
    batches = run_plan(
        source, plan, lambda run: _run_of(source, plan, run, tree),
        cut=lambda pieces: batch_runs(plan, pieces, length),
        ahead=PREFETCH_DEPTH if plan.reads_calls else 0,
        saw=length.saw,
    )
    for batch in batches:
        if batch.num_rows:
            yield batch


def residual_rows(source: ChunkSource, plan: ScanPlan, task: ChunkTask, tree: Any) -> np.ndarray | None:
    """Which records of ``task`` (of its variant chunks, in order) its residual filter keeps,
    as a boolean mask; None when it has none (every record). ``tree``: the plan's filter,
    parsed (:func:`~.expressions.parse_or_none`). For work that reads its own arrays."""
    if task.filter is None:
        return None
    from vcfzarr_sql.query import decode
    from vcfzarr_sql.query.residual import matching_mask

    batch = decode.decode_variants(source, task.variant_chunk, task.columns, task.samples, task.chunk_count,
                                   task.sample_order)
    mask = matching_mask(batch, tree, task.filter, plan.filter_columns)
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


def region_rows(blocks: BatchBlocks, regions: RegionSet) -> np.ndarray:
    """Which records of ``blocks``' batch overlap ``regions``: the residual of a plan whose
    only filter is a region set (:func:`~.plan.plan_regions`), from the records' contig, POS
    and END as numpy (no Arrow batch, no expression), for work that reads its own arrays."""
    from vcfzarr_sql.query.record_spans import all_overlap, contig_ids, positions, record_ends, record_lengths

    lengths = None if regions.targets else record_lengths(blocks)
    if lengths is not None and all_overlap(blocks, regions, lengths):
        return np.ones(len(lengths), bool)
    pos = positions(blocks)
    last = pos if lengths is None else record_ends(blocks, lengths, pos)
    return regions.matches_ids(blocks.store.contigs, contig_ids(blocks), pos, last)


def _run_of(source: ChunkSource, plan: ScanPlan, run: range, tree: Any) -> pa.RecordBatch:
    return _run(source, plan, plan.run(run.start, run.stop), tree)


def one_per_task(pieces: range) -> Iterator[range]:
    """Each task of ``pieces`` a run of its own (the default cut of :func:`run_plan`)."""
    return (range(i, i + 1) for i in pieces)


def run_plan(
    source: ChunkSource,
    plan: ScanPlan | EveryChunk,
    work: Callable[[range], T],
    *,
    cut: Callable[[range], Iterable[range]] = one_per_task,
    ahead: int = 0,
    saw: Callable[[int, T], object] | None = None,
) -> Iterator[T]:
    """``work(run)`` for each run of tasks of ``plan`` (a range of task indexes, which
    :meth:`.ScanPlan.run` joins into one task), in plan order: the one executor of plans.

    ``cut`` cuts a range of tasks into runs, lazily: each run is cut when it is about to be
    worked on. Over a local store the runs are worked on as the consumer asks, or, with
    ``ahead``, that many runs ahead in the scan threads (:func:`.prefetch.prefetched`); each
    result taken from an inline run is shown to ``saw`` (the run's task count, the result)
    before the next run is cut (only then: with ``ahead``, and over a remote store, runs are
    cut before their results exist, and ``saw`` is not called). Over a remote store (a URL: each chunk read waits for a round
    trip) the chunks of windows of tasks are fetched in batches, a few windows ahead
    (:class:`~vcfzarr_sql.store.fetch.WindowFetches`), and the runs are worked on in the scan
    threads. ``source`` is what the work reads through: the store, wrapped by
    :func:`~vcfzarr_sql.store.fetch.fetching` (and maybe counted, :func:`scan_source`).

    >>> from types import SimpleNamespace
    >>> plan = type("Plan", (), {"__len__": lambda self: 3})()  # (a plan of three tasks)
    >>> local = SimpleNamespace(store=SimpleNamespace(is_remote=False))
    >>> list(run_plan(local, plan, lambda run: list(run)))
    [[0], [1], [2]]
    """
    if source.store.is_remote:
        yield from _remote_runs(source, plan, work, cut)
        return
    runs = cut(range(len(plan)))
    if ahead:  # (runs cut ahead of their results: ``saw`` would come too late for them)
        yield from prefetched(work, list(runs), depth=ahead)
        return
    for run in runs:
        result = work(run)
        if saw is not None:
            saw(len(run), result)
        yield result


def _remote_runs(
    source: ChunkSource, plan: ScanPlan | EveryChunk, work: Callable[[range], T],
    cut: Callable[[range], Iterable[range]],
) -> Iterator[T]:
    """:func:`run_plan` over a remote store: the chunks of each window of tasks are fetched
    in one batch, windows ahead of the runs worked on. A scan that does not yet know what
    tasks read (cold) first works on the tasks of its first variant chunk reading chunk by
    chunk, to learn it (one task per sample group)."""
    learn = 0
    if len(plan) and source.fetcher is not None and not source.fetcher.knows_reads:
        learn = int(np.searchsorted(plan.variant_chunks, plan.variant_chunks[0], side="right"))
    windows = [range(w.start + learn, w.stop + learn)
               for w in fetch_windows(len(plan) - learn, FIRST_FETCH_WINDOW, FETCH_WINDOW)]
    fetches = WindowFetches(source.fetcher, plan.variant_chunks, windows, opening=learn == 0)

    def runs() -> Iterator[tuple[range, int]]:  # (taken as the scan threads take them)
        for i, window in enumerate(windows):
            for run in cut(window):
                fetches.submitted(i)
                yield run, i
            fetches.all_submitted(i)

    def in_window(item: tuple[range, int]) -> T:
        run, window = item
        fetches.enter(window)
        try:
            return work(run)
        finally:
            fetches.leave(window)

    learning = list(cut(range(learn)))
    try:
        yield from itertools.chain(
            prefetched(work, learning, depth=PREFETCH_DEPTH),
            prefetched(in_window, runs(), depth=PREFETCH_DEPTH),
        )
    finally:
        fetches.close()


def scan_source(store: VczStore, plan: ScanPlan | EveryChunk) -> CountingSource:
    """What a run of ``plan`` over ``store`` reads through: the store (fetching ahead when it
    is remote, :func:`~vcfzarr_sql.store.fetch.fetching`), every chunk read counted."""
    return CountingSource(fetching(store, plan))


@dataclass(frozen=True, eq=False)
class EveryChunk:
    """The plan of every variant chunk of a store (``rows``: the records of each), whatever
    its region index says, with no column and no filter: what :func:`run_plan` and the
    fetching source read of a :class:`~.plan.ScanPlan`, without its Arrow schema.

    >>> EveryChunk.of(type("Store", (), {"num_variant_chunks": 3, "variants_chunk_size": 4,
    ...                                  "num_variants": 10})).rows.tolist()
    [4, 4, 2]
    """

    variant_chunks: np.ndarray
    rows: np.ndarray
    table: str = "variants"
    filtered_columns: tuple[str, ...] = ()
    unfiltered_columns: tuple[str, ...] = ()
    sample_groups: tuple[tuple[int | None, np.ndarray | None], ...] = ((None, None),)

    @classmethod
    def of(cls, store: VczStore) -> EveryChunk:
        chunks = np.arange(store.num_variant_chunks)
        size = store.variants_chunk_size
        return cls(chunks, np.minimum(size, store.num_variants - chunks * size))

    def __len__(self) -> int:
        return len(self.variant_chunks)


def every_chunk(store: VczStore, work: Callable[[CountingSource, int], T], *,
                ahead: int = 0) -> Iterator[tuple[int, T]]:
    """``(chunk, work(source, chunk))`` for every variant chunk of ``store`` in order, run by
    :func:`run_plan` over :class:`EveryChunk` (``ahead``: as there): how ``index`` computes
    and ``validate`` recomputes the arrays derived from each chunk, and how a selection that
    keeps every record is run."""
    return every_run(store, lambda source, chunks: (chunks.start, work(source, chunks.start)), ahead=ahead)


def every_run(store: VczStore, work: Callable[[CountingSource, range], T], *, join: int = 1,
              ahead: int = 0) -> Iterator[T]:
    """``work(source, chunks)`` for every run of consecutive variant chunks of ``store``, in
    order, cut at the multiples of ``join`` (:func:`_aligned_runs`), run by :func:`run_plan`
    over :class:`EveryChunk` (``ahead``: as there): :func:`every_chunk` with ``join`` 1; work
    whose cost is mostly per batch (``stats`` from stored counts) joins the chunks one chunk
    of its arrays spans."""
    plan = EveryChunk.of(store)
    source = scan_source(store, plan)
    return run_plan(source, plan, lambda run: work(source, run), cut=lambda tasks: _aligned_runs(tasks, join),
                    ahead=ahead)


def _aligned_runs(tasks: range, join: int) -> Iterator[range]:
    """``tasks`` cut at the multiples of ``join``: runs of at most ``join`` tasks, none across
    a multiple (a range of tasks, a remote scan's window, may start anywhere; a run across
    a multiple would read two chunks of arrays that hold ``join`` tasks a chunk).

    >>> [list(run) for run in _aligned_runs(range(3, 10), 4)]
    [[3], [4, 5, 6, 7], [8, 9]]
    """
    start = tasks.start
    while start < tasks.stop:
        stop = min((start // join + 1) * join, tasks.stop)
        yield range(start, stop)
        start = stop


class RunLength:
    """The tasks the next run joins: one, then doubling up to ``most`` (so a scan stopped early,
    a LIMIT, decodes little more than it returns), and no more than :data:`RUN_BYTES` of batch
    at the bytes per task of the last batch :meth:`saw`."""

    def __init__(self, most: int):
        self._next = 1
        self._most = most

    def __call__(self) -> int:
        length, self._next = self._next, min(2 * self._next, self._most)
        return length

    def saw(self, tasks: int, batch: pa.RecordBatch) -> None:
        """Note ``batch`` (of a run of ``tasks`` tasks, after filtering)."""
        fits = int(RUN_BYTES * tasks // max(batch.nbytes, 1))
        self._next = max(1, min(self._next, fits))
