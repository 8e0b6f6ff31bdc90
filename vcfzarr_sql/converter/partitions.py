"""Cut an input into partitions that worker processes parse in parallel.

With one worker, or without a .tbi/.csi index, the whole file is one partition (read
sequentially; encoding is still parallel). With an index, each contig with records is cut
into POS ranges of about equal compressed size, ordered as the contigs are in the file, so
concatenating the partitions gives the records in file order.
"""

from __future__ import annotations

from pathlib import Path

from vcfzarr_sql.converter.index import IndexedContig, index_path, read_index
from vcfzarr_sql.converter.reader import Partition

#: Partitions per worker: small enough pieces to balance the load.
PARTITIONS_PER_WORKER = 4
#: Do not cut below this much compressed data per partition.
MIN_PARTITION_BYTES = 1 << 20


def _region(contig: str, start: int | None, stop: int | None) -> str:
    name = f"{{{contig}}}" if ":" in contig else contig
    if start is None and stop is None:
        return name
    return f"{name}:{start or 1}-{'' if stop is None else stop - 1}"


def _cuts(contig: IndexedContig, parts: int) -> list[int]:
    """POS values at which to cut ``contig`` into ``parts`` pieces of about equal size."""
    if parts <= 1 or len(contig.leaves) < 2:
        return []
    span = contig.last_offset - contig.first_offset
    cuts: list[int] = []
    k = 1
    for position, offset in contig.leaves:
        if k < parts and offset - contig.first_offset >= span * k / parts and position > 0:
            if not cuts or position > cuts[-1]:
                cuts.append(position + 1)  # leaf bins start at 0-based positions
            k += 1
    return cuts


def plan_partitions(path: str | Path, workers: int, header_contigs: list[str]) -> tuple[list[Partition], int | None]:
    """The partitions of ``path`` and, when its index says (with any number of workers), its
    number of records: the progress bar's total."""
    index = index_path(path)
    if index is None:
        return [Partition(0)], None
    try:
        contigs = read_index(index, header_contigs)
    except (ValueError, OSError, EOFError):
        return [Partition(0)], None
    counts = [c.num_records for c in contigs if c.num_records is not None]
    records = sum(counts) if len(counts) == len(contigs) else None
    if not contigs or workers == 1:
        return [Partition(0)], records
    sizes = [max(1, (c.last_offset - c.first_offset) >> 16) for c in contigs]
    total = sum(sizes)
    target = max(1, min(PARTITIONS_PER_WORKER * workers, total // MIN_PARTITION_BYTES))
    partitions: list[Partition] = []
    for contig, size in zip(contigs, sizes):
        bounds = [None, *_cuts(contig, round(target * size / total)), None]
        for start, stop in zip(bounds[:-1], bounds[1:]):
            partitions.append(Partition(len(partitions), _region(contig.name, start, stop), start, stop))
    return partitions, records
