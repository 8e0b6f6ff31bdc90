"""A ``vcfzarr-sql serve`` (PostgreSQL protocol) on port 0 in a background thread, a data
directory holding one store, and what tests say to it (psycopg, raw protocol messages, pgJDBC's
``DatabaseMetaData`` through tests/java/CatalogProbe.java)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import oracle
import psycopg
import pytest

from vcfzarr_sql.serve.pg import make_server

SAMPLE_VCF = oracle.CORPUS_SAMPLE
PASSWORD = "correct horse battery staple"

JAVA_PROBE = Path(__file__).parent / "java" / "CatalogProbe.java"
PGJDBC_JAR = Path("/usr/share/java/postgresql.jar")
#: marks a test that runs :func:`catalog_probe`
needs_pgjdbc = pytest.mark.skipif(not PGJDBC_JAR.exists() or shutil.which("java") is None,
                                  reason="java or pgJDBC (Debian libpostgresql-jdbc-java) missing")


def catalog_probe(port: int, database: str, user: str, table: str, *setup: str,
                  password: str = "") -> dict[str, list[list[str]]]:
    """What pgJDBC's ``DatabaseMetaData`` says of the server on ``port`` (tests/java/CatalogProbe.java,
    after the ``setup`` statements on its connection): section name -> rows of fields."""
    out = subprocess.run(
        # (-XX:-UsePerfData: no /tmp/hsperfdata_<user> left behind by the JVM)
        ["java", "-XX:-UsePerfData", "-cp", str(PGJDBC_JAR), str(JAVA_PROBE), f"jdbc:postgresql://127.0.0.1:{port}/{database}",
         user, password, table, *setup],
        capture_output=True, text=True, timeout=180, check=True).stdout
    sections: dict[str, list[list[str]]] = {}
    for line in out.splitlines():
        if line.startswith("== "):
            current = sections.setdefault(line[3:], [])
        else:
            current.append(line.split("\t"))
    return sections


def _running(**kwargs):
    server = make_server("127.0.0.1", 0, **kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture()
def serving():
    """``serving(**make_server_kwargs)`` -> a running server, stopped after the test."""
    servers = []

    def start(**kwargs):
        servers.append(_running(**kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def data_dir(convert_once, tmp_path_factory) -> Path:
    """A data directory holding one store, ``sample.zarr`` (a copy of the converted sample)."""
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(convert_once(SAMPLE_VCF, variants_chunk_size=3), root / "sample.zarr")
    return root


def _connect(server, **kwargs) -> psycopg.Connection:
    kwargs.setdefault("autocommit", True)
    kwargs.setdefault("connect_timeout", 10)
    return psycopg.connect(host="127.0.0.1", port=server.port, user="tester", dbname="any", **kwargs)


def _msg(kind: bytes, payload: bytes = b"") -> bytes:
    return kind + struct.pack(">i", len(payload) + 4) + payload


def _startup(user: bytes = b"raw") -> bytes:
    params = b"user\x00" + user + b"\x00\x00"
    return struct.pack(">ii", 8 + len(params), 196608) + params


def _wait_for(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def cancel_once_busy(server, con: psycopg.Connection) -> None:
    """Send ``con``'s CancelRequest (from a thread) once its session on ``server`` runs a
    statement (a timer could fire before the statement starts on a loaded machine: there
    would be nothing to cancel, and the statement would run on)."""
    pid = con.info.backend_pid

    def cancel() -> None:
        _wait_for(lambda: any(key[0] == pid and session.busy_since
                              for key, session in list(server.sessions.items())))
        time.sleep(0.2)  # (busy is told as the statement begins)
        con.cancel_safe()
    threading.Thread(target=cancel, daemon=True).start()


def _default_signals(ignore_sigint: bool) -> Callable[[], None]:
    def reset() -> None:  # in the child, before exec: a test's own dispositions do not leak
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignore_sigint else signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return reset


@contextlib.contextmanager
def serve_process(*args: str, ignore_sigint: bool = False) -> Iterator[tuple[subprocess.Popen, int]]:
    """``vcfzarr-sql serve --port 0 ARGS`` in a process of its own (with default signal
    dispositions, or SIGINT ignored as under ``serve &`` from a script) and its port; stopped
    when the block ends, however it ends. Its temporary directory is one of its own, which
    must be empty once it has stopped (multiprocessing's ``pymp-*``, the forkserver's socket,
    was left behind by a server whose exit handler failed)."""
    temp = tempfile.mkdtemp(prefix="serve-")
    process = subprocess.Popen(
        [sys.executable, "-m", "vcfzarr_sql", "serve", "--port", "0", *args], stderr=subprocess.PIPE,
        text=True, restore_signals=True, preexec_fn=_default_signals(ignore_sigint),
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "TMPDIR": temp})
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        found = re.search(r":(\d+) \(Ctrl-C stops\)", banner)
        assert found is not None, banner
        yield process, int(found.group(1))
    finally:
        if process.poll() is None:  # stopped as a user stops it (SIGTERM: it removes what it made
            process.terminate()     # in the temp directory); killed if it does not end in time
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        process.wait(60)
        left = os.listdir(temp)
        shutil.rmtree(temp, ignore_errors=True)
    assert not left, f"the server left {left} in its temporary directory"


def process_tree_memory(pid: int) -> int:
    """Bytes process ``pid`` and its descendants take (proportional set sizes)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            with open(f"/proc/{current}/smaps_rollup") as f:
                total += sum(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))
        except OSError:
            pass
    return total


def peak_tree_memory(pid: int, threads: list[threading.Thread]) -> int:
    """Start ``threads`` and return the most memory process ``pid`` and its descendants took
    (:func:`process_tree_memory`, 50 looks a second) until every thread ended."""
    peak = 0
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        peak = max(peak, process_tree_memory(pid))
        time.sleep(0.02)
    return peak


@contextlib.contextmanager
def longest_gil_hold() -> Iterator[list[float]]:
    """A thread that wakes every 10 ms while the block runs; yields the list its gaps go to
    (its max is the longest stretch another thread held Python's GIL)."""
    gaps: list[float] = []
    done = threading.Event()

    def tick() -> None:
        last = time.monotonic()
        while not done.is_set():
            time.sleep(0.01)
            gaps.append(time.monotonic() - last)
            last = time.monotonic()

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        yield gaps
    finally:
        done.set()
        ticker.join()


@contextlib.contextmanager
def relayed_from(source: str, port: int) -> Iterator[int]:
    """A port on 127.0.0.1 whose connections reach ``port`` on 127.0.0.1 from the address
    ``source`` (127.0.0.2...: Linux routes all of 127/8 to loopback), for clients that cannot
    choose their own (gRPC's): the server sees them at ``source``. Closed when the block ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    pairs: list[socket.socket] = []

    def pump(reader: socket.socket, writer: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := reader.recv(1 << 16):
                writer.sendall(data)
        with contextlib.suppress(OSError):
            writer.shutdown(socket.SHUT_WR)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                inner, _ = listener.accept()
                outer = socket.create_connection(("127.0.0.1", port), source_address=(source, 0))
                pairs.extend((inner, outer))
                for reader, writer in ((inner, outer), (outer, inner)):
                    threading.Thread(target=pump, args=(reader, writer), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # (wakes the accept: close alone does not)
        listener.close()
        for sock in pairs:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
