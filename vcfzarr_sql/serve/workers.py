"""Processes a server can always end, forked from one preloaded parent.

DuckDB's ``interrupt()`` does not stop a value built inside one scalar call
(``repeat('x', 1000000000)`` runs about 20 s past it), and its ``memory_limit`` does not count
such a value. A thread cannot be killed; a process can. So both servers run their sessions'
statements in processes of their own (a PostgreSQL session, :mod:`.pg.session_process`; a
Flight SQL statement, :mod:`.flight.worker`), forked from a clean parent that has loaded the
modules they need (multiprocessing's forkserver, started once per server process and gone with
it: the server itself, with its threads and DuckDB instances, is never forked).

Server and process talk in small JSON messages (:func:`send`, :func:`receive`): never pickles,
as the server trusts nothing such a process says. What a process costs is read from ``/proc``:
its memory (:func:`.memory.proportional_bytes`) and its CPU time (:func:`cpu_seconds`).
"""

from __future__ import annotations

import abc
import io
import json
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import multiprocessing.forkserver
import multiprocessing.popen_forkserver
import multiprocessing.process
import multiprocessing.reduction
import multiprocessing.util
import os
import sys
import threading
from collections.abc import Sequence
from typing import Protocol

from vcfzarr_sql.serve import memory

__all__ = ["CONTEXT", "KILL_WAIT", "MAX_MESSAGE", "PERIOD", "MemoryCap", "Process", "ProcessHandle", "cpu_seconds",
           "decode", "encode", "forkserver_bytes", "receive", "send", "start_forkserver"]

#: Seconds a process told to end has to exit before it is killed.
KILL_WAIT = 1.0
#: Seconds between two looks of a forked process at its memory cap and at its server.
PERIOD = 0.2
#: Longest JSON message either side reads.
MAX_MESSAGE = 1 << 13
#: The modules the forkserver loads once, for every process it forks (both servers').
PRELOAD = ["vcfzarr_sql.serve.pg.session_preload", "vcfzarr_sql.serve.flight.worker"]

CONTEXT = multiprocessing.get_context("forkserver")


def start_forkserver() -> None:
    """Start the parent of the servers' processes, with their modules loaded, and wait until
    they are (once per process; it exits with this process)."""
    global _ready_forkserver
    CONTEXT.set_forkserver_preload(PRELOAD)
    multiprocessing.forkserver.ensure_running()
    pid = _forkserver_pid()
    if pid != _ready_forkserver:  # its first child waits for the modules to load: not a
        process = Process(target=int, daemon=True)  # client's (whose auth timeout runs)
        process.start()
        process.join()
        process.close()
        _ready_forkserver = pid


#: The forkserver known to have loaded the servers' modules (:func:`start_forkserver`).
_ready_forkserver: int | None = None


def _forkserver_pid() -> int | None:
    pid = getattr(getattr(multiprocessing.forkserver, "_forkserver", None), "_forkserver_pid", None)
    return pid if isinstance(pid, int) else None


def forkserver_bytes(exact: bool = True) -> int:
    """The memory the parent of the servers' processes takes (proportional, as theirs; not
    ``exact``: resident, cheaper and never less)."""
    pid = _forkserver_pid()
    if pid is None:
        return 0
    return memory.used_bytes(pid, exact)


class Measured(Protocol):
    """A process the server counts the memory of."""

    def memory_bytes(self, exact: bool = True) -> int: ...


def server_bytes(children: Sequence[Measured], cap: int) -> int:
    """The memory a server takes: this process's, the forkserver's and ``children``'s, as
    resident sizes while their sum is at most :data:`.memory.EXACT_PAST` of ``cap``, else as
    proportional sizes (forked processes share pages, which resident sizes count once each;
    reading them costs ~7 ms per GB)."""
    resident = memory.resident_bytes() + forkserver_bytes(exact=False) + sum(
        child.memory_bytes(exact=False) for child in children)
    if resident <= memory.EXACT_PAST * cap:
        return resident
    return memory.proportional_bytes() + forkserver_bytes() + sum(
        child.memory_bytes() for child in children)


