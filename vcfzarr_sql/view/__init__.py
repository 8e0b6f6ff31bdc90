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
from collections.abc import Iterator

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query.selection import SelectedRecords, Selection, SiteFilters
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view.header import header_text
from vcfzarr_sql.view.output import OUTPUT_TYPES, open_output, resolved_type
from vcfzarr_sql.view.records import RecordOptions, chunk_text

__all__ = ["OUTPUT_TYPES", "Selection", "SiteFilters", "view", "vcf_lines", "vcf_texts"]


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
    """The VCF text of ``store`` as UTF-8: the header, then texts of whole record lines (a
    chunk's records in one or more texts).

    The records come from a scan plan of the selection (``-r``/``-t`` its row filter, ``-s``
    its samples) run by the executor (:func:`~vcfzarr_sql.query.execute.run_plan`): only the
    chunks the region index leaves are read, a URL store's in windows, and every read counted.
    """
    selected = SelectedRecords(store, selection)
    samples = selected.samples
    options = RecordOptions(samples, selection.update_counts, genotypes, selection.sites.counts_alleles,
                            selection.sites.trim_alt_alleles)
    # the options are checked (SelectedRecords) before the header is given: a refused one
    # writes nothing
    declared = options.update_counts and (options.subsets or options.counts_alleles)  # even without GT
    yield header_text(store, selected.sample_names, add_counts=declared, genotypes=genotypes).encode()
    for texts in selected.runs(lambda source, chunk, rows: chunk_text(source, chunk, rows, options)):
        yield from texts


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
