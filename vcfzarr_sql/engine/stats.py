"""Scan statistics of a query: the sum of the ``last_stats`` of the datasets it scanned."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def sum_stats(stats: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Key-wise sums of several scans' statistics (every key present: 0 when nothing was scanned).

    >>> sum_stats([{"bytes_read": 10, "variant_chunks_read": 1},
    ...            {"bytes_read": 5, "variant_chunks_read": 2}])["bytes_read"]
    15
    >>> sum_stats([])["variant_chunks_read"]
    0
    """
    from vcfzarr_sql.store.counting import STATS_KEYS  # the scan's imports, only once one ran

    total: dict[str, float] = dict.fromkeys(STATS_KEYS, 0)
    for one in stats:
        for key, value in one.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total
