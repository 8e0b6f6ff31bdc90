"""Quality control of a call set: the numbers of ``bcftools stats`` (:func:`stats_lines`,
:func:`section_table`) and the plots of ``plot-vcfstats`` (:mod:`.report`, with the
``report`` extra: matplotlib).

>>> from vcfzarr_sql.qc import stats_lines
>>> from vcfzarr_sql.view import Selection
>>> print("".join(stats_lines("x.zarr", Selection(samples="-"))))   # doctest: +SKIP

A client of :mod:`vcfzarr_sql.query` (the plan and the executor) and of ``view``'s selection
(``-r/-R``, ``-t/-T``, ``-s/-S``, ``-i/-e``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import pyarrow as pa

from vcfzarr_sql.qc.collect import Counted, collect
from vcfzarr_sql.qc.text import SECTIONS, section_rows, stats_text
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view import Selection

__all__ = ["SECTIONS", "Counted", "collect", "section_table", "stats_lines"]


def _open(store: VczStore | str | os.PathLike) -> VczStore:
    from vcfzarr_sql.store import open_store

    return open_store(store) if isinstance(store, (str, os.PathLike)) else store


def stats_lines(store: VczStore | str | os.PathLike, selection: Selection | None = None,
                sections: Sequence[str] = SECTIONS) -> Iterator[str]:
    """The text of ``bcftools stats`` (with the selection's options; None: none) for
    ``sections``."""
    counted = collect(_open(store), selection)
    source = str(store) if isinstance(store, (str, os.PathLike)) else "store"
    return stats_text(counted.totals, counted.sample_names, sections, source)


def section_table(counted: Counted, section: str) -> pa.Table:
    """The rows of one section as a table: its fields (after the section name and id) as
    string columns ``f3``, ``f4``, ... (bcftools' column numbers)."""
    rows = section_rows(counted.totals, section, counted.sample_names)
    width = max((len(r) for r in rows), default=2)
    columns = {f"f{k + 1}": [r[k] if k < len(r) else None for r in rows] for k in range(2, width)}
    return pa.table({"section": [section] * len(rows), **columns}) if rows else pa.table({"section": pa.array([], pa.string())})

