"""A cohort grown with ``add`` reads as ``bcftools merge -m none`` of its inputs, in the order
added; ``compact`` gives the same answers as converting that merged VCF.

Expected values: bcftools' merged VCF (pysam), read by the oracle, and the store ``convert``
makes of it (queried with the same SQL). Batches: simulated (:mod:`cohort_support`:
overlapping and disjoint samples and sites, multi-allelic records that differ, a haploid
batch, a batch whose header lists contigs in another order, three contigs) and the corpus's
``sample.vcf.gz`` split by samples.
"""

from __future__ import annotations

import ctypes
import faulthandler
import hashlib
import json
import os
import pickle
import shutil
import sys
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import oracle
import pysam
import pytest
from cohort_support import POOL, merged, sorted_rows, write_batch
from corpus import CORPUS

import vcfzarr_sql
from vcfzarr_sql.cli.compact import compact
from vcfzarr_sql.converter import convert
from vcfzarr_sql.converter.cohort import DuplicateSampleError, add
from vcfzarr_sql.converter.workers import WorkerPool
from vcfzarr_sql.errors import StoreError, VcfParseError
from vcfzarr_sql.format import cohort as cohort_layout
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.format.cohort import ALLELE_KEYS, BATCH_ROWS
from vcfzarr_sql.query.genotype_stats import COLUMNS as GT_COLUMNS
from vcfzarr_sql.store import open_store, opening
from vcfzarr_sql.store.cohort import CohortStore
from vcfzarr_sql.store.kvstore import DirectoryStore
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view import Selection, view

FORMAT_FIELDS = ("GT", "AD", "DP", "GQ", "FT")


def _batches(directory: Path) -> list[Path]:
    """Four batches: A (the store convert makes), then B and H added together, then D."""
    at = {site: i for i, site in enumerate(POOL)}
    a = [s for s in POOL if s not in (POOL[3], POOL[6], POOL[13])]
    b = [POOL[3], POOL[2], POOL[1], POOL[4], POOL[6], POOL[9], POOL[12], POOL[11]]  # 1:100 reordered
    h = [POOL[0], POOL[5], POOL[7], POOL[8], POOL[13]]
    d = [POOL[10], POOL[12]]
    assert all(site in at for site in b + h + d)
    return [
        write_batch(directory / "a.vcf", ["A1", "A2", "A3"], a, seed=1),
        write_batch(directory / "b.vcf", ["B1", "B2"], b, seed=2, contig_order=("1", "3", "2")),
        write_batch(directory / "h.vcf", ["H1"], h, seed=3, ploidy=1),
        write_batch(directory / "d.vcf", ["D1", "D2"], d, seed=4),
    ]


def _tree_hashes(root: Path, *, skip: str | None = None) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not (skip and skip in p.parts)}


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """(cohort path, bcftools' merged VCF, the store converted from it, hashes of the cohort's
    files before the second add, and after it)."""
    directory = tmp_path_factory.mktemp("cohort")
    a, b, h, d = _batches(directory)
    store = directory / "cohort.vcz"
    convert(a, store, variants_chunk_size=4, samples_chunk_size=2)
    add(store, [b, h])
    before = _tree_hashes(store)
    add(store, [d])
    expected = merged([a, b, h, d], directory / "merged.vcf")
    expected_store = directory / "merged.vcz"
    convert(expected, expected_store, variants_chunk_size=4, samples_chunk_size=2)
    return store, expected, expected_store, before, _tree_hashes(store)


def test_a_cohort_of_several_batches_opens_as_one_store(cohort):
    store, _, _, _, _ = cohort
    with open_store(store) as opened:
        assert isinstance(opened, CohortStore)
        assert len(opened.batches) == 4
        assert list(opened.samples) == ["A1", "A2", "A3", "B1", "B2", "H1", "D1", "D2"]


def test_view_writes_the_records_and_calls_bcftools_merge_writes(cohort, tmp_path):
    store, expected, _, _, _ = cohort
    out = tmp_path / "cohort.vcf"
    view(store, out)
    assert oracle.records(out) == oracle.records(expected)
    assert oracle.calls(out, FORMAT_FIELDS) == oracle.calls(expected, FORMAT_FIELDS)
    assert oracle.header(out).samples == oracle.header(expected).samples


