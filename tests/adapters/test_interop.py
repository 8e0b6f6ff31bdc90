"""Stores we write work with the other VCF Zarr tools: bio2zarr's ``vcf2zarr inspect`` and
``vcztools view -r``, whose records must be bcftools' records (``bcftools view -r``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import oracle
import pytest
import store_check
from corpus import CORPUS, readable_corpus
from engine_cases import converted_corpus_file

BIO2ZARR = "sgkit-dev+bio2zarr/tests/data/vcf/"
#: (file, region): multi-sample, gVCF END blocks (overlap through variant_length), many
#: contigs, an unsorted multi-contig file's single contig, Number=A/R/G and Character fields.
REGIONS = [
    (BIO2ZARR + "sample.vcf.gz", "20:1-1300000"),
    (BIO2ZARR + "sample.vcf.gz", "X"),
    (BIO2ZARR + "CEUTrio.20.21.gatk3.4.g.vcf.bgz", "20:1000000-2000000"),
    (BIO2ZARR + "CEUTrio.20.21.gatk3.4.g.vcf.bgz", "21:9411000-9412000"),
    (BIO2ZARR + "multi_contig.vcf.gz", "3:100-400,4"),
    (BIO2ZARR + "1kg_2020_chrM.vcf.gz", "chrM:30-50"),
    (BIO2ZARR + "field_type_combos.vcf.gz", "2"),
    ("brentp+cyvcf2/cyvcf2/tests/test.vcf.gz", "1:1-20000000"),
]
FILES = sorted({vcf for vcf, _ in REGIONS})
#: The corpus files by id (their stores are those the corpus tests convert: shared).
BY_ID = {f.id: f for f in readable_corpus()}


def _tool(name: str) -> str:
    """A console script installed beside the running Python."""
    return str(Path(sys.executable).with_name(name))


@pytest.mark.parametrize("vcf", FILES)
def test_valid_and_bio2zarr_inspects_it(convert_once, vcf):
    store = converted_corpus_file(BY_ID[vcf], convert_once)
    mismatches = store_check.check_valid(store_check.Stored(store), CORPUS / vcf)
    assert not mismatches, store_check.report(mismatches)
    result = subprocess.run([_tool("vcf2zarr"), "inspect", str(store)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert "/variant_position" in result.stdout


#: vcztools prints floats with "%.3f" (trailing zeros dropped): 0.0003125 comes out as 0.
VCZTOOLS_FLOAT_ABS_TOL = 0.0005


def _same(want, got) -> bool:
    """Equal; floats at the precision bcftools and vcztools print; a vector of missing values
    (bcftools ``.,.``) as vcztools prints it, ``.``."""
    if isinstance(want, list) and got is None and all(w is None for w in want):
        return True
    if isinstance(want, float) and isinstance(got, float):
        close = abs(want - got) <= VCZTOOLS_FLOAT_ABS_TOL * (1 + 1e-6)
        return close or oracle.float_equal(want, got)
    if isinstance(want, float) or isinstance(got, float):
        return oracle.float_equal(want, got)
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(want) == len(got) and all(map(_same, want, got))
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(_same(want[k], got[k]) for k in want)
    return want == got


def _comparable(record: oracle.Record, calls: list[dict]) -> dict:
    """Everything of a record but END (vcztools does not print it)."""
    return {"CHROM": record.chrom, "POS": record.pos, "ID": record.id, "REF": record.ref,
            "ALT": record.alt, "QUAL": record.qual, "FILTER": sorted(record.filters or []),
            **{f"INFO/{k}": v for k, v in record.info.items()},
            **{f"sample {s} FORMAT/{k}": v for s, call in enumerate(calls) for k, v in call.items()}}


@pytest.mark.parametrize(("vcf", "region"), REGIONS)
def test_vcztools_view_region_matches_bcftools(convert_once, vcf, region):
    path = CORPUS / vcf
    store = converted_corpus_file(BY_ID[vcf], convert_once)
    hdr = oracle.header(path)
    fields = tuple(hdr.format) if hdr.samples else ()
    records = oracle.records(path, region=region)
    calls = oracle.calls(path, fields, region=region) if fields else [[] for _ in records]
    want = [_comparable(r, c) for r, c in zip(records, calls)]
    assert want, "a region with no records tests nothing"

    result = subprocess.run([_tool("vcztools"), "view", "-r", region, str(store)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line and not line.startswith("#")]
    got = [
        _comparable(oracle.parse_record(line, hdr),
                    oracle.parse_calls(line, hdr, fields) if fields else [])
        for line in lines
    ]
    assert [(g["CHROM"], g["POS"]) for g in got] == [(w["CHROM"], w["POS"]) for w in want]
    differences = [
        f"{w['CHROM']}:{w['POS']} {key}: bcftools {w[key]!r}, vcztools {g.get(key)!r}"
        for g, w in zip(got, want) for key in w if not _same(w[key], g.get(key))
    ]
    assert not differences, "\n".join(differences[:10])
