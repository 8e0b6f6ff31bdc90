"""The server's watchdog: ends logins that take too long, cancels statements that run too long
or whose client went away, and keeps the process within its memory cap (:mod:`.memory`).

It looks at every session a few times a second (:func:`check`), so none of this costs the
sessions anything while they run. Both protocols' servers use it.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from vcfzarr_sql.serve.pg import memory
from vcfzarr_sql.serve.pg.config import Limits

#: Seconds between two looks at the sessions.
PERIOD = 0.2
_HANGUP = getattr(select, "POLLRDHUP", 0x2000) | select.POLLHUP | select.POLLERR


class Watched(Protocol):
    """What the watchdog needs of a session."""

    connected_at: float
    logged_in: bool
    busy_since: float | None

    def fileno(self) -> int | None: ...

    def interrupt(self, reason: str = "user request") -> None: ...

    def drop(self) -> None: ...


def hung_up(fd: int) -> bool:
    """Whether the peer of the socket ``fd`` closed its side (or the socket failed).

    Looks without reading, so a client's next message waiting to be read does not count.
    """
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, _HANGUP)
    return any(events & _HANGUP for _, events in poller.poll(0))


def check(sessions: Iterable[Watched], limits: Limits, now: float,
          interrupted: dict[int, float], resident: int = 0) -> None:
    """One look: drop sessions past the auth timeout, interrupt statements past the statement
    timeout or whose client hung up, and the oldest statement when the process's ``resident``
    bytes pass :data:`.memory.CANCEL_AT` of ``limits.max_memory`` (each statement once:
    ``interrupted`` remembers them). A session whose ``fileno()`` is None has no socket."""
    running = []
    for session in sessions:
        if not session.logged_in:
            if limits.auth_timeout and now - session.connected_at > limits.auth_timeout:
                session.drop()
            continue
        busy_since = session.busy_since
        if busy_since is None or interrupted.get(id(session)) == busy_since:
            continue
        fd = session.fileno()
        if limits.statement_timeout and now - busy_since > limits.statement_timeout:
            reason = "statement timeout"
        elif fd is not None and hung_up(fd):
            reason = "client disconnect"
        else:
            running.append((busy_since, session))
            continue
        interrupted[id(session)] = busy_since
        session.interrupt(reason)
    if running and limits.max_memory and resident > memory.CANCEL_AT * limits.max_memory:
        busy_since, oldest = min(running, key=lambda started: started[0])
        interrupted[id(oldest)] = busy_since
        oldest.interrupt("server memory limit")


def watch(sessions: Callable[[], Sequence[Watched]], limits: Limits, stop: threading.Event) -> None:
    """Look at ``sessions()`` every :data:`PERIOD` seconds until ``stop`` is set; with a
    ``limits.max_memory``, cap the process's memory first (:func:`.memory.cap_process_memory`)
    and at each look."""
    interrupted: dict[int, float] = {}
    while True:
        if limits.max_memory:
            memory.cap_process_memory(limits.max_memory)
        if stop.wait(PERIOD):
            return
        current = sessions()
        live = {id(session) for session in current}
        for key in [key for key in interrupted if key not in live]:
            del interrupted[key]
        check(current, limits, time.monotonic(), interrupted,
              memory.resident_bytes() if limits.max_memory else 0)
