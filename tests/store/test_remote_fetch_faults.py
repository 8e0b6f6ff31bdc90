"""A remote store's prefetch under faults: memory held per window, failed requests, odd paths,
oversized values, early stops, forks (scan/fetch.py, scan/execute.py, store/kvstore.py).

Stores are served over ``file://`` (fsspec's LocalFileSystem) or over real HTTP (a local
threaded server that can answer 503), with small windows so that a scan has many.
"""

from __future__ import annotations

import functools
import multiprocessing
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import engine_cases
import numpy as np
import pytest

import vcfzarr_sql
from vcfzarr_sql.adapters import tasks
from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.query import execute
from vcfzarr_sql.store import bounds, fetch
from vcfzarr_sql.store.fetch import FetchingSource, WindowFetches
from vcfzarr_sql.store.kvstore import open_kv
from vcfzarr_sql.store.vcz import VczStore, open_store

pytest.importorskip("fsspec", reason="fsspec (test extra) is needed for URLs")

COLUMNS = ["pos", "fmt_GT"]


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def simulated(simulated_store) -> tuple[engine_cases.StoreCase, Path]:
    return simulated_store


@pytest.fixture(scope="module")
def simulated_bio2zarr(simulated, bio2zarr_once) -> Path:
    """The same VCF written by bio2zarr: a store whose missing chunks read as fill."""
    case, _ = simulated
    return bio2zarr_once(case.vcf, variants_chunk_size=case.variants_chunk,
                         samples_chunk_size=case.samples_chunk)


class _FlakyHandler(SimpleHTTPRequestHandler):
    """A static server that answers 503 for the paths in ``failing`` (a transient outage)."""

    protocol_version = "HTTP/1.1"
    failing: set[str] = set()

    def do_GET(self) -> None:  # noqa: N802
        if self.path in self.failing:
            self.send_error(503, "Service Unavailable")
            return
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[Path, str, set[str]]]:
    """(root folder served, its URL, the set of request paths that answer 503)."""
    root = tmp_path_factory.mktemp("http")
    failing: set[str] = set()
    handler = functools.partial(type("H", (_FlakyHandler,), {"failing": failing}),
                                directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}", failing
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def small_windows(monkeypatch) -> None:
    monkeypatch.setattr(execute, "FIRST_FETCH_WINDOW", 1)
    monkeypatch.setattr(execute, "FETCH_WINDOW", 4)
    monkeypatch.setattr(fetch, "AHEAD_PIECES", 8)  # (two windows ahead, as with full-size ones)


def _captured_sources(monkeypatch) -> list:
    """The FetchingSource of each scan task run from now on."""
    made = []

    def capture(store, plan=None):
        made.append(fetch.fetching(store, plan))
        return made[-1]

    monkeypatch.setattr(tasks, "fetching", capture)
    return made


class _FakeStore:
    """A remote store of one 1-D array chunked like the variants (as fetch.py's doctest)."""

    is_remote, variants_chunk_size = True, 4

    def __init__(self) -> None:
        self.batches: list[list] = []

    def array_info(self, name):
        return SimpleNamespace(chunks=(4,), dims=("variants",))

    def read_chunk_bytes(self, name, chunk):
        return f"{name}{chunk}".encode()

    def read_chunks_bytes(self, keys):
        self.batches.append(list(keys))
        return {k: f"{k[0]}{k[1]}!".encode() for k in keys}

    def decode_chunk(self, name, raw, chunk):
        return raw


def _fake_store() -> VczStore:
    return cast(VczStore, _FakeStore())  # (it has the members a FetchingSource reads)


# -- memory: a window's chunks are held from its first piece to its last ----------------------


def test_a_window_s_bytes_are_dropped_when_its_last_piece_leaves():
    """A window of two pieces keeps its fetch once, and forgets it when the second leaves."""
    source = FetchingSource(_fake_store())
    source.read_chunk("pos", (0,))  # learn what pieces read
    fetches = WindowFetches(source, np.array([1, 2]), [range(0, 2)])
    fetches.submitted(0)
    fetches.submitted(0)
    fetches.all_submitted(0)
    for _ in range(2):  # two pieces, as two scan threads run them
        fetches.enter(0)
        fetches.leave(0)
    assert source._fetched == {}, f"still held after the window ended: {source._holders}"


