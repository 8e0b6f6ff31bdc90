"""What a scan asks for, from what a user gives: a table name, a bcftools region string,
sample names -> a :class:`~vcfzarr_sql.query.plan.ScanRequest` (the table's schema, the
region's row filter, sample indexes), for :func:`~vcfzarr_sql.query.plan.plan_scan`."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query import schema as table_schemas
from vcfzarr_sql.query.expressions import conjunction
from vcfzarr_sql.query.plan import TABLES, ScanRequest
from vcfzarr_sql.query.region import parse_regions, regions_expression
from vcfzarr_sql.store.vcz import VczStore


def sample_selection(
    store: VczStore, samples: Sequence[str] | str | None
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(indexes, order) of ``samples``: ``indexes``, the sorted store indexes of the samples,
    each once (None: all, also when ``samples`` names every sample, so that such a scan reads
    stored counts like one without ``samples``); ``order``, for each of ``samples`` in the
    order listed (a repeated name repeated, as ``bcftools query -s`` prints them), its
    position among the decoded samples (those indexes, or all), None when that is their own
    order. QueryError names an unknown sample.

    >>> store = type("Store", (), {"samples": ["A", "B", "C"], "path": "x.zarr"})()
    >>> sample_selection(store, ["C", "A", "C"])
    (array([0, 2]), array([1, 0, 1]))
    >>> sample_selection(store, ["C", "B", "A"])
    (None, array([2, 1, 0]))
    >>> sample_selection(store, ["A", "C"])
    (array([0, 2]), None)
    """
    if samples is None:
        return None, None
    if isinstance(samples, str):
        samples = [samples]
    position = _sample_positions(store)
    try:
        listed = np.fromiter(map(position.__getitem__, samples), np.int64, len(samples))
    except KeyError:
        unknown = next(s for s in samples if s not in position)
        raise QueryError(f"samples: no sample named {unknown!r} in {store.path}") from None
    if not samples:
        raise QueryError("samples: the list is empty")
    chosen = np.zeros(len(store.samples), dtype=bool)  # (not np.unique: a sort of the list)
    chosen[listed] = True
    indexes = np.flatnonzero(chosen)
    # each listed sample's rank among the chosen: binary searches for a short list, a running
    # count for a long one (5,000 random searches: ~0.5 ms, the count of 10,000: ~0.04 ms)
    order = np.searchsorted(indexes, listed) if len(listed) < 256 else (np.cumsum(chosen) - 1)[listed]
    in_order = len(order) == len(indexes) and bool((order == np.arange(len(order))).all())
    return None if len(indexes) == len(store.samples) else indexes, None if in_order else order


#: Each open store's sample indexes by name (a name stored twice: its last index), made at
#: the first query that names samples: building it costs ~0.8 ms at 10,000 samples (a new
#: session opens the store again, so it pays this once per session).
_POSITIONS: weakref.WeakKeyDictionary[VczStore, dict[str, int]] = weakref.WeakKeyDictionary()


def _sample_positions(store: VczStore) -> dict[str, int]:
    """The index of each of the store's sample names (its samples are fixed once it is open)."""
    position = _POSITIONS.get(store)
    if position is None:
        # (zip with a range: ~0.8 ms at 10,000 names, a comprehension over enumerate ~1.2 ms)
        position = _POSITIONS[store] = dict(zip(store.samples, range(len(store.samples))))
    return position


def parse_samples_file(lines: Iterable[str]) -> tuple[str, ...]:
    """The sample names of the lines of a bcftools ``-S`` file: one name a line, the whole
    line (spaces included, a trailing carriage return not), blank lines skipped.

    >>> parse_samples_file(["NA1\\n", "\\n", "NA 2\\r\\n"])
    ('NA1', 'NA 2')
    """
    names = (line.rstrip("\n").removesuffix("\r") for line in lines)
    return tuple(name for name in names if name)


def scan_samples(store: VczStore, samples: Sequence[str] | None, exclude: bool = False) -> list[str] | None:
    """The samples of a scan, in the order of its ``fmt_`` lists: ``samples`` as listed
    (None: all), or with ``exclude`` every sample of ``store`` but those (bcftools ``-s
    ^A,B``), in store order; QueryError names an unknown sample, as bcftools does."""
    if samples is None or not exclude:
        return None if samples is None else list(samples)
    known = set(store.samples)
    unknown = [s for s in samples if s not in known]
    if unknown:
        raise QueryError(f"samples: no sample named {unknown[0]!r} in {store.path}")
    excluded = set(samples)
    return [s for s in store.samples if s not in excluded]


#: The table schemas of each open store, made at the first scan of the table (a store's
#: fields are fixed once it is open: one changed since is opened again, a new object).
_SCHEMAS: weakref.WeakKeyDictionary[VczStore, dict[str, pa.Schema]] = weakref.WeakKeyDictionary()


def table_schema(store: VczStore, table: str) -> pa.Schema:
    """The Arrow schema of table ``variants`` or ``calls`` of an open store (made once per
    store: ~0.1-0.3 ms, which a genotype matrix or a scan of a few chunks notices)."""
    if table not in TABLES:
        raise QueryError(f"table: expected one of {', '.join(TABLES)}, got {table!r}")
    schemas = _SCHEMAS.setdefault(store, {})
    if table not in schemas:
        schemas[table] = (table_schemas.variants_schema(store) if table == "variants"
                          else table_schemas.calls_schema(store))
    return schemas[table]


def scan_request(
    store: VczStore,
    table: str = "variants",
    *,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
    region: str | None = None,
    samples: Sequence[str] | str | None = None,
) -> ScanRequest:
    """The :class:`~vcfzarr_sql.query.plan.ScanRequest` of a scan: ``filter`` ANDed with the
    rows overlapping ``region`` (a bcftools ``-r`` string), ``samples`` as store indexes and
    the order of the ``fmt_`` lists (:func:`sample_selection`)."""
    region_filter = None if region is None else regions_expression(parse_regions(region))
    indexes, order = sample_selection(store, samples)
    return ScanRequest(
        table=table,
        schema=table_schema(store, table),
        columns=None if columns is None else tuple(columns),
        filter=conjunction(filter, region_filter),
        samples=indexes,
        sample_order=order,
    )

