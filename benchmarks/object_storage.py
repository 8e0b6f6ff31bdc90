"""Reading a store over HTTP with a 20 ms round trip per request, side by side with local disk.

Object storage (S3, GCS) answers each request after tens of milliseconds however small it is;
what matters there is how many requests a query waits for one after another. This script
serves a store directory from a threaded HTTP server (in another process) that sleeps
``--latency`` seconds before every answer (many requests may wait at once, as on S3), counts
the requests, and
reads the store through fsspec's HTTP filesystem (``http://127.0.0.1:PORT/sim.vcz``), then:

- (a) a warm region count (``SELECT count(*) FROM vcf_zarr(url, region := ...)``, runs after
  the first on one connection): wall time, requests, and time in round trips;
- (b) whole-store scans (``count(fmt_GT_1)``, ``sum(fmt_GT_1)`` over ``vcf_zarr_calls``)
  against the same scans of the store on local disk;
- (c) TensorStore's zarr driver reading the whole ``call_genotype`` array over the same server
  and from disk (the read anchor; skipped when ``tensorstore`` is not installed);
- (d) a timeline of one more HTTP run of each query: each batch of requests (when it started
  and ended) and the first chunk decoded, and so the round trips waited one after the other
  before it (whatever the load, unlike the times).

Each query runs twice untimed first: a session asking a query again requests the chunks its
scans read first while it revalidates the store (``store/revalidation.py``), which the second
run learns.

On a machine with two CPUs or more the server runs on CPUs of its own (``--server-cpus``, by
default the last one) and everything timed here on the others, as when the store is on another
machine; ``--server-cpus shared`` lets them share every CPU (the server's work then slows the
scan it serves).

The store is converted from an msprime simulation (seeded, cached under
``benchmarks/data/object_storage/``). Needs ``aiohttp`` (fsspec's HTTP filesystem).

    python -m benchmarks.object_storage --samples 500 --length 15000000
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import multiprocessing
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import numpy as np

import vcfzarr_sql
from benchmarks import data
from benchmarks.sizes import DATA_DIR, Contig
from vcfzarr_sql.converter import convert

REGION_WIDTH = 100_000
T = TypeVar("T")


def simulated_store(directory: Path, samples: int, length: int) -> Path:
    """A store converted from an msprime simulation of one contig (made once)."""
    store = directory / "sim.vcz"
    if store.exists():
        return store
    directory.mkdir(parents=True, exist_ok=True)
    contig = Contig("1", length, 1e-8)
    size = data.Size("object_storage", samples, (contig,), repeats=1)
    vcf = directory / "sim.vcf.gz"
    with vcf.open("wb") as out:
        bgzip = subprocess.Popen(["bgzip", "-c"], stdin=subprocess.PIPE, stdout=out)
        assert bgzip.stdin is not None
        bgzip.stdin.write(data.vcf_header(size))
        for positions, alleles, genotypes in data.site_blocks(data.simulate(contig, samples, 7), 5000):
            missing = np.zeros(genotypes.shape[:2], dtype=bool)
            bgzip.stdin.write(data.vcf_lines(contig.name, positions, alleles, genotypes, missing))
        bgzip.stdin.close()
        bgzip.wait()
    convert(vcf, store, workers=1, show_progress=False)
    return store


class SlowServer(ThreadingHTTPServer):
    """Files under ``root``, each answer ``latency`` seconds late; counts the requests in
    ``counter`` (shared with the process that started it)."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, root: str, latency: float, counter: Any):
        self.latency = latency
        self.counter = counter
        handler = functools.partial(_SlowHandler, directory=root)
        super().__init__(("127.0.0.1", 0), handler)

    def counted(self) -> None:
        with self.counter.get_lock():
            self.counter.value += 1


class _SlowHandler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as object stores
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stall

    def send_head(self) -> BinaryIO | None:  # the base class's hook (GET and HEAD)
        server = self.server
        assert isinstance(server, SlowServer)
        server.counted()
        time.sleep(server.latency)
        return super().send_head()

    def log_message(self, *args: object) -> None:
        pass


def _serve(root: str, latency: float, counter: Any, ports: Any) -> None:
    server = SlowServer(root, latency, counter)
    ports.put(server.server_address[1])
    server.serve_forever()


@dataclasses.dataclass
class Served:
    """A directory served over HTTP by another process (so serving takes no GIL from ours)."""

    url: str
    counter: Any

    @property
    def requests(self) -> int:
        return self.counter.value


def cpu_split(choice: str) -> tuple[set[int], set[int]] | None:
    """(server CPUs, client CPUs) for ``--server-cpus`` (``"last"``, ``"shared"`` or a comma
    list); None when they share every CPU (asked, or a single CPU)."""
    available = sorted(os.sched_getaffinity(0))
    if choice == "shared" or (choice == "last" and len(available) < 2):
        return None
    server = {available[-1]} if choice == "last" else {int(c) for c in choice.split(",")}
    client = set(available) - server
    if not server <= set(available) or not client:
        raise SystemExit(f"--server-cpus {choice}: the server and this process each need CPUs "
                         f"of their own among {available}")
    return server, client


