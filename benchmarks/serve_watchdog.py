"""What the PostgreSQL server's memory watch costs while its sessions are idle: resident sizes
read first and proportional sizes only past half the cap (the default), side by side with
proportional sizes read at every look (``memory.EXACT_PAST = 0``, what the server did before).

Each round starts a server with ``--max-memory`` in a process of its own, opens ``--sessions``
idle connections (one ``SELECT 1`` each), waits a second, then measures the CPU of the server's
whole tree (the server with its watchdog, the sessions' parent and every session's process,
each of which keeps its own memory cap current) over ``--seconds`` of nothing happening.
Rounds alternate, ``--repeat`` times; medians printed.

    python -m benchmarks.serve_watchdog --sessions 6 --max-memory 4GB --seconds 10 --repeat 3
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
from vcfzarr_sql.serve.pg import Limits, make_server, memory
if sys.argv[3] == "always":
    memory.EXACT_PAST = 0.0
limits = Limits(max_memory=memory.parse_size(sys.argv[2]))
server = make_server("127.0.0.1", 0, data_dirs=[sys.argv[1]], limits=limits)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.port, flush=True)
sys.stdin.read()
server.shutdown()
server.server_close()
"""


def _idle_cpu(how: str, sessions: int, max_memory: str, seconds: float) -> float:
    with tempfile.TemporaryDirectory() as data, served(_SERVER, data, max_memory, how) as (server, port):
        clients = [psycopg.connect(host="127.0.0.1", port=port, user="bench", autocommit=True)
                   for _ in range(sessions)]
        try:
            for con in clients:
                con.execute("SELECT 1")
            time.sleep(1)
            before = tree_cpu(server.pid)
            time.sleep(seconds)
            return tree_cpu(server.pid) - before
        finally:
            for con in clients:
                con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--max-memory", default="4GB")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cpu: dict[str, list[float]] = {"near the cap": [], "always": []}
    for _ in range(args.repeat):
        for how in cpu:
            cpu[how].append(_idle_cpu(how, args.sessions, args.max_memory, args.seconds))
            print(f"{how:>12}: {cpu[how][-1]:.2f} CPU-s", flush=True)
    near, always = (statistics.median(values) for values in cpu.values())
    print(f"{args.sessions} idle sessions, --max-memory {args.max_memory}, {args.seconds:g} s: "
          f"proportional sizes near the cap {near:.2f} CPU-s, always {always:.2f} CPU-s "
          f"({near / always if always else float('nan'):.3f}x)")


if __name__ == "__main__":
    main()
