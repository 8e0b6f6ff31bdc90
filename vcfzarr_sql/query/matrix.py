"""A variants x samples genotype matrix as numpy: what a GWAS, PCA or ML step reads next.

>>> import vcfzarr_sql, pyarrow.compute as pc
>>> m = vcfzarr_sql.genotype_matrix("cohort.vcz", region="1:1-5000000", samples=["S1", "S2"],
...                                 where=pc.field("qual") > 30)            # doctest: +SKIP
>>> m.values.shape, m.variants.column_names, m.samples                       # doctest: +SKIP
((812, 2), ['contig', 'pos', 'id', 'ref', 'alt'], ['S1', 'S2'])

The rows are the records a scan of the ``variants`` table with that region, samples and
filter returns (the same plan, pruned by the region index, run by the one executor,
:func:`~vcfzarr_sql.query.execute.run_plan`); for each run of chunks the genotype chunks are
read straight into numpy and the kept rows taken: no Arrow list column and no Python object
per record or call. ``values`` is

- ``"dosage"``: int8 (variants, samples), the number of non-reference alleles of each call
  (0, 1, 2 for a diploid call; of every allele for a multi-allelic record), or
  :data:`MISSING_DOSAGE` (-9, as pgenlib's ``read_range``) when any allele is missing; read
  from the packed genotypes (2 bits per call, :mod:`vcfzarr_sql.format.packed_genotypes`)
  when the store has them;
- ``"genotypes"``: (variants, samples, ploidy), the allele indexes as stored (int8 unless a
  record has more than 127 alleles; -1 missing, -2 the padding of a call of lower ploidy), as
  ``bcftools query -f '[%GT]'`` lists them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.kernels.dosage import EXPAND
from vcfzarr_sql.query import arrays, decode
from vcfzarr_sql.query.execute import (
    genotype_chunks_per_run,
    region_rows,
    residual_rows,
    run_plan,
    scan_source,
)
from vcfzarr_sql.query.expressions import parse_or_none
from vcfzarr_sql.query.packed_dosage import (
    MISSING_DOSAGE,
    PackedColumns,
    PackedPart,
    PackedRows,
    packed_codes,
    packed_exact,
    packed_matrix,
    packed_rows,
)
from vcfzarr_sql.query.plan import ScanPlan, batch_runs, plan_regions, plan_scan
from vcfzarr_sql.query.prefetch import PREFETCH_DEPTH
from vcfzarr_sql.query.region import parse_regions, region_set
from vcfzarr_sql.query.region_set import RegionSet
from vcfzarr_sql.query.request import sample_selection, scan_request, table_schema
from vcfzarr_sql.query.schema import GT
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.packed_arrays import packed_stored
from vcfzarr_sql.store.vcz import VczStore

__all__ = ["MISSING_DOSAGE", "VALUES", "GenotypeMatrix", "genotype_matrix"]

#: what :func:`genotype_matrix` can put in ``values``
VALUES = ("dosage", "genotypes")
#: the variant columns :func:`genotype_matrix` returns unless told otherwise
DEFAULT_COLUMNS = ("contig", "pos", "id", "ref", "alt")


@dataclass(frozen=True)
class GenotypeMatrix:
    """Rows: the records of :attr:`variants`; columns: :attr:`samples`, in store order."""

    #: one row per record: the requested variant columns (the ``variants`` table's types)
    variants: pa.Table
    #: the sample ids of the columns
    samples: list[str]
    #: (variants, samples) dosages (int8), or (variants, samples, ploidy) allele indexes (the
    #: store's integer type: int8 unless a record has more than 127 alleles)
    values: np.ndarray


def genotype_matrix(
    store: VczStore | str | os.PathLike,
    *,
    region: str | None = None,
    samples: Sequence[str] | str | None = None,
    where: pc.Expression | None = None,
    columns: Sequence[str] = DEFAULT_COLUMNS,
    values: str = "dosage",
) -> GenotypeMatrix:
    """The genotypes of the records overlapping ``region`` (a bcftools ``-r`` string) that
    satisfy ``where`` (a pyarrow expression over the ``variants`` table's columns, as
    ``dataset().scanner(filter=...)`` takes: ``pc.field("info_AF") > 0.01``), for ``samples``
    (None: all), as a :class:`GenotypeMatrix` of ``values`` (:data:`VALUES`) with the
    variant ``columns`` beside it.
    """
    if values not in VALUES:
        raise QueryError(f"values: expected one of {', '.join(VALUES)}, got {values!r}")
    if isinstance(store, (str, os.PathLike)):
        from vcfzarr_sql.store import open_store

        store = open_store(store)
    if GT not in store.format_fields:
        raise QueryError(f"{store.path}: no genotypes (FORMAT/GT) for a genotype matrix")
    plan, regions = _plan(store, region, samples, where, columns)
    source = scan_source(store, plan)
    tree = None if where is None else parse_or_none(plan.filter)
    genotype_array = store.format_fields[GT].array
    names = list(plan.schema.names)
    selected = plan.sample_groups[0][1]
    sample_ids: list[str] = (store.samples if selected is None else store.samples[selected]).tolist()
    packed = ((PackedColumns.every(store.num_samples, store.samples_chunk_size) if selected is None
               else PackedColumns.of(selected, store.samples_chunk_size))
              if values == "dosage" and packed_stored(store) else None)
    # (the numpy way costs ~0.5 ns a call: the work the compiled expansion saves)
    expand = None if packed is None else EXPAND.compiled(work=int(plan.rows.sum()) * len(sample_ids) // 2)

    def work(run: range) -> tuple[pa.RecordBatch, np.ndarray | PackedPart]:
        task = plan.run(run.start, run.stop)
        blocks = BatchBlocks(source, task.variant_chunk, task.samples, task.chunk_count)
        keep = (None if not task.filtered else residual_rows(source, plan, task, tree) if regions is None
                else region_rows(blocks, regions))
        keep = None if keep is not None and keep.all() else keep  # (no copy to keep every record)
        batch = (decode.decode_variants(source, task.variant_chunk, tuple(names), task.samples, task.chunk_count)
                 if names else arrays.rows_only(task.num_rows))
        if keep is not None:
            batch = batch.filter(arrays.elements_array(keep, None, pa.bool_()))
        if packed is not None:
            return batch.select(names), _packed_part(blocks, genotype_array, packed, keep, expand is not None)
        genotypes = blocks.read(genotype_array)
        genotypes = genotypes if keep is None else genotypes[keep]
        return batch.select(names), genotypes if values == "genotypes" else dosage(genotypes)

    # Dosages from the packed genotypes without ``where``: runs of consecutive chunks are read
    # as one (one array, no copy to join them, for most regions), of at most
    # RUN_GENOTYPE_BYTES of genotypes; their packed bytes are looked up at once, into the
    # matrix (:func:`~.packed_dosage.packed_matrix`). Decoded genotypes: a chunk a run,
    # decoded in threads (joined, they measured 2x the CPU at 20,000 samples: two copies of
    # much larger blocks).
    genotypes = store.array_info(genotype_array)
    length = genotype_chunks_per_run(store, genotype_array) if where is None and packed is not None else 1
    ahead = PREFETCH_DEPTH if len(plan) > length else 0  # (one run: nothing to overlap, threads cost CPU)
    parts = list(run_plan(source, plan, work, cut=lambda pieces: batch_runs(plan, pieces, lambda: length),
                          ahead=ahead))
    variants = pa.Table.from_batches([b for b, _ in parts], schema=plan.schema)
    if packed is not None:
        matrix = packed_matrix([v for _, v in parts if isinstance(v, PackedPart)], packed, len(sample_ids), expand)
        return GenotypeMatrix(variants=variants, samples=sample_ids, values=matrix)
    decoded = [v for _, v in parts if isinstance(v, np.ndarray)]
    empty = (np.empty((0, len(sample_ids), genotypes.shape[-1]), genotypes.dtype) if values == "genotypes"
             else np.empty((0, len(sample_ids)), np.int8))
    return GenotypeMatrix(
        variants=variants,
        samples=sample_ids,
        values=empty if not decoded else decoded[0] if len(decoded) == 1 else np.concatenate(decoded),
    )


def _plan(
    store: VczStore, region: str | None, samples: Sequence[str] | str | None, where: pc.Expression | None,
    columns: Sequence[str],
) -> tuple[ScanPlan, RegionSet | None]:
    """The plan of the matrix's records, and the region set that is its only filter when
    there is no ``where`` (the common case: planned straight from the region index, the
    residual of its edge chunks computed on numpy, :func:`~.execute.region_rows`), else None."""
    if where is not None:
        request = scan_request(store, "variants", columns=columns, filter=where, region=region, samples=samples)
        return plan_scan(store, request), None
    regions = None if region is None else region_set(parse_regions(region))
    indexes, _ = sample_selection(store, samples)
    return plan_regions(store, table_schema(store, "variants"), columns, regions, indexes), regions


def _packed_part(blocks: BatchBlocks, genotype_array: str, packed: PackedColumns,
                 keep: np.ndarray | None, compiled: bool) -> PackedPart:
    """The batch's kept rows as packed bytes (as the ``compiled`` expansion reads them, else
    gathered for numpy's look-up), the records they do not hold exactly decoded."""
    exact = packed_exact(blocks, keep)
    rows = np.flatnonzero(~exact)
    codes: np.ndarray | None = None
    chunks: tuple[PackedRows, ...] = ()
    if len(rows) < len(exact):  # (else nothing to look up: every record is decoded)
        if compiled:
            chunks = packed_rows(blocks, packed, keep)
        else:
            codes = packed_codes(blocks, packed, keep)
    if not len(rows):
        return PackedPart(len(exact), rows, np.empty((0, blocks.num_samples), np.int8), codes, chunks)
    genotypes = blocks.read(genotype_array)
    kept = genotypes if keep is None else genotypes[keep]
    return PackedPart(len(exact), rows, dosage(kept[rows]), codes, chunks)


