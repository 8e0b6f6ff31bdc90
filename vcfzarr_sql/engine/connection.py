"""A DuckDB connection whose SQL understands the vcfzarr-sql table functions.

>>> import vcfzarr_sql
>>> con = vcfzarr_sql.connect()
>>> con.sql("SELECT 1 + 1 AS two").fetchall()
[(2,)]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from vcfzarr_sql.engine import instances, parquet_copy, saved_calls, sql_text
from vcfzarr_sql.engine.argument_sources import ArgumentSources, local_lines
from vcfzarr_sql.engine.instances import Lease
from vcfzarr_sql.engine.relations import Registry
from vcfzarr_sql.engine.rewrite import RewrittenQuery, rewrite
from vcfzarr_sql.engine.stats import sum_stats
from vcfzarr_sql.errors import QueryError

if TYPE_CHECKING:  # SQL without table functions needs neither sqlglot nor the store modules
    import pyarrow as pa

    from vcfzarr_sql.engine.functions import ScanSpec
    from vcfzarr_sql.engine.rules.expand_stores import Expander
    from vcfzarr_sql.engine.rules.inline_parameters import Parameters
    from vcfzarr_sql.engine.scan_defaults import ScanDefaults
    from vcfzarr_sql.store import VczStore

# A long statement's rows come from ``execute`` (see Connection.rows): DuckDB warns that this
# copies them; it is the price of not stopping every other thread while DuckDB parses.
warnings.filterwarnings("ignore", "Arrow output on a DB-API result", UserWarning, __name__)


#: DuckDB connection attributes that only read the last statement's result (a session that
#: uses no other leaves its database to a later session: :mod:`.instances`).
_READS_RESULTS = frozenset({
    "description", "rowcount", "fetchone", "fetchmany", "fetchall", "fetchdf", "fetch_df", "df",
    "fetchnumpy", "fetch_arrow_table", "to_arrow_table", "to_arrow_reader", "arrow", "pl",
    "interrupt", "query_progress",
})


class Connection:
    """A proxy over a :class:`duckdb.DuckDBPyConnection`.

    :meth:`sql`, :meth:`query`, :meth:`execute` and :meth:`executemany` accept ``vcf_zarr(...)``,
    ``vcf_zarr_calls(...)``, ``vcf_zarr_samples(...)``, ``vcf_zarr_contigs(...)`` and
    ``vcf_zarr_fields(...)`` wherever a table may stand; every other attribute is the DuckDB
    connection's own. Each distinct call is registered once, under a stable name, for the
    connection's lifetime (and in a database file, for later sessions too: see
    :mod:`.saved_calls`), so views over the table functions keep working; a store that
    changes on disk is opened again before the next query (see :mod:`.relations`).
    ``opener`` opens the store a call names (by default :func:`~vcfzarr_sql.store.shared.open_shared`:
    a local store the process opened before, while unchanged on disk),
    ``expand`` gives the paths a glob of stores names (the local file system's by default);
    ``read_files``: whether ``regions_file := ...``/``samples_file := ...`` may read local
    files (a server says no). Subqueries in arguments (``samples := (SELECT ...)``) run in this
    session, before the query. ``saved``: calls to register when the current database is not
    the file whose views use them (a server's session, with the file attached read-only:
    :func:`.saved_calls.load_beside`). ``database_file``: whether the current database is a
    file this session may write to (None: ask DuckDB, a query of ~1 ms CPU).
    """

    def __init__(self, connection: duckdb.DuckDBPyConnection,
                 opener: Callable[[str], VczStore] | None = None,
                 defaults: ScanDefaults | None = None, *, registry: Registry | None = None,
                 expand: Expander | None = None, read_files: bool = True,
                 saved: Mapping[str, ScanSpec] | None = None, database_file: bool | None = None,
                 lease: Lease | None = None):
        self._con = connection
        self._lease = lease
        self._defaults = defaults
        self._expand = expand
        self._read_files = read_files
        self._registry = (Registry(connection, opener, lease.changed if lease else None)
                          if registry is None else registry)
        self._stats_before: dict[str, Mapping] = {}
        self._saves_calls = (saved_calls.is_database_file(connection) if database_file is None
                             else database_file)
        self._saved_calls = saved_calls.load(connection) if self._saves_calls else dict(saved or {})
        self._registry.register_available(self._saved_calls)

    @property
    def duckdb_connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying DuckDB connection."""
        self._keep_database()
        return self._con

    def _keep_database(self) -> None:
        """What this session's database becomes may escape its accounting: it is not lent to
        a later session (:mod:`.instances`)."""
        if self._lease is not None:
            self._lease.keep()

    def store(self, path: str) -> VczStore:
        """The opened store at ``path`` (opened once per connection, again when it changed)."""
        return self._registry.store(path)

    def rewrite(self, query: str, parameters: Parameters = None) -> RewrittenQuery:
        """What :meth:`sql` would run for ``query`` (the table-function calls it makes)."""
        sources = ArgumentSources(local_lines if self._read_files else None, self._evaluate)
        return rewrite(query, parameters, self._defaults, self._expand, sources)

    def _evaluate(self, query: str) -> list[tuple]:
        """The rows of ``query`` (a subquery given as a table-function argument: it runs on its
        own, so it cannot name the outer query's CTEs)."""
        try:
            return self.sql(query).fetchall()
        except duckdb.Error as err:
            first = str(err).strip().splitlines()[0]
            raise QueryError(f"the argument subquery ({query}) failed: {first}") from None

    def table_function_calls(self) -> dict[str, str]:
        """Each registered relation's name -> the table-function call it stands for (SQL)."""
        calls = {**self._saved_calls, **self._registry.calls()}
        return {name: spec.call_sql for name, spec in calls.items()}

    def _prepare(self, query: str, parameters: Parameters) -> RewrittenQuery:
        rewritten = self.rewrite(query, parameters)
        # (a query is remembered by its text and its parameters' values: the same text with
        # other values, a region say, reads other chunks first)
        key = rewritten.sql if rewritten.parameters is None else f"{rewritten.sql}\n-- {rewritten.parameters!r}"
        self._registry.refresh(rewritten.relations, key)
        for names in rewritten.unions:
            self._registry.check_same_samples(names)
        if self._saves_calls and rewritten.relations and "create" in query.lower():
            saved_calls.save(self._con, rewritten.relations)  # views over them outlive us
        self._stats_before = self._scan_stats()
        return rewritten

    def _parquet_copy(self, rewritten: RewrittenQuery) -> parquet_copy.ParquetCopy | None:
        """The COPY to Parquet of rows of the table functions that pyarrow's writer takes
        (:mod:`.parquet_copy`: DuckDB's would hold 122,880 rows of genotypes in memory)."""
        if not rewritten.relations or not rewritten.sql.lstrip()[:4].upper() == "COPY":
            return None
        copy = parquet_copy.parquet_copy(rewritten.sql)
        return copy if copy is not None and parquet_copy.may_write_files(self._con) else None

    def _scan_stats(self) -> dict[str, Mapping]:
        return {
            name: stats
            for name, relation in self._registry.relations()
            if (stats := getattr(relation, "last_stats", None))
        }

    @property
    def last_stats(self) -> dict[str, float]:
        """Scan statistics of the last query, summed over the stores it scanned.

        Keys include ``variant_chunks_total``, ``variant_chunks_read``,
        ``sample_chunks_total``, ``sample_chunks_read`` and ``bytes_read``. A relation from
        :meth:`sql` is lazy: read this after fetching its rows.
        """
        return sum_stats(
            stats
            for name, stats in self._scan_stats().items()
            if stats is not self._stats_before.get(name)  # a scan replaces the dict
        )

    def sql(self, query: str, *, alias: str = "", params: Parameters = None) -> duckdb.DuckDBPyRelation:
        """Like :meth:`duckdb.DuckDBPyConnection.sql`, with the table functions."""
        rewritten = self._prepare(query, params)
        copy = self._parquet_copy(rewritten)
        if copy is not None:
            return parquet_copy.run(self._con, copy, rewritten.parameters, self._con.sql)
        if rewritten.parameters is None:
            return self._con.sql(rewritten.sql, alias=alias)
        return self._con.sql(rewritten.sql, alias=alias, params=rewritten.parameters)

    query = sql

    def execute(self, query: str, parameters: Parameters = None) -> Connection:
        """Like :meth:`duckdb.DuckDBPyConnection.execute` (returns this connection)."""
        rewritten = self._prepare(query, parameters)
        copy = self._parquet_copy(rewritten)
        if copy is not None:
            parquet_copy.run(self._con, copy, rewritten.parameters, self._con.execute)
        elif rewritten.parameters is None:
            self._con.execute(rewritten.sql)
        else:
            self._con.execute(rewritten.sql, rewritten.parameters)
        return self

    def rows(self, query: str, parameters: Parameters = None, *,
             batch_rows: int = 1 << 20) -> pa.RecordBatchReader | None:
        """Run one statement: its rows, in batches of up to ``batch_rows``, or ``None`` when it
        has no result set. A text longer than :data:`~.sql_text.MAX_TOKENIZED` runs with
        :meth:`execute`, which DuckDB parses without Python's GIL (:meth:`sql` holds it while
        it parses: 9.8 s for a 9 MB text, every other thread stopped); its rows are then copied
        out of the DB-API result (DuckDB warns about that; it is the price of not stopping a
        server's other sessions). The servers run long statements through this.

        >>> import vcfzarr_sql
        >>> con = vcfzarr_sql.connect()
        >>> con.rows("SELECT 1 AS one WHERE 1 IN (" + "1," * 200_000 + "1)").read_all().to_pylist()
        [{'one': 1}]
        """
        if len(query) <= sql_text.MAX_TOKENIZED:
            relation = self.sql(query, params=parameters)
            return None if relation is None else relation.to_arrow_reader(batch_rows)
        self.execute(query, parameters)
        return self._con.to_arrow_reader(batch_rows) if self._con.description else None

    def executemany(self, query: str, parameters: Sequence[Parameters]) -> Connection:
        """Like :meth:`duckdb.DuckDBPyConnection.executemany`: ``query`` once per parameter
        set (each may name different stores or regions); the last one's result is fetched."""
        if not parameters:
            self._con.executemany(query, parameters)  # DuckDB's own error
        for each in parameters:
            self.execute(query, each)
        return self

    def cursor(self) -> Connection:
        """A new session of the same database, with the table functions, as
        :meth:`duckdb.DuckDBPyConnection.cursor` (DuckDB's advice: one per thread). It knows
        the calls this connection registered, so views over them work there as well."""
        self._keep_database()
        cursor = self._con.cursor()
        return Connection(cursor, defaults=self._defaults, registry=self._registry.for_cursor(cursor),
                          expand=self._expand, read_files=self._read_files)

    def close(self) -> None:
        """Close the DuckDB connection."""
        self._con.close()
        if self._lease is not None:
            self._lease.end()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        if name not in _READS_RESULTS:
            self._keep_database()
        return getattr(self._con, name)

    def __repr__(self) -> str:
        return f"<vcfzarr_sql.Connection over {self._con!r}>"


def connect(database: str = ":memory:", *, read_only: bool = False,
            defaults: ScanDefaults | None = None, **config: Any) -> Connection:
    """Open a DuckDB database (in memory by default) with the vcfzarr-sql table functions.

    ``defaults``: a region and samples for every ``vcf_zarr``/``vcf_zarr_calls`` call that
    gives none of its own. ``config`` is DuckDB's configuration (``threads=2``, ...). A new
    in-memory database without ``config`` may be one an earlier session of the process left
    exactly as DuckDB made it (:mod:`.instances`: ~20 ms of CPU saved), never one another
    session holds.
    """
    if database == ":memory:" and not read_only and not config:
        # (a database an earlier session of the process left as made, or a new one)
        connection, lease = instances.lend()
        return Connection(connection, defaults=defaults, database_file=False, lease=lease)
    return Connection(duckdb.connect(database, read_only=read_only, config=config), defaults=defaults,
                      database_file=None if database.partition(":memory")[0] else False)


def register(connection: duckdb.DuckDBPyConnection) -> Connection:
    """Wrap an existing DuckDB connection: its tables, views and settings stay usable."""
    return Connection(connection)


_default: Connection | None = None


def default_connection() -> Connection:
    """The module-level connection :func:`sql` uses (an in-memory database)."""
    global _default
    if _default is None:
        _default = connect()
    return _default


def sql(query: str, *, alias: str = "", params: Parameters = None) -> duckdb.DuckDBPyRelation:
    """Run ``query`` on the default connection, like :func:`duckdb.sql`.

    >>> sql("SELECT 42 AS answer").fetchall()
    [(42,)]
    """
    return default_connection().sql(query, alias=alias, params=params)
