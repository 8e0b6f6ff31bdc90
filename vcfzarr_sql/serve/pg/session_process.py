"""A client's session in a process of its own, so that the server can always end it.

Each connection of a server whose sessions have DuckDB instances of their own is served by a
process forked from the servers' preloaded forkserver (:mod:`vcfzarr_sql.serve.workers`: why
a process, and how it starts). The child runs the same :class:`~.session.ClientSession` (TLS,
password, protocol, its own locked-down DuckDB); what needs the whole server goes over a pipe
as small JSON messages (never pickles: the server trusts nothing a session's process says):

- session -> server: ``admit`` (``--max-connections``), the login throttle's ``wait``,
  ``failed`` and ``succeeded`` (for the server's address, not one the child names);
  ``cancel`` (a CancelRequest's key); ``signal`` (``pg_cancel_backend``/``pg_terminate_backend``,
  as the server's session of this process); ``busy`` and ``idle`` (for the watchdog); ``log``
  (the session's log records, logged by the server as its own before the session goes on).
- server -> session: ``interrupt``, ``drop``, ``terminate``, ``hang_up``, ``end`` (a FATAL
  error to the client, then the process exits; it is killed :data:`KILL_WAIT` seconds later if
  it has not; a ``drop`` or ``terminate`` still not obeyed :data:`END_WAIT` seconds later is
  followed by an ``end``), and ``room`` (the memory it may take: its own and its share of what the
  server's cap leaves free).

The server keeps a handle on every connection (:class:`SessionProcess`: what its watchdog,
cancel requests and limits read), and starts the process only once the client has sent
something (a CancelRequest is served without one), so silent sockets cost no process. The
watchdog counts the server's memory as its own plus its sessions' (resident sizes, and
proportional ones near the cap: :meth:`SessionProcess.memory_bytes`), and tells each session the room it has: its own memory
and its share of what the cap leaves free; the session's process has the kernel refuse it
more (``RLIMIT_DATA``, :func:`~vcfzarr_sql.serve.memory.cap_process_memory`), so a value that needs new address
space beyond it fails at once with DuckDB's ``Out of Memory Error``.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing.connection
import multiprocessing.process
import os
import select
import signal
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from vcfzarr_sql.serve import memory, workers
from vcfzarr_sql.serve.pg import protocol
from vcfzarr_sql.serve.pg.auth import LoginThrottle, ScramSecret
from vcfzarr_sql.serve.pg.config import Limits, Security, tls_context
from vcfzarr_sql.serve.pg.lockdown import LockedDatabase, SessionPolicy
from vcfzarr_sql.serve.pg.session import ClientSession

log = logging.getLogger("vcfzarr_sql.serve.pg")

#: Seconds a session told to end has to exit before it is killed.
KILL_WAIT = workers.KILL_WAIT
#: Seconds a session told to drop or terminate has to exit before it is told to end (and
#: killed :data:`KILL_WAIT` seconds later).
END_WAIT = 2.0
#: Longest log message sent, in UTF-8 bytes.
_MAX_LOGGED = 1 << 11
#: The loggers whose records a session's process sends (the server logs no other name).
_LOGGERS = frozenset({"vcfzarr_sql.serve.pg"})

@dataclass(frozen=True)
class Setup:
    """What a session's process needs of its server (sent once, when it starts)."""

    policy: SessionPolicy
    limits: Limits
    secret: ScramSecret | None
    tls_files: tuple[str, str] | None


class Host(Protocol):
    """What a :class:`SessionProcess` asks of its server."""

    security: Security

    def admit(self, key: tuple[int, int]) -> bool: ...

    def cancel(self, key: tuple[int, int]) -> None: ...

    def signal_backend(self, caller_key: tuple[int, int], pid: int, terminate: bool) -> bool: ...

    def start_refusal(self, address: str) -> str | None: ...

    def refuse(self, request: socket.socket, message: str) -> None: ...


