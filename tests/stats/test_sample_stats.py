"""``vcf_zarr_sample_stats`` equals the PSC lines of ``bcftools stats -s -`` (Debian bcftools) on
simulated files (haploid, mixed and polyploid, multiallelic, missing and half-missing calls),
with regions and sample subsets, and on the corpus files with genotypes; over runs of stored
class counts, stores without them (bio2zarr's) and stores whose counts another tool
rechunked."""

from __future__ import annotations

import random
import shutil
import subprocess
from typing import Any

import pytest
import zarr
from corpus import readable_corpus
from fill_tags import BCFTOOLS, bcftools, simulated_vcf
from store_support import zarr_array, zarr_values

import vcfzarr_sql
from vcfzarr_sql.errors import VcfParseError
from vcfzarr_sql.stats import sample_stats
from vcfzarr_sql.store import blocks as blocks_module

pytestmark = pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools")

#: Our column -> the PSC column (0-based field of a PSC line).
PSC = {"n_hom_ref": 3, "n_hom_alt": 4, "n_het": 5, "n_hap_ref": 11, "n_hap_alt": 12, "n_missing": 13}


def _psc(vcf, samples=None, region=None) -> dict[str, dict[str, int]]:
    args = bcftools("stats", "-s", ",".join(samples) if samples else "-")
    args += ["-r", region] if region else []
    done = subprocess.run([*args, str(vcf)], capture_output=True, check=True)
    if b"[E::" in done.stderr:  # bcftools stopped early (and exited 0)
        pytest.skip(f"bcftools: {done.stderr.decode(errors='replace')[:200]}")
    stats = done.stdout.decode()
    out = {}
    for line in stats.splitlines():
        if line.startswith("PSC\t"):
            fields = line.split("\t")
            out[fields[2]] = {c: int(fields[i]) for c, i in PSC.items()}
    return out


def _ours(con, store, samples=None, region=None) -> dict[str, dict[str, int]]:
    args = f"'{store}'"
    args += "" if samples is None else f", samples := {list(samples)!r}"
    args += "" if region is None else f", region := '{region}'"
    rows = con.sql(f"SELECT * FROM vcf_zarr_sample_stats({args})").to_arrow_table().to_pylist()
    return {r["sample_id"]: {c: r[c] for c in PSC} for r in rows}


@pytest.fixture(scope="module")
def con():
    with vcfzarr_sql.connect() as connection:
        yield connection


@pytest.fixture(scope="module")
def simulated(tmp_path_factory, convert_once):
    root = tmp_path_factory.mktemp("samplestats")
    out = {}
    files: dict[str, dict[str, Any]] = {"mixed": dict(seed=21, ploidies=(1, 2, 2, 2)),
                                        "polyploid": dict(seed=22, ploidies=(2, 3))}
    for name, kwargs in files.items():
        vcf = simulated_vcf(root / f"{name}.vcf", **kwargs)
        subprocess.run(bcftools("view", "-Oz", "-o", f"{vcf}.gz", str(vcf)), check=True)
        subprocess.run(bcftools("index", "-f", "-t", f"{vcf}.gz"), check=True)
        out[name] = f"{vcf}.gz", convert_once(vcf, variants_chunk_size=25, samples_chunk_size=10)
    return out


@pytest.mark.parametrize("name", ["mixed", "polyploid"])
def test_simulated(con, simulated, name):
    vcf, store = simulated[name]
    assert _ours(con, store) == _psc(vcf)
    rng = random.Random(3)
    names = [f"sample{i}" for i in range(24)]
    for region in ("1:100-400", "2", "1:1-1,2:700-900"):
        subset = sorted(rng.sample(names, 9), key=lambda s: int(s[6:]))
        assert _ours(con, store, subset, region) == _psc(vcf, subset, region), region


def test_rates(con, simulated):
    _, store = simulated["mixed"]
    for r in con.sql(f"SELECT * FROM vcf_zarr_sample_stats('{store}')").to_arrow_table().to_pylist():
        assert r["n_records"] == 120 and r["n_called"] == 120 - r["n_missing"]
        assert r["f_missing"] == pytest.approx(r["n_missing"] / 120)
        assert r["call_rate"] == pytest.approx(1 - r["f_missing"])
        diploid = r["n_hom_ref"] + r["n_hom_alt"] + r["n_het"]
        assert r["het_rate"] == pytest.approx(r["n_het"] / diploid)


GENOTYPED = [
    pytest.param(f, id=f.id, marks=[pytest.mark.slow] if (f.records or 0) > 1000 else [])
    for f in readable_corpus() if (f.samples or 0) > 0
]


@pytest.mark.parametrize("corpus_file", GENOTYPED)
def test_corpus_files(con, convert_once, corpus_file):
    try:
        expected = _psc(corpus_file.path)
    except subprocess.CalledProcessError as error:
        pytest.skip(f"bcftools: {error.stderr.decode(errors='replace')[:200]}")
    if not expected:
        pytest.skip("bcftools stats reports no sample")
    # A record without GT in its FORMAT counts nowhere in bcftools; a store cannot tell it
    # from a record whose calls are all missing, which count as missing.
    without_gt = _records_without_gt(corpus_file.path)
    for counts in expected.values():
        counts["n_missing"] += without_gt
    try:
        store = convert_once(corpus_file.path)
    except VcfParseError as error:  # not this module's subject (see test_sql_corpus)
        pytest.skip(str(error)[:200])
    assert _ours(con, store) == expected


