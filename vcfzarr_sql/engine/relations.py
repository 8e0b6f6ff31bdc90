"""What gets registered in DuckDB for the table-function calls, kept current with the stores.

A warm session pays for opening a store (metadata, samples, region index) and building a
relation (schema, region filter) once, not per query: :class:`Registry` keeps both. Before
every query it checks each store it opened with a cheap fingerprint (``stat`` of the root
metadata, :meth:`~vcfzarr_sql.store.VczStore.is_unchanged`); a store that was rewritten,
re-converted or re-indexed is opened again and the relations over it are rebuilt and registered
again under the same names, so no query (not even one through a view) reads a stale store.

A URL store costs a round trip to revalidate. When a query comes again, the chunks its scans
fetched first last time are requested in the same moment (:mod:`vcfzarr_sql.store.revalidation`):
they are served to the query's scans only once the store is found unchanged, and dropped when
it changed (the store is then opened again as always), so the query waits for one round trip
before its first rows instead of two, and answers the same.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import duckdb

from vcfzarr_sql.engine.functions import ScanSpec, canonical_path
from vcfzarr_sql.errors import QueryError, VcfZarrError

if TYPE_CHECKING:  # the store and scan modules are imported once a query needs them
    from vcfzarr_sql.store import VczStore
    from vcfzarr_sql.store.revalidation import Key

#: Queries whose scans' first chunks a registry remembers (the last ones run), and the longest
#: SQL text remembered (a longer one, a 10,000-id list say, is not kept: no advance for it).
REMEMBERED_QUERIES = 32
REMEMBERED_SQL_CHARS = 1 << 16


def open_relation(spec: ScanSpec, store: VczStore) -> Any:
    """A pyarrow Dataset (``vcf_zarr``, ``vcf_zarr_calls``, and ``vcf_zarr_sample_stats``,
    computed when its rows are read) or an Arrow table (metadata, and a ``vcf_zarr_stats``
    section, computed when the call is bound)."""
    from vcfzarr_sql.adapters import dataset
    from vcfzarr_sql.engine.metadata import METADATA_TABLES
    from vcfzarr_sql.query.request import scan_samples

    builder = METADATA_TABLES.get(spec.table)
    if builder is not None:
        return builder(store)
    samples = scan_samples(store, spec.samples, spec.exclude_samples)
    if spec.table == "sample_stats":  # (its modules imported only by a query that calls it)
        from vcfzarr_sql.stats.dataset import SampleStatsDataset

        return SampleStatsDataset(store, region=spec.region, samples=samples)
    if spec.table == "stats":
        from vcfzarr_sql.qc.table import stats_table

        return stats_table(store, spec.section or "SN", region=spec.region, samples=samples)
    return dataset(store, table=spec.table, samples=samples, region=spec.region)


class Registry:
    """The stores a DuckDB connection opened and the relations it registered, by stable name.

    ``opener`` opens a store from the path a query names (default
    :func:`~vcfzarr_sql.store.shared.open_shared`: a local store another session of the process
    opened is reused while unchanged on disk; the server's opener confines the paths).
    """

    def __init__(self, connection: duckdb.DuckDBPyConnection,
                 opener: Callable[[str], VczStore] | None = None,
                 changed: Callable[[], None] | None = None):
        self._con = connection
        self._open = opener
        #: told of each registration and unregistration (:meth:`.instances.Lease.changed`)
        self._changed = changed or (lambda: None)
        self._stores: dict[str, VczStore] = {}
        #: name -> (call, the store it was built over, relation)
        self._relations: dict[str, tuple[ScanSpec, VczStore, Any]] = {}
        #: query -> the chunks its warm scans fetched first, by store (its last run)
        self._openings: OrderedDict[str, dict[str, tuple[Key, ...]]] = OrderedDict()
        self._last_query: str | None = None

    def for_cursor(self, cursor: duckdb.DuckDBPyConnection) -> Registry:
        """A registry for ``cursor`` (a session of the same database) with this one's calls
        registered, so views over the table functions work there too; registered objects are
        per session in DuckDB, so each cursor has relations of its own, and stores of its own
        (opened again, or shared by :func:`~vcfzarr_sql.store.shared.open_shared` when local:
        what a session's scans of a URL store fetch first, and the chunks it requests while
        revalidating, are filed per store object, :mod:`vcfzarr_sql.store.revalidation`, so a
        shared URL store would hand one session's first chunks to another's query)."""
        registry = Registry(cursor, self._open)
        for name, (spec, _, _) in self._relations.items():
            registry._register(name, spec)
        return registry

    def store(self, path: str) -> VczStore:
        """The store at ``path``: opened once, and again whenever it changed since."""
        from vcfzarr_sql.store.revalidation import revalidate

        store = self._stores.get(canonical_path(path))
        if store is not None and not revalidate(store):
            del self._stores[canonical_path(path)]
        return self._opened(path)

    def _opened(self, path: str) -> VczStore:
        from vcfzarr_sql.store.shared import open_shared

        key = canonical_path(path)
        if key not in self._stores:
            # (a local store another session of this process opened, if unchanged since)
            self._stores[key] = (self._open or open_shared)(path)
        return self._stores[key]

    def relations(self) -> Iterator[tuple[str, Any]]:
        """(name, relation) of every registered relation."""
        return ((name, relation) for name, (_, _, relation) in self._relations.items())

    def calls(self) -> dict[str, ScanSpec]:
        """The call behind each registered relation, by relation name."""
        return {name: spec for name, (spec, _, _) in self._relations.items()}

    def register_available(self, calls: Mapping[str, ScanSpec]) -> None:
        """Register ``calls`` whose stores can be opened; leave out the others."""
        for name, spec in calls.items():
            try:
                self._register(name, spec)
            except VcfZarrError:
                continue

    def refresh(self, wanted: Mapping[str, ScanSpec], query: str | None = None) -> None:
        """Register the relations of ``wanted`` (by name) and rebuild those over changed stores.

        A relation that cannot be rebuilt any more (store gone, sample removed) is
        unregistered; if the query wants it, its error is raised. ``query`` (the SQL about
        to run, with its parameters' values): the chunks its scans fetched first when it last ran are requested while the
        stores are revalidated (see the module's docstring).
        """
        from vcfzarr_sql.store.revalidation import revalidate

        openings = self._openings_of(query)
        for key, store in list(self._stores.items()):
            if not revalidate(store, openings.get(key, ())):
                del self._stores[key]
                for remembered in self._openings.values():  # (chunks of the store it was)
                    remembered.pop(key, None)
        error = None
        for name, (spec, store, _) in list(self._relations.items()):
            if self._stores.get(canonical_path(spec.path)) is store:
                continue
            try:
                self._register(name, spec)
            except VcfZarrError as err:
                del self._relations[name]
                self._con.unregister(name)
                self._changed()
                error = error or (err if name in wanted else None)
        if error is not None:
            raise error
        for name, spec in wanted.items():
            if name not in self._relations:
                self._register(name, spec)

    def _openings_of(self, query: str | None) -> dict[str, tuple[Key, ...]]:
        """The chunks ``query``'s warm scans fetched first when it last ran, by store; the
        chunks scans fetched first since the last refresh are filed under the last query."""
        from vcfzarr_sql.store.revalidation import take_openings

        if query is not None and len(query) > REMEMBERED_SQL_CHARS:
            query = None
        recorded = {key: keys for key, store in self._stores.items() if (keys := take_openings(store))}
        last, self._last_query = self._last_query, query
        if last is not None and recorded:
            self._openings[last] = recorded
            self._openings.move_to_end(last)
            while len(self._openings) > REMEMBERED_QUERIES:
                self._openings.popitem(last=False)
        return self._openings.get(query, {}) if query is not None else {}

    def check_same_samples(self, names: tuple[str, ...]) -> None:
        """QueryError unless the stores under the relations ``names`` (one scan call over
        several stores) have the same samples in the same order."""
        first_spec, first_store, _ = self._relations[names[0]]
        for name in names[1:]:
            spec, store, _ = self._relations[name]
            if spec.table in ("variants", "calls") and list(store.samples) != list(first_store.samples):
                raise QueryError(
                    f"{spec.function}(): {spec.path} and {first_spec.path} have different samples "
                    f"({store.num_samples} vs {first_store.num_samples}); one table over several "
                    "stores needs the same samples in the same order"
                )

    def _register(self, name: str, spec: ScanSpec) -> None:
        store = self._opened(spec.path)
        relation = open_relation(spec, store)
        self._con.register(name, relation)
        self._changed()
        self._relations[name] = (spec, store, relation)
