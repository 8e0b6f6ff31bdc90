"""What the parent of the sessions' processes loads once (:mod:`.session_process`): the session
modules, pyarrow's compute functions warmed up (:func:`.rows.warm_up`) and a first DuckDB
session made and closed (what DuckDB sets up once per process), so that no session's process
pays for these when it starts."""

import tempfile

from vcfzarr_sql.serve.pg import pg_catalog, rows, session_process  # noqa: F401  (loaded to be shared)
from vcfzarr_sql.serve.pg.lockdown import LockedDatabase, SessionPolicy
from vcfzarr_sql.store.confined import DataDirs

rows.warm_up()
_con = LockedDatabase(SessionPolicy(DataDirs.of([tempfile.gettempdir()])), check=False).connect()
pg_catalog.install(_con.duckdb_connection)
_con.close()
del _con
