"""What a query costs the Flight SQL server, statements in worker processes (the default)
side by side with statements as threads of the server (``make_flight_server(processes=False)``,
what every statement was before, and what a ``--writable`` database's still are).

Each round starts a server in a process of its own, runs ``--queries`` queries one after
another (pyarrow.flight: GetFlightInfo + DoGet of ``SELECT 1``) after a first one, and stops
it; wall time per query is the client's, CPU time per query is the server's whole tree from
``/proc`` (the server, the workers' parent and every worker), from after the first query to
after the last (so neither start counts). Rounds alternate between the two, ``--repeat``
times; medians printed.

    python -m benchmarks.serve_flight_queries --queries 100 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import pyarrow.flight as flight

from benchmarks.served import served, tree_cpu
from vcfzarr_sql.serve.flight import FlightSql_pb2 as sql
from vcfzarr_sql.serve.flight.server import pack

_SERVER = """
import sys, threading
from vcfzarr_sql.serve.flight import make_flight_server
server = make_flight_server("127.0.0.1", 0, data_dirs=[sys.argv[1]], processes=sys.argv[2] == "processes")
threading.Thread(target=server.serve, daemon=True).start()
print(server.port, flush=True)
sys.stdin.read()
server.shutdown()
"""


def _query(client: flight.FlightClient) -> None:
    info = client.get_flight_info(flight.FlightDescriptor.for_command(
        pack(sql.CommandStatementQuery(query="SELECT 1 AS one"))))
    assert client.do_get(info.endpoints[0].ticket).read_all().num_rows == 1


def _round(how: str, queries: int, data: str) -> tuple[float, float]:
    """(wall s, server tree CPU s) per query."""
    with served(_SERVER, data, how) as (server, port):
        client = flight.FlightClient(f"grpc://127.0.0.1:{port}")
        _query(client)  # (the first query of a server starts what later ones share)
        time.sleep(0.5)
        before = tree_cpu(server.pid)
        started = time.monotonic()
        for _ in range(queries):
            _query(client)
        wall = time.monotonic() - started
        cpu = tree_cpu(server.pid) - before
        client.close()
    return wall / queries, cpu / queries


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    results: dict[str, list[tuple[float, float]]] = {"threads": [], "processes": []}
    with tempfile.TemporaryDirectory() as data:
        for round_ in range(args.repeat):
            for how in (["threads", "processes"] if round_ % 2 == 0 else ["processes", "threads"]):
                results[how].append(_round(how, args.queries, data))
    print(f"{args.queries} queries (GetFlightInfo + DoGet of SELECT 1), median of {args.repeat}:")
    medians = {how: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for how, runs in results.items()}
    for how, (wall, cpu) in medians.items():
        print(f"  statements as {how:9}: {wall * 1000:6.1f} ms wall, {cpu * 1000:6.1f} ms server CPU per query")
    (tw, tc), (pw, pc) = medians["threads"], medians["processes"]
    print(f"  processes / threads: wall x{pw / tw:.2f}, CPU x{pc / tc:.2f}")


if __name__ == "__main__":
    main()
