"""Each script of examples/ runs on the bundled demo data and prints what bcftools implies.

The scripts run as a user runs them (a subprocess); expected values come from bcftools
(tests/oracle.py) on examples/data/demo.vcf.gz.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import oracle
import pyarrow.parquet as pq
import pytest

import vcfzarr_sql

EXAMPLES = Path(__file__).parents[2] / "examples"
DEMO_VCF = str(EXAMPLES / "data" / "demo.vcf.gz")
GENES_BED = str(EXAMPLES / "data" / "genes.bed")


@pytest.fixture(scope="session")
def store(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("examples") / "demo.zarr"
    vcfzarr_sql.convert(DEMO_VCF, out, variants_chunk_size=500, show_progress=False)
    return str(out)


def _run(script: str, *args: str) -> list[dict[str, str]]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, check=True
    )
    return list(csv.DictReader(io.StringIO(done.stdout)))


def _genes() -> dict[str, str]:
    """gene -> bcftools region string, from the BED file."""
    out = {}
    for line in Path(GENES_BED).read_text().splitlines():
        contig, start, end, name = line.split("\t")
        out[name] = f"{contig}:{int(start) + 1}-{end}"
    return out


def _vcf_float(value: float | None) -> str:
    """A VCF Float as text: the shortest digits of its float32 (32.9, 29.0), '' when missing."""
    return "" if value is None else str(np.float32(value))


def test_variants_in_gene_region(store) -> None:
    rows = _run("variants_in_gene_region.py", store, "BETA2")
    expected = oracle.records(DEMO_VCF, region=_genes()["BETA2"])
    assert len(expected) > 10
    assert [(r["contig"], int(r["pos"]), r["id"], r["ref"], r["alt"]) for r in rows] == [
        (e.chrom, e.pos, e.id or "", e.ref, ",".join(e.alt)) for e in expected
    ]
    # FLOAT printed with its own digits, as bcftools prints QUAL (no float32 noise)
    assert [r["qual"] for r in rows] == [_vcf_float(e.qual) for e in expected]


def test_allele_frequencies(store) -> None:
    region = "2:50000-90000"
    rows = _run("allele_frequencies.py", store, "--region", region)
    records = oracle.records(DEMO_VCF, region=region)
    calls = oracle.calls(DEMO_VCF, ("GT",), region=region)
    expected = []
    for record, per_sample in zip(records, calls):
        alleles = [a for call in per_sample if call["GT"] for a in call["GT"].alleles]
        an = sum(a is not None for a in alleles)
        for k, alt in enumerate(record.alt, start=1):
            ac = alleles.count(k)
            expected.append((record.pos, alt, k, an, ac, round(ac / an, 6)))
    assert [
        (int(r["pos"]), r["alt"], int(r["allele"]), int(r["an"]), int(r["ac"]), float(r["af"]))
        for r in rows
    ] == expected
    # the AC the VCF carries agrees with the genotypes
    assert [int(r["ac"]) for r in rows] == [ac for rec in records for ac in rec.info["AC"]]


def test_sample_qc(store) -> None:
    rows = _run("sample_qc.py", store)
    alleles, _ = oracle.genotype_arrays(DEMO_VCF)
    called = alleles >= 0
    missing = np.asarray(~called.any(axis=-1))
    first = np.where(called[..., 0], alleles[..., 0], alleles[..., 1])
    het = ~missing & ((alleles != first[..., None]) & called).any(axis=-1)
    header = oracle.header(DEMO_VCF)
    assert [r["sample_id"] for r in rows] == sorted(header.samples)
    by_sample = {r["sample_id"]: r for r in rows}
    for k, sample in enumerate(header.samples):
        row = by_sample[sample]
        assert int(row["calls"]) == alleles.shape[0]
        assert int(row["missing"]) == int(missing[:, k].sum())
        assert int(row["het"]) == int(het[:, k].sum())


def test_variants_per_gene(store) -> None:
    rows = _run("variants_per_gene.py", store, GENES_BED)
    assert [r["gene"] for r in rows] == list(_genes())
    for row in rows:
        expected = oracle.records(DEMO_VCF, region=_genes()[row["gene"]])
        assert int(row["variants"]) == len(expected)
        mean_af = float(np.mean([float(np.float32(r.info["AF"][0])) for r in expected]))
        assert float(row["mean_af"]) == pytest.approx(mean_af, abs=1e-6)


def test_export_region_parquet(store, tmp_path) -> None:
    region = _genes()["ALPHA1"]
    out = tmp_path / "alpha1.parquet"
    subprocess.run(
        [sys.executable, str(EXAMPLES / "export_region_parquet.py"), store, region, str(out)],
        check=True, capture_output=True,
    )
    table = pq.read_table(out)
    records = oracle.records(DEMO_VCF, region=region)
    assert table.column("pos").to_pylist() == [r.pos for r in records]
    assert table.column("alt").to_pylist() == [r.alt for r in records]
    assert table.column("filters").to_pylist() == [r.filters for r in records]
    calls = oracle.calls(DEMO_VCF, ("GT",), region=region)
    assert table.column("fmt_GT").to_pylist() == [
        [None if c["GT"] is None else list(c["GT"].alleles) for c in per_sample] for per_sample in calls
    ]


def test_every_example_is_tested() -> None:
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    tested = {
        "variants_in_gene_region.py", "allele_frequencies.py", "sample_qc.py",
        "variants_per_gene.py", "export_region_parquet.py",
    }
    assert scripts == tested


def test_demo_data_is_what_the_script_describes() -> None:
    header = oracle.header(DEMO_VCF)
    counts = Counter(r.chrom for r in oracle.records(DEMO_VCF))
    assert len(header.samples) == 50
    assert set(counts) == {"1", "2"} and 4000 <= sum(counts.values()) <= 6000
    assert Path(DEMO_VCF).stat().st_size < 500_000
