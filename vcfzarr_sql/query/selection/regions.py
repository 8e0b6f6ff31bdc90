"""Which records and samples ``view`` writes: bcftools ``-r/-R``, ``-t/-T`` and ``-s/-S``.

``-r`` keeps records overlapping a region (``--regions-overlap 1``, bcftools' default for
``-r``): the scan's region filter; ``-t`` keeps records whose POS lies in a target
(``--targets-overlap 0``). Both are one region set (:mod:`vcfzarr_sql.query.region_set`), a
row filter of the scan's plan. A leading
``^`` in ``-t``/``-s`` excludes instead. Region and target files are bcftools' format: one
``CHROM``, ``CHROM<TAB>POS`` or ``CHROM<TAB>BEG<TAB>END`` per line (1-based, inclusive), or
BED (0-based start) when the name ends in ``.bed``/``.bed.gz``.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import numpy as np

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query.region import Region, parse_regions, region_set

if TYPE_CHECKING:
    import pyarrow.compute as pc

    from vcfzarr_sql.query.region_set import RegionSet


@dataclass(frozen=True)
class Intervals:
    """Regions of the contigs; ``by_start``: match POS only (targets), else overlap."""

    regions: tuple[Region, ...]
    by_start: bool = False
    exclude: bool = False

    def region_set(self) -> RegionSet:
        """The regions as one region set (:mod:`vcfzarr_sql.query.region_set`): overlap for
        ``-r``, POS within for ``-t`` (not negated: see :meth:`expression`)."""
        return region_set(self.regions, targets=self.by_start)

    def expression(self) -> pc.Expression:
        """The row filter: the region set's (:meth:`region_set`); negated for ``-t ^...``."""
        matches = self.region_set().expression()
        return ~matches if self.exclude else matches


def _open_text(path: str) -> IO[str]:
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
    if text is not None:
        exclude = targets and text.startswith("^")
        regions = parse_regions(text.removeprefix("^") if exclude else text, option)
    elif path is not None:
        exclude = targets and path.startswith("^")
        regions = read_regions_file(path.removeprefix("^") if targets else path)
    else:
        return None
    return Intervals(regions, by_start=targets, exclude=exclude)


def refuse_repeated(samples: Sequence[str], option: str) -> None:
    """QueryError naming the first of ``samples`` listed twice: a VCF header names each
    sample once (``bcftools view -s A,A`` fails: 'Duplicate sample name').

    >>> refuse_repeated(["A", "B", "A"], "-s")
    Traceback (most recent call last):
    vcfzarr_sql.errors.QueryError: -s: sample 'A' is listed twice (a VCF names each sample once)
    """
    seen: set[str] = set()
    for name in samples:
        if name in seen:
            raise QueryError(f"{option}: sample {name!r} is listed twice (a VCF names each sample once)")
        seen.add(name)


def read_samples_file(path: str) -> list[str]:
    """Sample names of a bcftools ``-S`` file: one per line (first column)."""
    try:
        with _open_text(path) as f:
            return [line.split()[0] for line in f if line.strip()]
    except OSError as err:
        raise QueryError(f"{path}: {err.strerror}") from None


def sample_indexes(store_samples: Sequence[str], text: str | None, path: str | None,
                   *, repeats: bool = True) -> np.ndarray | None:
    """Store indexes of the ``-s``/``-S`` samples in output order (bcftools: as given; with a
    leading ``^``, every other sample in store order); None when neither is given. A sample
    listed twice counts once, or (not ``repeats``) is a QueryError, as in ``bcftools view``."""
    if text is not None and path is not None:
        raise QueryError("-s and -S cannot be used together")
    if text is not None:
        exclude = text.startswith("^")
        names = [n for n in text.removeprefix("^").split(",") if n]
    elif path is not None:
        exclude = path.startswith("^")
        names = read_samples_file(path.removeprefix("^"))
    else:
        return None
    position = {name: k for k, name in enumerate(store_samples)}
    unknown = [n for n in names if n not in position]
    if unknown:
        raise QueryError(f"sample {unknown[0]!r} is not in the store")
    if exclude:
        dropped = {position[n] for n in names}
        return np.array([k for k in range(len(store_samples)) if k not in dropped], dtype=np.int64)
    if not repeats:
        refuse_repeated(names, "-S" if text is None else "-s")
    return np.array(list(dict.fromkeys(position[n] for n in names)), dtype=np.int64)
