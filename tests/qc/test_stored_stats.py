"""The whole-cohort ``stats -s -`` adds up the per-chunk counts the store holds
(``vcfzarr_sql/query/call_stats.py``) instead of decoding genotypes: it equals Debian bcftools
with no genotype, FORMAT/DP or AD chunk left in the store. A store without those counts (an
older store) decodes and gives the same; ``index`` writes them as ``convert`` does;
``validate`` finds a wrong one (one counted from FORMAT/DP with ``--deep``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from fill_tags import BCFTOOLS, bcftools
from qc_simulate import qc_vcf
from store_support import copy_store

from vcfzarr_sql.converter.summaries import write_genotype_counts
from vcfzarr_sql.format import summaries
from vcfzarr_sql.qc import stats_lines
from vcfzarr_sql.query.selection import Selection
from vcfzarr_sql.store import open_store
from vcfzarr_sql.store.summary_arrays import call_stats_arrays
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.store.writer import write_rows
from vcfzarr_sql.validation import validate

pytestmark = pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools")

#: The arrays the whole-cohort stats must not read.
DECODED = ("call_genotype", "call_DP", "call_AD")


def _data(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith(("#", "ID\t"))]


def _bcftools(path: Path, *options: str) -> list[str]:
    done = subprocess.run([*bcftools("stats", *options), str(path)], capture_output=True, check=True)
    return _data(done.stdout.decode())


def _ours(store: Path | str, regions: str | None = None) -> list[str]:
    """``stats -s -`` (and ``-r regions``)."""
    return _data("".join(stats_lines(store, Selection(samples="-", regions=regions))))


@pytest.fixture(scope="module")
def call_sets(tmp_path_factory, convert_once) -> dict[str, tuple[Path, Path]]:
    """name: (BCF, store): calls of at most two alleles without INFO/AC and AN (the AF bins
    then come from the stored allele counts), and calls of up to three alleles with them."""
    root = tmp_path_factory.mktemp("stored_stats")
    diploid = qc_vcf(root / "diploid.vcf", seed=3, records=90, ploidies=(1, 2, 2, 2))
    triploid = qc_vcf(root / "triploid.vcf", seed=4, records=90)
    sets = {}
    for name, vcf in (("diploid", diploid), ("ac_an", triploid)):
        bcf = root / f"{name}.bcf"
        if name == "ac_an":
            subprocess.run(bcftools("+fill-tags", str(vcf), "-Ob", "-o", str(bcf), "--", "-t", "AC,AN"),
                           check=True, capture_output=True)
        else:
            subprocess.run(bcftools("view", "-Ob", "-o", str(bcf), str(vcf)), check=True)
        subprocess.run(bcftools("index", "-f", str(bcf)), check=True)
        sets[name] = (bcf, convert_once(bcf, variants_chunk_size=20, samples_chunk_size=5))
    return sets


@pytest.mark.parametrize("name", ["diploid", "ac_an"])
def test_whole_cohort_reads_no_genotypes(call_sets, tmp_path, name):
    bcf, store = call_sets[name]
    copy = copy_store(store, tmp_path / "copy.vcz")
    for array in DECODED:
        for chunk in (copy / array).iterdir():
            if not chunk.name.startswith("."):
                chunk.unlink()
    assert _ours(copy) == _bcftools(bcf, "-s", "-")


def test_store_without_counts_decodes_and_index_writes_them(call_sets, tmp_path):
    bcf, store = call_sets["diploid"]
    copy = copy_store(store, tmp_path / "older.vcz", drop=summaries.CALL_STATS)
    assert _ours(copy) == _bcftools(bcf, "-s", "-")
    assert write_genotype_counts(copy)
    converted, indexed = open_store(store), open_store(copy)
    for name in summaries.CALL_STATS:
        assert np.array_equal(indexed.read_array(name), converted.read_array(name)), name
    # a region cuts chunks: those decode, the others add up their counts
    regions = "1:1000-40000,2:500-90000"
    assert _ours(copy, regions) == _bcftools(bcf, "-s", "-", "-r", regions)


def test_validate_finds_a_wrong_count(call_sets, tmp_path):
    _, store = call_sets["ac_an"]
    copy = copy_store(store, tmp_path / "wrong.vcz")
    assert validate(copy) == []
    opened = open_store(copy)
    array = call_stats_arrays(opened.num_variants, opened.num_samples, opened.variants_chunk_size,
                              opened.samples_chunk_size)[summaries.SAMPLE_CALL_STATS]
    stored = opened.read_array(summaries.SAMPLE_CALL_STATS)[1:2]
    # a depth count: checked with --deep only (which reads FORMAT/DP; without, it is not read)
    block = stored.copy()
    block[0, summaries.SAMPLE_STATS.index("dp_sum"), 3] += 1
    write_rows(copy, array, 1, block)
    assert validate(copy) == []
    problems = [str(p) for p in validate(copy, deep=True)]
    assert problems and problems[0].startswith(f"{summaries.SAMPLE_CALL_STATS}: variant chunk 1")
    # a count of the genotypes: always checked
    block = stored.copy()
    block[0, summaries.SAMPLE_STATS.index("singletons"), 3] += 1
    write_rows(copy, array, 1, block)
    problems = [str(p) for p in validate(copy)]
    assert problems and problems[0].startswith(f"{summaries.SAMPLE_CALL_STATS}: variant chunk 1")


def test_whole_cohort_decodes_each_chunk_of_the_per_record_counts_once(call_sets, monkeypatch):
    # (90 records in 5 variant chunks; one chunk of each per-record array holds them all:
    # each was decoded once per variant chunk before)
    _, store = call_sets["diploid"]
    decoded: list[str] = []
    decode = VczStore.decode_chunk

    def counted(self, name, raw, chunk):
        decoded.append(name)
        return decode(self, name, raw, chunk)

    monkeypatch.setattr(VczStore, "decode_chunk", counted)
    _ours(store)
    assert open_store(store).num_variant_chunks == 5
    assert decoded.count(summaries.CALL_COUNTS) == decoded.count(summaries.ALLELE_COUNTS) == 1


def test_whole_cohort_over_a_url_decodes_each_chunk_of_the_per_record_counts_once(call_sets, tmp_path, monkeypatch):
    """Over a remote store the chunks are worked on in windows that start anywhere (1, then
    2, 4 ... variant chunks): the runs of whole chunks are cut at the per-record counts' chunk
    boundaries, so no run reads two of their chunks. Here a chunk of them holds two variant
    chunks (90 records in 5 variant chunks: 3 chunks); before, the windows' runs [1, 3) and
    [3, 5) each read two of them, decoding chunks 0 and 1 twice."""
    pytest.importorskip("fsspec", reason="fsspec (test extra) is needed for URLs")
    from vcfzarr_sql.query import execute

    bcf, store = call_sets["diploid"]
    copy = copy_store(store, tmp_path / "short.vcz")
    monkeypatch.setattr(summaries, "SUMMARY_RECORDS", 40)
    assert write_genotype_counts(copy)
    monkeypatch.setattr(execute, "PREFETCH_DEPTH", 0)  # (runs in order: one chunk kept at a time)
    decoded: list[tuple[str, tuple[int, ...]]] = []
    decode = VczStore.decode_chunk

    def counted(self, name, raw, chunk):
        decoded.append((name, tuple(chunk)))
        return decode(self, name, raw, chunk)

    monkeypatch.setattr(VczStore, "decode_chunk", counted)
    assert _ours(f"file://{copy}") == _bcftools(bcf, "-s", "-")
    for name in (summaries.CALL_COUNTS, summaries.ALLELE_COUNTS):
        assert sorted(chunk[0] for array, chunk in decoded if array == name) == [0, 1, 2], name
