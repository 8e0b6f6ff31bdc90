"""The watchdog's decisions (serve/watchdog.py) on sessions it can end, with a fake clock and
fake sessions: no server, no process."""

from __future__ import annotations

from dataclasses import dataclass, field

from vcfzarr_sql.serve import watchdog
from vcfzarr_sql.serve.pg import Limits


@dataclass
class _Session:
    """What the watchdog sees of a session in a process of its own."""

    busy_since: float | None = None
    measured: int = 0
    connected_at: float = 0.0
    logged_in: bool = True
    cpu: float = 0.0
    said: list[tuple] = field(default_factory=list)

    def cpu_seconds(self) -> float:
        return self.cpu

    def fileno(self) -> None:
        return None

    def interrupt(self, reason: str = "user request") -> None:
        self.said.append(("interrupt", reason))

    def drop(self) -> None:
        self.said.append(("drop",))

    def end(self, sqlstate: str, message: str) -> None:
        self.said.append(("end", sqlstate))

    def limit_memory(self, room: int) -> None:
        self.said.append(("room", room))


def _said(session: _Session, what: str) -> list[tuple]:
    return [words for words in session.said if words[0] == what]


def test_a_statement_that_does_not_stop_ends_its_session_after_the_grace() -> None:
    """END_GRACE seconds of the session's CPU after the interrupt (a statement that ends by
    itself soon is not ended on a loaded machine), and at most END_GRACE_WALL seconds."""
    limits = Limits(statement_timeout=3)
    stuck, starved, quick = _Session(busy_since=0.0), _Session(busy_since=0.0), _Session(busy_since=0.0)
    sessions = [stuck, starved, quick]
    interrupted: dict[int, watchdog.Interrupted] = {}
    watchdog.check(sessions, limits, 3.1, interrupted)
    assert _said(stuck, "interrupt") == [("interrupt", "statement timeout")]
    quick.busy_since = None  # (its interrupt worked)
    stuck.cpu = watchdog.END_GRACE / 2
    watchdog.check(sessions, limits, 3.2 + watchdog.END_GRACE, interrupted)
    assert not _said(stuck, "end")
    stuck.cpu = watchdog.END_GRACE * 1.1
    starved.cpu = watchdog.END_GRACE / 2  # (a loaded machine)
    for now in (3.2 + watchdog.END_GRACE, 3.4 + watchdog.END_GRACE):  # (once)
        watchdog.check(sessions, limits, now, interrupted)
    assert _said(stuck, "end") == [("end", "57014")] and not _said(quick, "end")
    assert not _said(starved, "end")
    watchdog.check(sessions, limits, 3.2 + watchdog.END_GRACE_WALL, interrupted)
    assert _said(starved, "end") == [("end", "57014")]


def test_past_the_memory_cap_the_largest_session_is_ended_one_at_a_time() -> None:
    limits = Limits(max_memory=1000)
    small, large, idle = _Session(0.0, 200), _Session(1.0, 500), _Session(None, 100)
    interrupted: dict[int, watchdog.Interrupted] = {}
    watchdog.check([small, large, idle], limits, 2.0, interrupted, used=1100)
    assert _said(large, "end") == [("end", "53200")]
    assert _said(small, "interrupt") == [("interrupt", "server memory limit")]  # (the oldest)
    # the ended one still counts until it is gone, but as freed: nobody else goes
    watchdog.check([small, large, idle], limits, 2.1, interrupted, used=1150)
    assert not _said(small, "end") and not _said(idle, "end")
    watchdog.check([small, idle], limits, 2.2, interrupted, used=1050)
    assert _said(small, "end") == [("end", "53200")]


def test_each_session_gets_its_share_of_what_the_cap_leaves() -> None:
    limits = Limits(max_memory=1000)
    busy, other, idle = _Session(0.0, 200), _Session(0.0, 100), _Session(None, 100)
    watchdog.check([busy, other, idle], limits, 0.5, {}, used=700)
    # 300 free, shared by the 2 busy sessions and one that may start: 100 each
    assert _said(busy, "room") == [("room", 300)]
    assert _said(other, "room") == [("room", 200)] and _said(idle, "room") == [("room", 200)]
