"""Genotype counts stored in the store (``summary_gt_*`` arrays, written by ``convert`` and by
``vcfzarr-sql index``): the ``gt_`` columns read from them equal those decoded from the
genotypes, those of a store without them, the same statistics in SQL over ``fmt_GT_k`` and
``bcftools +fill-tags``; ``validate`` finds counts that disagree with the genotypes."""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import pytest
import zarr
from fill_tags import BCFTOOLS, TAGS, fill_tags, same, simulated_vcf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_support import zarr_array, zarr_values

import vcfzarr_sql
from vcfzarr_sql.cli import main
from vcfzarr_sql.format import summaries

COLUMNS = list(TAGS)
SUMMARY_ARRAYS = (summaries.ALLELE_COUNTS, summaries.CALL_COUNTS, summaries.HWE,
                  summaries.SAMPLE_CLASS_COUNTS)
SAMPLES = [f"sample{i}" for i in range(24)]


@pytest.fixture(scope="module")
def con():
    with vcfzarr_sql.connect() as connection:
        yield connection


def _without_counts(store, path):
    """A copy of ``store`` without the stored counts (as a store other tools wrote)."""
    shutil.copytree(store, path)
    for name in SUMMARY_ARRAYS:
        shutil.rmtree(path / name)
    zarr.consolidate_metadata(str(path), zarr_format=2)
    return path


@pytest.fixture(scope="module")
def stores(tmp_path_factory, convert_once):
    """name -> (with counts, without counts), several variant and sample chunks."""
    root = tmp_path_factory.mktemp("stored_counts")
    files: dict[str, dict[str, Any]] = {
        "diploid_haploid": dict(seed=21), "polyploid": dict(seed=22, ploidies=(2, 3, 4)),
    }
    out = {}
    for name, kwargs in files.items():
        store = convert_once(simulated_vcf(root / f"{name}.vcf", **kwargs),
                             variants_chunk_size=25, samples_chunk_size=10)
        out[name] = store, _without_counts(store, root / f"{name}-plain.vcz")
    return out


def _rows(con, args: str, columns=COLUMNS) -> list[tuple]:
    sql = f"SELECT contig, pos, {', '.join(columns)} FROM vcf_zarr({args}) ORDER BY contig, pos"
    return con.sql(sql).fetchall()


