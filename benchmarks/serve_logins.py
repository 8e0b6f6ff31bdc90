"""What a login costs the PostgreSQL server, sessions in processes of their own (the default)
side by side with sessions as threads of the server (``make_server(processes=False)``, what
every session was before, and what a ``--writable`` database's still are).

Each round starts a server in a process of its own, makes ``--logins`` connections one after
another (psycopg connect + ``SELECT 1`` + close) after a first one, and stops it; wall time
per login is the client's, CPU time per login is the server's whole tree from ``/proc`` (the
server, the sessions' parent and every session's process, which their parent has reaped), from
after the first login to after the last (so neither start counts). Rounds alternate between
the two, ``--repeat`` times; medians printed.

    python -m benchmarks.serve_logins --logins 50 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import psycopg

from benchmarks.served import served, tree_cpu

_SERVER = """
import sys, threading
from vcfzarr_sql.serve.pg import make_server
server = make_server("127.0.0.1", 0, data_dirs=[sys.argv[1]], processes=sys.argv[2] == "processes")
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.port, flush=True)
sys.stdin.read()
server.shutdown()
server.server_close()
"""


def _round(how: str, logins: int, data: str) -> tuple[float, float]:
    """(wall s, server tree CPU s) per login."""
    with served(_SERVER, data, how) as (server, port):
        with psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True):
            pass  # (the first login of a server starts what later ones share)
        time.sleep(0.5)
        before = tree_cpu(server.pid)
        started = time.monotonic()
        for _ in range(logins):
            with psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True) as con:
                assert con.execute("SELECT 1").fetchone() == (1,)
        wall = time.monotonic() - started
        time.sleep(0.5)  # (the last session's process is reaped)
        cpu = tree_cpu(server.pid) - before
    return wall / logins, cpu / logins


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logins", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    results: dict[str, list[tuple[float, float]]] = {"threads": [], "processes": []}
    with tempfile.TemporaryDirectory() as data:
        for round_ in range(args.repeat):
            for how in (["threads", "processes"] if round_ % 2 == 0 else ["processes", "threads"]):
                results[how].append(_round(how, args.logins, data))
    print(f"{args.logins} logins (connect + SELECT 1 + close), median of {args.repeat}:")
    medians = {how: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for how, runs in results.items()}
    for how, (wall, cpu) in medians.items():
        print(f"  sessions as {how:9}: {wall * 1000:6.1f} ms wall, {cpu * 1000:6.1f} ms server CPU per login")
    (tw, tc), (pw, pc) = medians["threads"], medians["processes"]
    print(f"  processes / threads: wall x{pw / tw:.2f}, CPU x{pc / tc:.2f}")


if __name__ == "__main__":
    main()
