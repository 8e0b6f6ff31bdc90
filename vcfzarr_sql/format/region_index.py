"""The VCF Zarr ``region_index``: one row per (variant chunk, contig) pair.

Columns, in the spec's order (see :mod:`vcfzarr_sql.format.spec`, ``RI_*``): chunk index, contig
index, first POS, last POS, maximum END (``POS + variant_length - 1``), number of records.
Written by the converter, rebuilt in memory by the reader when a store has none, and checked
by the validator: all three use :func:`chunk_region_index`.
"""

from __future__ import annotations

import numpy as np

from vcfzarr_sql.format import spec


def chunk_region_index(
    chunk_index: int,
    contig: np.ndarray,
    position: np.ndarray,
    length: np.ndarray,
    dtype: np.dtype | type = np.int64,
) -> np.ndarray:
    """Region index rows of one variant chunk, one per distinct contig id (in id order).

    Each row covers every record of its contig in the chunk, also when an unsorted file
    alternates between contigs inside the chunk: first POS, last POS, maximum END, count.

    >>> chunk_region_index(2, np.array([1, 1, 2]), np.array([1234567, 1235237, 10]),
    ...                    np.array([1, 1, 2])).tolist()
    [[2, 1, 1234567, 1235237, 1235237, 2], [2, 2, 10, 10, 11, 1]]
    >>> chunk_region_index(0, np.array([2, 1, 2]), np.array([50, 7, 20]),
    ...                    np.array([1, 1, 40])).tolist()
    [[0, 1, 7, 7, 7, 1], [0, 2, 20, 50, 59, 2]]
    """
    n = len(contig)
    if n == 0:
        return np.empty((0, spec.REGION_INDEX_FIELDS), dtype=dtype)
    order = np.argsort(np.asarray(contig, dtype=np.int64), kind="stable")
    contig = np.asarray(contig, dtype=np.int64)[order]
    position = np.asarray(position, dtype=np.int64)[order]
    end = position + np.asarray(length, dtype=np.int64)[order] - 1
    starts = np.flatnonzero(np.r_[True, contig[1:] != contig[:-1]])
    stops = np.r_[starts[1:], n]
    rows = np.empty((len(starts), spec.REGION_INDEX_FIELDS), dtype=np.int64)
    rows[:, spec.RI_CHUNK] = chunk_index
    rows[:, spec.RI_CONTIG] = contig[starts]
    rows[:, spec.RI_START] = np.minimum.reduceat(position, starts)
    rows[:, spec.RI_END] = np.maximum.reduceat(position, starts)
    rows[:, spec.RI_MAX_END] = np.maximum.reduceat(end, starts)
    rows[:, spec.RI_COUNT] = stops - starts
    return rows.astype(dtype, copy=False)


def region_index(
    contig: np.ndarray,
    position: np.ndarray,
    length: np.ndarray,
    chunk_size: int,
    dtype: np.dtype | type = np.int64,
) -> np.ndarray:
    """The whole region index of arrays held in memory, chunked by ``chunk_size`` variants.

    >>> region_index(np.array([0, 0, 1, 1, 1, 1, 1, 1, 2]),
    ...              np.array([111, 112, 14370, 17330, 1110696, 1230237, 1234567, 1235237, 10]),
    ...              np.array([1, 1, 1, 1, 1, 1, 1, 1, 2]), chunk_size=3).tolist()
    ... # doctest: +NORMALIZE_WHITESPACE
    [[0, 0, 111, 112, 112, 2], [0, 1, 14370, 14370, 14370, 1], [1, 1, 17330, 1230237, 1230237, 3],
     [2, 1, 1234567, 1235237, 1235237, 2], [2, 2, 10, 10, 11, 1]]
    """
    parts = [
        chunk_region_index(
            k // chunk_size,
            contig[k : k + chunk_size],
            position[k : k + chunk_size],
            length[k : k + chunk_size],
            dtype,
        )
        for k in range(0, len(contig), chunk_size)
    ]
    if not parts:
        return np.empty((0, spec.REGION_INDEX_FIELDS), dtype=dtype)
    return np.concatenate(parts)


def chunk_bounds(index: np.ndarray, num_chunks: int) -> list[tuple[int, int, int]]:
    """(record count, first POS, last POS) of each of ``num_chunks`` variant chunks by the
    region ``index`` (the rows of a chunk's contigs together; a chunk without rows: count 0).

    >>> chunk_bounds(np.array([[0, 0, 111, 112, 112, 2], [0, 1, 14370, 14370, 14370, 1],
    ...                        [1, 1, 17330, 1230237, 1230237, 3]]), 2)
    [(3, 111, 14370), (3, 17330, 1230237)]
    """
    chunk = index[:, spec.RI_CHUNK]
    n = max(num_chunks, 1)
    count = np.zeros(n, dtype=np.int64)
    np.add.at(count, chunk, index[:, spec.RI_COUNT])
    start = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(start, chunk, index[:, spec.RI_START])
    end = np.full(n, np.iinfo(np.int64).min)
    np.maximum.at(end, chunk, index[:, spec.RI_END])
    return list(zip(count.tolist(), start.tolist(), end.tolist()))
