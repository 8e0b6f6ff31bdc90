"""``vcf_zarr_sample_stats`` is computed when its rows are read, by a scan plan run by the
executor: ``EXPLAIN`` and ``LIMIT 0`` read no chunk, and the query's stats (``last_stats``,
``query --stats``) count what it read (expected from the region index read with zarr, and the
chunk files read at the store's keys)."""

from __future__ import annotations

import json
import re

import numpy as np
import oracle
import pytest
import zarr
from corpus import CORPUS

import vcfzarr_sql
from vcfzarr_sql.cli import main

CHR22 = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/chr22.vcf.gz"
REGION, START, END = "chr22:10510700-10511400", 10510700, 10511400
#: a chunk's key: array name, then chunk indexes
_CHUNK_KEY = re.compile(r"([^/]+)/\d+([./]\d+)*$")


@pytest.fixture(scope="module")
def chr22(convert_once) -> str:
    """100 records in 10 variant chunks, 100 samples in 4 sample chunks, stored counts."""
    return str(convert_once(CHR22, variants_chunk_size=10, samples_chunk_size=30))


def _chunk_reads(monkeypatch, kv) -> list[tuple[str, int]]:
    """(key, bytes) of every chunk read from ``kv`` from now on."""
    reads: list[tuple[str, int]] = []
    get = kv.get
    get_many = kv.get_many

    def one(key):
        raw = get(key)
        if _CHUNK_KEY.match(key):
            reads.append((key, len(raw or b"")))
        return raw

    def many(keys):
        found = get_many(list(keys))
        reads.extend((k, len(v or b"")) for k, v in found.items() if _CHUNK_KEY.match(k))
        return found

    monkeypatch.setattr(kv, "get", one)
    monkeypatch.setattr(kv, "get_many", many)
    return reads


def _region_chunks(path: str) -> set[int]:
    index = np.asarray(zarr.open_array(f"{path}/region_index", mode="r")[...])
    hit = (index[:, 2] <= END) & (index[:, 4] >= START)
    return set(index[hit, 0].tolist())


def test_explain_and_limit_0_read_no_chunk_and_the_stats_count_the_reads(chr22, monkeypatch):
    expected_chunks = _region_chunks(chr22)
    assert expected_chunks == {2, 3, 4}
    query = f"SELECT * FROM vcf_zarr_sample_stats('{chr22}', region := '{REGION}')"
    with vcfzarr_sql.connect() as con:
        store = con.store(chr22)
        assert len(store.region_index)  # (the index is read before counting)
        reads = _chunk_reads(monkeypatch, store._kv)
        con.sql(f"EXPLAIN {query}").fetchall()
        assert con.sql(f"{query} LIMIT 0").fetchall() == []
        assert reads == []
        rows = con.sql(query).fetchall()
        stats = con.last_stats
    records = len(oracle.records(CHR22, region=REGION))  # bcftools' records of the region
    assert len(rows) == 100 and {row[-5] for row in rows} == {records}  # (n_records)
    assert stats["variant_chunks_read"] == len(expected_chunks)
    assert stats["variant_chunks_total"] == 10
    assert stats["bytes_read"] == sum(size for _, size in reads) > 0
    # (a region's bounds are on POS and END; the region index gives no lower bound of END,
    # so no chunk of a region is known whole: each one's genotypes are read, from the packed
    # genotypes, which hold every record of these chunks exactly: call_genotype is not decoded)
    packed = {key.split("/")[1] for key, _ in reads if key.startswith("summary_gt_packed/")}
    assert packed == {f"{c}.{s}" for c in expected_chunks for s in range(4)}
    assert not [key for key, _ in reads if key.startswith("call_genotype/")]


def test_whole_store_stats_read_the_stored_counts_only(chr22, monkeypatch):
    with vcfzarr_sql.connect() as con:
        store = con.store(chr22)
        assert len(store.region_index)
        reads = _chunk_reads(monkeypatch, store._kv)
        rows = con.sql(f"SELECT * FROM vcf_zarr_sample_stats('{chr22}')").fetchall()
        stats = con.last_stats
    assert len(rows) == 100 and {row[-5] for row in rows} == {len(oracle.records(CHR22))}
    assert {key.split("/")[0] for key, _ in reads} == {"summary_sample_class_counts"}
    assert {key.split("/")[1] for key, _ in reads} == {f"{c}.0.{s}" for c in range(10) for s in range(4)}
    assert stats["variant_chunks_read"] == 10
    assert stats["bytes_read"] == sum(size for _, size in reads)


def test_query_stats_after_sample_stats(chr22, capsys):
    query = f"SELECT sum(n_het) FROM vcf_zarr_sample_stats('{chr22}', region := '{REGION}')"
    assert main(["query", query, "--stats"]) == 0
    stats = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert stats["variant_chunks_read"] == len(_region_chunks(chr22))
    assert stats["bytes_read"] > 0
