"""Genotypes packed 2 bits per call (``summary_gt_packed``, written by ``convert`` and by
``vcfzarr-sql index``): the codes and exact flags against the calls' definitions, popcounts over
sample subsets of a store against plain counting of its calls, the ``gt_`` columns over subsets read from them equal to
``bcftools +fill-tags`` (and to a store without them), and ``validate`` finds packed genotypes
that disagree with ``call_genotype``."""

from __future__ import annotations

import random

import numpy as np
import pytest
import zarr
from fill_tags import BCFTOOLS, TAGS, fill_tags, same, simulated_vcf
from numcodecs.blosc import Blosc
from store_support import copy_store, zarr_array, zarr_values

import vcfzarr_sql
from vcfzarr_sql.cli import main
from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.query.packed_counts import subset_code_counts
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.packed_arrays import packed_stored

PACKED = (pg.PACKED, pg.PACKED_EXACT)
SAMPLES = [f"sample{i}" for i in range(37)]


def _random_calls(rng: np.random.Generator, records: int, samples: int, wide: bool = True) -> np.ndarray:
    """int8 diploid calls: mostly 0/1 pairs and ./., some haploid, half-missing and (``wide``)
    allele 2 (without it, every call is coded from the chunk's calls that are not 0/0)."""
    calls = rng.choice([0, 0, 0, 1], size=(records, samples, 2)).astype(np.int8)
    calls[rng.random((records, samples)) < 0.05] = -1
    odd = rng.random(records) < 0.3  # records with an inexact call
    where = rng.integers(0, samples, records)
    kinds = rng.choice([(0, -2), (1, -1), (-1, 0)] + ([(2, 0), (2, 2)] if wide else []), size=records)
    calls[odd, where[odd]] = kinds[odd]
    return calls