def _started_windows(windows: list[range]) -> list[int]:
    """The windows whose fetch has started once a piece of the first one entered."""
    source = FetchingSource(_fake_store())
    source.read_chunk("pos", (0,))  # learn what pieces read
    chunks = np.arange(windows[-1].stop)
    fetches = WindowFetches(source, chunks, windows)
    fetches.submitted(0)
    fetches.enter(0)
    started = sorted(i for i, f in fetches._fetches.items() if f is not None)
    fetches.leave(0)
    fetches.close()
    return started


def test_a_short_scan_fetches_all_its_windows_at_once():
    """A scan's first windows are short (2, 4, 8, ... pieces): fetched together, a scan of a
    few dozen pieces waits for one round trip, not one per window; a long scan still fetches
    two windows ahead of the one it decodes, at most ``AHEAD_PIECES`` pieces beyond two."""
    short = execute.fetch_windows(45, 2, 32)
    assert [len(w) for w in short] == [2, 4, 8, 16, 15]
    assert _started_windows(short) == [0, 1, 2, 3, 4]
    long = [range(32 * i, 32 * (i + 1)) for i in range(6)]
    assert _started_windows(long) == [0, 1, 2]


def test_a_window_fetched_after_its_pieces_read_does_not_drop_a_neighbour_s_chunks(monkeypatch):
    """A window whose piece entered before reads were known kept nothing; when a neighbour
    starts its fetch later and the window ends, it must not forget the chunks the neighbour
    keeps (pieces of one variant chunk share them)."""
    store = _FakeStore()
    source = FetchingSource(cast(VczStore, store))
    # windows 0 and 1 hold one piece each, both of variant chunk 1 (two sample chunks)
    fetches = WindowFetches(source, np.array([1, 1]), [range(0, 1), range(1, 2)])
    fetches.submitted(1)
    fetches.all_submitted(1)
    fetches.enter(1)  # reads not known yet: no fetch, reads chunk by chunk ...
    source.read_chunk("pos", (1,))  # ... and teaches the source
    fetches.submitted(0)
    fetches.all_submitted(0)
    fetches.enter(0)  # starts (and keeps) window 0's fetch, and starts window 1's
    fetch = fetches._fetches[1]
    assert fetch is not None
    fetch.result()
    fetches.leave(1)  # window 1 ends: forgets a fetch it never kept
    reads = []

    def read_chunk_bytes(name, chunk):
        reads.append((name, chunk))
        return b""

    monkeypatch.setattr(store, "read_chunk_bytes", read_chunk_bytes)
    source.read_chunk("pos", (1,))  # window 0's piece reads its chunk
    fetches.leave(0)
    assert reads == [], "window 0's fetched chunk was dropped by window 1's end"


def test_a_whole_remote_scan_holds_only_the_windows_in_flight(simulated, monkeypatch, small_windows):
    """Over a URL, a calls scan of many windows holds a few windows' chunks at a time, and
    none once its last batch is out."""
    _, path = simulated
    store = open_store(f"file://{path}")
    [task] = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, target_bytes=float("inf")).tasks
    task.to_table()  # cold: learns what pieces read
    sources = _captured_sources(monkeypatch)
    held = [len(sources[-1]._fetched) for _ in task.to_batches()]
    [source] = sources
    assert len(task.plan) > 5 * 4
    fetched_keys = len(source._patterns) * len(np.unique(task.plan.variant_chunks))
    assert max(held) <= fetched_keys // 2, (held, fetched_keys)
    assert source._fetched == {} and source._holders == {}


# -- a failed request is an error naming its key, never an absent chunk ------------------------


def _serve(root: Path, store: Path, name: str) -> None:
    if not (root / name).exists():
        shutil.copytree(store, root / name)