def dosage(genotypes: np.ndarray) -> np.ndarray:
    """The non-reference alleles of each call of ``genotypes`` ((..., ploidy) integers), or
    :data:`MISSING_DOSAGE` where an allele is missing (-1); padding (-2) is no allele.

    >>> dosage(np.array([[[0, 0], [0, 1], [2, 1], [-1, 0], [1, -2], [0, -2]]], np.int8))
    array([[ 0,  1,  2, -9,  1,  0]], dtype=int8)
    """
    if genotypes.shape[-1] == 2 and genotypes.dtype == np.int8:  # one look-up per call: a uint16
        return np.take(_diploid_dosages(), np.ascontiguousarray(genotypes).view(np.uint16)[..., 0])
    out = np.count_nonzero(genotypes > 0, axis=-1).astype(np.int8)
    out[(genotypes == -1).any(axis=-1)] = MISSING_DOSAGE
    return out


@cache
def _diploid_dosages() -> np.ndarray:
    """The dosage of every pair of int8 alleles, indexed by the pair's bytes as a uint16."""
    pairs = np.arange(1 << 16, dtype=np.uint16).view(np.int8).reshape(-1, 2)
    out = (pairs > 0).sum(axis=1).astype(np.int8)
    out[(pairs == -1).any(axis=1)] = MISSING_DOSAGE
    return out
