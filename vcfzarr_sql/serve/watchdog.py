"""The server's watchdog: ends logins that take too long, cancels statements that run too long
or whose client went away, and keeps the server within its memory cap (:mod:`.memory`).

It looks at every session a few times a second (:func:`check`), so none of this costs the
sessions anything while they run. Both protocols' servers use it. A session that runs in a
process of its own (:mod:`.pg.session_process`; a Flight SQL worker, :mod:`.flight.worker`)
can also be ended: when its statement is still running :data:`END_GRACE` seconds after it
was interrupted (DuckDB cannot interrupt a value built inside one call), and when the server
as a whole passes its memory cap (the largest session goes).
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from vcfzarr_sql.serve import memory
from vcfzarr_sql.serve.pg.config import Limits

#: Seconds between two looks at the sessions (a quarter of it while the server takes more than
#: half its memory cap: memory grows by hundreds of MB a second per session).
PERIOD = 0.2
#: CPU seconds an interrupted statement's session may spend before it is ended (when it can
#: be; CPU, not wall time, so that a statement that ends by itself soon, as a bounded glob
#: does, is not ended on a loaded machine), and at most this many seconds of wall time.
END_GRACE = 1.5
END_GRACE_WALL = 5.0
_HANGUP = getattr(select, "POLLRDHUP", 0x2000) | select.POLLHUP | select.POLLERR


class Watched(Protocol):
    """What the watchdog needs of a session."""

    connected_at: float
    logged_in: bool
    busy_since: float | None

    def fileno(self) -> int | None: ...

    def interrupt(self, reason: str = "user request") -> None: ...

    def drop(self) -> None: ...


@runtime_checkable
class Endable(Watched, Protocol):
    """A session the watchdog can end whatever it is doing (a process of its own)."""

    #: Its memory (bytes) when the server's was last measured.
    measured: int

    def cpu_seconds(self) -> float: ...

    def end(self, sqlstate: str, message: str) -> None: ...

    def limit_memory(self, room: int) -> None: ...


@dataclass
class Interrupted:
    """A statement the watchdog interrupted: when it began and was interrupted, and why."""

    busy_since: float
    at: float
    reason: str
    ended: bool = False
    cpu: float = 0.0  # (its session's CPU seconds then)


def hung_up(fd: int) -> bool:
    """Whether the peer of the socket ``fd`` closed its side (or the socket failed).

    Looks without reading, so a client's next message waiting to be read does not count.
    """
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, _HANGUP)
    return any(events & _HANGUP for _, events in poller.poll(0))


def check(sessions: Sequence[Watched], limits: Limits, now: float,
          interrupted: dict[int, Interrupted], used: int = 0) -> None:
    """One look: drop sessions past the auth timeout, interrupt statements past the statement
    timeout or whose client hung up, and the oldest statement when the server's ``used``
    bytes pass :data:`.memory.CANCEL_AT` of ``limits.max_memory`` (each statement once:
    ``interrupted`` remembers them). A session that can be ended (:class:`Endable`) is, when
    its interrupted statement still runs :data:`END_GRACE` CPU seconds (or
    :data:`END_GRACE_WALL` seconds) later, and the largest one
    when ``used`` passes the cap itself; each may take, beyond what it has, its share of what
    the cap leaves free (which it has the kernel hold, :func:`.memory.cap_process_memory`). A
    session whose ``fileno()`` is None has no socket."""
    running = []
    endable = [session for session in sessions if isinstance(session, Endable)]
    can_end = {id(session): session for session in endable}
    for session in sessions:
        if not session.logged_in:
            if limits.auth_timeout and now - session.connected_at > limits.auth_timeout:
                session.drop()
            continue
        busy_since = session.busy_since
        if busy_since is None:
            continue
        seen = interrupted.get(id(session))
        if seen is not None and seen.busy_since == busy_since:  # (interrupted, still running)
            ender = can_end.get(id(session))
            if not seen.ended and ender is not None and (now - seen.at > END_GRACE_WALL or (
                    now - seen.at > END_GRACE and ender.cpu_seconds() - seen.cpu > END_GRACE)):
                seen.ended = True
                ender.end("57014", f"terminating connection due to {seen.reason}: the statement "
                                   "could not be stopped, so the session was ended")
            continue
        fd = session.fileno()
        if limits.statement_timeout and now - busy_since > limits.statement_timeout:
            reason = "statement timeout"
        elif fd is not None and hung_up(fd):
            reason = "client disconnect"
        else:
            running.append((busy_since, session))
            continue
        _interrupt(session, can_end.get(id(session)), Interrupted(busy_since, now, reason), interrupted)
    if not limits.max_memory:
        return
    # what is free is shared among the busy sessions (and one more that may start meanwhile)
    share = max(limits.max_memory - used, 0) // (1 + sum(s.busy_since is not None for s in endable))
    for session in endable:
        session.limit_memory(session.measured + share)
    if running and used > memory.CANCEL_AT * limits.max_memory:
        busy_since, oldest = min(running, key=lambda started: started[0])
        _interrupt(oldest, can_end.get(id(oldest)), Interrupted(busy_since, now, "server memory limit"),
                   interrupted)
    if used <= limits.max_memory:
        return
    ending = [s for s in endable if id(s) in interrupted and interrupted[id(s)].ended]
    others = [s for s in endable if s not in ending]
    if others and used - sum(session.measured for session in ending) > limits.max_memory:
        largest = max(others, key=lambda session: session.measured)
        interrupted[id(largest)] = Interrupted(largest.busy_since or now, now, "server memory limit",
                                               ended=True)
        largest.end("53200", "terminating connection due to server memory limit: the server's "
                             "sessions passed its cap (--max-memory), and this one took the most")


def _interrupt(session: Watched, ender: Endable | None, what: Interrupted,
               interrupted: dict[int, Interrupted]) -> None:
    """Interrupt ``session``'s statement, remembered as ``what`` (with the CPU time it had
    then, if it can be ended: ``ender``, the same session)."""
    if ender is not None:
        what.cpu = ender.cpu_seconds()
    interrupted[id(session)] = what
    session.interrupt(what.reason)


def watch(sessions: Callable[[], Sequence[Watched]], limits: Limits, stop: threading.Event,
          used: Callable[[], int] = memory.resident_bytes) -> None:
    """Look at ``sessions()`` every :data:`PERIOD` seconds until ``stop`` is set; with a
    ``limits.max_memory``, cap the process's memory first (:func:`.memory.cap_process_memory`)
    and at each look, and measure the server's memory with ``used()`` (default: this
    process's resident bytes)."""
    interrupted: dict[int, Interrupted] = {}
    taken = 0
    while True:
        if limits.max_memory:
            memory.cap_process_memory(limits.max_memory)
        if stop.wait(PERIOD / 4 if taken > limits.max_memory / 2 else PERIOD):
            return
        current = sessions()
        live = {id(session) for session in current}
        for key in [key for key in interrupted if key not in live]:
            del interrupted[key]
        taken = used() if limits.max_memory else 0
        check(current, limits, time.monotonic(), interrupted, taken)