def test_a_failed_batched_request_is_an_error_not_fill_values(served, simulated_bio2zarr, small_windows):
    """A 503 on one chunk of a window, in a store whose absent chunks read as fill (bio2zarr's
    leaves out chunks of fill): the scan fails naming the chunk, as reading it alone does."""
    root, base, failing = served
    _serve(root, simulated_bio2zarr, "b2z.vcz")
    url = f"{base}/b2z.vcz"
    local = vcfzarr_sql.scan_tasks(str(simulated_bio2zarr), "calls", columns=COLUMNS).to_table()
    store = open_store(url)
    [task] = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, target_bytes=float("inf")).tasks
    assert task.to_table().equals(local)  # cold, no failure: learns what pieces read
    chunk = "/b2z.vcz/call_genotype/5.0.0"
    assert (simulated_bio2zarr / "call_genotype" / "5.0.0").exists()
    failing.add(chunk)
    try:
        message = f"{url}: cannot read call_genotype/5.0.0 \\(.*503"
        with pytest.raises(StoreError, match=message):  # read alone
            store._kv.get("call_genotype/5.0.0")
        with pytest.raises(StoreError, match=message):  # warm: in a window's batch
            task.to_table()
    finally:
        failing.discard(chunk)
    assert task.to_table().equals(local)  # the outage over, the same rows


def test_a_failed_batched_request_is_not_reported_as_an_incomplete_store(served, simulated, small_windows):
    """Our converter's store: the 503 is reported as such, not as an incomplete store."""
    root, base, failing = served
    _, path = simulated
    _serve(root, path, "ours.vcz")
    url = f"{base}/ours.vcz"
    store = open_store(url)
    [task] = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, target_bytes=float("inf")).tasks
    task.to_table()
    chunk = "/ours.vcz/call_genotype/5.0.0"
    assert (path / "call_genotype" / "5.0.0").exists()
    failing.add(chunk)
    try:
        with pytest.raises(StoreError) as raised:
            task.to_table()
    finally:
        failing.discard(chunk)
    assert "503" in str(raised.value) and "incomplete" not in str(raised.value), raised.value


# -- a URL store's path is a path, not a pattern ------------------------------------------------


@pytest.mark.parametrize("name", ["run[1].vcz", "run?.vcz"])
def test_a_url_store_whose_path_has_glob_characters_reads_like_on_disk(simulated, tmp_path, small_windows, name):
    """Glob characters in a store's path (``run[1].vcz``, ``run?.vcz`` beside ``runX.vcz``)
    are read literally by batched reads too (opening, revalidation, window fetches)."""
    _, path = simulated
    odd = tmp_path / name
    shutil.copytree(path, odd)
    shutil.copytree(path, tmp_path / "runX.vcz")
    local = vcfzarr_sql.scan_tasks(str(odd), "calls", columns=COLUMNS).to_table()
    remote = vcfzarr_sql.scan_tasks(f"file://{odd}", "calls", columns=COLUMNS).to_table()
    assert remote.equals(local)


# -- the bound on a chunk's stored bytes ---------------------------------------------------------


def test_a_url_store_bounds_a_chunk_s_bytes_like_a_local_one(tmp_path, monkeypatch):
    """A value over $VCFZARR_SQL_MAX_CHUNK_BYTES is refused from a URL as from a directory,
    read alone or in a batch."""
    (tmp_path / "chunk").write_bytes(b"x" * 1000)
    monkeypatch.setenv(bounds.MAX_CHUNK_BYTES_VARIABLE, "100")
    with pytest.raises(StoreError):
        open_kv(str(tmp_path)).get("chunk")
    url = open_kv(f"file://{tmp_path}")
    outcomes: list[object] = []
    for read in (lambda: url.get("chunk"), lambda: url.get_many(["chunk"])):
        try:
            value = read()
            assert value is not None
            outcomes.append(len(value))
        except StoreError:
            outcomes.append("StoreError")
    assert outcomes == ["StoreError", "StoreError"]


# -- what scans learned, per store and scan shape: the shapes used last -------------------------