@pytest.mark.parametrize("wide", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_codes_follow_the_calls(seed, wide, kernels):
    """The code of every call, 0 in every padding slot, and each record's exact flag, against
    the calls' definition; with numpy and with the compiled packing (``wide=False``: every
    record is packed from its calls that are not 0/0)."""
    rng = np.random.default_rng(seed)
    calls = _random_calls(rng, 40, 37, wide)
    first, second = calls[..., 0].astype(int), calls[..., 1].astype(int)
    called = (first >= 0) & (first <= 1) & (second >= 0) & (second <= 1)
    missing = (first == -1) & (second == -1)
    for size in (10, 32, 37, 100):
        rows, exact = pg.pack_rows(calls, size)
        assert rows.shape == (40, pg.packed_bytes(37, size)) and rows.shape[1] % 8 == 0
        assert exact.tolist() == (called | missing).all(axis=1).tolist()
        slots = pg.sample_slots(np.arange(37), size)
        codes = pg.byte_codes()[rows].reshape(40, -1)[:, slots]
        assert (codes[called] == (first + second)[called]).all()
        assert (codes[~called] == pg.MISSING).all()
        padding = np.setdiff1d(np.arange(rows.shape[1] * 4), slots)
        assert (pg.byte_codes()[rows].reshape(40, -1)[:, padding] == 0).all()


def test_other_ploidies_and_wide_alleles_are_never_exact():
    rows, exact = pg.pack_rows(np.zeros((3, 5, 1), dtype=np.int8), 5)
    assert exact.tolist() == [0, 0, 0] and (pg.byte_codes()[rows].reshape(3, -1)[:, :5] == 3).all()
    wide = np.array([[[0, 1], [1, 1]], [[300, 0], [0, 0]]], dtype=np.int16)
    rows, exact = pg.pack_rows(wide, 2)
    assert exact.tolist() == [1, 0] and pg.byte_codes()[rows[0, 0]].tolist() == [1, 2, 0, 0]


@pytest.fixture(scope="module")
def store(tmp_path_factory, convert_once):
    """(vcf, store): diploid calls, up to 2 ALTs, missing and half-missing (inexact records)."""
    root = tmp_path_factory.mktemp("packed")
    vcf = simulated_vcf(root / "diploid.vcf", seed=31, samples=37, ploidies=(2,), max_alts=2,
                        missing=0.01)
    return vcf, convert_once(vcf, variants_chunk_size=25, samples_chunk_size=10)


@pytest.mark.parametrize("samples_chunk", [10, 33])
def test_subset_code_counts_follow_the_calls(store, convert_once, samples_chunk, kernels):
    """Per record, the het, hom-alt and missing calls (those not 0 or 1 on both sides: the
    packed codes' missing) of a sample subset, counted from the packed rows, against the calls
    read with zarr-python: subsets within one sample chunk, across chunks, in the last
    (narrower) one, every sample; sample chunks of 10 (4 packed chunk columns) and of 33 (2,
    the last one cut); by the numpy path and by the compiled kernel."""
    vcf, _ = store
    path = convert_once(vcf, variants_chunk_size=25, samples_chunk_size=samples_chunk)
    calls = zarr_values(zarr_array(zarr.open_group(str(path), mode="r"), "call_genotype")).astype(int)
    first, second = calls[..., 0], calls[..., 1]
    called = (first >= 0) & (first <= 1) & (second >= 0) & (second <= 1)
    assert (~called).any() and (first != second)[called].any() and (first + second == 2)[called].any()
    opened = vcfzarr_sql.open_store(path)
    assert packed_stored(opened)
    blocks = BatchBlocks(opened, 0, None, opened.num_variant_chunks)
    rng = np.random.default_rng(samples_chunk)
    random_subsets = [np.sort(rng.choice(37, int(rng.integers(1, 37)), replace=False)) for _ in range(4)]
    for chosen in [np.arange(37), np.array([36]), np.array([2, 3]), np.array([0, 9, 10, 32, 33, 36]),
                   *random_subsets]:
        het, hom_alt, n_missing = subset_code_counts(blocks, chosen)
        pick = np.zeros(37, dtype=bool)
        pick[chosen] = True
        assert het.tolist() == (called & (first != second) & pick).sum(axis=1).tolist()
        assert hom_alt.tolist() == (called & (first + second == 2) & pick).sum(axis=1).tolist()
        assert n_missing.tolist() == (~called & pick).sum(axis=1).tolist()


def _gt_columns(con, store, samples) -> list[dict]:
    sql = (f"SELECT contig, pos, {', '.join(TAGS)} FROM vcf_zarr('{store}', samples := {samples!r}) "
           "ORDER BY contig, pos")
    return con.sql(sql).to_arrow_table().to_pylist()


@pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools (+fill-tags)")
def test_subset_columns_from_packed_equal_fill_tags(store, tmp_path):
    vcf, path = store
    exact = zarr_values(zarr_array(zarr.open_group(str(path), mode="r"), pg.PACKED_EXACT))
    assert 0 < exact.sum() < len(exact)  # both paths in one store
    plain = copy_store(path, tmp_path / "plain.vcz", drop=PACKED)
    damaged = tmp_path / "damaged.vcz"
    copy_store(path, damaged)
    zarr.open_array(str(damaged / pg.PACKED), mode="r+")[:] = 0b10101010  # every call 1/1
    rng = random.Random(5)
    with vcfzarr_sql.connect() as con:
        for size in (1, 12, 30):
            subset = sorted(rng.sample(SAMPLES, size), key=lambda s: int(s[6:]))
            expected = fill_tags(vcf, list(TAGS.values()), subset)
            actual = _gt_columns(con, path, subset)
            assert len(expected) == len(actual)
            for e, a in zip(expected, actual):
                for column, tag in TAGS.items():
                    assert same(e[tag], a[column]), (e["pos"], column, e[tag], a[column])
            assert _gt_columns(con, plain, subset) == actual
            assert _gt_columns(con, damaged, subset) != actual  # (the packed codes are read)


@pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools (+fill-tags)")
def test_subset_columns_over_a_narrower_last_sample_chunk(store, convert_once, kernels):
    """Sample chunks of 33 (64 calls, 16 bytes, a packed chunk each) and a last one of 4 (8
    bytes: its packed chunks are cut): a subset within the last chunk, and one across both;
    by the numpy path and by the compiled kernel."""
    vcf, _ = store
    path = convert_once(vcf, variants_chunk_size=25, samples_chunk_size=33)
    assert zarr.open_array(str(path / pg.PACKED), mode="r").shape[1] == 24
    with vcfzarr_sql.connect() as con:
        for subset in (["sample34", "sample36"], ["sample0", "sample5", "sample32", "sample33"]):
            expected = fill_tags(vcf, list(TAGS.values()), subset)
            actual = _gt_columns(con, path, subset)
            assert len(expected) == len(actual)
            for e, a in zip(expected, actual):
                for column, tag in TAGS.items():
                    assert same(e[tag], a[column]), (subset, e["pos"], column, e[tag], a[column])


def test_index_writes_packed_genotypes_and_validate_checks_them(store, tmp_path, capsys):
    _, path = store
    plain = copy_store(path, tmp_path / "plain.vcz", drop=PACKED)
    assert main(["index", str(plain)]) == 0
    assert "wrote packed genotypes" in capsys.readouterr().out
    group, written = (zarr.open_group(str(p), mode="r") for p in (path, plain))
    for name in PACKED:
        assert np.array_equal(zarr_values(zarr_array(group, name)), zarr_values(zarr_array(written, name)))
    assert vcfzarr_sql.validate(plain) == []
    array = zarr.open_array(str(plain / pg.PACKED), mode="r+")
    row = zarr_values(array, 57)
    row[1] ^= 0b1100  # the sixth sample's call: another code
    array[57] = row
    problems = vcfzarr_sql.validate(plain)
    assert [p.where for p in problems] == [pg.PACKED] and "record 57" in str(problems[0])


def test_sample_stats_over_part_of_chunks_from_packed(store, tmp_path):
    """The edge chunks of a region count from the packed codes, as a store without them does
    (decoding; tests/stats checks that against bcftools stats -s)."""
    _, path = store
    plain = copy_store(path, tmp_path / "plain.vcz", drop=PACKED)
    damaged = copy_store(path, tmp_path / "damaged.vcz")
    zarr.open_array(str(damaged / pg.PACKED), mode="r+")[:] = 0b10101010  # every call 1/1
    subset = ["sample3", "sample10", "sample11", "sample36"]
    calls = [f"region := '1:95-433', samples := {subset!r}", "region := '1:200-245,2:607-1003'"]
    with vcfzarr_sql.connect() as con:
        for args in calls:
            def rows(p, args=args):
                sql = f"SELECT * FROM vcf_zarr_sample_stats('{p}', {args}) ORDER BY sample_id"
                return con.sql(sql).fetchall()
            assert rows(path) == rows(plain)
            assert rows(damaged) != rows(path)


def _frames(path) -> dict[str, bytes]:
    """The stored bytes of each packed chunk of the store at ``path``."""
    folder = path / pg.PACKED
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if not f.name.startswith(".")}


