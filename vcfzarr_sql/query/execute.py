"""Running a :class:`~vcfzarr_sql.query.plan.ScanPlan`: decode its tasks, keep the matching rows.

The one executor of plans: the pyarrow Dataset (:mod:`.dataset`) runs a whole plan in the
caller's process, a scan task (:mod:`.tasks`) runs its slice of one wherever an engine sends
it. ``source`` is a :class:`~vcfzarr_sql.store.source.ChunkSource`: the store, or a source over
it that fetches ahead (:mod:`~vcfzarr_sql.store.fetch`) or counts (:mod:`~vcfzarr_sql.store.counting`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from vcfzarr_sql.query import arrays, decode, stored_counts
from vcfzarr_sql.query.expressions import parse_or_none
from vcfzarr_sql.query.genotype_stats import PREFIX as GT_SUMMARY_PREFIX
from vcfzarr_sql.query.plan import ChunkTask, ScanPlan, batch_runs
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH, prefetched
from vcfzarr_sql.query.residual import matching_rows
from vcfzarr_sql.query.schema import GT
from vcfzarr_sql.store.fetch import WindowFetches, fetch_windows
from vcfzarr_sql.store.source import ChunkSource

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
    if not task.columns:
        batch = arrays.rows_only(task.num_rows)
    elif task.sample_chunk is None:
        batch = decode.decode_variants(
            source, task.variant_chunk, task.columns, task.samples, task.chunk_count
        )
    else:
        batch = decode.decode_calls(
            source, task.variant_chunk, task.sample_chunk, task.columns, task.samples
        )
    if task.filter is None:
        return batch.select(plan.schema.names)
    return matching_rows(batch, tree, task.filter, plan.filter_columns, plan.schema.names)


def chunks_per_batch(source: ChunkSource, plan: ScanPlan) -> int:
    """How many consecutive variant chunks a batch of ``plan`` may join: up to
    :data:`RUN_RECORDS` records for a ``variants`` scan that decodes no per-call value (site
    columns, and ``gt_`` columns over all samples of a store with stored counts, within
    :data:`RUN_GENOTYPE_BYTES`), else one."""
    if plan.table != "variants" or plan.reads_calls:
        return 1
    store = source.store
    most = max(1, RUN_RECORDS // max(store.variants_chunk_size, 1))
    if not any(c.startswith(GT_SUMMARY_PREFIX) for c in plan.filtered_columns):
        return most
    gt = store.format_fields.get(GT)
    if plan.sample_groups[0][1] is not None or gt is None or not stored_counts.stored(store):
        return 1
    genotypes = store.array_info(gt.array)
    per_chunk = genotypes.chunks[0] * math.prod(genotypes.shape[1:]) * genotypes.dtype.itemsize
    return max(1, min(most, RUN_GENOTYPE_BYTES // max(per_chunk, 1)))


def plan_batches(source: ChunkSource, plan: ScanPlan) -> Iterator[pa.RecordBatch]:
    """The batches of matching rows of ``plan``, in plan order: one per task that has any, or
    per run of tasks (:func:`.plan.batch_runs`) for plans with cheap chunks.

    Plans that decode per-call values, and plans over a remote store (a URL: each chunk read
    waits for a round trip), run a few tasks ahead in the scan threads (codecs, numpy and
    network waits release the GIL). Others are decoded as the consumer asks: small chunks of
    site columns are mostly Python, and in threads they measured 1.6x slower (GIL hand-offs),
    with nothing to overlap.
    """
    tree = None if plan.filter is None else parse_or_none(plan.filter)
    length = RunLength(chunks_per_batch(source, plan))
    if source.store.is_remote:
        yield from _remote_batches(source, plan, tree, length)
        return
    ahead = PREFETCH_DEPTH if plan.reads_calls else 0
    runs = batch_runs(plan, range(len(plan)), length)
    if ahead:  # (runs made ahead of their batches: lengths only double)
        batches = prefetched(lambda run: _run_of(source, plan, run, tree), list(runs), depth=ahead)
    else:
        batches = (length.saw(len(run), _run_of(source, plan, run, tree)) for run in runs)
    for batch in batches:
        if batch.num_rows:
            yield batch


def _run_of(source: ChunkSource, plan: ScanPlan, run: range, tree: Any) -> pa.RecordBatch:
    return _run(source, plan, plan.run(run.start, run.stop), tree)


def _remote_batches(source: ChunkSource, plan: ScanPlan, tree: Any, length: RunLength) -> Iterator[pa.RecordBatch]:
    """:func:`plan_batches` over a remote store: the chunks of each window of pieces are fetched
    in one batch, windows ahead of the runs decoded. A scan that does not yet know what pieces
    read (cold) first decodes the pieces of its first variant chunk reading chunk by chunk,
    to learn it (one piece per sample group)."""
    learn = 0
    if len(plan) and source.fetcher is not None and not source.fetcher.knows_reads:
        learn = int(np.searchsorted(plan.variant_chunks, plan.variant_chunks[0], side="right"))
    windows = [range(w.start + learn, w.stop + learn)
               for w in fetch_windows(len(plan) - learn, FIRST_FETCH_WINDOW, FETCH_WINDOW)]
    fetches = WindowFetches(source.fetcher, plan.variant_chunks, windows)

    def runs() -> Iterator[tuple[range, int]]:  # (taken as the scan threads take them)
        for i, window in enumerate(windows):
            for run in batch_runs(plan, window, length):
                fetches.submitted(i)
                yield run, i
            fetches.all_submitted(i)

    def work(item: tuple[range, int]) -> pa.RecordBatch:
        run, window = item
        fetches.enter(window)
        try:
            return _run_of(source, plan, run, tree)
        finally:
            fetches.leave(window)

    learning = list(batch_runs(plan, range(learn), length))
    try:
        for batch in itertools.chain(
            prefetched(lambda run: _run_of(source, plan, run, tree), learning, depth=PREFETCH_DEPTH),
            prefetched(work, runs(), depth=PREFETCH_DEPTH),
        ):
            if batch.num_rows:
                yield batch
    finally:
        fetches.close()


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

    def saw(self, tasks: int, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Note ``batch`` (of a run of ``tasks`` tasks, after filtering); returns it."""
        fits = int(RUN_BYTES * tasks // max(batch.nbytes, 1))
        self._next = max(1, min(self._next, fits))
        return batch
