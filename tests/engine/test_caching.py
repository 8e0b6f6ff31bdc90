"""What a warm session keeps between queries, and that it never serves a stale store.

A connection opens each store once and reuses its relations and the rewrite of repeated SQL
text; a store re-converted (or deleted) under a live connection must be seen as it is now, by
direct queries, views and metadata tables alike. Expected values come from bcftools
(tests/oracle.py).
"""

from __future__ import annotations

import collections
import os
import shutil
from pathlib import Path

import oracle
import pytest

import vcfzarr_sql
import vcfzarr_sql.store
from vcfzarr_sql.engine import rewrite
from vcfzarr_sql.errors import QueryError, StoreError
from vcfzarr_sql.store import shared

SAMPLE_VCF = oracle.CORPUS_SAMPLE
CHRM_VCF = str(Path(SAMPLE_VCF).parent / "1kg_2020_chrM.vcf.gz")


def _convert(vcf: str, out: Path, *, force: bool = False) -> str:
    vcfzarr_sql.convert(vcf, out, variants_chunk_size=3, show_progress=False, force=force)
    return str(out)


def _expected_positions(vcf: str) -> list[tuple[str, int]]:
    return sorted((r.chrom, r.pos) for r in oracle.records(vcf))


@pytest.fixture()
def con():
    with vcfzarr_sql.connect() as connection:
        yield connection


def test_reconverted_store_is_read_anew(con, tmp_path) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    query = f"SELECT contig, pos FROM vcf_zarr('{path}') ORDER BY contig, pos"
    con.sql(f"CREATE VIEW everything AS SELECT contig, pos FROM vcf_zarr('{path}')")
    samples = f"SELECT sample_id FROM vcf_zarr_samples('{path}')"
    assert con.sql(query).fetchall() == _expected_positions(SAMPLE_VCF)
    assert [s for (s,) in con.sql(samples).fetchall()] == oracle.header(SAMPLE_VCF).samples
    before = con.store(path)

    _convert(CHRM_VCF, tmp_path / "s.zarr", force=True)

    assert con.sql(query).fetchall() == _expected_positions(CHRM_VCF)
    # a view is plain SQL to DuckDB: its relation is refreshed too
    assert con.sql("SELECT * FROM everything ORDER BY ALL").fetchall() == _expected_positions(CHRM_VCF)
    assert [s for (s,) in con.sql(samples).fetchall()] == oracle.header(CHRM_VCF).samples
    assert con.store(path) is not before


def test_region_query_after_reconversion(con, tmp_path) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    region = f"SELECT pos FROM vcf_zarr('{path}', region := 'chrM:1-300') ORDER BY pos"
    where = f"SELECT count(*) FROM vcf_zarr('{path}') WHERE contig = '20' AND pos BETWEEN 1 AND 1230237"
    assert con.sql(region).fetchall() == []
    assert con.sql(where).fetchall() == [(len(oracle.records(SAMPLE_VCF, region="20:1-1230237")),)]

    _convert(CHRM_VCF, tmp_path / "s.zarr", force=True)

    expected = [r.pos for r in oracle.records(CHRM_VCF, region="chrM:1-300")]
    assert expected  # the region holds records of the new store
    assert [p for (p,) in con.sql(region).fetchall()] == expected
    assert con.sql(where).fetchall() == [(0,)]


def test_dataset_over_a_changed_store_refuses_to_scan(con, tmp_path) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    variants = vcfzarr_sql.dataset(path)
    held = con.sql(f"SELECT count(*) FROM vcf_zarr('{path}')")  # lazy: bound to today's store
    assert variants.count_rows() == len(oracle.records(SAMPLE_VCF))
    _convert(CHRM_VCF, tmp_path / "s.zarr", force=True)
    with pytest.raises(StoreError, match="changed after it was opened"):
        variants.to_table()
    with pytest.raises(Exception, match="changed after it was opened"):
        held.fetchall()
    assert con.sql(f"SELECT count(*) FROM vcf_zarr('{path}')").fetchall() == [
        (len(oracle.records(CHRM_VCF)),)
    ]


def test_unchanged_store_is_opened_once(con, tmp_path, monkeypatch) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    opened: collections.Counter[str] = collections.Counter()
    real_open = shared.open_store  # what the registry opens a store with

    def counting_open(location):
        opened[location] += 1
        return real_open(location)

    monkeypatch.setattr(shared, "open_store", counting_open)
    for _ in range(3):
        con.sql(f"SELECT count(*) FROM vcf_zarr('{path}', region := '20')").fetchall()
        con.sql(f"SELECT count(*) FROM vcf_zarr_calls('{path}') WHERE contig = '19'").fetchall()
    assert opened == {path: 1}
    assert con.store(path) is con.store(path)


