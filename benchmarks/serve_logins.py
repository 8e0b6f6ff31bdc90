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
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

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


def _tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid``, its children and the children they reaped."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            with open(f"/proc/{current}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def _round(how: str, logins: int, data: str) -> tuple[float, float]:
    """(wall s, server tree CPU s) per login."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    server = subprocess.Popen([sys.executable, "-c", _SERVER, data, how], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    assert server.stdout is not None and server.stdin is not None
    port = int(server.stdout.readline())
    with psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True):
        pass  # (the first login of a server starts what later ones share)
    time.sleep(0.5)
    before = _tree_cpu(server.pid)
    started = time.monotonic()
    for _ in range(logins):
        with psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True) as con:
            assert con.execute("SELECT 1").fetchone() == (1,)
    wall = time.monotonic() - started
    time.sleep(0.5)  # (the last session's process is reaped)
    cpu = _tree_cpu(server.pid) - before
    server.stdin.close()
    server.wait(60)
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
