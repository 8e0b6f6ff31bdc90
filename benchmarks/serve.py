"""Result streaming through the servers, side by side: rows/s and time to first row of a
3-column BIGINT/VARCHAR/DOUBLE result (1M and 10M rows) through

- the in-process Python API (``vcfzarr_sql.connect().sql(...).to_arrow_reader()``): the ceiling;
- ``serve`` (PostgreSQL wire protocol) to psycopg, text and binary format;
- ``serve --protocol flight-sql`` to ADBC's Flight SQL driver (Arrow record batches);
- with ``--baseline DIR``: ``serve`` run from another checkout (e.g. main before this change).

Each server runs in its own process (``python -m vcfzarr_sql serve``), the client here; ratios
are against psycopg text (what BI tools get) and against the in-process API. psycopg is run
the ways a client may read a big result: ``fetchall()``, ``stream(size=...)`` (libpq 17's
chunked rows), plain ``stream()`` (libpq's single-row mode, several times slower in the
client) and a named (server-side) cursor.

A busy machine changes wall time a lot, CPU time little: for each path the client's CPU
seconds (this process) and the server's (its process, from ``/proc``) are printed, the rows per
CPU second of both together (the rate of client and server sharing one core), and the side
that limits (the one that spends more CPU). Each figure is the median of ``--repeat`` runs.

    python -m benchmarks.serve                 # 1M and 10M rows
    python -m benchmarks.serve --rows 1000000 --baseline /path/to/main
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

QUERY = ("SELECT i AS id, 'name' || (i % 1000) AS name, (i * 0.5)::DOUBLE AS score "
         "FROM range({rows}) t(i)")
ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _server(protocol: str, code: Path) -> Iterator[tuple[int, int]]:
    """A ``vcfzarr-sql serve`` process (from checkout ``code``) on a free port: (port, pid)."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(code)}
    process = subprocess.Popen(
        [sys.executable, "-m", "vcfzarr_sql", "serve", "--port", str(port),
         *(["--protocol", protocol] if protocol != "postgres" else [])],
        env=env, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        process.stderr.readline()  # "serving ... (Ctrl-C stops)"
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(10)


def _process_cpu(pid: int) -> float:
    """CPU seconds (user and system, all threads) process ``pid`` has spent, NaN where there
    is no ``/proc`` to read it from."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Run:
    """One result read through one path: seconds of wall time and of CPU on each side."""

    first: float
    total: float
    client_cpu: float
    server_cpu: float = float("nan")


def _median(runs: list[Run]) -> Run:
    return Run(*(statistics.median(getattr(run, name) for run in runs)
                 for name in ("first", "total", "client_cpu", "server_cpu")))


class _Clock:
    """Wall and CPU time (this process's, and the server's) from now on."""

    def __init__(self, server_pid: int | None = None):
        self.server_pid = server_pid
        self.started = time.perf_counter()
        self.first: float | None = None
        self.cpu = _own_cpu()
        self.server_cpu = _process_cpu(server_pid) if server_pid else float("nan")

    def first_row(self) -> None:
        self.first = self.first or time.perf_counter()

    def stop(self) -> Run:
        server = _process_cpu(self.server_pid) - self.server_cpu if self.server_pid else float("nan")
        ended = time.perf_counter()
        return Run((self.first or ended) - self.started, ended - self.started,
                   _own_cpu() - self.cpu, server)


def _in_process(rows: int) -> Run:
    import vcfzarr_sql

    con = vcfzarr_sql.connect()
    clock = _Clock()
    count = 0
    for batch in con.sql(QUERY.format(rows=rows)).to_arrow_reader(1 << 16):
        clock.first_row()
        count += batch.num_rows
    assert count == rows
    return clock.stop()


def _psycopg(binary: bool, how: str = "fetchall", size: int = 10_000) -> Callable[[int, int, int], Run]:
    """psycopg reading the result ``how``: ``fetchall()``; ``stream`` (``size`` rows at a time,
    or one row at a time when ``size`` is 0); or ``named``, a server-side cursor fetching
    ``size`` rows at a time."""

    def streamed(con: psycopg.Connection, query: str) -> Iterator[tuple]:
        if how == "named":
            with con.transaction(), con.cursor("bench", binary=binary) as cursor:
                cursor.itersize = size
                yield from cursor.execute(query)
        else:
            plain = con.cursor(binary=binary)
            yield from plain.stream(query, size=size) if size else plain.stream(query)

    def count_and_last(con: psycopg.Connection, query: str) -> tuple[int, tuple]:
        if how == "fetchall":
            got = con.cursor(binary=binary).execute(query).fetchall()
            return len(got), got[-1]
        [(count, row)] = deque(enumerate(streamed(con, query), 1), maxlen=1)  # the last row
        return count, row

    def run(port: int, pid: int, rows: int) -> Run:
        import psycopg

        query = QUERY.format(rows=rows)
        with psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True) as con:
            started = time.perf_counter()
            with con.cursor(binary=binary) as cur:  # first row: single-row mode
                for _ in cur.stream(query):
                    break
            first = time.perf_counter() - started
        with psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True) as con:
            clock = _Clock(pid)
            count, row = count_and_last(con, query)
            measured = clock.stop()
        assert count == rows and row[0] == rows - 1
        measured.first = first
        return measured

    return run


def _flight_sql(port: int, pid: int, rows: int) -> Run:
    import adbc_driver_flightsql.dbapi as flight_sql

    with flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True) as con, con.cursor() as cur:
        clock = _Clock(pid)
        cur.execute(QUERY.format(rows=rows))
        count = 0
        for batch in cur.fetch_record_batch():
            clock.first_row()
            count += batch.num_rows
        measured = clock.stop()
    assert count == rows
    return measured


def _print(rows: int, results: dict[str, Run]) -> None:
    text, api = results["psycopg text"].total, results["in-process API"].total
    print(f"\n{rows:,} rows (id BIGINT, name VARCHAR, score DOUBLE); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians")
    print(f"{'path':37} {'first row':>9} {'total':>7} {'M rows/s':>8} {'vs text':>7} {'vs API':>6}"
          f" {'client CPU':>10} {'server CPU':>10} {'M rows/CPU s':>12}  limited by")
    for name, run in results.items():
        both = run.client_cpu + (0 if run.server_cpu != run.server_cpu else run.server_cpu)
        side = "-" if run.server_cpu != run.server_cpu else (
            "client" if run.client_cpu >= run.server_cpu else "server")
        print(f"{name:37} {run.first * 1000:7.1f}ms {run.total:6.2f}s {rows / run.total / 1e6:8.2f} "
              f"{text / run.total:6.2f}x {api / run.total:5.2f}x {run.client_cpu:9.2f}s "
              f"{'-' if side == '-' else f'{run.server_cpu:.2f}s':>10} {rows / both / 1e6:12.2f}  {side}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per path (medians are shown)")
    parser.add_argument("--baseline", type=Path, help="another checkout whose serve is measured too")
    args = parser.parse_args(argv)
    cases: list[tuple[str, str, Path, Callable[[int, int, int], Run]]] = [
        ("psycopg text", "postgres", ROOT, _psycopg(False)),
        ("psycopg binary", "postgres", ROOT, _psycopg(True)),
        ("psycopg text stream(size=10000)", "postgres", ROOT, _psycopg(False, "stream")),
        ("psycopg binary stream(size=10000)", "postgres", ROOT, _psycopg(True, "stream")),
        ("psycopg text stream()", "postgres", ROOT, _psycopg(False, "stream", 0)),
        ("psycopg text named, itersize 10000", "postgres", ROOT, _psycopg(False, "named")),
        ("psycopg binary named, itersize 10000", "postgres", ROOT, _psycopg(True, "named")),
        ("ADBC Flight SQL", "flight-sql", ROOT, _flight_sql),
    ]
    if args.baseline:
        cases[1:1] = [("psycopg text (baseline)", "postgres", args.baseline, _psycopg(False)),
                      ("psycopg binary (baseline)", "postgres", args.baseline, _psycopg(True))]
    for rows in args.rows:
        results = {"in-process API": _median([_in_process(rows) for _ in range(args.repeat)])}
        for name, protocol, code, run in cases:
            with _server(protocol, code) as (port, pid):
                results[name] = _median([run(port, pid, rows) for _ in range(args.repeat)])
        _print(rows, results)


if __name__ == "__main__":
    main()