def test_deleted_store_leaves_other_queries_working(con, tmp_path) -> None:
    gone = _convert(SAMPLE_VCF, tmp_path / "gone.zarr")
    kept = _convert(CHRM_VCF, tmp_path / "kept.zarr")
    con.sql(f"SELECT count(*) FROM vcf_zarr('{gone}', samples := ['NA00002'])").fetchall()
    shutil.rmtree(gone)
    rows = con.sql(f"SELECT count(*) FROM vcf_zarr('{kept}')").fetchall()
    assert rows == [(len(oracle.records(CHRM_VCF)),)]
    with pytest.raises(StoreError, match="gone.zarr"):
        con.sql(f"SELECT count(*) FROM vcf_zarr('{gone}')").fetchall()


def test_relation_that_no_longer_binds_is_dropped(con, tmp_path) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    con.sql(f"CREATE VIEW na2 AS SELECT * FROM vcf_zarr('{path}', samples := ['NA00002'])")
    assert con.sql("SELECT count(*) FROM na2").fetchall() == [(len(oracle.records(SAMPLE_VCF)),)]
    _convert(CHRM_VCF, tmp_path / "s.zarr", force=True)  # no sample NA00002 any more
    rows = con.sql(f"SELECT count(*) FROM vcf_zarr('{path}')").fetchall()
    assert rows == [(len(oracle.records(CHRM_VCF)),)]
    with pytest.raises(Exception, match="does not exist"):  # DuckDB's catalog error
        con.sql("SELECT count(*) FROM na2").fetchall()


def test_failed_query_on_a_changed_store_still_refreshes_the_others(con, tmp_path) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    con.sql(f"CREATE VIEW everything AS SELECT contig, pos FROM vcf_zarr('{path}')")
    sample = f"SELECT count(*) FROM vcf_zarr('{path}', samples := ['NA00002'])"
    assert con.sql(sample).fetchall() == [(len(oracle.records(SAMPLE_VCF)),)]
    _convert(CHRM_VCF, tmp_path / "s.zarr", force=True)
    with pytest.raises(QueryError, match="NA00002"):
        con.sql(sample)
    assert con.sql("SELECT * FROM everything ORDER BY ALL").fetchall() == _expected_positions(CHRM_VCF)
    _convert(SAMPLE_VCF, tmp_path / "s.zarr", force=True)  # the sample is back
    assert con.sql(sample).fetchall() == [(len(oracle.records(SAMPLE_VCF)),)]


def test_store_fingerprint_changes_with_the_store(tmp_path) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    with vcfzarr_sql.open_store(path) as store:
        assert store.is_unchanged()
        _convert(CHRM_VCF, tmp_path / "s.zarr", force=True)
        assert not store.is_unchanged()
    with vcfzarr_sql.open_store(path) as store:
        assert store.is_unchanged()
        (tmp_path / "s.zarr" / ".zattrs").touch()
        assert not store.is_unchanged()


@pytest.mark.parametrize("touched", ["region_index/0.0", "variant_position/.zarray"])
def test_unconsolidated_store_fingerprint_covers_array_metadata(tmp_path, touched) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    (tmp_path / "s.zarr" / ".zmetadata").unlink()  # each array's metadata is read on its own
    with vcfzarr_sql.open_store(path) as store:
        assert store.consolidated is None
        assert store.is_unchanged()
        os.utime(tmp_path / "s.zarr" / touched, ns=(1, 1))
        assert not store.is_unchanged()


def test_url_stores_revalidate_with_one_request_for_the_root_documents(tmp_path, monkeypatch) -> None:
    path = _convert(SAMPLE_VCF, tmp_path / "s.zarr")
    with vcfzarr_sql.open_store(f"file://{path}") as store:
        assert store.fingerprint is None
        calls = []
        get_many = store._kv.get_many

        def counted(keys):
            calls.append(keys)
            return get_many(keys)

        monkeypatch.setattr(store._kv, "get_many", counted)
        assert store.is_unchanged()
        assert len(calls) == 1
        _convert(CHRM_VCF, tmp_path / "s.zarr", force=True)
        assert not store.is_unchanged()


def test_rewrite_of_repeated_text_depends_on_the_working_directory(con, tmp_path, monkeypatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _convert(SAMPLE_VCF, tmp_path / "a" / "s.zarr")
    _convert(CHRM_VCF, tmp_path / "b" / "s.zarr")
    query = "SELECT contig, pos FROM vcf_zarr('s.zarr') ORDER BY contig, pos"
    monkeypatch.chdir(tmp_path / "a")
    assert con.sql(query).fetchall() == _expected_positions(SAMPLE_VCF)
    assert rewrite(query) == rewrite(query)
    monkeypatch.chdir(tmp_path / "b")
    assert con.sql(query).fetchall() == _expected_positions(CHRM_VCF)


def test_cached_rewrite_is_not_shared_mutable_state() -> None:
    query = "SELECT * FROM vcf_zarr('/d/x.zarr')"
    first = rewrite(query)
    first.relations.clear()
    assert len(rewrite(query).relations) == 1
