"""``genotype_matrix``: genotypes and dosages as numpy equal bcftools' GT of the same records
(region, samples and filter applied as bcftools -r, -s and -i would); dosages by hand from it."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pyarrow.compute as pc
import pytest
from fill_tags import fill_tags, simulated_vcf
from oracle import CORPUS_SAMPLE, genotype_arrays, records

import vcfzarr_sql
from vcfzarr_sql.errors import QueryError, StoreError
from vcfzarr_sql.store.blocks import BatchBlocks


def expected_dosage(alleles: np.ndarray) -> np.ndarray:
    """Non-reference alleles per call, -9 where one is missing (pgenlib's convention)."""
    out = (alleles > 0).sum(axis=-1).astype(np.int8)
    out[(alleles == -1).any(axis=-1)] = -9
    return out


@pytest.fixture(scope="module")
def simulated(tmp_path_factory, convert_once):
    """Haploid to triploid calls, multi-allelic, missing: 120 records in chunks of 7, 24
    samples in chunks of 10."""
    vcf = simulated_vcf(tmp_path_factory.mktemp("matrix") / "matrix.vcf", seed=7, ploidies=(1, 2, 2, 3))
    return str(vcf), convert_once(vcf, variants_chunk_size=7, samples_chunk_size=10)


@pytest.mark.parametrize("region", [None, "1:95-405", "1:1-1,2"])
@pytest.mark.parametrize("samples", [None, ["sample3"], ["sample21", "sample0", "sample12", "sample13"]])
def test_simulated_matrix_is_bcftools_gt(simulated, region, samples):
    vcf, store = simulated
    alleles, _ = genotype_arrays(vcf, region=region)
    expected_records = records(vcf, region=region)
    names = [f"sample{i}" for i in range(24)]
    keep = sorted(names.index(s) for s in samples) if samples else list(range(24))
    is_a = np.array([r.ref == "A" for r in expected_records], bool)

    got = vcfzarr_sql.genotype_matrix(store, region=region, samples=samples, values="genotypes")
    assert got.samples == [names[k] for k in keep]
    assert got.variants.column("pos").to_pylist() == [r.pos for r in expected_records]
    width = got.values.shape[-1]
    assert (got.values == alleles[:, keep, :width]).all() and (alleles[:, :, width:] == -2).all()

    dosage = vcfzarr_sql.genotype_matrix(store, region=region, samples=samples, where=pc.field("ref") == "A",
                                         columns=["ref"])
    assert dosage.values.dtype == np.int8
    assert dosage.variants.column_names == ["ref"] and set(dosage.variants.column("ref").to_pylist()) <= {"A"}
    assert (dosage.values == expected_dosage(alleles[is_a][:, keep])).all()


def test_sample_vcf_with_a_filter(convert_once):
    """Haploid calls on X, a record without ALT, missing calls: QUAL > 20 on contig 20."""
    alleles, _ = genotype_arrays(CORPUS_SAMPLE, region="20")
    expected = records(CORPUS_SAMPLE, region="20")
    kept = [k for k, r in enumerate(expected) if r.qual is not None and r.qual > 20]
    got = vcfzarr_sql.genotype_matrix(convert_once(CORPUS_SAMPLE), region="20", where=pc.field("qual") > 20)
    assert got.variants.column("id").to_pylist() == [expected[k].id for k in kept]
    assert got.values.tolist() == expected_dosage(alleles[kept]).tolist()


def test_a_filter_on_genotype_statistics_counts_the_selected_samples(simulated):
    """``gt_AN >= 6`` over four samples: AN as ``bcftools view -s | +fill-tags`` computes it."""
    vcf, store = simulated
    alleles, _ = genotype_arrays(vcf)
    subset = ["sample21", "sample0", "sample12", "sample13"]
    an = np.array([row["AN"] for row in fill_tags(vcf, ["AN"], samples=subset)])
    got = vcfzarr_sql.genotype_matrix(store, samples=subset, where=pc.field("gt_AN") >= 6, columns=["gt_AN"])
    assert got.variants.column("gt_AN").to_pylist() == an[an >= 6].tolist()
    assert (got.values == expected_dosage(alleles[an >= 6][:, [0, 12, 13, 21]])).all()


def test_unknown_values_is_refused(simulated):
    with pytest.raises(QueryError, match="values: expected one of dosage, genotypes"):
        vcfzarr_sql.genotype_matrix(simulated[1], values="dosages")


def test_no_record_gives_empty_arrays(simulated):
    got = vcfzarr_sql.genotype_matrix(simulated[1], region="2:1-5", samples=["sample1", "sample2"])
    assert got.values.shape == (0, 2) and got.variants.num_rows == 0


@pytest.fixture(scope="module")
def diploid(tmp_path_factory, convert_once):
    """Diploid calls (packed genotypes exact for most records; half-missing calls and second
    ALTs in the others): 120 records in chunks of 25, 37 samples in chunks of 10."""
    vcf = simulated_vcf(tmp_path_factory.mktemp("packed_matrix") / "diploid.vcf", seed=31,
                        samples=37, ploidies=(2,), max_alts=2, missing=0.01)
    return str(vcf), convert_once(vcf, variants_chunk_size=25, samples_chunk_size=10)


@pytest.mark.parametrize("samples", [None, ["sample0", "sample1", "sample2"],
                                     ["sample36", "sample9", "sample10", "sample31"]])
def test_dosages_from_packed_genotypes_are_bcftools_gt(diploid, tmp_path, samples, kernels):
    import zarr
    from store_support import copy_store, zarr_read

    from vcfzarr_sql.format import packed_genotypes as pg

    vcf, store = diploid
    alleles, _ = genotype_arrays(vcf, region="1:95-1000")
    names = [f"sample{i}" for i in range(37)]
    keep = sorted(names.index(s) for s in samples) if samples else list(range(37))
    got = vcfzarr_sql.genotype_matrix(store, region="1:95-1000", samples=samples)
    assert (got.values == expected_dosage(alleles[:, keep])).all()
    damaged = copy_store(store, tmp_path / "damaged.vcz")
    zarr.open_array(str(damaged / pg.PACKED), mode="r+")[:] = 0b10101010  # every call 1/1
    read = vcfzarr_sql.genotype_matrix(damaged, region="1:95-1000", samples=samples).values
    exact = zarr_read(damaged, pg.PACKED_EXACT).astype(bool)
    assert exact.any() and not exact.all()
    rows = exact[(got.variants.column("pos").to_numpy() - 1) // 10]  # (record k is at 10k + 1)
    assert (read[rows] == 2).all() and (read[~rows] == got.values[~rows]).all()  # (packed read)


def test_regions_across_chunks_and_contigs_without_a_filter(diploid, kernels):
    """The plan straight from the region index (no ``where``): three regions, one ending a
    contig inside a variant chunk that starts the next one, samples from three sample chunks
    listed out of order; the dosages are bcftools' GT, in a writable array."""
    vcf, store = diploid
    region = "1:240-260,1:500-,2:601-700"
    alleles, _ = genotype_arrays(vcf, region=region)
    expected = records(vcf, region=region)
    samples = ["sample36", "sample2", "sample19", "sample20", "sample21"]
    got = vcfzarr_sql.genotype_matrix(store, region=region, samples=samples, columns=["contig", "pos"])
    assert got.samples == ["sample2", "sample19", "sample20", "sample21", "sample36"]
    assert list(zip(*got.variants.to_pydict().values())) == [(r.chrom, r.pos) for r in expected]
    assert (got.values == expected_dosage(alleles[:, [2, 19, 20, 21, 36]])).all()
    got.values[got.values == -9] = 0  # (writable: imputing in place works)


@pytest.fixture(scope="module")
def pgenlib_dosages(diploid, tmp_path_factory):
    """(pgenlib's dosages of every record of ``diploid``, its contigs, its positions)."""
    if shutil.which("plink2") is None:
        pytest.skip("needs plink2")
    pgenlib = pytest.importorskip("pgenlib")
    vcf, _ = diploid
    prefix = tmp_path_factory.mktemp("pgen") / "plink"
    subprocess.run(["plink2", "--vcf", vcf, "--make-pgen", "--vcf-half-call", "m", "--allow-extra-chr",
                    "--threads", "1", "--out", str(prefix)], check=True, capture_output=True)
    pvar = [line.split("\t") for line in prefix.with_suffix(".pvar").read_text().splitlines()
            if not line.startswith("#")]
    alts = np.array([len(row[4].split(",")) for row in pvar])
    offsets = np.concatenate([[0], np.cumsum(alts + 1)]).astype(np.uintp)
    reader = pgenlib.PgenReader(str(prefix.with_suffix(".pgen")).encode(), allele_idx_offsets=offsets)
    alleles = np.empty((len(pvar), 2 * reader.get_raw_sample_ct()), np.int32)
    reader.read_alleles_range(0, len(pvar), alleles)
    alleles = alleles.reshape(len(pvar), -1, 2)
    theirs = np.where((alleles == -9).any(axis=-1), -9, (alleles > 0).sum(axis=-1))
    assert (alts > 1).any() and (theirs == -9).any()
    return theirs, np.array([row[0] for row in pvar]), np.array([int(row[1]) for row in pvar])


def test_dosages_equal_pgenlib_on_plink2s_pgen(diploid, pgenlib_dosages, kernels):
    """The matrix equals what pgenlib reads from the ``.pgen`` plink2 makes of the same VCF
    (alleles of every call with ``read_alleles_range``: a call's ALT alleles counted, -9 when
    one is missing; half-missing calls read as missing, ``--vcf-half-call m``): two-ALT
    records, missing and half-missing calls, a region cutting two variant chunks, and sample
    subsets across sample chunks (sizes not a multiple of 4, the packed bytes' four calls)."""
    _, store = diploid
    theirs, contigs, positions = pgenlib_dosages
    for region, samples in [("1:180-690", None), ("1:95-1000", ["sample2", "sample35", "sample17"]),
                            (None, [f"sample{i}" for i in range(3, 30, 2)])]:
        lo, hi = (0, 10**9) if region is None else map(int, region[2:].split("-"))
        rows = (positions >= lo) & (positions <= hi) & ((contigs == "1") | (region is None))
        columns = sorted(int(s[6:]) for s in samples) if samples else list(range(37))
        got = vcfzarr_sql.genotype_matrix(store, region=region, samples=samples, columns=["pos"])
        assert got.variants.column("pos").to_pylist() == positions[rows].tolist()
        assert (got.values == theirs[rows][:, columns]).all(), (region, samples)


@pytest.mark.parametrize(("region", "samples"), [("1:95-405", None), (None, ["sample23", "sample1", "sample10"])])
def test_dosages_without_a_filter_of_haploid_and_triploid_calls_are_bcftools_gt(simulated, region, samples, kernels):
    """Haploid, diploid and triploid calls, up to three ALTs, missing (the records the packed
    codes do not hold exactly, decoded into the looked-up matrix), without ``where``."""
    vcf, store = simulated
    alleles, _ = genotype_arrays(vcf, region=region)
    keep = sorted(int(s[6:]) for s in samples) if samples else list(range(24))
    got = vcfzarr_sql.genotype_matrix(store, region=region, samples=samples)
    assert got.values.shape == (len(alleles), len(keep)) and got.values.flags.c_contiguous
    assert (got.values == expected_dosage(alleles[:, keep])).all()


@pytest.mark.parametrize("region", ["1:1-1000", "1:180-690"])
def test_compiled_and_numpy_dosages_are_identical(diploid, region, monkeypatch):
    """The compiled expansion and numpy's look-up give the same matrix, bit for bit, for
    sample selections of every shape the expansion reads (37 samples in chunks of 10: 8
    bytes a chunk, 10 calls and a partial byte): all; whole chunks; a run from a multiple
    of 4 (bytes from the middle of a chunk); a run that is not; a few samples of a chunk (one
    by one) and many (the chunk's row expanded, then picked); one sample (the last, alone in
    the last chunk's partial byte; the first of a chunk); the whole last chunk."""
    pytest.importorskip("numba")
    _, store = diploid
    selections = [None, list(range(10, 30)), list(range(24, 29)), list(range(13, 18)), [3, 5, 36],
                  [0, 2, 3, 5, 7, 8, 11, 19, 30, 31, 33, 34, 35], [36], [9], list(range(30, 37))]
    for picked in selections:
        samples = None if picked is None else [f"sample{i}" for i in picked]
        got = {}
        for mode in ("numpy", "numba"):
            monkeypatch.setenv("VCFZARR_SQL_KERNELS", mode)
            got[mode] = vcfzarr_sql.genotype_matrix(store, region=region, samples=samples, columns=()).values
        assert got["numba"].dtype == np.int8 and got["numba"].flags.c_contiguous
        assert got["numba"].shape == got["numpy"].shape and (got["numba"] == got["numpy"]).all(), picked


def test_a_process_reading_a_matrix_loads_neither_pyarrow_dataset_nor_pandas(diploid):
    """~50 MiB of a matrix reader's peak RSS: pyarrow imports pandas the first time it
    converts Python or numpy values, and so does ``import pyarrow.dataset``."""
    code = ("import sys, vcfzarr_sql\n"
            f"m = vcfzarr_sql.genotype_matrix({str(diploid[1])!r}, region='1:95-700', samples=['sample3'])\n"
            "assert m.values.shape[1] == 1 and len(m.values), m.values.shape\n"
            "print(sorted(n for n in ('pandas', 'pyarrow.dataset') if n in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.split() == ["[]"]


@pytest.mark.parametrize("samples", [None, ["sample3", "sample9"]])
def test_packed_bytes_narrower_than_their_samples_are_a_store_error(diploid, monkeypatch, samples):
    """The compiled expansion checks no bounds: packed bytes read narrower than the calls of
    the samples they are read for (or of fewer records), which the store's layout and codec
    checks rule out today, are refused before it runs, not read past (a heap over-read)."""
    pytest.importorskip("numba")
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "numba")
    read = BatchBlocks.read_chunk_rows
    for cut in ((slice(None), slice(0, 1)), (slice(0, 1), slice(None))):
        monkeypatch.setattr(BatchBlocks, "read_chunk_rows",
                            lambda self, name, chunk, rows, cut=cut: read(self, name, chunk, rows)[cut])
        with pytest.raises(StoreError, match=r"summary_gt_packed chunk \(0, 0\) read as \(\d+, \d+\) uint8, "
                                             r"not \d+ rows of uint8 holding \d+ calls"):
            vcfzarr_sql.genotype_matrix(diploid[1], samples=samples, columns=())


def test_a_region_covering_an_edge_chunk_keeps_it_whole_by_its_lengths(diploid, tmp_path, monkeypatch):
    """``1:251-491`` holds the POS span of variant chunk 1 (records 25-49, record k at 10k + 1)
    and ends after chunk 0's last record (241): chunk 1 is matched from its lengths alone (none
    below 1: each record ends at or after its POS), its positions not read; a record whose
    stored length is 0 ends before its POS (END = POS - 1 = 250) and is left out, as the SQL
    scan's ``end`` leaves it out: the chunk's positions are read then."""
    import zarr
    from store_support import copy_store

    from vcfzarr_sql.query import record_spans

    vcf, store = diploid
    region = "1:251-491"
    alleles, _ = genotype_arrays(vcf, region=region)
    assert [r.pos for r in records(vcf, region=region)] == list(range(251, 492, 10))
    read = []
    positions = record_spans.positions

    def counted(blocks):
        read.append(blocks.chunks)
        return positions(blocks)

    monkeypatch.setattr(record_spans, "positions", counted)
    got = vcfzarr_sql.genotype_matrix(store, region=region, columns=())
    assert (got.values == expected_dosage(alleles)).all() and read == []
    damaged = copy_store(store, tmp_path / "zero_length.vcz")
    zarr.open_array(str(damaged / "variant_length"), mode="r+")[25] = 0
    shorter = vcfzarr_sql.genotype_matrix(damaged, region=region, columns=())
    assert (shorter.values == got.values[1:]).all() and read == [range(1, 2)]
    with vcfzarr_sql.connect() as con:
        scanned = con.sql(f"SELECT pos FROM vcf_zarr('{damaged}', region := '{region}')").fetchall()
    listed = vcfzarr_sql.genotype_matrix(damaged, region=region, columns=["pos"]).variants.column("pos").to_pylist()
    assert listed == [p for (p,) in scanned] == list(range(261, 492, 10))