def cpu_seconds(pid: int | None) -> float:
    """The CPU time process ``pid`` has spent (0 when it is gone or None)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):  # gone
        return 0.0


def encode(*message: object) -> bytes:
    """``message`` as one JSON list in UTF-8 (NaN and infinities refused).

    >>> decode(encode("interrupt", "statement timeout"))
    ['interrupt', 'statement timeout']
    """
    return json.dumps(message, ensure_ascii=False, allow_nan=False).encode()


def _no_constant(name: str) -> object:
    raise ValueError(f"not a number: {name}")


def decode(data: bytes) -> list:
    """The message of :func:`encode`: a non-empty JSON list whose first item, a string, names
    it (EOFError: anything else; ValueError: not JSON)."""
    message = json.loads(data, parse_constant=_no_constant)
    if not isinstance(message, list) or not message or not isinstance(message[0], str):
        raise EOFError(f"not a message: {message!r}")
    return message


def send(pipe: multiprocessing.connection.Connection, *message: object) -> None:
    """Send ``message`` (:func:`encode`)."""
    pipe.send_bytes(encode(*message))


def receive(pipe: multiprocessing.connection.Connection) -> list:
    """The next message (:func:`decode`; EOFError: the other side is gone)."""
    return decode(pipe.recv_bytes(MAX_MESSAGE))


class _Popen(multiprocessing.popen_forkserver.Popen):
    """The forkserver's start, with none of this process's main module: multiprocessing has
    its child import the main script again (a server started from a script without a
    ``__main__`` guard would start itself again; the console script would load the whole
    CLI in every process). A server's process needs only the path to modules."""

    def _launch(self, process_obj: multiprocessing.process.BaseProcess) -> None:
        # (multiprocessing.popen_forkserver.Popen._launch, with our preparation data)
        buf = io.BytesIO()
        multiprocessing.context.set_spawning_popen(self)
        try:
            multiprocessing.reduction.dump(_preparation_data(process_obj.name), buf)
            multiprocessing.reduction.dump(process_obj, buf)
        finally:
            multiprocessing.context.set_spawning_popen(None)
        self.sentinel, w = multiprocessing.forkserver.connect_to_new_process(
            self._fds)  # type: ignore[attr-defined]  # (as multiprocessing has it)
        parent_w = os.dup(w)  # the child's sentinel of this process
        self.finalizer = multiprocessing.util.Finalize(
            self, multiprocessing.util.close_fds,  # type: ignore[attr-defined]  # (it has)
            (parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = multiprocessing.forkserver.read_signed(self.sentinel)


def _preparation_data(name: str) -> dict[str, object]:
    return {"name": name, "sys_path": sys.path, "dir": os.getcwd(), "start_method": "forkserver",
            "authkey": bytes(multiprocessing.process.current_process().authkey)}


#: Whether this Python's forkserver start is the one :class:`_Popen` copies (3.11 to 3.13 were
#: read; on any other, or where a name it uses is missing, the stdlib's own start is used: it
#: works the same, at the cost of the main module imported again in each process).
_OWN_LAUNCH = sys.version_info[:2] in ((3, 11), (3, 12), (3, 13)) and all(
    hasattr(multiprocessing.forkserver, name) for name in ("connect_to_new_process", "read_signed")) \
    and hasattr(multiprocessing.context, "set_spawning_popen")


class Process(multiprocessing.process.BaseProcess):
    """A process forked by the forkserver (:func:`start_forkserver` first)."""

    _start_method = "forkserver"

    @staticmethod
    def _Popen(process_obj: multiprocessing.process.BaseProcess) -> multiprocessing.popen_forkserver.Popen:
        if _OWN_LAUNCH:
            return _Popen(process_obj)
        return multiprocessing.popen_forkserver.Popen(process_obj)


class ProcessHandle(abc.ABC):
    """What the server's handle on a forked process (a PostgreSQL session's, a Flight SQL
    worker's) measures and tells of its memory; the subclass sends the messages."""

    #: Its pid while it runs (None: not started, or reaped).
    _pid: int | None = None
    #: Its memory when the server's was last measured (:meth:`memory_bytes`).
    measured = 0
    _exact = True  # (how ``measured`` was last read: the measure its room is in)
    _room = 0  # (the room last told, and in which measure)
    _told_exact = True

    @abc.abstractmethod
    def _tell(self, *message: object) -> bool:
        """Send ``message`` on the control pipe (False: the process is not running)."""

    def memory_bytes(self, exact: bool = True) -> int:
        """The memory the process takes now (its proportional share of shared pages; not
        ``exact``: its resident memory, cheaper and never less)."""
        pid, self._exact = self._pid, exact
        self.measured = 0 if pid is None else memory.used_bytes(pid, exact)
        return self.measured

    def cpu_seconds(self) -> float:
        """The CPU time the process has spent."""
        return cpu_seconds(self._pid)

    def limit_memory(self, room: int) -> None:
        """Let the process take at most ``room`` bytes from now on, counted as its memory was
        last measured (:meth:`memory_bytes`; told when that changed, or ``room`` by more than
        a 64th)."""
        exact = self._exact
        if (abs(room - self._room) > max(room, self._room) // 64 or exact != self._told_exact) \
                and self._tell("room", room, exact):
            self._room, self._told_exact = room, exact


class MemoryCap:
    """The memory a forked process may take (none without a server cap), which the kernel
    holds it to (:func:`.memory.cap_process_memory`, from any of its threads), counted in the
    measure the server gave it in (``exact``: proportional sizes, else resident)."""

    def __init__(self, max_memory: int):
        self._capped = bool(max_memory)
        self._room = max_memory
        self._exact = True
        self._lock = threading.Lock()

    def set(self, room: int, exact: bool) -> None:
        if self._capped:
            with self._lock:
                self._room, self._exact = max(room, 0), exact
            self.keep()

    def keep(self) -> None:
        if self._capped:
            with self._lock:
                memory.cap_process_memory(self._room, memory.used_bytes(exact=self._exact))