GT_LIST = ", ".join(GT_COLUMNS)
QUERIES = [
    "SELECT * FROM vcf_zarr('{s}')",
    "SELECT * FROM vcf_zarr_calls('{s}')",
    "SELECT contig, pos, ref, alt, " + GT_LIST + " FROM vcf_zarr('{s}')",
    "SELECT * FROM vcf_zarr_sample_stats('{s}')",
    "SELECT contig, pos, alt, fmt_GT, fmt_GT_phased, fmt_AD, " + GT_LIST +
    " FROM vcf_zarr('{s}', region := '1:90-310,3', samples := ['H1', 'A2', 'D2'])",
    "SELECT * FROM vcf_zarr_calls('{s}', samples := ['B2', 'H1']) WHERE pos BETWEEN 90 AND 310",
    "SELECT * FROM vcf_zarr_sample_stats('{s}', samples := ['A3', 'H1', 'D1'], region := '1:1-200')",
    "SELECT * FROM vcf_zarr_sample_stats('{s}', samples := ['A2', 'B1', 'B2', 'D2'])",
    "SELECT * FROM vcf_zarr_sample_stats('{s}', region := '1')",
    "SELECT count(*) AS n, sum(pos) AS p FROM vcf_zarr('{s}') WHERE contig = '2' OR pos < 150",
]


@pytest.mark.parametrize("query", QUERIES)
def test_sql_over_the_cohort_equals_sql_over_the_merged_vcf(cohort, query):
    store, _, expected_store, _, _ = cohort
    con = vcfzarr_sql.connect()
    assert sorted_rows(con, query, store) == sorted_rows(con, query, expected_store)


def test_pushdown_prunes_and_is_exact(cohort):
    store, _, _, _, _ = cohort
    con = vcfzarr_sql.connect()
    everything = sorted_rows(con, "SELECT contig, pos, alt, fmt_GT FROM vcf_zarr('{s}')", store)
    pushed = sorted_rows(con, "SELECT contig, pos, alt, fmt_GT FROM vcf_zarr('{s}') "
                        "WHERE contig = '1' AND pos BETWEEN 100 AND 300", store)
    assert pushed == [r for r in everything if r["contig"] == "1" and 100 <= r["pos"] <= 300]
    dataset = vcfzarr_sql.dataset(str(store))
    dataset.to_table(columns=["pos"], filter=(vcfzarr_sql_field("contig") == "3"))
    stats = dataset.last_stats
    assert stats["variant_chunks_read"] < stats["variant_chunks_total"]


def vcfzarr_sql_field(name: str):
    import pyarrow.dataset as ds

    return ds.field(name)


def test_scan_tasks_pickle_and_read_the_cohort(cohort):
    store, _, expected_store, _, _ = cohort

    def table(path):
        tasks = vcfzarr_sql.scan_tasks(str(path), "calls", columns=["pos", "sample_id", "fmt_GT"])
        return [pickle.loads(pickle.dumps(t)).to_table() for t in tasks]

    def rows(tables):
        return sorted((r for t in tables for r in t.to_pylist()), key=repr)

    assert rows(table(store)) == rows(table(expected_store))


def test_add_rewrites_no_file_it_had(cohort):
    """Every chunk (``call_*``, ``variant_*``...) of the store and of the batches added before
    is as it was; only the manifest changed (the commit)."""
    _, _, _, before, after = cohort
    kept = {k: v for k, v in before.items() if not k.endswith("manifest.json")}
    assert any(k.startswith("call_genotype/") for k in kept)
    assert any(k.startswith(".vcfzarr-cohort/batches/2/call_genotype/") for k in kept)
    assert {k: after.get(k) for k in kept} == kept


def test_adding_a_sample_name_the_cohort_has_changes_nothing(cohort, tmp_path):
    store, _, _, _, after = cohort
    again = write_batch(tmp_path / "again.vcf", ["Z1", "A2"], POOL[:3], seed=9)
    with pytest.raises(DuplicateSampleError, match=r"again\.vcf\.gz: sample 'A2' is already in"):
        add(store, [again])
    assert _tree_hashes(store) == after


