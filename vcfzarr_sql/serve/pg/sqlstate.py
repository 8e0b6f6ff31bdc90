"""Exceptions as PostgreSQL errors: SQLSTATE code, one-line message, detail.

>>> import duckdb
>>> sql_error(duckdb.ParserException('Parser Error: syntax error at or near "SELEC"\\n\\nLINE 1: SELEC 1'))
SqlError(sqlstate='42601', message='Parser Error: syntax error at or near "SELEC"', detail='LINE 1: SELEC 1')
>>> from vcfzarr_sql.errors import StoreError
>>> sql_error(StoreError("no.zarr: no such store"))
SqlError(sqlstate='22023', message='no.zarr: no such store', detail=None)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import duckdb

from vcfzarr_sql.errors import AccessError, NotSupportedError, QueryError, VcfZarrError

log = logging.getLogger("vcfzarr_sql.serve.pg")

#: DuckDB exception class -> SQLSTATE, most specific first.
_DUCKDB_STATES: tuple[tuple[type[BaseException], str], ...] = (
    (duckdb.ParserException, "42601"),            # syntax_error
    (duckdb.BinderException, "42703"),            # undefined_column (most binder errors)
    (duckdb.ConversionException, "22P02"),        # invalid_text_representation
    (duckdb.OutOfRangeException, "22003"),        # numeric_value_out_of_range
    (duckdb.InvalidInputException, "22023"),      # invalid_parameter_value
    (duckdb.ConstraintException, "23000"),        # integrity_constraint_violation
    (duckdb.TransactionException, "25P02"),       # in_failed_sql_transaction
    (duckdb.InterruptException, "57014"),         # query_canceled
    (duckdb.PermissionException, "42501"),        # insufficient_privilege
    (duckdb.NotImplementedException, "0A000"),    # feature_not_supported
    (duckdb.OutOfMemoryException, "53200"),       # out_of_memory
    (duckdb.IOException, "58030"),                # io_error
)


class PgError(QueryError):
    """A request the server refuses with a PostgreSQL SQLSTATE of its own (unknown portal or
    cursor, a statement that needs a transaction block...)."""

    def __init__(self, sqlstate: str, message: str):
        super().__init__(message)
        self.sqlstate = sqlstate


@dataclass(frozen=True)
class SqlError:
    """What an ErrorResponse says."""

    sqlstate: str
    message: str
    detail: str | None = None


def _catalog_state(message: str) -> str:
    lower = message.lower()
    if "table" in lower and "does not exist" in lower:
        return "42P01"  # undefined_table
    if "function" in lower:
        return "42883"  # undefined_function
    return "42704"  # undefined_object


#: Where DuckDB appends the Python traceback of an error raised in a scan (not for clients).
_PYTHON_TRACEBACK = ". Detail: Python exception"


def sql_error(err: BaseException) -> SqlError:
    """The PostgreSQL error for ``err``: our own errors keep their one-line message; the
    server's Python tracebacks never reach the client."""
    if isinstance(err, PgError):
        return SqlError(err.sqlstate, str(err))
    if isinstance(err, AccessError):
        return SqlError("42501", str(err))  # insufficient_privilege
    if isinstance(err, NotSupportedError):
        return SqlError("0A000", str(err))
    if isinstance(err, VcfZarrError):
        return SqlError("22023", str(err))
    if isinstance(err, duckdb.Error):
        text, python, _ = str(err).strip().partition(_PYTHON_TRACEBACK)
        first, _, rest = text.strip().partition("\n")
        detail = None if python else "\n".join(line for line in rest.splitlines() if line.strip()) or None
        if isinstance(err, duckdb.CatalogException):
            return SqlError(_catalog_state(first), first, detail)
        state = next((code for cls, code in _DUCKDB_STATES if isinstance(err, cls)), "XX000")
        if "configuration has been locked" in first:
            state = "42501"  # insufficient_privilege: a server's sessions cannot change settings
        return SqlError(state, first, detail)
    log.exception("internal error")
    return SqlError("XX000", f"internal error: {type(err).__name__}: {err}".splitlines()[0])
