"""A client's session in a process of its own, so that the server can always end it.

DuckDB's ``interrupt()`` does not stop a value built inside one scalar call
(``repeat('x', 1000000000)`` runs about 20 s past it), and its ``memory_limit`` does not count
such a value. A thread cannot be killed; a process can. So each connection of a server whose
sessions have DuckDB instances of their own is served by a process of its own, forked from a
clean parent that has loaded the session modules (multiprocessing's forkserver, started once per
server process and gone with it: the server itself, with its threads and DuckDB instances, is
never forked). The child runs the same :class:`~.session.ClientSession` (TLS, password,
protocol, its own locked-down DuckDB); what needs the whole server goes over a pipe as small
JSON messages (never pickles: the server trusts nothing a session's process says):

- session -> server: ``admit`` (``--max-connections``), the login throttle's ``wait``,
  ``failed`` and ``succeeded`` (for the server's address, not one the child names);
  ``cancel`` (a CancelRequest's key); ``signal`` (``pg_cancel_backend``/``pg_terminate_backend``,
  as the server's session of this process); ``busy`` and ``idle`` (for the watchdog); ``log``
  (the session's log records, logged by the server as its own before the session goes on).
- server -> session: ``interrupt``, ``drop``, ``terminate``, ``hang_up``, ``end`` (a FATAL
  error to the client, then the process exits; it is killed :data:`KILL_WAIT` seconds later if
  it has not), and ``room`` (the memory it may take: its own and its share of what the
  server's cap leaves free).

The server keeps a handle on every connection (:class:`SessionProcess`: what its watchdog,
cancel requests and limits read), and starts the process only once the client has sent
something (a CancelRequest is served without one), so silent sockets cost no process. The
watchdog counts the server's memory as its own plus its sessions'
(:func:`.memory.proportional_bytes`), and tells each session the room it has: its own memory
and its share of what the cap leaves free; the session's process has the kernel refuse it
more (``RLIMIT_DATA``, :func:`.memory.cap_process_memory`), so a value that needs new address
space beyond it fails at once with DuckDB's ``Out of Memory Error``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import multiprocessing.forkserver
import multiprocessing.popen_forkserver
import multiprocessing.process
import multiprocessing.reduction
import multiprocessing.util
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from vcfzarr_sql.serve.pg import memory, protocol
from vcfzarr_sql.serve.pg.auth import LoginThrottle, ScramSecret
from vcfzarr_sql.serve.pg.config import Limits, Security, tls_context
from vcfzarr_sql.serve.pg.lockdown import LockedDatabase, SessionPolicy
from vcfzarr_sql.serve.pg.session import ClientSession

log = logging.getLogger("vcfzarr_sql.serve.pg")

#: Seconds a session told to end has to exit before it is killed.
KILL_WAIT = 1.0
#: Longest message either side reads (and longest log message sent, in UTF-8 bytes).
_MAX_MESSAGE = 1 << 13
_MAX_LOGGED = 1 << 11
#: The loggers whose records a session's process sends (the server logs no other name).
_LOGGERS = frozenset({"vcfzarr_sql.serve.pg"})
#: Seconds between two looks of a session's process at its memory cap and at its server.
_PERIOD = 0.2

_CONTEXT = multiprocessing.get_context("forkserver")


def start_forkserver() -> None:
    """Start the parent of the sessions' processes, with the session modules loaded (once per
    process; it exits with this process)."""
    global _ready_forkserver
    _CONTEXT.set_forkserver_preload(["vcfzarr_sql.serve.pg.session_preload"])
    multiprocessing.forkserver.ensure_running()
    pid = _forkserver_pid()
    if pid != _ready_forkserver:  # its first child waits for the session modules to load: not
        process = _Process(target=int, daemon=True)  # a client's (its auth timeout runs)
        process.start()
        process.join()
        process.close()
        _ready_forkserver = pid


#: The forkserver known to have loaded the session modules (:func:`start_forkserver`).
_ready_forkserver: int | None = None


def _forkserver_pid() -> int | None:
    pid = getattr(getattr(multiprocessing.forkserver, "_forkserver", None), "_forkserver_pid", None)
    return pid if isinstance(pid, int) else None


def forkserver_bytes() -> int:
    """The memory the parent of the sessions' processes takes (proportional, as theirs)."""
    pid = _forkserver_pid()
    return 0 if pid is None else memory.proportional_bytes(pid)


class _Popen(multiprocessing.popen_forkserver.Popen):
    """The forkserver's start, with none of this process's main module: multiprocessing has
    its child import the main script again (a server started from a script without a
    ``__main__`` guard would start itself again; the console script would load the whole
    CLI in every session's process). A session's process needs only the path to modules."""

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
#: works the same, at the cost of the main module imported again in each session's process).
_OWN_LAUNCH = sys.version_info[:2] in ((3, 11), (3, 12), (3, 13)) and all(
    hasattr(multiprocessing.forkserver, name) for name in ("connect_to_new_process", "read_signed")) \
    and hasattr(multiprocessing.context, "set_spawning_popen")


