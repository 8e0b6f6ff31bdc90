"""The metadata tables: ``vcf_zarr_samples``, ``vcf_zarr_contigs`` and ``vcf_zarr_fields``.

Small Arrow tables built from a store's metadata (and, for contigs, its region index):

- samples: ``sample_index`` INTEGER, ``sample_id`` VARCHAR
- contigs: ``contig_index`` INTEGER, ``contig`` VARCHAR, ``length`` BIGINT (NULL when the
  header has none), ``num_variants`` BIGINT
- fields: ``category`` ('INFO' or 'FORMAT'), ``name`` (VCF name), ``column_name`` (its column
  in ``vcf_zarr``/``vcf_zarr_calls``), ``number``, ``type``, ``description``, ``array`` (the
  Zarr array), ``dtype``, ``chunks`` INTEGER[], and ``column`` (the same as ``column_name``,
  kept for queries written before: a reserved word, it must be quoted)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from vcfzarr_sql.format import spec
from vcfzarr_sql.query.schema import FORMAT_COLUMN_PREFIX, INFO_COLUMN_PREFIX, column_names
from vcfzarr_sql.store.vcz import VczStore


def samples_table(store: VczStore) -> pa.Table:
    """One row per sample, in store order."""
    return pa.table(
        {
            "sample_index": pa.array(range(store.num_samples), pa.int32()),
            "sample_id": pa.array([str(s) for s in store.samples], pa.string()),
        }
    )


def contigs_table(store: VczStore) -> pa.Table:
    """One row per contig, in store order, with its record count from the region index."""
    index = np.asarray(store.region_index)
    counts = np.bincount(
        index[:, spec.RI_CONTIG].astype(np.int64),
        weights=index[:, spec.RI_COUNT],
        minlength=len(store.contigs),
    ).astype(np.int64)
    lengths = store.contig_lengths
    return pa.table(
        {
            "contig_index": pa.array(range(len(store.contigs)), pa.int32()),
            "contig": pa.array(list(store.contigs), pa.string()),
            "length": pa.array(
                [None] * len(store.contigs)
                if lengths is None
                else [None if n < 0 else int(n) for n in lengths],
                pa.int64(),
            ),
            "num_variants": pa.array(counts[: len(store.contigs)], pa.int64()),
        }
    )


def fields_table(store: VczStore) -> pa.Table:
    """One row per INFO field, then per FORMAT field, in header order."""
    rows = [
        (column_names(fields, prefix)[field.name], field)
        for prefix, fields in ((INFO_COLUMN_PREFIX, store.info_fields),
                               (FORMAT_COLUMN_PREFIX, store.format_fields))
        for field in fields.values()
    ]
    return pa.table(
        {
            "category": pa.array([f.category for _, f in rows], pa.string()),
            "name": pa.array([f.name for _, f in rows], pa.string()),
            "column_name": pa.array([column for column, _ in rows], pa.string()),
            "number": pa.array([f.number for _, f in rows], pa.string()),
            "type": pa.array([f.vcf_type for _, f in rows], pa.string()),
            "description": pa.array([f.description for _, f in rows], pa.string()),
            "array": pa.array([f.array for _, f in rows], pa.string()),
            "dtype": pa.array([np.dtype(f.dtype).str for _, f in rows], pa.string()),
            "chunks": pa.array([list(f.chunks) for _, f in rows], pa.list_(pa.int32())),
            "column": pa.array([column for column, _ in rows], pa.string()),
        }
    )


#: table name of a metadata function -> builder
METADATA_TABLES = {"samples": samples_table, "contigs": contigs_table, "fields": fields_table}