def _records_without_gt(vcf) -> int:
    body = subprocess.run(bcftools("view", "-H", str(vcf)), capture_output=True).stdout
    formats = [f[8].split(b":") for f in (line.split(b"\t") for line in body.splitlines()) if len(f) > 9]
    with_gt = sum(b"GT" in f for f in formats)
    return len(formats) - with_gt if with_gt else 0  # (no GT anywhere: the store has none)


# -- runs of stored class counts, sample subsets, stores from other writers ---------------------

NAMES = [f"sample{i}" for i in range(24)]


def _bgzip(vcf) -> str:
    subprocess.run(bcftools("view", "-Oz", "-o", f"{vcf}.gz", str(vcf)), check=True)
    subprocess.run(bcftools("index", "-f", "-t", f"{vcf}.gz"), check=True)
    return f"{vcf}.gz"


@pytest.fixture(scope="module")
def vcfs(tmp_path_factory):
    root = tmp_path_factory.mktemp("review")
    return {
        "mixed": _bgzip(simulated_vcf(root / "mixed.vcf", seed=41, ploidies=(1, 2, 2, 2))),
        "polyploid": _bgzip(simulated_vcf(root / "poly.vcf", seed=42, ploidies=(1, 2, 3, 4))),
    }


@pytest.fixture(scope="module")
def runs_store(tmp_path_factory, convert_once):
    """Two contigs, 120 records in chunks of 7, 24 samples in chunks of 10."""
    vcf = simulated_vcf(tmp_path_factory.mktemp("runs") / "runs.vcf", seed=5)
    return str(convert_once(vcf, variants_chunk_size=7, samples_chunk_size=10))


SUBSETS = [
    None,
    ["sample23", "sample0", "sample12"],                  # odd order, three sample chunks
    ["sample22"],                                         # one sample of the last, short chunk
    ["sample6", "sample6", "sample7", "sample21"],         # a duplicate, across chunks
    [n for n in NAMES if n != "sample13"],                # all but one
    ["sample8", "sample9", "sample10", "sample11"],        # straddles a sample chunk boundary
]
REGIONS = [None, "1:15-455", "2", "1:1-1,2:700-900", "1:591-601", "2:601-601,1:300-600"]


@pytest.mark.parametrize("name", ["mixed", "polyploid"])
@pytest.mark.parametrize("chunks", [(3, 7), (7, 10), (1, 5)])
def test_sample_stats_runs_equal_bcftools(con, convert_once, vcfs, name, chunks):
    vcf = vcfs[name]
    store = convert_once(vcf, variants_chunk_size=chunks[0], samples_chunk_size=chunks[1])
    for samples in SUBSETS:
        for region in REGIONS:
            want = _psc(vcf, None if samples is None else sorted(set(samples), key=NAMES.index),
                        region)
            assert _ours(con, store, samples, region) == want, (samples, region)


@pytest.mark.parametrize("name", ["mixed", "polyploid"])
def test_sample_stats_without_stored_counts_equal_bcftools(con, bio2zarr_once, vcfs, name):
    """A bio2zarr store (no summary_* arrays, -2 padding for mixed ploidy)."""
    vcf = vcfs[name]
    store = bio2zarr_once(vcf, variants_chunk_size=4, samples_chunk_size=7)
    assert not vcfzarr_sql.open_store(store).has_array(sample_stats.SAMPLE_CLASS_COUNTS)
    for samples in SUBSETS[:4]:
        for region in REGIONS[:4]:
            want = _psc(vcf, None if samples is None else sorted(set(samples), key=NAMES.index),
                        region)
            assert _ours(con, store, samples, region) == want, (samples, region)


def test_sample_stats_run_memory_is_bounded_by_run_class_bytes(runs_store, monkeypatch):
    """A run's stored class counts, joined before they are added up, take at most
    RUN_CLASS_BYTES: the whole sample chunks read, however few samples are selected in them."""
    monkeypatch.setattr(sample_stats, "RUN_CLASS_BYTES", 2 * 6 * 10 * 2)  # two chunks' counts
    assembled: list[int] = []
    real = blocks_module._assemble

    def spy(source, name, grid):
        block = real(source, name, grid)
        if name == sample_stats.SAMPLE_CLASS_COUNTS:
            assembled.append(block.nbytes)
        return block

    monkeypatch.setattr(blocks_module, "_assemble", spy)
    store = vcfzarr_sql.open_store(runs_store)
    sample_stats.sample_stats_table(store, samples=["sample3"])
    assert assembled and max(assembled) <= sample_stats.RUN_CLASS_BYTES, assembled


def test_class_counts_chunked_several_variant_chunks_per_chunk(tmp_path, runs_store, con):
    """summary_sample_class_counts rechunked by a generic Zarr tool (3 variant chunks per
    chunk): validate reports the layout, and the scan decodes the genotypes instead of adding
    up the stored counts as if each chunk were one variant chunk."""
    path = tmp_path / "rechunked.vcz"
    shutil.copytree(runs_store, path)
    group = zarr.open_group(str(path), mode="r+", zarr_format=2)
    old = zarr_array(group, sample_stats.SAMPLE_CLASS_COUNTS)
    data, attrs = zarr_values(old), dict(old.attrs)
    del group[sample_stats.SAMPLE_CLASS_COUNTS]
    group.create_array(sample_stats.SAMPLE_CLASS_COUNTS, data=data, chunks=(3, 6, 10), attributes=attrs)
    zarr.consolidate_metadata(str(path), zarr_format=2)
    assert vcfzarr_sql.validate(str(path)) != []
    assert _ours(con, str(path), ["sample3"], "1:1-140") == _ours(con, runs_store, ["sample3"], "1:1-140")