def test_packed_chunks_compressed_only_where_lz4_pays_and_old_lz4_stores_read_alike(tmp_path):
    """Chunks of packed rows LZ4 makes at least 4x smaller (here, of records where every call
    is 0/0 but one) are LZ4 frames; the others (random calls) are stored as they are, in a
    Blosc frame of their bytes. Both read as the calls say, and a store written before (every
    chunk LZ4, as ``convert`` wrote them until 2026-11-27) reads the same counts and dosages."""
    rng = np.random.default_rng(3)
    names = [f"s{i}" for i in range(256)]
    lines = ["##fileformat=VCFv4.2", "##contig=<ID=1,length=100000>",
             '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
             "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *names])]
    calls = rng.choice(["0/0", "0/1", "1/1", "./."], size=(200, 256), p=[0.9, 0.05, 0.03, 0.02])
    calls[:100] = "0/0"
    calls[np.arange(100), rng.integers(0, 256, 100)] = "0/1"
    for i, row in enumerate(calls):
        lines.append("\t".join(["1", str(i + 1), ".", "A", "G", ".", ".", ".", "GT", *row]))
    vcf = tmp_path / "mixed.vcf"
    vcf.write_text("\n".join(lines) + "\n")
    path = tmp_path / "mixed.vcz"
    vcfzarr_sql.convert(vcf, path, variants_chunk_size=50, samples_chunk_size=256, show_progress=False)
    frames = _frames(path)
    as_is = {key for key, raw in frames.items() if raw[2] & 0x2}  # (Blosc's "memcpyed" flag)
    assert set(frames) == {"0.0", "1.0", "2.0", "3.0"} and as_is == {"2.0", "3.0"}
    assert all(len(frames[key]) * 4 <= 50 * 64 for key in ("0.0", "1.0"))

    old = copy_store(path, tmp_path / "old.vcz")
    lz4 = Blosc("lz4", 5, Blosc.NOSHUFFLE)
    for key, raw in frames.items():
        (old / pg.PACKED / key).write_bytes(lz4.encode(lz4.decode(raw)))
    assert not any(raw[2] & 0x2 for raw in _frames(old).values())

    code = {"0/0": 0, "0/1": 1, "1/1": 2, "./.": 0}
    dosage = np.vectorize(code.get)(calls)
    subset = names[5:240:3]
    pick = np.isin(names, subset)
    expected_ac = dosage[:, pick].sum(axis=1).tolist()
    expected_an = (2 * (calls[:, pick] != "./.").sum(axis=1)).tolist()
    with vcfzarr_sql.connect() as con:
        for store in (path, old):
            rows = con.sql(f"SELECT gt_AC[1], gt_AN FROM vcf_zarr('{store}', samples := {subset!r}) "
                           "ORDER BY pos").fetchall()
            assert [r[0] for r in rows] == expected_ac and [r[1] for r in rows] == expected_an
            matrix = vcfzarr_sql.genotype_matrix(store, region="1:30-140", samples=subset)
            expected = np.where(calls[29:140, pick] == "./.", -9, dosage[29:140, pick])
            assert np.array_equal(matrix.values, expected)