def _pin_this_process(cpus: set[int]) -> None:
    """Every thread of this process (threads started later inherit it) onto ``cpus``."""
    for thread in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(thread), cpus)


@contextlib.contextmanager
def serving(root: Path, latency: float, split: tuple[set[int], set[int]] | None = None) -> Iterator[Served]:
    """``root`` served by :class:`SlowServer` in another process; with ``split``, that process
    on the first CPUs and this one on the second."""
    context = multiprocessing.get_context("spawn")
    counter, ports = context.Value("q", 0), context.Queue()
    process = context.Process(target=_serve, args=(str(root), latency, counter, ports), daemon=True)
    process.start()
    if split is not None:
        assert process.pid is not None  # (started)
        os.sched_setaffinity(process.pid, split[0])
        _pin_this_process(split[1])
    try:
        yield Served(f"http://127.0.0.1:{ports.get(timeout=60)}", counter)
    finally:
        process.terminate()
        process.join()


def timed(run: Callable[[], T]) -> tuple[float, float, T]:
    """(wall seconds, CPU seconds of this process: user + system, every thread) of ``run()``,
    and its answer."""
    cpu, started = time.process_time(), time.perf_counter()
    answer = run()
    return time.perf_counter() - started, time.process_time() - cpu, answer


@dataclasses.dataclass
class Timing:
    """Medians of a query's warm runs: wall and CPU seconds, requests per run, the answer."""

    wall_s: float
    cpu_s: float
    requests: int
    answer: Any


