"""A query asked again over HTTP requests its first chunks while the store is revalidated
(store/revalidation.py, engine/relations.py): one round trip before its rows, not two; a store
replaced in that moment is opened again as before, and none of the chunks requested with the
revalidation is served.

The server here answers a revalidation (a root document asked for while ``hold`` is set) only
once it has answered a chunk request, or after 5 s: before this change the chunks of a query
were asked for only after the revalidation's answer, so no chunk was answered meanwhile. With
``then`` set, the root documents (and every request after them) come from another store while
the chunks answered before them come from the first: a chunk requested with the revalidation is
then a chunk of the old store.
"""

from __future__ import annotations

import functools
import gzip
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

import duckdb
import engine_cases
import pytest
from store_support import counted_reads

import vcfzarr_sql
from vcfzarr_sql.engine import relations
from vcfzarr_sql.store import revalidation
from vcfzarr_sql.store.vcz import VczStore

pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp (test extra)")

ROOT_DOCUMENTS = {".zattrs", ".zgroup", ".zmetadata", "zarr.json"}
#: How long a held revalidation waits for a chunk to be answered.
HOLD_SECONDS = 5.0
QUERY = "SELECT sum(list_sum(gt_AC)) FROM vcf_zarr('{}')"


@dataclass
class Serving:
    """What the server answers under ``/live/``: files of ``current``; while ``hold`` is set,
    a root document waits for a chunk to be answered first (and whether one was, is noted in
    ``held``), then ``then`` (if any) becomes ``current`` before it is answered."""

    current: Path
    then: Path | None = None
    hold: bool = False
    held: list[bool] = field(default_factory=list)
    chunk_answered: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def directory_for(self, key: str) -> Path:
        if self.hold and key in ROOT_DOCUMENTS:
            self.held.append(self.chunk_answered.wait(HOLD_SECONDS))
            with self.lock:
                self.current, self.then = self.then or self.current, None
        with self.lock:
            return self.current


class _Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as object stores
    serving: Serving

    def translate_path(self, path: str) -> str:
        key = path.split("?", 1)[0].removeprefix("/live").lstrip("/")
        return str(self.serving.directory_for(key) / key)

    def do_GET(self) -> None:  # noqa: N802
        super().do_GET()
        if not self.path.rsplit("/", 1)[-1].startswith("."):  # (a chunk, not metadata)
            self.serving.chunk_answered.set()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def simulated(simulated_store) -> tuple[engine_cases.StoreCase, Path]:
    return simulated_store


@pytest.fixture(scope="module")
def flipped(simulated, tmp_path_factory, convert_once) -> tuple[str, Path]:
    """The same records with every ``0|0`` call made ``1|1`` and a header line more: a store of
    the same arrays and chunks as ``simulated``'s, with other values and other metadata (its
    header; a store whose metadata did not change is the same store to a revalidation)."""
    case, _ = simulated
    vcf = tmp_path_factory.mktemp("flipped") / "flipped.vcf"
    with gzip.open(case.vcf, "rt") as text:
        lines = [line if line.startswith("#") else line.replace("0|0", "1|1") for line in text]
    vcf.write_text("".join([lines[0], "##note=every 0|0 made 1|1\n", *lines[1:]]))
    return str(vcf), convert_once(vcf, variants_chunk_size=case.variants_chunk,
                                  samples_chunk_size=case.samples_chunk)


