"""``vcf_zarr_sample_stats`` equals the PSC lines of ``bcftools stats -s -`` (Debian bcftools) on
simulated files (haploid, mixed and polyploid, multiallelic, missing and half-missing calls),
with regions and sample subsets, and on the corpus files with genotypes."""

from __future__ import annotations

import random
import subprocess

import pytest

import vcfzarr_sql
from vcfzarr_sql.errors import VcfParseError
from corpus import readable_corpus
from fill_tags import BCFTOOLS, simulated_vcf

pytestmark = pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools")

#: Our column -> the PSC column (0-based field of a PSC line).
PSC = {"n_hom_ref": 3, "n_hom_alt": 4, "n_het": 5, "n_hap_ref": 11, "n_hap_alt": 12, "n_missing": 13}


def _psc(vcf, samples=None, region=None) -> dict[str, dict[str, int]]:
    args = [BCFTOOLS, "stats", "-s", ",".join(samples) if samples else "-"]
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
    for name, kwargs in {"mixed": dict(seed=21, ploidies=(1, 2, 2, 2)),
                         "polyploid": dict(seed=22, ploidies=(2, 3))}.items():
        vcf = simulated_vcf(root / f"{name}.vcf", **kwargs)
        subprocess.run([BCFTOOLS, "view", "-Oz", "-o", f"{vcf}.gz", str(vcf)], check=True)
        subprocess.run([BCFTOOLS, "index", "-f", "-t", f"{vcf}.gz"], check=True)
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
    body = subprocess.run([BCFTOOLS, "view", "-H", str(vcf)], capture_output=True).stdout
    formats = [f[8].split(b":") for f in (line.split(b"\t") for line in body.splitlines()) if len(f) > 9]
    with_gt = sum(b"GT" in f for f in formats)
    return len(formats) - with_gt if with_gt else 0  # (no GT anywhere: the store has none)