class SessionProcess(workers.ProcessHandle):
    """The server's handle on one connection, served by a process of its own (see the module).

    What the watchdog (:class:`~.watchdog.Endable`), ``pg_cancel_backend`` and the login
    slots read: ``key``, ``peer``, ``user``, ``connected_at``, ``logged_in``, ``busy_since``.
    """

    def __init__(self, sock: socket.socket, *, key: tuple[int, int], peer: str, setup: Setup):
        self._sock = sock
        self.key = key
        self.peer = peer
        self._setup = setup
        self.user = ""
        self.connected_at = time.monotonic()
        self.logged_in = False
        #: When the session began its current message, as the server saw it (None: idle).
        self.busy_since: float | None = None
        self._lock = threading.Lock()
        self._control: multiprocessing.connection.Connection | None = None
        self._dropped = False
        self._ending: threading.Timer | None = None  # (a drop or terminate not yet obeyed)

    # -- the server's side ---------------------------------------------------------------------

    def serve(self, host: Host) -> None:
        """Serve the connection until its process exits (waiting first for the client to
        send something, up to the auth timeout), then close it."""
        try:
            if self._wait_for_client() and not self._cancel_request(host):
                self._run(host)
        finally:
            with contextlib.suppress(OSError):
                self._sock.close()

    def _wait_for_client(self) -> bool:
        """Whether the client sent something (False: it left, or it was dropped, and told so)."""
        timeout = self._setup.limits.auth_timeout
        poller = select.poll()
        poller.register(self._sock, select.POLLIN)
        ready = poller.poll(int(timeout * 1000) if timeout else None)
        with self._lock:
            if not self._dropped and ready:
                with contextlib.suppress(OSError):
                    return self._sock.recv(1, socket.MSG_PEEK) != b""
                return False
            self._sock.settimeout(1)
            with contextlib.suppress(OSError):
                self._sock.sendall(protocol.error_response(
                    "FATAL", "08006", "timeout expired before the client logged in"))
            return False

    def _cancel_request(self, host: Host) -> bool:
        """Serve a CancelRequest here, if that is what the client sent (no process for it)."""
        with contextlib.suppress(OSError):
            first = self._sock.recv(16, socket.MSG_PEEK)
            if len(first) == 16 and struct.unpack(">ii", first[:8]) == (16, protocol.CANCEL_REQUEST):
                self._sock.recv(16)
                host.cancel(struct.unpack(">ii", first[8:]))
                return True
        return False

    def _run(self, host: Host) -> None:
        refusal = host.start_refusal(self.peer)
        if refusal is not None:  # (no process: starts past their rate)
            log.warning("refused a connection from %s: %s", self.peer, refusal)
            host.refuse(self._sock, refusal)
            return
        here, there = workers.CONTEXT.Pipe()
        control_there, control_here = workers.CONTEXT.Pipe(duplex=False)
        process = workers.Process(
            target=_session_main, name=f"vcfzarr-sql session {self.key[0]}", daemon=True,
            args=(self._sock, there, control_there, self._setup, self.key, self.peer, self.connected_at))
        try:
            process.start()
        except (OSError, EOFError) as err:  # no process to be had (the machine's limits)
            log.warning("no process for a session from %s: %s", self.peer, err)
            self._sock.settimeout(1)
            with contextlib.suppress(OSError):
                self._sock.sendall(protocol.error_response(
                    "FATAL", "53300", "could not start a process for the connection"))
            here.close()
            control_here.close()
            return
        finally:
            there.close()
            control_there.close()
        # (a write the process does not read fails at once: a process that stops reading is
        # killed, never waited for with the lock held, :meth:`_tell`)
        os.set_blocking(control_here.fileno(), False)
        with self._lock:
            self._pid, self._control = process.pid, control_here
            dropped = self._dropped
        if dropped:  # (while it started)
            self.drop()
        try:
            self._answer(here, host, process)
        finally:
            with self._lock:
                self._control, self._pid = None, None
                if self._ending is not None:
                    self._ending.cancel()
            here.close()
            control_here.close()
            process.join(KILL_WAIT)
            if process.exitcode is None:
                process.kill()
                process.join()
            # (not closed: its pipes close when it is collected. A thread closing it while
            # multiprocessing's exit handler joins the server's children made that join raise,
            # leaving the forkserver's /tmp/pymp-* behind, as the Flight reaper did)

    def _answer(self, calls: multiprocessing.connection.Connection, host: Host,
                process: multiprocessing.process.BaseProcess) -> None:
        """Answer the process's calls until it exits (killing it once told to end and late)."""
        while True:
            try:
                if not calls.poll(workers.PERIOD):
                    if process.exitcode is not None:
                        return
                    continue
                name, *args = workers.receive(calls)
                answer = self._call(host, name, args)
            except (EOFError, OSError, ValueError, TypeError, LookupError, ArithmeticError):
                return  # gone, or not our session's word
            if answer is not None:
                workers.send(calls, "answer", answer)

    def _call(self, host: Host, name: str, args: list) -> bool | None:
        """What the server says to the call ``name(*args)`` (None: nothing, a notice)."""
        if name == "busy":
            self.busy_since = time.monotonic()
        elif name == "idle":
            self.busy_since = None
        elif name == "admit":
            self.user = str(args[0])
            with self._lock:  # (never both: dropped while it logged in, and admitted)
                self.logged_in = not self._dropped and host.admit(self.key)
            return self.logged_in
        elif name == "wait":
            deadline = None if args[0] is None else float(args[0])
            return host.security.throttle.wait(self.peer, deadline)
        elif name == "failed":
            host.security.throttle.failed(self.peer)
        elif name == "succeeded":
            host.security.throttle.succeeded(self.peer)
        elif name == "cancel":
            host.cancel((int(args[0]), int(args[1])))
        elif name == "signal":
            return host.signal_backend(self.key, int(args[0]), bool(args[1]))
        elif name == "log":  # (answered: logged before the session goes on)
            if str(args[0]) in _LOGGERS:  # (our loggers only: no new logger for each name)
                logging.getLogger(str(args[0])).log(int(args[1]), "%s", str(args[2]))
            return True
        else:
            raise ValueError(f"unknown call {name!r}")
        return None

    def _tell(self, *message: object) -> bool:
        """Send ``message`` to the process (False: it is not running). A process whose
        control pipe is full has stopped doing what it is told: it is killed."""
        with self._lock:
            if self._control is None:
                return False
            try:
                workers.send(self._control, *message)
                return True
            except BlockingIOError:
                self._kill()
                return False
            except OSError:
                return False

    def _kill(self) -> None:
        """Kill the process, if it is still this session's (the lock held: its pid is not
        reaped, so not reused, before :meth:`_run` lets go of it)."""
        if self._pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)

    def _kill_late(self) -> None:
        with self._lock:
            self._kill()

    # -- what the server and its watchdog do to a session ----------------------------------------

    def fileno(self) -> int:
        """The connection's file descriptor (the server keeps one; -1 once closed)."""
        return self._sock.fileno()

    def interrupt(self, reason: str = "user request") -> None:
        self._tell("interrupt", reason)

    def terminate(self) -> None:
        """``pg_terminate_backend``: the process is ended if it has not exited
        :data:`END_WAIT` seconds later."""
        self._tell("terminate")
        self._end_later("57P01", "terminating connection due to administrator command")

    def drop(self) -> None:
        """End a connection past the auth timeout (or to make room for another login): its
        process is ended if it has not exited :data:`END_WAIT` seconds later."""
        with self._lock:
            if self.logged_in:  # (logged in since the watchdog looked)
                return
            self._dropped = True
            if self._control is None:  # still waiting for the client's first bytes
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RD)
                return
        self._tell("drop")
        self._end_later("08006", "timeout expired before the client logged in")

    def _end_later(self, sqlstate: str, message: str) -> None:
        """:meth:`end` the process :data:`END_WAIT` seconds from now, unless it has exited
        (once: a drop told again does not wait longer)."""
        with self._lock:
            if self._control is None or self._ending is not None:
                return
            self._ending = threading.Timer(END_WAIT, self.end, (sqlstate, message))
            self._ending.daemon = True
            self._ending.start()

    def hang_up(self) -> None:
        """End the session (the server stops)."""
        if not self._tell("hang_up"):
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)

    def end(self, sqlstate: str, message: str) -> None:
        """Tell the client a FATAL error and end the process, whatever it is doing (it is
        killed if it has not exited :data:`KILL_WAIT` seconds later)."""
        timer = threading.Timer(KILL_WAIT, self._kill_late)
        timer.daemon = True
        timer.start()
        self._tell("end", sqlstate, message)



