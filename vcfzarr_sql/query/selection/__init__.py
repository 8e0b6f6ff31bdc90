"""bcftools' record and sample selection over a store: ``-r/-R``, ``-t/-T``, ``-s/-S``,
``-i/-e`` and the other record filters of ``bcftools view``, run chunk by chunk.

One selection serves every writer of records (``view``'s VCF, ``export``'s PLINK, BGEN and
AnnData): :meth:`SelectedRecords.runs` runs the scan plans of the selection through the one
executor (:func:`~vcfzarr_sql.query.execute.run_plan`) and gives each variant chunk's kept
rows to the writer's work, so every writer keeps exactly the records ``view`` writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.format.summaries import variant_chunks_per_chunk
from vcfzarr_sql.query.execute import (
    EveryChunk,
    every_chunk,
    every_run,
    region_rows,
    residual_rows,
    run_plan,
    scan_source,
)
from vcfzarr_sql.query.selection.regions import Intervals, intervals, sample_indexes
from vcfzarr_sql.query.selection.rows import ExpressionFilter
from vcfzarr_sql.query.selection.sites import SiteFilters
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore

if TYPE_CHECKING:
    from vcfzarr_sql.query.plan import ScanPlan
    from vcfzarr_sql.query.region_set import RegionSet

__all__ = ["SelectedRecords", "Selection", "SiteFilters", "recounts"]

T = TypeVar("T")

#: a writer's work on one variant chunk: (what it reads through, the chunk, its kept rows)
ChunkWork = Callable[[ChunkSource, int, np.ndarray], T]
#: work on a run of whole variant chunks: (what it reads through, the chunks)
RunWork = Callable[[ChunkSource, range], T]


def recounts(update_counts: bool, subsets: bool, has_gt: bool, counts_alleles: bool) -> bool:
    """Whether written records carry INFO/AC and INFO/AN recounted: bcftools recounts a
    subset of a store with GT (``subsets``), or after an option that counted alleles
    (``counts_alleles``), unless ``-I`` (not ``update_counts``)."""
    return update_counts and ((subsets and has_gt) or counts_alleles)


@dataclass(frozen=True)
class Selection:
    """What to write: bcftools' ``-r/-R``, ``-t/-T``, ``-s/-S``, ``-i``/``-e``, ``-I``, and
    the record filters of :class:`~vcfzarr_sql.query.selection.sites.SiteFilters`."""

    regions: str | None = None
    regions_file: str | None = None
    targets: str | None = None
    targets_file: str | None = None
    samples: str | None = None
    samples_file: str | None = None
    include: str | None = None
    exclude: str | None = None
    update_counts: bool = True
    #: -c/-C, -q/-Q, -m/-M, -v/-V, -u/-U, -k/-n, -f, -g, -p/-P, -x/-X
    sites: SiteFilters = SiteFilters()


class SelectedRecords:
    """A :class:`Selection` checked against a store: the samples (store indexes in output
    order; None: all), the expression and record filters, and the passes to scan.

    Every option is checked here, before anything is written: a refused one writes nothing.

    ``counting``: the selection is counted (``bcftools stats``), not written: ``-s -`` is every
    sample, ``-i/-e`` see no recounted INFO/AC and AN, and the scan plans read every sample
    (the work picks its samples: stats counts allele frequencies over all of them).
    """

    def __init__(self, store: VczStore, selection: Selection, *, counting: bool = False):
        regions = intervals(selection.regions, selection.regions_file, targets=False)
        targets = intervals(selection.targets, selection.targets_file, targets=True)
        if regions is not None and targets is not None:
            raise QueryError("-r/-R and -t/-T cannot be used together (as in bcftools)")
        if selection.include is not None and selection.exclude is not None:
            raise QueryError("-i and -e cannot be used together")
        self.store = store
        self.selection = selection
        self.counting = counting
        if counting and selection.samples == "-" and selection.samples_file is None:
            self.samples: np.ndarray | None = np.arange(store.num_samples, dtype=np.int64)
        else:  # (a sample listed twice: counted once by stats, refused by view as bcftools does)
            self.samples = sample_indexes(list(store.samples), selection.samples,
                                          selection.samples_file, repeats=counting)
        has_gt = "GT" in store.format_fields
        # the records bcftools filters carry the AC/AN its header declares (absent from them)
        counted = not counting and recounts(selection.update_counts, self.samples is not None,
                                            has_gt, selection.sites.counts_alleles)
        added = tuple(n for n in ("AC", "AN") if counted and n not in store.info_fields)
        self.expression = ExpressionFilter.of(store, selection.include, selection.exclude, added)
        self.sites = selection.sites
        self.sites.check(self.samples is not None, has_gt)
        self.passes = _passes(regions, targets)

    @property
    def keeps_every_record(self) -> bool:
        """Whether the selection keeps every record of the store (no region, target,
        expression or record filter)."""
        return self.passes == [None] and self.expression is None and not self.sites

    @property
    def sample_names(self) -> list[str]:
        """The selected samples' names, in output order."""
        names = list(self.store.samples)
        return names if self.samples is None else [names[k] for k in self.samples]

    def count(self) -> int:
        """The records the selection keeps (a pass over it that reads what its filters read)."""
        return sum(self.runs(lambda source, chunk, rows: len(rows)))

    def runs(self, work: ChunkWork[T], *, ahead: int = 0, whole_runs: RunWork[T] | None = None) -> Iterator[T]:
        """``work(source, chunk, rows)`` for each variant chunk of the selection, in output
        order: ``rows``, the chunk's records the selection keeps (maybe none). One scan plan
        per pass (its region filter, its samples), run by the executor, ``ahead`` runs ahead
        in the scan threads (:func:`~vcfzarr_sql.query.execute.run_plan`). A selection without
        ``-r/-t`` runs over :func:`~vcfzarr_sql.query.execute.every_chunk`: its filters
        (``-i/-e`` and the record filters) read the chunk's arrays, so no scan plan, nor
        Arrow, is needed. A pass whose filter is a region set (``-r``, ``-t`` without ``^``)
        is planned from the set as it is (:func:`~vcfzarr_sql.query.plan.plan_regions`: no
        Arrow expression parsed back) and the records of its edge chunks are matched on numpy
        (:func:`~vcfzarr_sql.query.execute.region_rows`), as the genotype matrix does.

        ``whole_runs``: work whose cost is mostly per batch, on a run of whole variant chunks
        (those one chunk of the per-record summaries holds:
        :func:`~vcfzarr_sql.format.summaries.variant_chunks_per_chunk`, run by
        :func:`~vcfzarr_sql.query.execute.every_run`), done instead of ``work`` when the
        selection keeps every record."""
        if whole_runs is not None and self.keeps_every_record:
            join = variant_chunks_per_chunk(self.store.variants_chunk_size)
            yield from every_run(self.store, whole_runs, join=join, ahead=ahead)
            return
        if self.passes == [None]:
            records = EveryChunk.of(self.store).rows

            def chunk_work(source: ChunkSource, chunk: int) -> T:
                return work(source, chunk, self._kept(source, chunk, np.ones(records[chunk], bool)))

            for _, result in every_chunk(self.store, chunk_work, ahead=ahead):
                yield result
            return
        from vcfzarr_sql.query.plan import ScanRequest, plan_regions, plan_scan

        samples = None if self.samples is None or self.counting else np.unique(self.samples)
        for selected in self.passes:
            regions = None if selected is None or selected.exclude else selected.region_set()
            if regions is not None:  # (no schema: planned and matched without Arrow)
                plan = plan_regions(self.store, None, (), regions, samples)
            else:
                from vcfzarr_sql.query.request import table_schema

                request = ScanRequest("variants", table_schema(self.store, "variants"), columns=(),
                                      filter=None if selected is None else selected.expression(), samples=samples)
                plan = plan_scan(self.store, request)
            source = scan_source(self.store, plan)
            yield from run_plan(source, plan, self._chunk_work(source, plan, work, regions), ahead=ahead)

    def _chunk_work(self, source: ChunkSource, plan: ScanPlan, work: ChunkWork[T],
                    regions: RegionSet | None) -> Callable[[range], T]:
        """The executor's work: ``work`` on the records of a task (one variant chunk) that its
        residual filter (``regions``, when that set is the plan's only filter), the expression
        and the record filters keep."""
        tree = None
        if regions is None and plan.filter is not None:  # (a region set's plan: no Arrow expression)
            from vcfzarr_sql.query.expressions import parse_or_none

            tree = parse_or_none(plan.filter)

        def chunk_work(run: range) -> T:
            task = plan.run(run.start, run.stop)
            if regions is None:
                keep = residual_rows(source, plan, task, tree)
            else:
                keep = None if not task.filtered else region_rows(
                    BatchBlocks(source, task.variant_chunk, None, task.chunk_count), regions)
            if keep is None:
                keep = np.ones(task.num_rows, bool)
            return work(source, task.variant_chunk, self._kept(source, task.variant_chunk, keep))

        return chunk_work

    def _kept(self, source: ChunkSource, chunk: int, keep: np.ndarray) -> np.ndarray:
        """The indexes of the records of variant chunk ``chunk`` that ``keep`` (a mask of its
        records: those the region filter keeps) and the expression and record filters keep."""
        if self.expression is not None and keep.any():
            keep &= self.expression.mask(source, chunk)
        if self.sites and keep.any():
            keep &= self.sites.mask(source, chunk, self.samples)
        return np.flatnonzero(keep)


def _passes(regions: Intervals | None, targets: Intervals | None) -> list[Intervals | None]:
    """The selections to write one after the other: with ``-r``, one per contig in the order
    the regions name them (as bcftools does); otherwise one pass in store order."""
    if regions is None:
        return [targets]
    contigs = dict.fromkeys(region.contig for region in regions.regions)
    return [Intervals(tuple(r for r in regions.regions if r.contig == contig)) for contig in contigs]
