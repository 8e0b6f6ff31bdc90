"""Result streaming through the servers, side by side: rows/s and time to first row of a
3-column BIGINT/VARCHAR/DOUBLE result (1M and 10M rows) through

- the in-process Python API (``vcfzarr_sql.connect().sql(...).to_arrow_reader()``): the ceiling;
- ``serve`` (PostgreSQL wire protocol) to psycopg, text and binary format;
- ``serve --protocol flight-sql`` to ADBC's Flight SQL driver (Arrow record batches);
- with ``--baseline DIR``: ``serve`` run from another checkout (e.g. main before this change).

Each server runs in its own process (``python -m vcfzarr_sql serve``), the client here; ratios
are against psycopg text (what BI tools get) and against the in-process API. The server's CPU
time per result is measured too (a busy machine changes it less than wall time).

    python -m benchmarks.serve                 # 1M and 10M rows
    python -m benchmarks.serve --rows 1000000 --baseline /path/to/main
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

QUERY = ("SELECT i AS id, 'name' || (i % 1000) AS name, (i * 0.5)::DOUBLE AS score "
         "FROM range({rows}) t(i)")
ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _server(protocol: str, code: Path) -> Iterator[int]:
    """A ``vcfzarr-sql serve`` process (from checkout ``code``) on a free port."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(code)}
    process = subprocess.Popen(
        [sys.executable, "-m", "vcfzarr_sql", "serve", "--port", str(port),
         *(["--protocol", protocol] if protocol != "postgres" else [])],
        env=env, stderr=subprocess.PIPE, text=True)
    try:
        process.stderr.readline()  # "serving ... (Ctrl-C stops)"
        yield port
    finally:
        process.terminate()
        process.wait(10)


def _serve_one(binary: bool, rows: int) -> None:
    """Serve one psycopg client (a subprocess) in this process; print the CPU seconds spent."""
    import threading

    from vcfzarr_sql.server import make_server

    server = make_server("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = ("import psycopg\n"
              f"with psycopg.connect(host='127.0.0.1', port={server.port}, user='b', autocommit=True) as con:\n"
              f"    assert len(con.cursor(binary={binary}).execute({QUERY.format(rows=rows)!r}).fetchall()) == {rows}\n")
    started = time.process_time()
    subprocess.run([sys.executable, "-c", client], check=True)
    print(time.process_time() - started)


def _server_cpu(code: Path, binary: bool, rows: int) -> float:
    """CPU seconds a ``serve`` (from checkout ``code``) spends sending ``rows`` rows to psycopg
    in another process (a busy machine changes it less than wall time)."""
    out = subprocess.run([sys.executable, __file__, "--serve-one", "binary" if binary else "text",
                          "--rows", str(rows)], env={**os.environ, "PYTHONPATH": str(code)},
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def _in_process(rows: int) -> tuple[float, float]:
    import vcfzarr_sql

    con = vcfzarr_sql.connect()
    started = time.perf_counter()
    reader = con.sql(QUERY.format(rows=rows)).to_arrow_reader(1 << 16)
    first, count = None, 0
    for batch in reader:
        first = first or time.perf_counter()
        count += batch.num_rows
    assert count == rows
    return first - started, time.perf_counter() - started


def _psycopg(binary: bool) -> Callable[[int, int], tuple[float, float]]:
    def run(port: int, rows: int) -> tuple[float, float]:
        import psycopg

        query = QUERY.format(rows=rows)
        with psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True) as con:
            started = time.perf_counter()
            with con.cursor(binary=binary) as cur:  # first row: single-row mode
                for _ in cur.stream(query):
                    break
            first = time.perf_counter() - started
        with psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True) as con:
            started = time.perf_counter()
            got = con.cursor(binary=binary).execute(query).fetchall()
            total = time.perf_counter() - started
        assert len(got) == rows and got[-1][0] == rows - 1
        return first, total

    return run


def _flight_sql(port: int, rows: int) -> tuple[float, float]:
    import adbc_driver_flightsql.dbapi as flight_sql

    with flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True) as con, con.cursor() as cur:
        started = time.perf_counter()
        cur.execute(QUERY.format(rows=rows))
        reader = cur.fetch_record_batch()
        count = reader.read_next_batch().num_rows
        first = time.perf_counter() - started
        for batch in reader:
            count += batch.num_rows
        total = time.perf_counter() - started
    assert count == rows
    return first, total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--baseline", type=Path, help="another checkout whose serve is measured too")
    parser.add_argument("--serve-one", choices=["text", "binary"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_one:
        _serve_one(args.serve_one == "binary", args.rows[0])
        return
    cases: list[tuple[str, str, Path, Callable[[int, int], tuple[float, float]]]] = [
        ("psycopg text", "postgres", ROOT, _psycopg(False)),
        ("psycopg binary", "postgres", ROOT, _psycopg(True)),
        ("ADBC Flight SQL", "flight-sql", ROOT, _flight_sql),
    ]
    if args.baseline:
        cases.insert(0, ("psycopg text (baseline)", "postgres", args.baseline, _psycopg(False)))
    for rows in args.rows:
        results = {"in-process API": _in_process(rows)}
        for name, protocol, code, run in cases:
            with _server(protocol, code) as port:
                results[name] = run(port, rows)
        text = results["psycopg text"][1]
        api = results["in-process API"][1]
        print(f"\n{rows:,} rows (id BIGINT, name VARCHAR, score DOUBLE); load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"{'path':26} {'first row':>10} {'total':>8} {'M rows/s':>9} {'vs text':>8} {'vs API':>7}")
        for name, (first, total) in results.items():
            print(f"{name:26} {first * 1000:8.1f}ms {total:7.2f}s {rows / total / 1e6:9.2f} "
                  f"{text / total:7.2f}x {api / total:6.2f}x")
        print("server CPU per result (PostgreSQL protocol, psycopg client in another process):")
        for binary in (False, True):
            cpu = _server_cpu(ROOT, binary, rows)
            line = f"  {'binary' if binary else 'text':6}: {cpu:6.2f} s, {rows / cpu / 1e6:5.2f} M rows/CPU s"
            if args.baseline:
                before = _server_cpu(args.baseline, binary, rows)
                line += (f"; baseline {before:6.2f} s, {rows / before / 1e6:5.2f} M rows/CPU s: "
                         f"{before / cpu:.1f}x less CPU")
            print(line)


if __name__ == "__main__":
    main()
