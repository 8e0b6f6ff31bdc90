"""What the parent of the sessions' processes loads once (:mod:`.session_process`): the session
modules, and pyarrow's compute functions warmed up (:func:`.rows.warm_up`), so that no
session's process pays for either when it starts."""

from vcfzarr_sql.serve.pg import rows, session_process  # noqa: F401  (loaded to be shared)

rows.warm_up()
