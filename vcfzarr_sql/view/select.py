"""Which records and samples ``view`` writes: bcftools ``-r/-R``, ``-t/-T`` and ``-s/-S``.

``-r`` keeps records overlapping a region (``--regions-overlap 1``, bcftools' default for
``-r``); ``-t`` keeps records whose POS lies in a target (``--targets-overlap 0``). A leading
``^`` in ``-t``/``-s`` excludes instead. Region and target files are bcftools' format: one
``CHROM``, ``CHROM<TAB>POS`` or ``CHROM<TAB>BEG<TAB>END`` per line (1-based, inclusive), or
BED (0-based start) when the name ends in ``.bed``/``.bed.gz``.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.format import spec
from vcfzarr_sql.query.region import Region, parse_regions


@dataclass(frozen=True)
class Intervals:
    """Regions of the contigs; ``by_start``: match POS only (targets), else overlap."""

    regions: tuple[Region, ...]
    by_start: bool = False
    exclude: bool = False

    def mask(self, contig_names: Sequence[str], contigs: np.ndarray, pos: np.ndarray,
             end: np.ndarray) -> np.ndarray:
        """Per record: whether it is selected."""
        keep = np.zeros(len(pos), bool)
        index = {name: k for k, name in enumerate(contig_names)}
        for region in self.regions:
            if region.contig not in index:
                continue
            hit = contigs == index[region.contig]
            last = np.iinfo(np.int64).max if region.end is None else region.end
            if self.by_start:
                hit &= (pos >= region.start) & (pos <= last)
            else:
                hit &= (pos <= last) & (end >= region.start)
            keep |= hit
        return ~keep if self.exclude else keep


def _open_text(path: str):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def read_regions_file(path: str) -> tuple[Region, ...]:
    """The regions of a bcftools ``-R``/``-T`` file (BED when named ``*.bed[.gz]``)."""
    bed = path.removesuffix(".gz").endswith(".bed")
    regions = []
    try:
        with _open_text(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip() or line.startswith(("#", "track", "browser")):
                    continue
                cols = line.rstrip("\n").split("\t")
                try:
                    if len(cols) == 1:
                        regions.append(Region(cols[0], 1, None))
                    elif len(cols) == 2:
                        regions.append(Region(cols[0], int(cols[1]), int(cols[1])))
                    else:
                        start, end = int(cols[1]) + bed, int(cols[2])
                        regions.append(Region(cols[0], start, end))
                except ValueError:
                    raise QueryError(f"{path}: line {number}: expected CHROM, POS or BEG END: {line.strip()!r}") from None
    except OSError as err:
        raise QueryError(f"{path}: {err.strerror}") from None
    return tuple(regions)


def intervals(text: str | None, path: str | None, *, targets: bool) -> Intervals | None:
    """The ``-r``/``-R`` (or ``-t``/``-T``) selection; None when neither is given."""
    option = "-t" if targets else "-r"
    if text is not None and path is not None:
        raise QueryError(f"{option} and {option.upper()} cannot be used together")
    if text is None and path is None:
        return None
    exclude = targets and text is not None and text.startswith("^")
    if path is not None:
        exclude = targets and path.startswith("^")
        regions = read_regions_file(path.removeprefix("^") if targets else path)
    else:
        regions = parse_regions(text.removeprefix("^") if exclude else text, option)
    return Intervals(regions, by_start=targets, exclude=exclude)


def read_samples_file(path: str) -> list[str]:
    """Sample names of a bcftools ``-S`` file: one per line (first column)."""
    try:
        with _open_text(path) as f:
            return [line.split()[0] for line in f if line.strip()]
    except OSError as err:
        raise QueryError(f"{path}: {err.strerror}") from None


def sample_indexes(store_samples: Sequence[str], text: str | None, path: str | None) -> np.ndarray | None:
    """Store indexes of the ``-s``/``-S`` samples in output order (bcftools: as given; with a
    leading ``^``, every other sample in store order); None when neither is given."""
    if text is not None and path is not None:
        raise QueryError("-s and -S cannot be used together")
    if text is None and path is None:
        return None
    source = text if text is not None else path
    exclude = source.startswith("^")
    names = (
        [n for n in text.removeprefix("^").split(",") if n]
        if text is not None else read_samples_file(path.removeprefix("^"))
    )
    position = {name: k for k, name in enumerate(store_samples)}
    unknown = [n for n in names if n not in position]
    if unknown:
        raise QueryError(f"sample {unknown[0]!r} is not in the store")
    if exclude:
        dropped = {position[n] for n in names}
        return np.array([k for k in range(len(store_samples)) if k not in dropped], dtype=np.int64)
    return np.array(list(dict.fromkeys(position[n] for n in names)), dtype=np.int64)


def chunk_mask(store, chunk: int, selections: Sequence[Intervals]) -> np.ndarray:
    """Per record of variant chunk ``chunk``: selected by every one of ``selections``."""
    contigs = store.read_chunk(spec.VARIANT_CONTIG, (chunk,))
    keep = np.ones(len(contigs), bool)
    if not selections:
        return keep
    pos = store.read_chunk(spec.VARIANT_POSITION, (chunk,)).astype(np.int64)
    end = pos + store.variant_length(chunk) - 1
    for selection in selections:
        keep &= selection.mask(store.contigs, contigs, pos, end)
    return keep