def interleaved(runs: dict[str, Callable[[], T]], server: Served | None, repeats: int) -> dict[str, Timing]:
    """Each of ``runs`` twice (warm: the store is open, the connection has seen the query
    and what its scans read first), then ``repeats`` rounds of all of them in turn, the order rotated each round (a busy
    machine slows all alike); requests to ``server`` counted per run."""
    names = list(runs)
    answers = {name: runs[name]() for name in names}
    answers = {name: runs[name]() for name in names}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    requests = dict.fromkeys(names, 0)
    for round_ in range(repeats):
        for name in names[round_ % len(names):] + names[: round_ % len(names)]:
            before = server.requests if server else 0
            wall, cpu, _ = timed(runs[name])
            requests[name] += (server.requests - before) if server else 0
            times[name].append((wall, cpu))
    return {
        name: Timing(statistics.median(w for w, _ in times[name]), statistics.median(c for _, c in times[name]),
                     requests[name] // repeats, answers[name])
        for name in names
    }


@dataclasses.dataclass
class Batch:
    """One batch of requests of a run (a ``get_many`` of the store's key/value store)."""

    keys: int
    start_s: float
    end_s: float


def timeline(con: vcfzarr_sql.Connection, sql: str, url: str) -> tuple[list[Batch], float | None]:
    """(the batches of requests of one run of ``sql`` over the store at ``url``, in the order
    they started; when the first chunk was decoded), in seconds from the run's start."""
    store = con.store(url)
    kv, started = store._kv, time.perf_counter()
    batches: list[Batch] = []
    first_decode: list[float] = []
    get_many, decode = kv.get_many, store.decode_chunk

    def timed_get_many(keys: Any) -> dict[str, bytes]:
        keys = list(keys)
        start = time.perf_counter() - started
        try:
            return get_many(keys)
        finally:
            batches.append(Batch(len(keys), start, time.perf_counter() - started))

    def timed_decode(*args: Any) -> Any:
        if not first_decode:
            first_decode.append(time.perf_counter() - started)
        return decode(*args)

    kv.get_many, store.decode_chunk = timed_get_many, timed_decode
    try:
        started = time.perf_counter()
        con.sql(sql).fetchall()
    finally:
        del kv.get_many, store.decode_chunk
    return sorted(batches, key=lambda b: b.start_s), first_decode[0] if first_decode else None


def round_trips_before(batches: list[Batch], moment: float | None) -> int:
    """The longest chain of batches, each started after the one before it ended, among the
    batches ended by ``moment``: the round trips waited one after the other.

    >>> round_trips_before([Batch(3, 0.0, 0.02), Batch(9, 0.0, 0.03), Batch(1, 0.031, 0.05)], 0.04)
    1
    >>> round_trips_before([Batch(3, 0.0, 0.02), Batch(9, 0.021, 0.04)], 0.05)
    2
    """
    ended = [b for b in batches if moment is None or b.end_s <= moment]
    depth: list[int] = []
    for i, batch in enumerate(ended):
        depth.append(1 + max((depth[j] for j in range(i) if ended[j].end_s <= batch.start_s), default=0))
    return max(depth, default=0)


def _runner(con: vcfzarr_sql.Connection, sql: str) -> Callable[[], list[tuple[Any, ...]]]:
    return lambda: con.sql(sql).fetchall()


def tensorstore_read(location: str) -> Callable[[], object] | None:
    """Reading the whole ``call_genotype`` array with TensorStore (None: not installed)."""
    try:
        import tensorstore as ts
    except ImportError:
        return None
    if location.startswith("http"):
        kvstore = {"driver": "http", "base_url": f"{location}/call_genotype/"}
    else:
        kvstore = {"driver": "file", "path": f"{location}/call_genotype/"}
    spec = {"driver": "zarr", "kvstore": kvstore, "context": {"cache_pool": {"total_bytes_limit": 0}}}
    return lambda: ts.open(spec, read=True).result().read().result()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--length", type=int, default=15_000_000, help="contig length (bp)")
    parser.add_argument("--latency", type=float, default=0.020, help="seconds per request")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs (median)")
    parser.add_argument("--server-cpus", default="last",
                        help='CPUs of the server ("last", "shared" or a list such as "2,3")')
    args = parser.parse_args(argv)
    split = cpu_split(args.server_cpus)
    directory = DATA_DIR / "object_storage" / f"{args.samples}x{args.length}"
    store = simulated_store(directory, args.samples, args.length)
    middle = args.length // 2
    region = f"1:{middle}-{middle + REGION_WIDTH - 1}"
    local = str(store)
    with vcfzarr_sql.open_store(local) as opened:
        print(f"store: {opened.num_variants} variants x {opened.num_samples} samples, "
              f"{opened.num_variant_chunks} variant chunks; latency {args.latency * 1000:.0f} ms; "
              + ("server and scans share every CPU" if split is None else
                 f"server on CPUs {sorted(split[0])}, scans on {sorted(split[1])}"))
    with serving(directory, args.latency, split) as server:
        url = f"{server.url}/{store.name}"
        count = f"SELECT count(*) FROM vcf_zarr('{{}}', region := '{region}')"
        queries = (
            ("(a) warm 100 kb region count", count),
            ("(b) whole-store count(fmt_GT_1), calls", "SELECT count(fmt_GT_1) FROM vcf_zarr_calls('{}')"),
            ("(b) whole-store sum(fmt_GT_1), calls", "SELECT sum(fmt_GT_1) FROM vcf_zarr_calls('{}')"),
        )
        rows, timelines = [], []
        for name, query in queries:
            with vcfzarr_sql.connect() as con_local, vcfzarr_sql.connect() as con_http:
                found = interleaved({"disk": _runner(con_local, query.format(local)),
                                     "http": _runner(con_http, query.format(url))}, server, args.repeats)
                timelines.append((name, *timeline(con_http, query.format(url), url)))
            assert found["disk"].answer == found["http"].answer, (found["disk"].answer, found["http"].answer)
            rows.append((name, found["disk"], found["http"]))
        anchor_disk, anchor_http = tensorstore_read(local), tensorstore_read(url)
        anchors = None
        if anchor_disk is not None and anchor_http is not None:
            anchors = interleaved({"disk": anchor_disk, "http": anchor_http}, server, args.repeats)
            rows.append(("(c) TensorStore read of call_genotype", anchors["disk"], anchors["http"]))
    print("\n| query | local disk wall s (CPU s) | HTTP wall s (CPU s) | HTTP / disk: wall (CPU) | requests "
          "| round trips of time |")
    print("|---|---|---|---|---|---|")
    for name, disk, http in rows:
        answer = f" ({http.answer[0][0]})" if isinstance(http.answer, list) else ""
        print(f"| {name}{answer} | {disk.wall_s:.3f} ({disk.cpu_s:.3f}) | {http.wall_s:.3f} ({http.cpu_s:.3f}) | "
              f"{http.wall_s / disk.wall_s:.2f}x ({http.cpu_s / disk.cpu_s:.2f}x) | {http.requests} | "
              f"{http.wall_s / args.latency:.1f} |")
    print("\n(d) timelines of one more warm HTTP run (s from its start): batches of requests, the first "
          "chunk decoded, the round trips one after the other before it")
    for name, batches, first_decode in timelines:
        print(f"- {name}: " + "; ".join(f"{b.keys} keys {b.start_s:.3f}-{b.end_s:.3f}" for b in batches)
              + f"; first decode {first_decode if first_decode is None else round(first_decode, 3)}: "
              f"**{round_trips_before(batches, first_decode)} round trip(s)**")
    if anchors is None:
        print("(c) TensorStore: not installed (pip install tensorstore)")
    else:
        for name, _, http in rows[1:-1]:
            print(f"{name} over HTTP / TensorStore's HTTP read: {http.wall_s / anchors['http'].wall_s:.2f}x wall")


if __name__ == "__main__":
    main()
