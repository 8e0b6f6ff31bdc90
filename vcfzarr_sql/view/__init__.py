"""VCF/BCF out of a VCF Zarr store, as ``bcftools view`` writes it: :func:`view`.

>>> from vcfzarr_sql.view import view
>>> view("sample.zarr", "out.vcf.gz", regions="20:1-20000", samples="NA00001",
...      output_type="z")                                                  # doctest: +SKIP

Records and header equal what ``bcftools view`` prints for the original file with the same
options, except that INFO keys and FILTER names come in header order, FILTER names once each
(bcftools keeps each record's order and repeats; the store does not).
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
from vcfzarr_sql.view.output import OUTPUT_TYPES, open_output, resolved_type
from vcfzarr_sql.view.records import RecordOptions, chunk_text
from vcfzarr_sql.view.rows import ExpressionFilter
from vcfzarr_sql.view.select import Intervals, intervals, sample_indexes
from vcfzarr_sql.view.sites import SiteFilters

__all__ = ["OUTPUT_TYPES", "Selection", "SiteFilters", "view", "vcf_lines", "vcf_texts"]


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


def vcf_lines(store: VczStore, selection: Selection = Selection(), *,
              genotypes: bool = True) -> Iterator[str]:
    """The VCF text of ``store`` (an open :class:`~vcfzarr_sql.store.VczStore`): the header
    (one item), then each record's line; ``genotypes=False``: without the FORMAT and sample
    columns (``-G``). :func:`vcf_texts` as lines.
    """
    texts = vcf_texts(store, selection, genotypes=genotypes)
    yield next(texts).decode()
    for text in texts:
        yield from text.decode().splitlines(keepends=True)


def vcf_texts(store: VczStore, selection: Selection = Selection(), *,
              genotypes: bool = True) -> Iterator[bytes]:
    """The VCF text of ``store`` as UTF-8: the header, then the lines of each chunk's records.

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
    options = RecordOptions(samples, selection.update_counts, genotypes, selection.sites.counts_alleles,
                            selection.sites.trim_alt_alleles)
    names = list(store.samples) if samples is None else [store.samples[k] for k in samples]
    counts = options.writes_counts("GT" in store.format_fields)
    added = tuple(n for n in ("AC", "AN") if counts and n not in store.info_fields)
    # the expression and options are checked before the header is given: a refused one
    # writes nothing
    expression = ExpressionFilter.of(store, selection.include, selection.exclude, added)
    selection.sites.check(samples is not None, "GT" in store.format_fields)
    declared = options.update_counts and (options.subsets or options.counts_alleles)  # even without GT
    yield header_text(store, names, add_counts=declared, genotypes=genotypes).encode()
    schema = table_schema(store, "variants")
    for selected in _passes(regions, targets):
        request = ScanRequest("variants", schema, columns=(),
                              filter=None if selected is None else selected.expression(),
                              samples=None if samples is None else np.unique(samples))
        plan = plan_scan(store, request)
        source = scan_source(store, plan)
        yield from run_plan(source, plan, _chunk_texts(source, plan, expression, selection.sites, options))


def _chunk_texts(source: ChunkSource, plan: ScanPlan,
                 expression: ExpressionFilter | None, sites: SiteFilters,
                 options: RecordOptions) -> Callable[[range], bytes]:
    """The executor's work: the text of the records of a task (one variant chunk) that its
    residual filter, ``expression`` and ``sites`` keep (:func:`.records.chunk_text`)."""
    tree = None if plan.filter is None else parse_or_none(plan.filter)

    def work(run: range) -> bytes:
        task = plan.run(run.start, run.stop)
        keep = residual_rows(source, plan, task, tree)
        if keep is None:
            keep = np.ones(task.num_rows, bool)
        if expression is not None and keep.any():
            keep &= expression.mask(source, task.variant_chunk)
        if sites and keep.any():
            keep &= sites.mask(source, task.variant_chunk, options.samples)
        return chunk_text(source, task.variant_chunk, np.flatnonzero(keep), options)

    return work


def _passes(regions: Intervals | None, targets: Intervals | None) -> list[Intervals | None]:
    """The selections to write one after the other: with ``-r``, one per contig in the order
    the regions name them (as bcftools does); otherwise one pass in store order."""
    if regions is None:
        return [targets]
    contigs = dict.fromkeys(region.contig for region in regions.regions)
    return [Intervals(tuple(r for r in regions.regions if r.contig == contig)) for contig in contigs]


def view(store_or_path: VczStore | str | os.PathLike, output: str | os.PathLike | None = None,
         selection: Selection = Selection(), output_type: str | None = None, *,
         header: bool = True, records: bool = True, genotypes: bool = True) -> None:
    """Write the records of a store as VCF (``v``), BGZF VCF (``z``), BCF (``b``) or
    uncompressed BCF (``u``) to ``output`` (None: standard output); an output named
    ``.vcf``, ``.vcf.gz``, ``.vcf.bgz`` or ``.bcf`` is written in the format its name says,
    as bcftools does (:func:`.output.resolved_type`).

    ``header=False``: no header (``-H``; not with BCF); ``records=False``: the header only
    (``-h``); ``genotypes=False``: no FORMAT and sample columns (``-G``).
    """
    from vcfzarr_sql.store import open_store

    path = None if output is None else str(output)
    if not header and resolved_type(path, output_type) in ("b", "u"):
        raise QueryError("BCF output needs the header: -H (no header) cannot write BCF, as in bcftools")
    store = open_store(store_or_path) if isinstance(store_or_path, (str, os.PathLike)) else store_or_path
    texts = vcf_texts(store, selection, genotypes=genotypes)
    text = next(texts).decode()
    with open_output(path, output_type, text if header else "", sys.stdout) as out:
        for block in texts if records else ():
            out.write(block)