def test_compact_gives_the_answers_and_summaries_of_the_merged_store(cohort, tmp_path):
    store, _, expected_store, _, _ = cohort
    out = tmp_path / "compact.vcz"
    compact(store, out)
    con = vcfzarr_sql.connect()
    for query in QUERIES:
        assert sorted_rows(con, query, out) == sorted_rows(con, query, expected_store), query
    with open_store(out) as got, open_store(expected_store) as want:
        assert not isinstance(got, CohortStore)
        for name in (sc.ALLELE_COUNTS, sc.CALL_COUNTS, sc.HWE, sc.SAMPLE_CLASS_COUNTS):
            np.testing.assert_array_equal(got.read_array(name), want.read_array(name))


def test_a_corpus_file_split_by_samples_and_sites(tmp_path):
    """``sample.vcf.gz`` (mixed ploidy, phasing, multi-allelic records, three contigs) as two
    batches: its first sample at every record, the others at the records bcftools keeps with
    ``-e 'POS<=1230237'``."""
    source = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"
    first, rest = tmp_path / "first.vcf.gz", tmp_path / "rest.vcf.gz"
    pysam.bcftools.view("-s", "NA00001", "-Oz", "-o", str(first), str(source), catch_stdout=False)
    pysam.bcftools.view("-s", "^NA00001", "-e", "POS<=1230237", "-Oz", "-o", str(rest),
                        str(source), catch_stdout=False)
    for path in (first, rest):
        pysam.bcftools.index(str(path), catch_stdout=False)
    store = tmp_path / "c.vcz"
    convert(first, store, variants_chunk_size=3)
    add(store, [rest])
    expected = merged([first, rest], tmp_path / "merged.vcf")
    out = tmp_path / "cohort.vcf"
    view(store, out)
    fields = tuple(oracle.header(expected).format)
    assert oracle.records(out) == oracle.records(expected)
    assert oracle.calls(out, fields) == oracle.calls(expected, fields)


def test_view_of_one_input_s_samples_writes_that_input_s_header(cohort, tmp_path):
    """B's header lists contigs 1, 3, 2 (the cohort: 1, 2, 3): ``view -s B1,B2`` writes it as
    bcftools does, the lines other batches declare after it (here: none)."""
    store, _, _, _, _ = cohort
    out = tmp_path / "b.vcf"
    view(store, out, Selection(samples="B1,B2"), records=False)
    b = store.parent / "b.vcf.gz"
    expected = [line for line in str(pysam.bcftools.view("-h", "-s", "B1,B2", str(b))).splitlines()
                if not line.startswith("##bcftools_view")]
    assert out.read_text().splitlines() == expected


def test_a_server_opens_the_cohort_confined_to_its_data_directory(cohort):
    """The batches are read through the confined reader too (no symlink followed)."""
    from vcfzarr_sql.store.confined import DataDirs

    store, _, expected_store, _, _ = cohort
    with DataDirs.of([store.parent]).open_store(store.name) as opened:
        assert isinstance(opened, CohortStore)
        with open_store(expected_store) as want:
            np.testing.assert_array_equal(opened.read_array("call_genotype"), want.read_array("call_genotype"))


def test_validate_checks_every_batch_of_a_cohort(cohort, tmp_path):
    from vcfzarr_sql.validation import validate

    store, _, _, _, _ = cohort
    assert validate(store) == []
    damaged = tmp_path / "damaged.vcz"
    shutil.copytree(store, damaged)
    batch = sorted((damaged / ".vcfzarr-cohort" / "batches").iterdir())[-1]
    shutil.rmtree(batch / "variant_position")  # a later batch, not the cohort's own arrays
    found = [str(problem) for problem in validate(damaged)]
    assert found and all(p.startswith(".vcfzarr-cohort/batches/") for p in found), found
    assert any("variant_position" in p for p in found), found