# -- the session's side ------------------------------------------------------------------------


class _Server:
    """The server, as a session's process reaches it (one call at a time)."""

    def __init__(self, calls: multiprocessing.connection.Connection):
        self._calls = calls
        self._lock = threading.Lock()

    def tell(self, *message: object) -> None:
        with self._lock:
            workers.send(self._calls, *message)

    def ask(self, *message: object) -> bool:
        with self._lock:
            workers.send(self._calls, *message)
            name, *answer = workers.receive(self._calls)
            return name == "answer" and answer == [True]


class _ServersLog(logging.Handler):
    """Sends the session's log records to the server, which logs them before the session goes
    on (a failed login is in the server's log before its client is told)."""

    def __init__(self, server: _Server):
        super().__init__()
        self._server = server

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(OSError, ValueError):
            text = self.format(record).encode()[:_MAX_LOGGED].decode(errors="ignore")
            self._server.ask("log", record.name, record.levelno, text)


class _ServersThrottle(LoginThrottle):
    """The login throttle of the server (a session's process has none of its own)."""

    def __init__(self, server: _Server):
        super().__init__()
        self._server = server

    def wait(self, host: str, deadline: float | None = None) -> bool:
        return self._server.ask("wait", deadline)

    def failed(self, host: str) -> None:
        self._server.tell("failed")

    def succeeded(self, host: str) -> None:
        self._server.tell("succeeded")