def test_convert_writes_counts_that_other_readers_ignore(stores):
    store, _ = stores["diploid_haploid"]
    group = zarr.open_group(str(store), mode="r")
    assert not any(name.startswith(("variant_", "call_")) for name in SUMMARY_ARRAYS)
    positions = zarr_array(group, "variant_position")
    per_chunk = summaries.variant_chunks_per_chunk(positions.chunks[0])
    for name in SUMMARY_ARRAYS[:3]:  # whole variant chunks, along a dimension of their own
        assert zarr_array(group, name).chunks[0] == positions.chunks[0] * per_chunk
        dimensions = group[name].attrs["_ARRAY_DIMENSIONS"]
        assert isinstance(dimensions, list)
        assert dimensions[0] == summaries.DIM_RECORDS
    counts = zarr_array(group, summaries.ALLELE_COUNTS)
    assert counts.shape == (*zarr_array(group, "variant_allele").shape, 3)
    assert zarr_array(group, summaries.SAMPLE_CLASS_COUNTS).dtype == np.uint16


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["diploid_haploid", "polyploid"]),
    contig=st.sampled_from(["1", "2"]), start=st.integers(1, 1300), length=st.integers(0, 700),
)
def test_stored_equal_decoded_and_sql(con, stores, name, contig, start, length):
    """Random regions: the stored counts (all samples, also when ``samples`` names them all)
    = decoding (a store without the counts) = AN/AC in SQL over the allele columns (for
    haploid and diploid calls: bcftools counts a polyploid call's distinct alleles)."""
    with_counts, without = stores[name]
    region = f"region := '{contig}:{start}-{start + length}'"
    columns = COLUMNS if name != "polyploid" else [c for c in COLUMNS if c not in ("gt_HWE", "gt_ExcHet")]
    stored = _rows(con, f"'{with_counts}', {region}", columns)
    every_sample = _rows(con, f"'{with_counts}', {region}, samples := {SAMPLES[::-1]!r}", columns)
    plain = _rows(con, f"'{without}', {region}", columns)
    assert stored == every_sample == plain
    if name == "polyploid":
        return
    alleles = " + ".join(f"count(fmt_GT_{k})" for k in (1, 2))
    acs = ", ".join(
        " + ".join(f"count(*) FILTER (WHERE fmt_GT_{k} = {a})" for k in (1, 2))
        for a in (1, 2, 3)
    )
    in_sql = con.sql(
        f"SELECT contig, pos, {alleles}, [{acs}] FROM vcf_zarr_calls('{without}', {region}) "
        "GROUP BY contig, pos ORDER BY contig, pos"
    ).fetchall()
    summaries = _rows(con, f"'{with_counts}', {region}", ["len(alt)", "gt_AN", "gt_AC"])
    assert [r[:2] for r in in_sql] == [r[:2] for r in summaries]
    for (contig_, pos, an, ac), (_, _, alts, gt_an, gt_ac) in zip(in_sql, summaries):
        assert (an, ac[:alts] or None) == (gt_an, gt_ac), (contig_, pos)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["diploid_haploid", "polyploid"]),
    region=st.one_of(st.none(), st.tuples(st.sampled_from(["1", "2"]), st.integers(1, 1300),
                                          st.integers(0, 900))),
    subset=st.one_of(st.none(), st.sets(st.integers(0, 23), min_size=1, max_size=24)),
)
def test_sample_stats_from_stored_counts(con, stores, name, region, subset):
    """Random regions (whole chunks read the stored counts, edge chunks decode) and sample
    subsets: the same table as a store without the counts, which decodes every chunk."""
    with_counts, without = stores[name]
    args = "" if region is None else f", region := '{region[0]}:{region[1]}-{sum(region[1:])}'"
    if subset is not None:
        args += f", samples := {[SAMPLES[i] for i in sorted(subset)]!r}"
    first, second = (
        con.sql(f"SELECT * FROM vcf_zarr_sample_stats('{s}'{args})").fetchall()
        for s in (with_counts, without)
    )
    assert first == second


def test_naming_every_sample_reads_the_stored_counts(stores):
    with_counts, _ = stores["diploid_haploid"]
    ds = vcfzarr_sql.dataset(str(with_counts), samples=SAMPLES[::-1])
    assert ds.sample_indexes is None
    ds.to_table(columns=["pos", "gt_AC", "gt_HWE"])
    assert ds.last_stats["sample_chunks_read"] == 0


def test_filters_on_stored_counts_are_exact(con, stores):
    with_counts, without = stores["diploid_haploid"]
    where = "WHERE gt_MAF > 0.1 AND gt_AN >= 30 AND gt_NS <> 20 AND gt_F_MISSING < 0.2"
    queries = [f"SELECT pos FROM vcf_zarr('{s}') {where} ORDER BY contig, pos"
               for s in (with_counts, without)]
    first, second = (con.sql(q).fetchall() for q in queries)
    assert first and first == second


@pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools (+fill-tags)")
@pytest.mark.filterwarnings("ignore:The data type")  # zarr-python, bio2zarr's v3 strings
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_index_writes_counts_into_a_bio2zarr_store(
    con, bio2zarr_store, tmp_path, capsys, zarr_format
):
    relpath = "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"
    original = bio2zarr_store(relpath, zarr_format)
    store = tmp_path / "s.vcz"
    shutil.copytree(original, store)
    assert main(["index", str(store)]) == 0
    assert "wrote genotype counts" in capsys.readouterr().out
    group = zarr.open_group(str(store), mode="r")
    assert all(name in group for name in SUMMARY_ARRAYS)
    assert vcfzarr_sql.validate(store) == []
    from corpus import CORPUS

    expected = fill_tags(CORPUS / relpath, list(TAGS.values()))
    actual = _rows(con, f"'{store}'")
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        if e["AN"] is None:  # no GT in the record: a store counts nothing
            assert a[COLUMNS.index("gt_AN") + 2] == 0
            continue
        for k, column in enumerate(COLUMNS):
            assert same(e[TAGS[column]], a[k + 2]), (e["pos"], column)