def test_index_writes_the_region_index_and_counts_into_every_batch(cohort, tmp_path, capsys):
    """A cohort whose batches lost their region index and stored counts (as stores another
    tool wrote): ``index`` writes them into each batch, as ``convert`` had written them."""
    from store_support import copy_store

    from vcfzarr_sql.cli import main
    from vcfzarr_sql.store.vcz import open_store as open_plain

    store, _, expected_store, _, _ = cohort
    copy = tmp_path / "cohort.vcz"
    shutil.copytree(store, copy)
    batches = [copy, *sorted((copy / ".vcfzarr-cohort" / "batches").iterdir())]
    dropped = ("region_index", sc.ALLELE_COUNTS, sc.CALL_COUNTS, sc.HWE, sc.SAMPLE_CLASS_COUNTS)
    for batch in batches[::-1]:  # (the first batch's directory holds the others)
        copy_store(batch, tmp_path / "dropped", drop=dropped)
        shutil.rmtree(batch)
        (tmp_path / "dropped").rename(batch)
    assert main(["index", str(copy)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[0] for line in out if "region_index" in line] == [str(b) for b in batches]
    for batch in batches:
        original = store / batch.relative_to(copy)
        with open_plain(batch) as got, open_plain(original) as want:
            for name in dropped:
                np.testing.assert_array_equal(got.read_array(name), want.read_array(name))
    con = vcfzarr_sql.connect()
    for query in QUERIES[2:4]:
        assert sorted_rows(con, query, copy) == sorted_rows(con, query, expected_store), query


def test_a_malformed_small_input_is_a_one_line_error_and_changes_nothing(cohort, tmp_path):
    """A parse error in an added input is the one-line VcfParseError convert gives, naming
    the file, and the cohort is unchanged."""
    store, _, _, _, after = cohort
    bad = tmp_path / "bad.vcf"
    bad.write_text("##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n"
                   '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
                   "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tZ9\n"
                   "1\t10\t.\tA\tC\t.\tPASS\t.\tGT\t0/1\n1\tx\t.\tA\tC\t.\tPASS\t.\tGT\t0/1\n")
    with pytest.raises(VcfParseError) as raised:
        add(store, [bad])
    assert str(bad) in str(raised.value) and "\n" not in str(raised.value)
    assert _tree_hashes(store) == after


def test_add_stores_the_counts_over_all_samples_added_up(cohort):
    """The gt_ columns' per-record counts are added up by add, in the sites store, as
    converting the merged VCF counts them (a query reads one array, not every batch's)."""
    store, _, expected_store, _, _ = cohort
    with open_store(store) as got, open_store(expected_store) as want:
        assert isinstance(got, CohortStore)
        for name in (sc.ALLELE_COUNTS, sc.CALL_COUNTS):
            assert got.sites.has_array(name)
            np.testing.assert_array_equal(got.read_array(name), want.read_array(name))


def test_add_adds_the_new_batch_s_counts_to_the_stored_totals(cohort, tmp_path, monkeypatch):
    """An add reads the counts the cohort stored and the new batch's, not every batch's; what
    it stores is what the cohort adds up from every batch (compared with bcftools' merge in
    the test above, through this same path)."""
    store = tmp_path / "grown.vcz"
    shutil.copytree(cohort[0], store)
    new = write_batch(tmp_path / "e.vcf", ["E1"], [POOL[0], POOL[2], POOL[13]], seed=5)
    read = []
    original = VczStore.read_array

    def reading(self, name):
        read.append(("/".join(Path(self.path).parts[-2:]), name))
        return original(self, name)

    monkeypatch.setattr(VczStore, "read_array", reading)
    add(store, [new])
    monkeypatch.undo()
    counted = [where for where, name in read if name in (sc.ALLELE_COUNTS, sc.CALL_COUNTS)]
    assert set(counted) == {"sites/2", "batches/4"}  # (the sites store before the add; the new batch)
    with open_store(store) as got:
        assert isinstance(got, CohortStore) and got.sites.has_array(sc.CALL_COUNTS)
        rows = got.sites.read_array(BATCH_ROWS).astype(np.int64)
        for name in (sc.ALLELE_COUNTS, sc.CALL_COUNTS):
            np.testing.assert_array_equal(got.read_array(name), got._added_counts(name, got.array_info(name), rows))


def test_opening_and_a_gt_region_query_read_no_chunk_of_the_batches(cohort):
    """A cohort opens its batches reading only their metadata (its samples, contigs and
    filters are the sites store's), and a region query of positions and ``gt_`` columns reads
    no batch chunk (the counts are added up in the sites store): what a new connection pays."""
    store, _, expected_store, _, _ = cohort
    read: dict[str, list[str]] = {}

    class Recording(DirectoryStore):
        def get(self, key):
            read.setdefault(self.location, []).append(key)
            return super().get(key)

    def sub_store(relative):
        where = str(store / relative) if relative else str(store)
        return Recording(where, where)

    def batch_chunks(opened):
        batches = {b.path for b in opened.batches}
        return sorted(k for where, keys in read.items() if where in batches
                      for k in keys if not k.rsplit("/", 1)[-1].startswith((".z", "zarr.json")))

    columns = ["pos", "gt_AC", "gt_AN"]
    with opening.open_store(store, sub_stores=sub_store) as opened:
        assert isinstance(opened, CohortStore) and len(opened.batches) == 4
        assert batch_chunks(opened) == []
        got = vcfzarr_sql.dataset(opened, region="1:90-310").to_table(columns=columns)
        assert batch_chunks(opened) == []
    want = vcfzarr_sql.dataset(str(expected_store), region="1:90-310").to_table(columns=columns)
    assert sorted(got.to_pylist(), key=str) == sorted(want.to_pylist(), key=str)


def test_a_batch_stores_the_summaries_a_cohort_reads_of_it_only(cohort):
    """An added batch has the region index and the genotype counts the cohort adds up, not the
    packed genotypes and per-chunk ``stats`` counts a plain store has (no cohort query reads
    them of a batch); the first batch, the store ``convert`` made, keeps them."""
    from vcfzarr_sql.format import packed_genotypes as pg
    from vcfzarr_sql.store.vcz import open_store as open_plain

    store, _, _, _, _ = cohort
    read = ("region_index", sc.ALLELE_COUNTS, sc.CALL_COUNTS, sc.SAMPLE_CLASS_COUNTS)
    unread = (pg.PACKED, pg.PACKED_EXACT, sc.SAMPLE_CALL_STATS, sc.HWE_GENOTYPE_COUNTS,
              sc.CALL_DEPTH_COUNTS, sc.INDEL_VAF)
    with open_plain(store) as first:
        assert all(first.has_array(name) for name in read + unread)
    for batch in sorted((store / ".vcfzarr-cohort" / "batches").iterdir()):
        with open_plain(batch) as added:
            assert all(added.has_array(name) for name in read)
            assert not any(added.has_array(name) for name in unread)


_SEEN_BY_WORKERS: list[str] = []


def _seen_by_workers() -> list[str]:
    return list(_SEEN_BY_WORKERS)


def _forked_pool_checks(log_dir) -> int:
    """0 if a pool asked to fork forks (its worker sees what this process set) and a worker's
    segfault is a one-line VcfParseError for the input; else which check failed."""
    _SEEN_BY_WORKERS.append("set by the parent")
    with WorkerPool("input.vcf", 1, log_dir, fork=True) as pool:
        if not pool.forked or pool.run(_seen_by_workers, [()]) != [["set by the parent"]]:
            return 1
        try:
            pool.run(ctypes.string_at, [(0,)])
        except VcfParseError as err:
            return 0 if str(err).startswith("input.vcf: ") and "crashed" in str(err) else 2
    return 3


def test_add_s_workers_are_forked_and_a_crash_in_one_stays_a_parse_error(tmp_path):
    """``add`` forks its workers (its process has imported the converter: a spawned worker
    would import it again), and a worker's crash is still a one-line error. Checked in a
    forked child of the test (which runs no other thread, as the add command's process);
    with another thread running, or DuckDB loaded, the pool spawns its workers (a lock such a
    thread holds would stay held in a forked worker)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 4
        try:
            faulthandler.disable()  # (pytest's: the worker's segfault is expected)
            sys.modules.pop("duckdb", None)  # (as the add command's process: other tests load it)
            code = _forked_pool_checks(tmp_path)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not WorkerPool("input.vcf", 1, tmp_path, fork=True).forked
    finally:
        stop.set()
        other.join()
    import duckdb  # noqa: F401 (its native threads' locks could stay held in a forked worker)
    assert not WorkerPool("input.vcf", 1, tmp_path, fork=True).forked


def test_a_batch_of_fewer_samples_than_a_chunk_holds_is_chunked_in_more_records(cohort):
    """The cohort is chunked in 4 records and 2 samples: the batch of 2 samples (B) keeps 4
    records a chunk; the batch of 1 sample (H, 5 records) may take 8, so all 5 are one chunk
    (as many calls a chunk: fewer files to write). The other tests read the cohort as before."""
    from vcfzarr_sql.store.vcz import open_store as open_plain

    store, _, _, _, _ = cohort
    chunks = {}
    for number in (1, 2):
        with open_plain(store / f".vcfzarr-cohort/batches/{number}") as batch:
            chunks[batch.samples[0]] = (batch.num_samples, batch.num_variants, batch.variants_chunk_size)
    assert chunks == {"B1": (2, 8, 4), "H1": (1, 5, 5)}


#: A record whose alleles do not pack into an allele key (longer than 21 characters): the
#: union compares its text.
LONG = ("1", 150, "T", ("TACGTACGTACGTACGTACGTACG",))


def _sites_dir(store: Path) -> Path:
    manifest = json.loads((store / ".vcfzarr-cohort" / "manifest.json").read_text())
    return store / manifest["sites"]


def test_a_sites_store_without_allele_keys_is_read_and_grown(cohort, tmp_path):
    """A sites store written before the allele keys (no ``cohort_allele_key``) reads as before,
    and adding to it gives bcftools' merge: the keys are computed where the new batches share
    a position (here also a record whose alleles do not pack, held by both new batches)."""
    store, expected, _, _, _ = cohort
    old = tmp_path / "old.vcz"
    shutil.copytree(store, old)
    sites = _sites_dir(old)
    shutil.rmtree(sites / ALLELE_KEYS)
    consolidated = json.loads((sites / ".zmetadata").read_text())
    consolidated["metadata"] = {k: v for k, v in consolidated["metadata"].items()
                                if not k.startswith(ALLELE_KEYS + "/")}
    (sites / ".zmetadata").write_text(json.dumps(consolidated))
    out = tmp_path / "old.vcf"
    view(old, out)
    assert oracle.records(out) == oracle.records(expected)
    e = write_batch(tmp_path / "e.vcf", ["E1"], [POOL[0], POOL[2], POOL[4], LONG, POOL[13]], seed=5)
    f = write_batch(tmp_path / "f.vcf", ["F1", "F2"], [POOL[1], LONG, POOL[9]], seed=6)
    add(old, [e, f])
    with open_store(old) as grown:
        assert isinstance(grown, CohortStore) and grown.sites.has_array(ALLELE_KEYS)
    inputs = [store.parent / f"{n}.vcf.gz" for n in "abhd"]  # (the fixture's, in order)
    want = merged([*inputs, e, f], tmp_path / "merged.vcf")
    out = tmp_path / "grown.vcf"
    view(old, out)
    assert oracle.records(out) == oracle.records(want)
    assert oracle.calls(out, FORMAT_FIELDS) == oracle.calls(want, FORMAT_FIELDS)


def _set_sites_attribute(sites: Path, name: str, value: object) -> None:
    """Set (None: remove) attribute ``name`` of the sites store at ``sites`` (and in its
    consolidated metadata)."""
    for path, key in ((sites / ".zattrs", None), (sites / ".zmetadata", ".zattrs")):
        document = json.loads(path.read_text())
        attrs = document["metadata"][key] if key else document
        attrs.pop(name, None) if value is None else attrs.__setitem__(name, value)
        path.write_text(json.dumps(document))


def test_a_sites_store_chunked_as_the_cohort_is_read_and_grown(cohort, tmp_path, monkeypatch):
    """A sites store written before its arrays along ``variants`` were chunked in several of
    the cohort's chunks (chunked as the cohort, no ``cohort_variants_chunk_size``) reads as
    before, and an add to it gives bcftools' merge and writes the new layout."""
    store, expected, _, _, _ = cohort
    a, b, h, d = (store.parent / f"{n}.vcf.gz" for n in "abhd")  # (the fixture's inputs)
    old = tmp_path / "old.vcz"
    convert(a, old, variants_chunk_size=4, samples_chunk_size=2)
    monkeypatch.setattr(cohort_layout, "sites_chunk_records", lambda chunk: chunk)
    add(old, [b, h])
    monkeypatch.undo()
    _set_sites_attribute(_sites_dir(old), cohort_layout.ATTR_VARIANTS_CHUNK, None)
    with open_store(old) as before:
        assert isinstance(before, CohortStore)
        assert before.sites.array_info(BATCH_ROWS).chunks[0] == before.variants_chunk_size == 4
        assert before.num_variant_chunks > 1
    out = tmp_path / "old.vcf"
    view(old, out)
    assert oracle.records(out) == oracle.records(merged([a, b, h], tmp_path / "abh.vcf"))
    add(old, [d])
    with open_store(old) as grown:
        assert isinstance(grown, CohortStore) and grown.variants_chunk_size == 4 and grown.num_variant_chunks > 1
        assert grown.sites.array_info(BATCH_ROWS).chunks[0] == cohort_layout.sites_chunk_records(4)
    out = tmp_path / "grown.vcf"
    view(old, out)
    assert oracle.records(out) == oracle.records(expected)
    assert oracle.calls(out, FORMAT_FIELDS) == oracle.calls(expected, FORMAT_FIELDS)


@pytest.mark.parametrize("value", [5, 0, "4", None])
def test_a_sites_store_whose_chunks_are_not_whole_cohort_chunks_is_a_store_error(cohort, tmp_path, value):
    store = tmp_path / "bad.vcz"
    shutil.copytree(cohort[0], store)
    sites = _sites_dir(store)
    _set_sites_attribute(sites, cohort_layout.ATTR_VARIANTS_CHUNK, value)
    if value is None:  # (chunks of 65,536 records, named as the cohort's: the grid is not the index's)
        with open_store(store) as opened, pytest.raises(StoreError, match="region_index"):
            assert opened.region_index is None
        return
    with pytest.raises(StoreError, match=cohort_layout.ATTR_VARIANTS_CHUNK):
        open_store(store)


def test_an_add_at_positions_whose_allele_keys_are_known_reads_no_alleles_of_the_cohort(tmp_path, monkeypatch):
    """The union compares allele keys kept in the sites store: a second add of records at the
    positions an earlier add shared reads the alleles of the new batch only (and of the one
    record whose alleles do not pack), and gives bcftools' merge."""
    sites = [POOL[0], POOL[1], POOL[2], LONG, POOL[9]]
    a = write_batch(tmp_path / "a.vcf", ["A1", "A2"], sites, seed=1)
    b = write_batch(tmp_path / "b.vcf", ["B1"], sites, seed=2)
    c = write_batch(tmp_path / "c.vcf", ["C1"], sites[::-1], seed=3)
    store = tmp_path / "cohort.vcz"
    convert(a, store, variants_chunk_size=2, samples_chunk_size=2)
    add(store, [b])
    read = []
    original = VczStore.read_chunk

    def reading(self, name, chunk):
        if name == "variant_allele":
            read.append((Path(self.path).name, chunk))
        return original(self, name, chunk)

    monkeypatch.setattr(VczStore, "read_chunk", reading)
    add(store, [c])
    monkeypatch.undo()
    # (the new batch's two chunks; LONG's chunk of the first batch, which holds it first)
    assert sorted(read) == [("2", (0, 0)), ("2", (1, 0)), ("cohort.vcz", (1, 0))]
    out = tmp_path / "c.vcf"
    view(store, out)
    want = merged([a, b, c], tmp_path / "merged.vcf")
    # (FILTER as a set: where batches set different filters on one record, bcftools lists them
    # in the order it met them and a cohort in the header's, before this change too)
    def filters_as_sets(path):
        return [replace(r, filters=r.filters and sorted(r.filters)) for r in oracle.records(path)]

    assert filters_as_sets(out) == filters_as_sets(want)
    assert oracle.calls(out, FORMAT_FIELDS) == oracle.calls(want, FORMAT_FIELDS)
