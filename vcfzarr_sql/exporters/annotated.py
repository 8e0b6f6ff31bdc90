"""AnnData: the samples x records matrix of ALT dosages, with sample and record annotations.

- ``X`` (samples, records) float32: the ALT alleles each call carries (0, 1, 2; a haploid
  call 0 or 1; any ALT of a multi-allelic record counts), NaN where the call is missing or
  half-missing (``0/.``). float32 with NaN, not int8 with a mask: analysis code (scanpy,
  numpy, scikit-learn imputers) reads missing values as NaN, and a dense float32 X is what
  they take without conversion. ``sparse=True``: X is a CSR matrix (NaN stored explicitly),
  for rare variants, where most calls are 0.
- ``obs``, one row per sample (index: the sample names): the sample statistics over the
  exported records, as ``vcf_zarr_sample_stats`` counts them (``n_hom_ref`` ...
  ``n_missing``, ``n_records``, ``n_called``, ``f_missing``, ``call_rate``, ``het_rate``).
- ``var``, one row per record (index: ``CHROM:POS:REF:ALT``): ``contig``, ``pos``, ``id``,
  ``ref``, ``alt`` (comma-separated), and the ``gt_`` summaries of the exported samples
  (bcftools ``+fill-tags``): ``gt_AN``, ``gt_NS``, ``gt_MAF``, ``gt_F_MISSING``, and, over all
  ALTs together (what X counts), ``gt_AC`` and ``gt_AF``; ``gt_HWE`` and ``gt_ExcHet`` of the
  first ALT.

- ``layers`` (``allele_layers=True``): the calls themselves, cheap beside X (the store's
  int8 a value, a quarter of X's float32 each): ``allele_1``, ``allele_2``, ... the allele
  index of each call's first, second, ... allele as the store holds it (0 REF, 1 the first
  ALT, ...; -1 missing, -2 none: the second of a haploid call), as many layers as the store's
  largest ploidy, and ``phased`` (bool) when the store records phase. Sparse (CSR) with X.

The object is built in memory (AnnData's), then written by the ``anndata`` package: ``.h5ad``
(HDF5) or ``.zarr``, by the name's extension.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.exporters.calls import ChunkCalls
from vcfzarr_sql.exporters.chunks import ExportSummary, selected_calls
from vcfzarr_sql.format import spec
from vcfzarr_sql.format.summaries import CLASSES
from vcfzarr_sql.query.genotype_counts import CallCounts
from vcfzarr_sql.query.genotype_stats import ChunkSummaries
from vcfzarr_sql.query.sample_classes import allele_kinds, class_counts, sample_columns
from vcfzarr_sql.query.selection import SelectedRecords

if TYPE_CHECKING:
    import anndata

#: the ``gt_`` columns of ``var`` taken as they are (one value a record)
_SCALAR_SUMMARIES = ("gt_AN", "gt_NS", "gt_MAF", "gt_F_MISSING")


def dosage(calls: ChunkCalls) -> np.ndarray:
    """(records, samples) float32: the ALT alleles of each call, NaN where it is missing."""
    alts = np.zeros(calls.genotypes.shape[:2], np.int8)
    for k in range(calls.genotypes.shape[2]):
        alts += calls.genotypes[:, :, k] > 0
    values = alts.astype(np.float32)
    values[calls.missing] = np.nan
    return values


def _column(array: pa.Array) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.float64)


def record_table(calls: ChunkCalls) -> pd.DataFrame:
    """The ``var`` rows of the records of ``calls``."""
    alts = [",".join(a for a in row[1:] if a != spec.STR_FILL) or "." for row in calls.alleles]
    chroms = calls.chrom_names()
    counted: list[CallCounts] = []  # one table of the calls for the counts and F_MISSING

    def counts(width: int) -> CallCounts:
        if not counted:
            counted.append(CallCounts(calls.genotypes, width))
        return counted[0]

    summaries = ChunkSummaries(lambda: calls.num_alleles, lambda width: counts(width).alleles,
                               lambda: counts(1).missing(calls.phased), calls.genotypes.shape[1])
    refs = np.asarray(calls.alleles[:, 0], dtype=str)
    columns: dict[str, object] = {
        "contig": chroms.astype(str), "pos": calls.positions.astype(np.int64),
        "id": np.asarray(calls.ids, dtype=str), "ref": refs, "alt": alts,
    }
    columns.update({name: _column(summaries.column(name)) for name in _SCALAR_SUMMARIES})
    an = summaries.an
    ac = summaries.counts.total[:, 1:].sum(axis=1)
    columns["gt_AC"] = ac.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        columns["gt_AF"] = np.where(an > 0, ac / an, np.nan)
    for name in ("gt_HWE", "gt_ExcHet"):
        columns[name] = _column(pc.list_element(summaries.column(name), 0))
    index = [f"{c}:{p}:{r}:{a}" for c, p, r, a in zip(chroms, calls.positions.tolist(), refs, alts)]
    return pd.DataFrame(columns, index=pd.Index(index, dtype=str))


def build_anndata(selected: SelectedRecords, *, sparse: bool = False, allele_layers: bool = False) -> anndata.AnnData:
    """The AnnData of the selection: X built chunk by chunk (dense, or CSR when ``sparse``),
    and the layers of the calls when ``allele_layers``."""
    import anndata
    import scipy.sparse

    names = selected.sample_names
    blocks: dict[str, list[np.ndarray | scipy.sparse.csc_matrix]] = {"X": []}
    tables: list[pd.DataFrame] = []
    counts = np.zeros((len(CLASSES), len(names)), dtype=np.int64)

    def add(name: str, values: np.ndarray) -> None:
        blocks.setdefault(name, []).append(scipy.sparse.csc_matrix(values) if sparse else values)

    for calls in selected_calls(selected):
        add("X", dosage(calls).T)
        if allele_layers:
            for k in range(calls.genotypes.shape[2]):
                add(f"allele_{k + 1}", calls.genotypes[:, :, k].T)
            if calls.phased is not None:
                add("phased", calls.phased.T)
        tables.append(record_table(calls))
        counts += class_counts(calls.genotypes, allele_kinds(calls.alleles))
    records = sum(len(t) for t in tables)

    def matrix(parts: list[np.ndarray | scipy.sparse.csc_matrix]) -> np.ndarray | scipy.sparse.csr_matrix:
        if sparse:
            return (scipy.sparse.hstack(parts, format="csr") if parts
                    else scipy.sparse.csr_matrix((len(names), 0), dtype=np.float32))
        return np.concatenate(parts, axis=1) if parts else np.zeros((len(names), 0), np.float32)

    var = pd.concat(tables) if tables else record_table_empty()
    obs = pd.DataFrame(sample_columns(counts, records), index=pd.Index(names, dtype=str))
    layers = {name: matrix(parts) for name, parts in blocks.items() if name != "X"}
    return anndata.AnnData(X=matrix(blocks["X"]), obs=obs, var=var, layers=layers or None)


def record_table_empty() -> pd.DataFrame:
    """``var`` of no record."""
    return pd.DataFrame({"contig": [], "pos": []}, index=pd.Index([], dtype=str))


def write_anndata(selected: SelectedRecords, path: str, *, sparse: bool = False,
                  allele_layers: bool = False) -> ExportSummary:
    """Write the AnnData of the selection to ``path`` (``.h5ad`` or ``.zarr``)."""
    if not path.endswith((".h5ad", ".zarr")):
        raise QueryError(f"{path}: an AnnData export is named .h5ad (HDF5) or .zarr")
    data = build_anndata(selected, sparse=sparse, allele_layers=allele_layers)
    if path.endswith(".h5ad"):
        data.write_h5ad(path)
    else:
        data.write_zarr(path)
    return ExportSummary((path,), data.n_vars, 0, data.n_obs)
