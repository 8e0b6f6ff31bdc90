"""Scans whose chunks are cheap (site columns, ``gt_`` columns from stored counts) decode runs
of consecutive variant chunks as one batch (vcfzarr_sql.query.execute.chunks_per_batch): the
rows are those of the chunk-by-chunk scan for any region, filter and run length, runs start at
one chunk (a LIMIT reads little), and per-call scans stay one chunk per batch."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow.compute as pc
import pytest
import zarr
from fill_tags import simulated_vcf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_support import zarr_array, zarr_values

import vcfzarr_sql
from vcfzarr_sql.format import summaries
from vcfzarr_sql.query import execute

SITE_COLUMNS = ["contig", "pos", "end", "id", "ref", "alt", "qual", "filters"]
GT_COLUMNS = ["gt_AC", "gt_AN", "gt_AF", "gt_MAF", "gt_NS", "gt_F_MISSING", "gt_HWE", "gt_ExcHet"]


@pytest.fixture(scope="module")
def store(tmp_path_factory, convert_once):
    """Two contigs, 120 records in chunks of 7 (18 chunks), 24 samples, stored counts."""
    vcf = simulated_vcf(tmp_path_factory.mktemp("runs") / "runs.vcf", seed=5)
    return str(convert_once(vcf, variants_chunk_size=7, samples_chunk_size=10))


def _batches(path, monkeypatch, records, columns, filter=None):
    monkeypatch.setattr(execute, "RUN_RECORDS", records)
    ds = vcfzarr_sql.dataset(path)
    batches = list(ds.to_batches(columns=columns, filter=filter))
    return [row for b in batches for row in b.to_pylist()], [b.num_rows for b in batches], ds


def test_site_and_stored_count_scans_join_chunks(store, monkeypatch):
    columns = SITE_COLUMNS + GT_COLUMNS
    one_by_one, sizes, _ = _batches(store, monkeypatch, 1, columns)
    joined, joined_sizes, ds = _batches(store, monkeypatch, 64 * 7, columns)
    assert joined == one_by_one
    assert len(sizes) == 18 and len(joined_sizes) < 18
    assert joined_sizes[:3] == [7, 14, 28]  # runs start at one chunk and double
    assert ds.last_stats["variant_chunks_read"] == 18


def test_per_call_and_sample_subset_scans_stay_one_chunk_per_batch(store, monkeypatch, tmp_path):
    """(A sample subset's ``gt_`` columns decode genotypes in a store without packed genotypes;
    with them they join runs: the next test.)"""
    from store_support import copy_store

    from vcfzarr_sql.format import packed_genotypes as pg

    unpacked = copy_store(store, tmp_path / "unpacked.vcz", drop=(pg.PACKED, pg.PACKED_EXACT))
    for path, columns, samples in ((store, ["pos", "fmt_GT"], None),
                                   (unpacked, ["pos", "gt_AC"], ["sample3", "sample7"])):
        monkeypatch.setattr(execute, "RUN_RECORDS", 64 * 7)
        ds = vcfzarr_sql.dataset(path, samples=samples)
        assert all(b.num_rows <= 7 for b in ds.to_batches(columns=columns))


def test_sample_subset_scans_of_packed_genotypes_join_chunks(store, monkeypatch):
    samples = ["sample3", "sample7", "sample20"]
    rows = {}
    for records in (1, 64 * 7):
        monkeypatch.setattr(execute, "RUN_RECORDS", records)
        batches = list(vcfzarr_sql.dataset(store, samples=samples).to_batches(columns=["pos", *GT_COLUMNS]))
        rows[records] = [row for b in batches for row in b.to_pylist()], [b.num_rows for b in batches]
    assert rows[64 * 7][0] == rows[1][0]
    assert len(rows[1][1]) == 18 and max(rows[64 * 7][1]) > 7


def test_limit_reads_only_the_first_runs(store, monkeypatch):
    monkeypatch.setattr(execute, "RUN_RECORDS", 64 * 7)
    ds = vcfzarr_sql.dataset(store)
    assert ds.head(3, columns=["pos", "gt_AC"]).num_rows == 3
    assert ds.last_stats["variant_chunks_read"] == 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    records=st.sampled_from([7, 14, 20, 35, 1000]),
    contig=st.sampled_from(["1", "2"]),
    start=st.integers(1, 1300),
    length=st.integers(0, 900),
    maf=st.sampled_from([None, 0.0, 0.05, 0.2]),
)
def test_runs_keep_exactly_the_rows_of_chunk_by_chunk_scans(
    store, monkeypatch, records, contig, start, length, maf
):
    """A region (whole chunks inside, partial ones at its edges) and a filter on a stored
    count column: the same rows whatever the run length."""
    region = (pc.field("contig") == contig) & (pc.field("pos") >= start) & (pc.field("pos") <= start + length)
    where = region if maf is None else region & (pc.field("gt_MAF") > maf)
    columns = ["contig", "pos", "ref", "gt_AC", "gt_AF"]
    expected, _, _ = _batches(store, monkeypatch, 1, columns, where)
    actual, _, _ = _batches(store, monkeypatch, records, columns, where)
    assert actual == expected


def test_counts_stored_without_alleles_read_the_alleles(store, tmp_path):
    """A store whose call counts have no alleles column (written by an earlier vcfzarr-sql)
    gives the same gt_ lists, counting the alleles from variant_allele."""
    older = tmp_path / "older.vcz"
    shutil.copytree(store, older)
    group = zarr.open_group(str(older), mode="r+", zarr_format=2)
    calls = zarr_array(group, summaries.CALL_COUNTS)
    two = zarr_values(calls, (slice(None), slice(None, 2)))
    del group[summaries.CALL_COUNTS]
    group.create_array(summaries.CALL_COUNTS, data=two, chunks=(7, 2),
                       attributes=dict(calls.attrs))
    zarr.consolidate_metadata(str(older), zarr_format=2)
    columns = ["pos", "alt", "gt_AC", "gt_AF"]
    new, old = (vcfzarr_sql.dataset(p).to_table(columns=columns) for p in (store, str(older)))
    assert old.to_pylist() == new.to_pylist()
    counts = zarr_array(zarr.open_group(store, mode="r"), summaries.CALL_COUNTS)
    alleles = np.asarray(zarr_values(counts, (slice(None), 2)))
    assert alleles.tolist() == [len(a) + 1 for a in new["alt"].to_pylist()]


def test_a_record_the_counts_do_not_count_decodes_its_run(store, tmp_path, monkeypatch):
    """A record marked not counted (a GT allele beyond the alleles axis) makes its batch decode
    the genotypes of every chunk of the run: the same rows as the counted store. Runs of gt_
    columns span at most RUN_GENOTYPE_BYTES of genotypes."""
    marked = tmp_path / "marked.vcz"
    shutil.copytree(store, marked)
    calls = zarr.open_array(str(marked / summaries.CALL_COUNTS), mode="r+")
    row = zarr_values(calls, 50)
    row[summaries.CALLED] = summaries.NOT_COUNTED
    calls[50] = row
    columns = ["pos", "gt_AC", "gt_NS", "gt_HWE"]
    expected, _, _ = _batches(store, monkeypatch, 1, columns)
    actual, sizes, _ = _batches(str(marked), monkeypatch, 64 * 7, columns)
    assert actual == expected and max(sizes) > 7
    monkeypatch.setattr(execute, "RUN_GENOTYPE_BYTES", 7 * 24 * 2)  # one genotype chunk
    _, sizes, _ = _batches(store, monkeypatch, 64 * 7, columns)
    assert max(sizes) == 7


@pytest.fixture(scope="module")
def short_summary_chunks(store, tmp_path_factory):
    """``store`` with its per-record counts rewritten in chunks of two variant chunks."""
    from vcfzarr_sql.converter.summaries import write_genotype_counts

    copy = tmp_path_factory.mktemp("short") / "short.vcz"
    shutil.copytree(store, copy)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(summaries, "SUMMARY_RECORDS", 14)
        assert write_genotype_counts(copy)
    assert zarr_array(zarr.open_group(str(copy), mode="r"), summaries.HWE).chunks[0] == 14
    return str(copy)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.sampled_from([7, 14, 21, 1000]), start=st.integers(1, 1300), length=st.integers(0, 900))
def test_counts_in_chunks_of_several_variant_chunks(store, short_summary_chunks, monkeypatch, records, start, length):
    """Per-record counts chunked unlike the variant chunks (runs and single chunks straddle
    their chunks): the same rows, and validate agrees with them."""
    region = (pc.field("contig") == "1") & (pc.field("pos") >= start) & (pc.field("pos") <= start + length)
    columns = ["pos", "gt_AC", "gt_NS", "gt_HWE", "gt_ExcHet"]
    expected, _, one_by_one = _batches(store, monkeypatch, 1, columns, region)
    actual, _, joined = _batches(short_summary_chunks, monkeypatch, records, columns, region)
    assert actual == expected
    # (a chunk of the counts holds two variant chunks: it is not counted as one)
    assert joined.last_stats["variant_chunks_read"] == one_by_one.last_stats["variant_chunks_read"]


def test_short_summary_chunks_validate(short_summary_chunks):
    assert vcfzarr_sql.validate(short_summary_chunks) == []


def test_runs_stop_growing_at_run_bytes(store, monkeypatch):
    """Runs of records whose values are large (long INFO strings, say) stay near RUN_BYTES."""
    columns = ["pos", "ref", "alt", "id"]
    expected, sizes, _ = _batches(store, monkeypatch, 64 * 7, columns)
    assert max(sizes) > 7
    monkeypatch.setattr(execute, "RUN_BYTES", 1)
    actual, sizes, _ = _batches(store, monkeypatch, 64 * 7, columns)
    assert actual == expected and max(sizes) == 7


@pytest.mark.parametrize("stored", [True, False])
@pytest.mark.parametrize("region", [None, "1:30-400", "2:50-51"])
def test_sample_stats_add_up_runs_of_stored_counts(store, stored, region):
    """``vcf_zarr_sample_stats`` tasks cover each chunk of the plan once, in order; with the
    counts stored, consecutive whole chunks join (as many runs as the pool has threads, so the
    threads share them), and an edge chunk, decoded, stays alone."""
    from vcfzarr_sql.adapters.dataset import VczDataset
    from vcfzarr_sql.query.prefetch import THREADS
    from vcfzarr_sql.stats.sample_stats import count_runs, stored_class_bytes

    plan_store = vcfzarr_sql.open_store(store)
    plan = VczDataset(plan_store, "variants", None, region).scanner(columns=["pos"]).plan
    cut = count_runs(plan, stored_class_bytes(plan_store, None) if stored else None)
    tasks = [plan.run(run.start, run.stop) for run in cut(range(len(plan)))]
    covered = [t.variant_chunk + k for t in tasks for k in range(t.chunk_count)]
    assert covered == plan.variant_chunks.tolist()
    assert sum(t.num_rows for t in tasks) == plan.rows.sum()
    whole = dict(zip(plan.variant_chunks.tolist(), plan.whole.tolist()))
    for t in tasks:
        assert t.chunk_count == 1 or (stored and t.filter is None), t
        assert (t.filter is None) == whole[t.variant_chunk]
    if stored:
        assert len([t for t in tasks if t.filter is None]) <= THREADS + 2  # (split by edges)
    else:
        assert len(tasks) == len(plan)


def test_contig_comes_from_the_region_index_where_a_chunk_has_one_contig(store):
    """``contig`` of a chunk the region index gives one contig (and all its records) is not
    decoded; a chunk holding the end of contig 1 and the start of 2 is, and every value equals
    ``variant_contig`` read with zarr."""
    group = zarr.open_group(store, mode="r")
    names = list(zarr_values(zarr_array(group, "contig_id")))
    expected = [names[i] for i in zarr_values(zarr_array(group, "variant_contig"))]
    ds = vcfzarr_sql.dataset(store)
    assert ds.scanner(columns=["contig"]).to_table().column("contig").to_pylist() == expected
    mixed = {i // 7 for i in range(1, len(expected)) if expected[i] != expected[i - 1] and i % 7}
    assert ds.last_stats["variant_chunks_read"] == len(mixed)
