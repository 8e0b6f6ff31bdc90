"""Quality control of a call set: the numbers of ``bcftools stats`` (:func:`stats_lines`;
:func:`.table.stats_table`, ``vcf_zarr_stats`` in SQL, is the one part that needs Arrow) and
the plots of ``plot-vcfstats`` (:mod:`.report`, with the ``report`` extra: matplotlib).

>>> from vcfzarr_sql.qc import stats_lines
>>> from vcfzarr_sql.query.selection import Selection
>>> print("".join(stats_lines("x.zarr", Selection(samples="-"))))   # doctest: +SKIP

A client of :mod:`vcfzarr_sql.query` (the plan and the executor) and of ``view``'s selection
(``-r/-R``, ``-t/-T``, ``-s/-S``, ``-i/-e``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from vcfzarr_sql.qc.collect import Counted, collect
from vcfzarr_sql.qc.text import SECTIONS, stats_text
from vcfzarr_sql.query.selection import Selection
from vcfzarr_sql.store.vcz import VczStore

__all__ = ["SECTIONS", "Counted", "collect", "stats_lines"]


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