class _Process(multiprocessing.process.BaseProcess):
    _start_method = "forkserver"

    @staticmethod
    def _Popen(process_obj: multiprocessing.process.BaseProcess) -> multiprocessing.popen_forkserver.Popen:
        if _OWN_LAUNCH:
            return _Popen(process_obj)
        return multiprocessing.popen_forkserver.Popen(process_obj)


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


def _send(pipe: multiprocessing.connection.Connection, *message: object) -> None:
    pipe.send_bytes(json.dumps(message, ensure_ascii=False, allow_nan=False).encode())


def _no_constant(name: str) -> object:
    raise ValueError(f"not a number: {name}")


def _receive(pipe: multiprocessing.connection.Connection) -> list:
    message = json.loads(pipe.recv_bytes(_MAX_MESSAGE), parse_constant=_no_constant)
    if not isinstance(message, list) or not message or not isinstance(message[0], str):
        raise EOFError(f"not a message: {message!r}")
    return message


class SessionProcess:
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
        self._pid: int | None = None
        self._control: multiprocessing.connection.Connection | None = None
        self._dropped = False
        #: Its memory when the server's was last measured (:meth:`memory_bytes`).
        self.measured = 0
        self._room = 0

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
        here, there = _CONTEXT.Pipe()
        control_there, control_here = _CONTEXT.Pipe(duplex=False)
        process = _Process(
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
            self._tell("drop")
        try:
            self._answer(here, host, process)
        finally:
            with self._lock:
                self._control, self._pid = None, None
            here.close()
            control_here.close()
            process.join(KILL_WAIT)
            if process.exitcode is None:
                process.kill()
                process.join()
            process.close()

    def _answer(self, calls: multiprocessing.connection.Connection, host: Host,
                process: multiprocessing.process.BaseProcess) -> None:
        """Answer the process's calls until it exits (killing it once told to end and late)."""
        while True:
            try:
                if not calls.poll(_PERIOD):
                    if process.exitcode is not None:
                        return
                    continue
                name, *args = _receive(calls)
                answer = self._call(host, name, args)
            except (EOFError, OSError, ValueError, TypeError, LookupError, ArithmeticError):
                return  # gone, or not our session's word
            if answer is not None:
                _send(calls, "answer", answer)

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
                _send(self._control, *message)
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
        self._tell("terminate")

    def drop(self) -> None:
        """End a connection past the auth timeout (or to make room for another login)."""
        with self._lock:
            if self.logged_in:  # (logged in since the watchdog looked)
                return
            self._dropped = True
            if self._control is None:  # still waiting for the client's first bytes
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RD)
                return
        self._tell("drop")

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

    def memory_bytes(self) -> int:
        """The memory the process takes now (its proportional share of shared pages)."""
        pid = self._pid
        self.measured = memory.proportional_bytes(pid) if pid is not None else 0
        return self.measured

    def cpu_seconds(self) -> float:
        """The CPU time the process has spent."""
        pid = self._pid
        if pid is None:
            return 0.0
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):  # gone
            return 0.0

    def limit_memory(self, room: int) -> None:
        """Let the process take at most ``room`` bytes from now on (told when it changed by
        more than a 64th)."""
        if abs(room - self._room) > max(room, self._room) // 64 and self._tell("room", room):
            self._room = room


# -- the session's side ------------------------------------------------------------------------


class _Server:
    """The server, as a session's process reaches it (one call at a time)."""

    def __init__(self, calls: multiprocessing.connection.Connection):
        self._calls = calls
        self._lock = threading.Lock()

    def tell(self, *message: object) -> None:
        with self._lock:
            _send(self._calls, *message)

    def ask(self, *message: object) -> bool:
        with self._lock:
            _send(self._calls, *message)
            name, *answer = _receive(self._calls)
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
    threading.Thread(target=_obey, args=(control, session, setup.limits.max_memory),
                     name="vcfzarr-sql session control", daemon=True).start()
    session.run()


def _obey(control: multiprocessing.connection.Connection, session: ClientSession,
          max_memory: int) -> None:
    """Do what the server says to ``session``; keep the process's memory cap current."""
    room = max_memory or None
    while True:
        if room is not None:
            memory.cap_process_memory(room, memory.proportional_bytes())
        try:
            if not control.poll(_PERIOD):
                continue
            name, *args = _receive(control)
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
        elif name == "room":
            room = max(int(args[0]), 0) if max_memory else None
        elif name == "end":
            try:
                session.end(str(args[0]), str(args[1]))
            finally:
                os._exit(1)  # (a thread inside DuckDB may never return)

