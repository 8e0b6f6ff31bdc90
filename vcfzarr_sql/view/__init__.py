"""VCF/BCF out of a VCF Zarr store, as ``bcftools view`` writes it: :func:`view`.

>>> from vcfzarr_sql.view import view
>>> view("sample.zarr", "out.vcf.gz", regions="20:1-20000", samples="NA00001",
...      output_type="z")                                                  # doctest: +SKIP

Records and header equal what ``bcftools view`` prints for the original file with the same
options, except that INFO keys come in header order (bcftools keeps each record's order).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query.execute import residual_rows, run_plan, scan_source
from vcfzarr_sql.query.expressions import parse_or_none
from vcfzarr_sql.query.plan import ScanPlan, ScanRequest, plan_scan
from vcfzarr_sql.query.request import table_schema
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view.header import header_text
from vcfzarr_sql.view.output import OUTPUT_TYPES, open_output
from vcfzarr_sql.view.records import RecordOptions, chunk_lines
from vcfzarr_sql.view.rows import ExpressionFilter
from vcfzarr_sql.view.select import Intervals, intervals, sample_indexes
from vcfzarr_sql.view.sites import SiteFilters

__all__ = ["OUTPUT_TYPES", "Selection", "SiteFilters", "view", "vcf_lines"]


@dataclass(frozen=True)
class Selection:
    """What to write: bcftools' ``-r/-R``, ``-t/-T``, ``-s/-S``, ``-i``/``-e``, ``-I``, and
    the record filters of :class:`~vcfzarr_sql.view.sites.SiteFilters`."""

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


def vcf_lines(store: VczStore, selection: Selection = Selection()) -> Iterator[str]:
    """The VCF text of ``store`` (an open :class:`~vcfzarr_sql.store.VczStore`), header first.

    The records come from a scan plan of the selection (``-r``/``-t`` its row filter, ``-s``
    its samples) run by the executor (:func:`~vcfzarr_sql.query.execute.run_plan`): only the
    chunks the region index leaves are read, a URL store's in windows, and every read counted.
    """
    regions = intervals(selection.regions, selection.regions_file, targets=False)
    targets = intervals(selection.targets, selection.targets_file, targets=True)
    if regions is not None and targets is not None:
        raise QueryError("-r/-R and -t/-T cannot be used together (as in bcftools)")
    if selection.include is not None and selection.exclude is not None:
        raise QueryError("-i and -e cannot be used together")
    samples = sample_indexes(list(store.samples), selection.samples, selection.samples_file)
    options = RecordOptions(samples, selection.update_counts)
    names = list(store.samples) if samples is None else [store.samples[k] for k in samples]
    counts = options.subsets and options.update_counts and "GT" in store.format_fields
    added = tuple(n for n in ("AC", "AN") if counts and n not in store.info_fields)
    expression = ExpressionFilter.of(store, selection.include, selection.exclude, added)
    selection.sites.check(samples is not None, "GT" in store.format_fields)
    yield header_text(store, names, add_counts=counts)
    schema = table_schema(store, "variants")
    for selected in _passes(regions, targets):
        request = ScanRequest("variants", schema, columns=(),
                              filter=None if selected is None else selected.expression(),
                              samples=None if samples is None else np.unique(samples))
        plan = plan_scan(store, request)
        source = scan_source(store, plan)
        work = _chunk_lines(source, plan, expression, selection.sites, options)
        for lines in run_plan(source, plan, work):
            yield from lines


def _chunk_lines(source: ChunkSource, plan: ScanPlan,
                 expression: ExpressionFilter | None, sites: SiteFilters,
                 options: RecordOptions) -> Callable[[range], Iterator[str]]:
    """The executor's work: the lines of the records of a task (one variant chunk) that its
    residual filter, ``expression`` and ``sites`` keep (its chunks read now, the lines joined as they
    are taken: :func:`.records.chunk_lines`)."""
    tree = None if plan.filter is None else parse_or_none(plan.filter)

    def work(run: range) -> Iterator[str]:
        task = plan.run(run.start, run.stop)
        keep = residual_rows(source, plan, task, tree)
        if keep is None:
            keep = np.ones(task.num_rows, bool)
        if expression is not None and keep.any():
            keep &= expression.mask(source, task.variant_chunk)
        if sites and keep.any():
            keep &= sites.mask(source, task.variant_chunk, options.samples)
        return chunk_lines(source, task.variant_chunk, np.flatnonzero(keep), options)

    return work


def _passes(regions: Intervals | None, targets: Intervals | None) -> list[Intervals | None]:
    """The selections to write one after the other: with ``-r``, one per contig in the order
    the regions name them (as bcftools does); otherwise one pass in store order."""
    if regions is None:
        return [targets]
    contigs = dict.fromkeys(region.contig for region in regions.regions)
    return [Intervals(tuple(r for r in regions.regions if r.contig == contig)) for contig in contigs]


def view(store_or_path: VczStore | str | os.PathLike, output: str | os.PathLike | None = None,
         selection: Selection = Selection(), output_type: str = "v") -> None:
    """Write the records of a store as VCF (``v``), BGZF VCF (``z``), BCF (``b``) or
    uncompressed BCF (``u``) to ``output`` (None: standard output)."""
    from vcfzarr_sql.store import open_store

    store = open_store(store_or_path) if isinstance(store_or_path, (str, os.PathLike)) else store_or_path
    lines = vcf_lines(store, selection)
    header = next(lines)
    with open_output(None if output is None else str(output), output_type, header, sys.stdout) as out:
        for line in lines:
            out.write(line)
