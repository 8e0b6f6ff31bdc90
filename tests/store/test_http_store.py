"""A store read over real HTTP (fsspec's HTTP filesystem, aiohttp, a local threaded server):
a region, a whole-store aggregate and a sample subset answer like bcftools, and a store
replaced on the server after a first query gives the new store's answers, never stale rows."""

from __future__ import annotations

import functools
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import engine_cases
import oracle
import pytest

import vcfzarr_sql

pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp (test extra)")

REGION = "1:5000-12000"


class _QuietHandler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as object stores

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory, convert_once) -> Iterator[tuple[Path, str]]:
    """(root folder the server serves, its URL)."""
    root = tmp_path_factory.mktemp("http")
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def simulated(simulated_store) -> tuple[engine_cases.StoreCase, Path]:
    return simulated_store


def test_queries_over_http_answer_like_bcftools(served, simulated):
    root, base = served
    case, store = simulated
    shutil.copytree(store, root / "sim.vcz")
    url = f"{base}/sim.vcz"
    samples = tuple(oracle.header(case.vcf).samples[::3])
    expected_ac = engine_cases.allele_counts(case.vcf, None, None)
    with vcfzarr_sql.connect() as con:
        region = con.sql(f"SELECT contig, pos FROM vcf_zarr('{url}', region := '{REGION}') "
                         "ORDER BY contig, pos").fetchall()
        assert region == [(r.chrom, r.pos) for r in oracle.records(case.vcf, region=REGION)]
        total = con.sql(f"SELECT sum(list_sum(gt_AC)) FROM vcf_zarr('{url}')").fetchall()
        assert total == [(sum(sum(ac) for _, _, ac in expected_ac if ac),)]
        subset = con.sql(f"SELECT contig, pos, gt_AC FROM vcf_zarr('{url}', samples := {list(samples)!r})"
                         ).fetchall()
        assert engine_cases.normalised(subset) == engine_cases.normalised(
            engine_cases.allele_counts(case.vcf, None, samples)
        )


def test_a_store_replaced_on_the_server_gives_the_new_answers(served, simulated, convert_once):
    root, base = served
    case, store = simulated
    other = convert_once(oracle.CORPUS_SAMPLE)
    target = root / "replaced.vcz"
    shutil.copytree(store, target)
    url = f"{base}/replaced.vcz"
    query = f"SELECT count(*) FROM vcf_zarr('{url}')"
    with vcfzarr_sql.connect() as con:
        assert con.sql(query).fetchall() == [(len(oracle.records(case.vcf)),)]
        shutil.rmtree(target)
        shutil.copytree(other, target)
        assert con.sql(query).fetchall() == [(len(oracle.records(oracle.CORPUS_SAMPLE)),)]
