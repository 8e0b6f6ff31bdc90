"""A selection of a store for the analysis tools: PLINK 1 ``.bed``, PLINK 2 ``.pgen``, BGEN
1.2 and AnnData: :func:`export`, :func:`to_anndata`.

>>> from vcfzarr_sql.exporters import export
>>> export("cohort.zarr", "out/cohort", "pgen", Selection(regions="20:1-2000000"))  # doctest: +SKIP

The records and samples are those ``view`` writes with the same selection
(:class:`~vcfzarr_sql.query.selection.SelectedRecords`, run by the one executor): chunk by
chunk, so an export's memory is a few chunks whatever the store's size (AnnData's in-memory
object aside). ``pgenlib`` (.pgen) and ``anndata`` are the ``export`` extra, imported only
here, when their format is asked for.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.exporters.chunks import ExportSummary, Writer, reuse_freed_memory, selected_calls
from vcfzarr_sql.query.selection import SelectedRecords, Selection
from vcfzarr_sql.store.vcz import VczStore

if TYPE_CHECKING:
    import anndata

__all__ = ["BGEN_COMPRESSIONS", "FORMATS", "ExportSummary", "Selection", "export", "to_anndata"]

#: a BGEN's compressions (vcfzarr_sql.exporters.bgen.COMPRESSIONS, named here so none is imported)
BGEN_COMPRESSIONS = ("zlib", "zstd")
#: format name -> what it writes
FORMATS = {
    "plink": "OUT.bed, OUT.bim, OUT.fam (PLINK 1 binary; records with more than one ALT left out)",
    "pgen": "OUT.pgen, OUT.pvar, OUT.psam (PLINK 2; multi-allelic records and phase kept)",
    "bgen": "OUT.bgen (BGEN 1.2, layout 2, zlib or zstd) and OUT.sample",
    "anndata": "OUT.h5ad or OUT.zarr (AnnData: samples x records, X the ALT dosage)",
}


def _store(store_or_path: VczStore | str | os.PathLike) -> VczStore:
    from vcfzarr_sql.store import open_store

    return open_store(store_or_path) if isinstance(store_or_path, (str, os.PathLike)) else store_or_path


def export(store_or_path: VczStore | str | os.PathLike, out: str | os.PathLike, format: str,
           selection: Selection = Selection(), *, sparse: bool = False,
           compression: str | None = None, allele_layers: bool = False) -> ExportSummary:
    """Write the selected records and samples of a store as ``format`` (one of
    :data:`FORMATS`) to ``out``: a prefix (``plink``, ``pgen``, ``bgen``: the format's
    suffixes added) or a file named ``.h5ad`` or ``.zarr`` (``anndata``; ``sparse``: X as a
    CSR matrix; ``allele_layers``: the calls as layers, :mod:`.annotated`); ``compression``:
    a BGEN's, ``zlib`` (the default) or ``zstd``. With glibc, the process's ``malloc`` keeps
    freed memory (up to 128 MB) for reuse from then on (:func:`.chunks.reuse_freed_memory`)."""
    if format not in FORMATS:
        raise QueryError(f"unknown export format {format!r} (one of {', '.join(FORMATS)})")
    if compression is not None and (format != "bgen" or compression not in BGEN_COMPRESSIONS):
        raise QueryError(f"compression {compression!r}: a bgen export's is one of {', '.join(BGEN_COMPRESSIONS)}"
                         if format == "bgen" else f"compression applies to a bgen export, not {format}")
    if allele_layers and format != "anndata":
        raise QueryError(f"allele layers are an anndata export's, not {format}'s")
    store = _store(store_or_path)
    selected = SelectedRecords(store, selection)
    path = str(out)
    reuse_freed_memory()
    if format == "anndata":
        from vcfzarr_sql.exporters.annotated import write_anndata

        return write_anndata(selected, path, sparse=sparse, allele_layers=allele_layers)
    calls = selected_calls(selected)
    writer = _writer(format, path, selected, compression or "zlib")
    try:
        for chunk in calls:
            writer.write(chunk)
    finally:
        writer.close()
    return ExportSummary(tuple(path + s for s in _SUFFIXES[format]), writer.written,
                         writer.left_out, len(selected.sample_names))


_SUFFIXES = {"plink": (".bed", ".bim", ".fam"), "pgen": (".pgen", ".pvar", ".psam"),
             "bgen": (".bgen", ".sample")}


def _writer(format: str, path: str, selected: SelectedRecords, compression: str) -> Writer:
    if format == "plink":
        from vcfzarr_sql.exporters.plink import BedWriter

        return BedWriter(path, selected.sample_names)
    if format == "pgen":
        from vcfzarr_sql.exporters.pgen import PgenFileWriter

        return PgenFileWriter(path, selected)
    from vcfzarr_sql.exporters.bgen import BgenWriter

    return BgenWriter(path, selected.sample_names, compression)


def to_anndata(store_or_path: VczStore | str | os.PathLike, selection: Selection = Selection(),
               *, sparse: bool = False, allele_layers: bool = False) -> anndata.AnnData:
    """The selected records and samples as an in-memory :class:`anndata.AnnData`: ``obs``
    the samples, ``var`` the records, ``X`` the ALT dosage, the calls as layers when
    ``allele_layers`` (:mod:`.annotated`)."""
    from vcfzarr_sql.exporters.annotated import build_anndata

    return build_anndata(SelectedRecords(_store(store_or_path), selection), sparse=sparse,
                         allele_layers=allele_layers)