@pytest.fixture
def served(simulated) -> Iterator[tuple[Serving, str]]:
    """(what the server serves, the store's URL)."""
    serving = Serving(simulated[1])
    handler = functools.partial(type("H", (_Handler,), {"serving": serving}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield serving, f"http://127.0.0.1:{server.server_address[1]}/live"
    finally:
        server.shutdown()
        server.server_close()


def _total_ac(vcf: str) -> int:
    """bcftools' AC summed over every record and ALT."""
    return sum(sum(ac) for _, _, ac in engine_cases.allele_counts(vcf, None, None) if ac)


def test_a_query_asked_again_requests_its_chunks_while_the_store_is_revalidated(served, simulated, monkeypatch):
    serving, url = served
    case, _ = simulated
    expected = [(_total_ac(case.vcf),)]
    query = QUERY.format(url)
    with vcfzarr_sql.connect() as con:
        assert con.sql(query).fetchall() == expected  # cold: learns what the scan reads
        assert con.sql(query).fetchall() == expected  # warm: its first fetch is recorded
        singles, batches = counted_reads(monkeypatch, con.store(url)._kv)
        serving.hold, serving.chunk_answered = True, threading.Event()
        assert con.sql(query).fetchall() == expected
    # the revalidation's requests were answered only after a chunk was: both in flight at once
    assert serving.held and all(serving.held), serving.held
    # one round trip: the root documents and every chunk the scan read, requested at once
    assert singles == []
    [chunks] = [batch for batch in batches if not set(batch) <= ROOT_DOCUMENTS]
    assert len(batches) == 2 and len(chunks) > 1


def test_a_store_replaced_while_it_is_revalidated_is_opened_again_and_no_early_chunk_is_served(
    served, simulated, flipped, monkeypatch
):
    serving, url = served
    case, _ = simulated
    flipped_vcf, flipped_store = flipped
    before, after = _total_ac(case.vcf), _total_ac(flipped_vcf)
    assert before != after
    taken: list[int] = []
    take = revalidation.Advance.take

    def counted_take(self, keys):
        held, rest = take(self, keys)
        taken.append(len(held))
        return held, rest

    monkeypatch.setattr(revalidation.Advance, "take", counted_take)
    query = QUERY.format(url)
    with vcfzarr_sql.connect() as con:
        assert con.sql(query).fetchall() == [(before,)]
        assert con.sql(query).fetchall() == [(before,)]
        old = con.store(url)
        serving.hold, serving.chunk_answered, serving.then = True, threading.Event(), flipped_store
        assert con.sql(query).fetchall() == [(after,)]  # opened again, as without the advance
        assert con.store(url) is not old
    # chunks of the old store were answered while the revalidation waited (the advance) ...
    assert serving.held and all(serving.held), serving.held
    # ... and none of them was served: no scan took a chunk from an advance, none is offered
    assert not any(taken), taken
    assert revalidation.offered(old) is None


# -- the advance alone, over a store that only counts (no HTTP) ---------------------------------


class _Store:
    """A remote store whose revalidation answers ``unchanged`` (or raises it, an exception);
    its chunk batches wait for ``release`` and fail when ``failing``."""

    is_remote = True

    def __init__(self, unchanged: bool | Exception = True, failing: bool = False):
        self.unchanged, self.failing = unchanged, failing
        self.release = threading.Event()
        self.release.set()

    def is_unchanged(self) -> bool:
        if isinstance(self.unchanged, Exception):
            raise self.unchanged
        return self.unchanged

    def read_chunks_bytes(self, keys):
        self.release.wait(HOLD_SECONDS)
        if self.failing:
            raise OSError("connection reset")
        return {key: b"old" for key in keys}


KEYS = [("call_genotype", (0, 0)), ("call_genotype", (1, 0))]


def test_an_advance_is_offered_only_for_a_store_found_unchanged():
    changed = _Store(unchanged=False)
    assert revalidation.revalidate(changed, KEYS) is False
    assert revalidation.offered(changed) is None
    broken = _Store(unchanged=OSError("timed out"))
    with pytest.raises(OSError, match="timed out"):
        revalidation.revalidate(broken, KEYS)
    assert revalidation.offered(broken) is None
    same = _Store()
    assert revalidation.revalidate(same, KEYS) is True
    advance = revalidation.offered(same)
    assert advance is not None
    assert advance.take([KEYS[0]]) == ({KEYS[0]: b"old"}, [])
    assert advance.take(KEYS) == ({KEYS[1]: b"old"}, [KEYS[0]])  # each chunk handed out once
    assert revalidation.revalidate(same) is True  # the next revalidation withdraws it
    assert revalidation.offered(same) is None


def test_an_advance_dropped_or_failed_holds_nothing():
    late = _Store()
    late.release.clear()
    advance = revalidation.Advance(late, KEYS)
    advance.drop()  # (while its batch is in flight)
    late.release.set()
    assert advance.take(KEYS) == ({}, KEYS)
    failed = revalidation.Advance(_Store(failing=True), KEYS)
    assert failed.take(KEYS) == ({}, KEYS)  # fetched again by the scan, failing as without it


def test_a_scan_wanting_none_of_an_advance_s_chunks_does_not_wait_for_them():
    """(the same text with other parameters reads other chunks: review of stop 36)"""
    slow = _Store()
    slow.release.clear()
    advance = revalidation.Advance(slow, KEYS[:1])
    started = time.monotonic()
    assert advance.take(KEYS[1:]) == ({}, KEYS[1:])
    assert time.monotonic() - started < HOLD_SECONDS / 2
    slow.release.set()
    assert advance.take(KEYS) == ({KEYS[0]: b"old"}, KEYS[1:])


def test_a_session_files_first_chunks_under_the_query_that_read_them():
    """What scans fetched first between two queries is the first query's; a text longer than
    ``REMEMBERED_SQL_CHARS`` is not remembered (no advance for it)."""
    registry = relations.Registry(duckdb.connect())
    store = _Store()
    registry._stores["/s"] = cast(VczStore, store)
    revalidation.record_opening(store, KEYS[:1])  # (before any query: nobody's)
    assert registry._openings_of("SELECT 1") == {}
    revalidation.record_opening(store, KEYS)  # while "SELECT 1" ran
    assert registry._openings_of("SELECT 2") == {}
    assert registry._openings_of("SELECT 1") == {"/s": tuple(KEYS)}
    long = "SELECT 1" + " " * relations.REMEMBERED_SQL_CHARS
    assert registry._openings_of(long) == {}
    revalidation.record_opening(store, KEYS)
    assert registry._openings_of(long) == {}


def test_a_cursor_s_first_chunks_are_filed_under_its_own_queries():
    """Two sessions of one database (``Connection.cursor``) do not share store objects, so the
    chunks one session's scans fetched first are never filed under the other's query (review
    of stop 36: ``Registry.for_cursor`` copied the stores)."""
    registry = relations.Registry(duckdb.connect())
    store = _Store()
    registry._stores["/s"] = cast(VczStore, store)
    cursor = registry.for_cursor(registry._con.cursor())
    assert cursor._openings_of("SELECT 2") == {} and registry._openings_of("SELECT 1") == {}
    revalidation.record_opening(store, KEYS)  # the first session's "SELECT 1" ran
    assert cursor._openings_of("SELECT 3") == {}  # (the other session's refresh)
    assert registry._openings_of("SELECT 4") == {}
    assert registry._openings_of("SELECT 1") == {"/s": tuple(KEYS)}
    assert cursor._openings_of("SELECT 2") == {}
