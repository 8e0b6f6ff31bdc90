"""Cut an input into partitions that worker processes parse in parallel.

With one worker the whole file is one partition (read sequentially; encoding is still
parallel). With more, a VCF text file the fast path may read (:mod:`.reader`) is cut into
spans of about equal size (:func:`.text.spans`; no index needed); otherwise, with a .tbi/.csi
index, each contig with records is cut into POS ranges of about equal compressed size, ordered
as the contigs are in the file, and without one the whole file is one partition. Either way,
concatenating the partitions gives the records in file order.
"""

from __future__ import annotations

from pathlib import Path

from vcfzarr_sql.converter.index import IndexedContig, index_path, read_index
from vcfzarr_sql.converter.reader import Partition
from vcfzarr_sql.converter.text import NotPlainText, gt_only_start, spans, text_kind

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


def _text_spans(path: str | Path, workers: int) -> list[Partition] | None:
    kind = text_kind(str(path))
    try:
        if kind is None or not gt_only_start(str(path), kind):
            return None
    except NotPlainText:
        return None
    parts = max(1, min(PARTITIONS_PER_WORKER * workers, Path(path).stat().st_size // MIN_PARTITION_BYTES))
    found = spans(str(path), kind, parts)
    return None if found is None else [Partition(k, span=span) for k, span in enumerate(found)]


def plan_partitions(path: str | Path, workers: int, header_contigs: list[str], *,
                    text: bool = False, count: bool = True) -> tuple[list[Partition], int | None]:
    """The partitions of ``path`` and, when its index says (with any number of workers, when
    ``count``), its number of records: the progress bar's total. ``text``: the fast path may
    read the file (:func:`.reader.fast_path_header`), so a text file may be cut into spans.
    One worker and no count: one partition, and the index is not read (its bins cost 0.25 CPU-s
    for 50,000 records spread over a chromosome)."""
    if workers == 1 and not count:
        return [Partition(0)], None
    index = index_path(path)
    contigs = None
    if index is not None:
        try:
            contigs = read_index(index, header_contigs)
        except (ValueError, OSError, EOFError):
            pass
    records = None
    if contigs is not None:
        counts = [c.num_records for c in contigs if c.num_records is not None]
        records = sum(counts) if len(counts) == len(contigs) else None
    if text and workers > 1:
        cut = _text_spans(path, workers)
        if cut is not None:
            return cut, records
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
