"""Exceptions as Flight errors: one line, never a Python traceback of the server (as the
PostgreSQL server's :func:`~vcfzarr_sql.serve.pg.sqlstate.sql_error`).

>>> from vcfzarr_sql.errors import AccessError
>>> error = flight_error(AccessError("/etc: not under a served data directory"))
>>> type(error).__name__, str(error)
('FlightUnauthorizedError', '/etc: not under a served data directory (SQLSTATE 42501)')
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import duckdb
import pyarrow.flight as flight

from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.serve.pg.sqlstate import sql_error

__all__ = ["answered", "answering", "flight_error"]

log = logging.getLogger("vcfzarr_sql.serve.flight")

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

#: SQLSTATEs with a Flight error of their own (any other: FlightServerError).
_FLIGHT_ERRORS: dict[str, type[flight.FlightError]] = {
    "42501": flight.FlightUnauthorizedError,  # insufficient_privilege
    "57014": flight.FlightCancelledError,  # query_canceled
}


def flight_error(err: Exception) -> flight.FlightError:
    """The Flight error a client gets for ``err``: ours and DuckDB's keep their one-line
    message and SQLSTATE; anything else is logged here and reaches the client as a generic
    internal error."""
    if isinstance(err, flight.FlightError):
        return err
    if not isinstance(err, (VcfZarrError, duckdb.Error)):
        log.error("internal error in a Flight SQL call", exc_info=err)
        return flight.FlightInternalError("internal error (the server's log has the details)")
    error = sql_error(err)
    return _FLIGHT_ERRORS.get(error.sqlstate, flight.FlightServerError)(
        f"{error.message} (SQLSTATE {error.sqlstate})")


def answering(method: Callable[P, R]) -> Callable[P, R]:
    """``method``, whose exceptions leave it as :func:`flight_error`."""

    @functools.wraps(method)
    def answer(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except Exception as err:
            raise flight_error(err).with_traceback(None) from None  # GetSchema shows its traceback

    return answer


def answered(items: Iterator[T]) -> Iterator[T]:
    """The items of ``items``, whose exceptions leave as :func:`flight_error`."""
    try:
        yield from items
    except Exception as err:
        raise flight_error(err) from None