def _session_main(sock: socket.socket, calls: multiprocessing.connection.Connection,
                  control: multiprocessing.connection.Connection, setup: Setup,
                  key: tuple[int, int], peer: str, connected_at: float) -> None:
    """A session's process: serve the client, doing what the server says meanwhile."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the server stops its sessions itself)
    if setup.limits.max_memory:
        memory.cap_process_memory(setup.limits.max_memory)
    server = _Server(calls)
    package = logging.getLogger(log.name.split(".")[0])
    package.addHandler(_ServersLog(server))
    package.setLevel(logging.DEBUG)  # (the server's own level decides)
    package.propagate = False
    security = Security(tls=None if setup.tls_files is None else tls_context(*setup.tls_files),
                        secret=setup.secret, throttle=_ServersThrottle(server))
    session = ClientSession(
        sock, sessions=LockedDatabase(setup.policy, check=False), security=security,
        limits=setup.limits, key=key, peer=peer, connected_at=connected_at,
        cancel=lambda other: server.tell("cancel", *other),
        signal=lambda _caller, pid, terminate: server.ask("signal", pid, terminate),
        admit=lambda user: server.ask("admit", user),
        on_busy=lambda busy: server.tell("busy" if busy else "idle"))
    threading.Thread(target=_obey, args=(control, session, workers.MemoryCap(setup.limits.max_memory)),
                     name="vcfzarr-sql session control", daemon=True).start()
    session.run()


def _obey(control: multiprocessing.connection.Connection, session: ClientSession,
          cap: workers.MemoryCap) -> None:
    """Do what the server says to ``session``; keep the process's memory cap current."""
    while True:
        cap.keep()
        try:
            if not control.poll(workers.PERIOD):
                continue
            name, *args = workers.receive(control)
        except (EOFError, OSError, ValueError):  # the server is gone
            try:
                session.end("57P01", "terminating connection due to server shutdown")
            finally:
                os._exit(1)
        if name == "interrupt":
            session.interrupt(str(args[0]))
        elif name == "drop":
            session.drop()
        elif name == "terminate":
            session.terminate()
        elif name == "hang_up":
            session.hang_up()
        elif name == "room":  # (counted as the server measured: proportional, or resident)
            cap.set(int(args[0]), bool(args[1]))
        elif name == "end":
            try:
                session.end(str(args[0]), str(args[1]))
            finally:
                os._exit(1)  # (a thread inside DuckDB may never return)

