"""Requests a warm scan of a URL store waits for: one to revalidate the store, then one batch
of chunks per window of pieces (counted at the store's key/value reads over ``file://``)."""

from __future__ import annotations

import engine_cases
import oracle
import pytest
from store_support import counted_reads

import vcfzarr_sql
from vcfzarr_sql.query import execute

pytest.importorskip("fsspec", reason="fsspec (test extra) is needed for URLs")

REGION = "1:5000-12000"


@pytest.fixture(scope="module")
def simulated(simulated_store) -> tuple[engine_cases.StoreCase, str]:
    case, path = simulated_store
    return case, str(path)



def test_a_warm_region_count_waits_for_two_requests(simulated, monkeypatch):
    case, path = simulated
    url = f"file://{path}"
    query = f"SELECT count(*) FROM vcf_zarr('{url}', region := '{REGION}')"
    expected = len(oracle.records(case.vcf, region=REGION))
    with vcfzarr_sql.connect() as con:
        assert con.sql(query).fetchall() == [(expected,)]
        singles, batches = counted_reads(monkeypatch, con.store(url)._kv)
        assert con.sql(query).fetchall() == [(expected,)]
    assert singles == []
    # the root documents that exist (revalidation), then every chunk the pieces read, at once
    [root, chunks] = batches
    assert sorted(root) == [".zattrs", ".zgroup", ".zmetadata"]
    assert {key.split("/")[0] for key in chunks} >= {"variant_position"}


def test_a_warm_scan_fetches_each_window_in_one_batch(simulated, monkeypatch):
    _, path = simulated
    monkeypatch.setattr(execute, "FETCH_WINDOW", 8)
    [task] = vcfzarr_sql.scan_tasks(f"file://{path}", "calls", columns=["pos", "fmt_GT"],
                                    target_bytes=float("inf")).tasks
    pieces = len(task.plan)
    assert pieces > 2 * 8
    cold = task.to_table()
    singles, batches = counted_reads(monkeypatch, task.store._kv)
    warm = task.to_table()
    assert warm.equals(cold)
    assert warm.equals(vcfzarr_sql.scan_tasks(path, "calls", columns=["pos", "fmt_GT"]).to_table())
    assert singles == []
    # revalidation, then one batch per window: 2 pieces, 4, then 8 at a time
    windows = [range(0, 2), range(2, 6), *(range(i, min(i + 8, pieces)) for i in range(6, pieces, 8))]
    assert len(batches) == 1 + len(windows)
    fetched = [{int(key.split("/")[1].split(".")[0]) for key in batch} for batch in batches[1:]]
    assert sorted(fetched, key=min) == [set(task.plan.variant_chunks[w.start : w.stop].tolist()) for w in windows]


def test_a_scan_stopped_early_and_a_whole_scan_over_many_windows(simulated, monkeypatch):
    """Windows of 1, 2, then 4 pieces fetched two ahead: a LIMIT stops the scan in its first
    windows (the fetches started for later ones are cancelled or dropped) and the next scan on
    the same connection still reads every row, equal to the local store's."""
    monkeypatch.setattr(execute, "FIRST_FETCH_WINDOW", 1)
    monkeypatch.setattr(execute, "FETCH_WINDOW", 4)
    _, path = simulated
    query = "SELECT pos, fmt_GT FROM vcf_zarr_calls('{}') ORDER BY pos, sample_id"
    with vcfzarr_sql.connect() as con:
        local = con.sql(query.format(path)).fetchall()
        url = f"file://{path}"
        for _ in range(2):  # cold, then warm
            first = con.sql(f"SELECT pos FROM vcf_zarr_calls('{url}') LIMIT 3").fetchall()
            assert len(first) == 3
            assert con.sql(query.format(url)).fetchall() == local