def test_validate_finds_counts_that_disagree(stores, tmp_path):
    store, _ = stores["diploid_haploid"]
    copy = tmp_path / "c.vcz"
    shutil.copytree(store, copy)
    assert vcfzarr_sql.validate(copy) == []
    array = zarr.open_array(str(copy / summaries.ALLELE_COUNTS), mode="r+")
    values = zarr_values(array, 30)
    values[1, 0] += 1
    array[30] = values
    problems = vcfzarr_sql.validate(copy)
    assert [p.where for p in problems] == [summaries.ALLELE_COUNTS]
    assert "record 30" in str(problems[0])
    array[30] = values - np.eye(1, values.size, 3, dtype=values.dtype).reshape(values.shape)
    assert vcfzarr_sql.validate(copy) == []  # (restored)


def test_validate_finds_hwe_values_that_disagree(stores, tmp_path):
    store, _ = stores["diploid_haploid"]
    copy = tmp_path / "c.vcz"
    shutil.copytree(store, copy)
    array = zarr.open_array(str(copy / summaries.HWE), mode="r+")
    values = zarr_values(array, 41)
    values[1, 0] = np.nextafter(values[1, 0], np.float32(0))  # one ulp: still caught
    array[41] = values
    problems = vcfzarr_sql.validate(copy)
    assert [p.where for p in problems] == [summaries.HWE]
    assert "record 41" in str(problems[0])


def test_validate_finds_sample_counts_that_disagree(stores, tmp_path):
    store, _ = stores["diploid_haploid"]
    copy = tmp_path / "c.vcz"
    shutil.copytree(store, copy)
    array = zarr.open_array(str(copy / summaries.SAMPLE_CLASS_COUNTS), mode="r+")
    assert array.shape == (5, 6, 24) and array.chunks == (1, 6, 10)  # 120 records, chunks of 25
    array[2, 5, 13] = zarr_values(array, (2, 5, 13)) + 1
    problems = vcfzarr_sql.validate(copy)
    assert [p.where for p in problems] == [summaries.SAMPLE_CLASS_COUNTS]
    assert "variant chunk 2, sample 13" in str(problems[0])


@pytest.mark.parametrize("count", [2**62, -3, 49])
def test_stored_counts_outside_what_the_calls_hold_are_a_store_error(stores, tmp_path, con, count):
    """Stored counts are data (docs/security.md): an allele count no calls can hold (24
    diploid samples: 48 alleles at most), stored as int64, with no stored HWE, fed the HWE
    tests' walks (a wrapped int64 sum: the compiled walk wrote outside its array, a
    segfault; numpy's asked for an impossible array) or silently wrong sums."""
    path = tmp_path / "counts.vcz"
    shutil.copytree(stores["diploid_haploid"][0], path)
    group = zarr.open_group(str(path), mode="r+", zarr_format=2)
    old = group[summaries.ALLELE_COUNTS]
    assert isinstance(old, zarr.Array)
    values = np.asarray(old[:]).astype(np.int64)
    values[0, :2, 1] = count  # (the first record's homozygous REF and ALT alleles)
    attributes, chunks, compressors = dict(old.attrs), old.chunks, old.compressors
    del group[summaries.ALLELE_COUNTS], group[summaries.HWE]
    new = group.create_array(summaries.ALLELE_COUNTS, shape=values.shape, chunks=chunks, dtype="<i8",
                             compressors=compressors, fill_value=0)
    new[:] = values
    new.attrs.update(attributes)
    zarr.consolidate_metadata(str(path), zarr_format=2)
    with pytest.raises(Exception, match=rf"{summaries.ALLELE_COUNTS} of variant chunks \[0\] holds counts from "
                                        rf"{min(count, 0)} to \d+, not within 0\.\.48 \(24 samples of ploidy 2\)"):
        con.sql(f"SELECT gt_HWE FROM vcf_zarr('{path}')").fetchall()