def test_what_scans_learned_stays_bounded_per_store(simulated, monkeypatch):
    """A server answering ad-hoc queries over one store meets ever new scan shapes (column
    lists x sample subsets): only the last ``LEARNED_SHAPES`` are remembered, and a shape
    forgotten gives the same rows when it comes back."""
    monkeypatch.setattr(fetch, "LEARNED_SHAPES", 3)
    case, path = simulated
    store = open_store(f"file://{path}")
    samples = list(store.samples)
    names = vcfzarr_sql.scan_tasks(store, "calls").tasks[0].schema.names
    columns = [c for c in ["pos", "fmt_GT", "fmt_DP", "ref", "alt", "id"] if c in names]
    shapes = [(columns[:i], samples[first:first + 1]) for i in range(1, len(columns) + 1)
              for first in range(0, len(samples), case.samples_chunk)]
    first = vcfzarr_sql.scan_tasks(store, "calls", columns=shapes[0][0], samples=shapes[0][1]).to_table()
    for wanted, subset in shapes[1:]:
        vcfzarr_sql.scan_tasks(store, "calls", columns=wanted, samples=subset).to_table()
    assert len(shapes) > 3 and len(fetch._learned[store]) == 3
    again = vcfzarr_sql.scan_tasks(store, "calls", columns=shapes[0][0], samples=shapes[0][1]).to_table()
    assert again.equals(first)


# -- stopping early, failing, forking ------------------------------------------------------------


def test_a_scan_closed_mid_way_releases_its_threads_and_the_next_one_reads_all(simulated, small_windows):
    """A generator closed after one batch (LIMIT) returns promptly; its fetches are cancelled
    or finish; the same store scanned again gives every row."""
    _, path = simulated
    store = open_store(f"file://{path}")
    [task] = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, target_bytes=float("inf")).tasks
    whole = task.to_table()
    for _ in range(3):
        batches = task.to_batches()
        next(batches)
        closer = threading.Thread(target=batches.close)
        closer.start()
        closer.join(timeout=30)
        assert not closer.is_alive(), "closing a scan mid-way hung"
    assert task.to_table().equals(whole)


def test_a_failing_fetch_is_a_clean_error(simulated, monkeypatch, small_windows):
    """A window's fetch that raises fails the scan with that error (no hang, no rows)."""
    _, path = simulated
    store = open_store(f"file://{path}")
    [task] = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, target_bytes=float("inf")).tasks
    task.to_table()
    calls = []

    def failing(self, keys):
        calls.append(len(keys))
        if len(calls) == 3:
            raise OSError("connection reset")
        return type(store).read_chunks_bytes(self, keys)

    monkeypatch.setattr(type(store), "read_chunks_bytes", failing)
    with pytest.raises(OSError, match="connection reset"):
        task.to_table()


def test_a_failing_decode_is_a_clean_error_and_releases_the_window(simulated, monkeypatch, small_windows):
    _, path = simulated
    store = open_store(f"file://{path}")
    [task] = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, target_bytes=float("inf")).tasks
    whole = task.to_table()
    run_of, count = execute._run_of, []

    def failing(source, plan, run, tree):
        count.append(run)
        if len(count) == 7:
            raise ValueError("decode failed")
        return run_of(source, plan, run, tree)

    monkeypatch.setattr(execute, "_run_of", failing)
    with pytest.raises(ValueError, match="decode failed"):
        task.to_table()
    monkeypatch.setattr(execute, "_run_of", run_of)
    assert task.to_table().equals(whole)


def _scan_in_child(task, queue) -> None:
    queue.put(task.to_table().num_rows)


def test_a_forked_child_scans_a_url_store_after_its_parent_did(simulated, small_windows):
    """The at-fork handlers: the parent's fetch and scan pools (and locks) are dropped in the
    child, which starts its own; a pickled task reopens its store there."""
    _, path = simulated
    [task] = vcfzarr_sql.scan_tasks(f"file://{path}", "calls", columns=COLUMNS,
                                    target_bytes=float("inf")).tasks
    rows = task.to_table().num_rows
    assert fetch._FETCHERS._executor is not None
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_scan_in_child, args=(task, queue), daemon=True)
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == rows
