"""The oracle itself, against facts read by hand from the VCF text of small corpus files."""

from __future__ import annotations

import doctest

import oracle
import pytest
from corpus import CORPUS
from oracle import FieldDef, Genotype

SAMPLE = oracle.CORPUS_SAMPLE  # the VCF spec's example (bio2zarr's sample.vcf.gz)
VCF_FILE = CORPUS / "samtools+htslib/test/tabix/vcf_file.vcf"  # plain text, no index
HDR_IN = CORPUS / "samtools+htslib/test/test-vcf-hdr-in.vcf"  # no ##contig lines at all
SV = CORPUS / "bihealth+vcfpy/tests/vcfs_from_the_wild/example-4.1-sv.vcf"  # undeclared INFO
COMBOS = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/field_type_combos.vcf.gz"


def test_header_of_the_spec_example():
    h = oracle.header(SAMPLE)
    assert h.samples == ["NA00001", "NA00002", "NA00003"]
    assert h.contigs == [("19", None), ("20", None), ("X", None)]
    assert h.filters == [
        ("PASS", "All filters passed"),
        ("s50", "Less than 50% of samples have data"),
        ("q10", "Quality below 10"),
    ]
    assert list(h.info) == ["NS", "AN", "AC", "DP", "AF", "AA", "DB", "H2"]
    assert h.info["AC"] == FieldDef("AC", ".", "Integer",
                                    "Allele count in genotypes, for each ALT allele, in the same "
                                    "order as listed")
    assert h.info["DB"].vcf_type == "Flag" and h.info["DB"].number == "0"
    assert list(h.format) == ["GT", "GQ", "DP", "HQ"]
    assert h.format["HQ"] == FieldDef("HQ", "2", "Integer", "Haplotype Quality")


def test_records_of_the_spec_example():
    recs = oracle.records(SAMPLE)
    assert [(r.chrom, r.pos) for r in recs] == [
        ("19", 111), ("19", 112), ("20", 14370), ("20", 17330), ("20", 1110696),
        ("20", 1230237), ("20", 1234567), ("20", 1235237), ("X", 10),
    ]
    first = recs[0]
    assert (first.id, first.ref, first.alt, first.filters, first.end) == (None, "A", ["C"], None, 111)
    assert oracle.float_equal(9.6, first.qual)
    assert first.info == {"NS": None, "AN": None, "AC": None, "DP": None, "AF": None,
                          "AA": None, "DB": False, "H2": False}
    r = recs[2]  # NS=3;DP=14;AF=0.5;DB;H2
    assert (r.id, r.filters, r.qual) == ("rs6054257", ["PASS"], 29.0)
    assert r.info == {"NS": 3, "AN": None, "AC": None, "DP": 14, "AF": [0.5], "AA": None,
                      "DB": True, "H2": True}
    assert recs[3].filters == ["q10"]
    assert recs[5].alt == []  # ALT '.'
    assert recs[6].alt == ["GA", "GAC"] and recs[6].info["AC"] == [3, 1]
    assert recs[6].info["AA"] == "G"
    assert recs[7].qual is None and recs[7].filters is None
    assert (recs[8].ref, recs[8].end) == ("AC", 11)  # rlen = len(REF)


def test_calls_of_the_spec_example():
    c = oracle.calls(SAMPLE, ("GT", "GQ", "DP", "HQ"))
    assert c[0][0] == {"GT": Genotype((0, 0), True), "GQ": None, "DP": None, "HQ": [10, 15]}
    assert c[0][2]["GT"] == Genotype((0, 1), False)
    assert c[2][2] == {"GT": Genotype((1, 1), False), "GQ": 43, "DP": 5, "HQ": [None, None]}  # HQ .,.
    assert c[4][1]["GT"] == Genotype((2, 1), True)
    assert c[5][0]["DP"] is None  # DP '.'
    assert c[6][2]["GT"] == Genotype((None, None), False)  # ./.
    assert c[6][0]["GQ"] is None
    assert c[7][0]["HQ"] is None  # HQ not in this record's FORMAT
    assert [s["GT"] for s in c[8]] == [
        Genotype((0,), False), Genotype((0, 1), False), Genotype((0, 2), True)]
    only = oracle.calls(SAMPLE, ("DP",), samples=["NA00003", "NA00001"])
    assert only[2] == [{"DP": 5}, {"DP": 1}]


def test_genotype_arrays_agree_with_calls():
    alleles, phased = oracle.genotype_arrays(SAMPLE)
    assert alleles.shape == (9, 3, 2)
    assert alleles[6].tolist() == [[0, 1], [0, 2], [-1, -1]]
    assert alleles[8].tolist() == [[0, -2], [0, 1], [0, 2]]
    for v, row in enumerate(oracle.calls(SAMPLE)):
        for s, call in enumerate(row):
            gt = call["GT"]
            ploidy = len(gt.alleles)
            assert alleles[v, s, :ploidy].tolist() == [-1 if a is None else a for a in gt.alleles]
            assert (alleles[v, s, ploidy:] == -2).all()
            assert phased[v, s] == gt.phased


def test_region_and_targets():
    assert [r.pos for r in oracle.records(SAMPLE, region="20:1230237-1234567")] == [1230237, 1234567]
    # a region on a plain-text, unindexed VCF goes through an indexed copy
    assert [r.pos for r in oracle.records(VCF_FILE, region="1:3000150-3000151")] == [3000150, 3000151]
    assert [r.pos for r in oracle.records(SAMPLE, targets="X")] == [10]
    region_calls = oracle.calls(SAMPLE, ("DP",), region="20:1230237", samples=["NA00003"])
    assert region_calls == [[{"DP": 2}]]
    # -r selects by overlap: X:10 (REF AC) covers X:11
    assert [r.pos for r in oracle.records(SAMPLE, region="X:11")] == [10]


def test_types_flags_strings_and_fixed_numbers():
    recs = oracle.records(VCF_FILE)
    r = recs[2]  # DP4=1,2,3,4;AN=4;AC=2;INDEL;STR=test
    assert r.info["DP4"] == [1, 2, 3, 4] and r.info["AC"] == [2] and r.info["AN"] == 4
    assert r.info["INDEL"] is True and r.info["STR"] == "test" and r.info["TEST"] is None
    assert recs[0].info["INDEL"] is False
    assert oracle.calls(VCF_FILE, ("GQ", "DP"))[0][0] == {"GQ": 245, "DP": None}


def test_character_vectors():
    c = oracle.calls(COMBOS, ("FC2",))
    by_pos = {r.pos: i for i, r in enumerate(oracle.records(COMBOS)) if r.chrom == "2"}
    assert c[by_pos[165]] == [{"FC2": ["c", "b"]}, {"FC2": [None, "b"]}]
    assert c[by_pos[166]] == [{"FC2": ["c", None]}, {"FC2": [None, None]}]  # bcftools: c,. and .,.


def test_body_only_contigs_and_undeclared_fields():
    assert oracle.header(HDR_IN).contigs == [("1", None), ("16", None), ("4", None)]
    h = oracle.header(SV)
    assert h.info["MIINFO"] == FieldDef("MIINFO", "1", "String", "Dummy")
    recs = oracle.records(SV)
    assert recs[3].info["MIINFO"] == "L1HS,1,6025,-"  # Number=1 String keeps its commas
    assert recs[2].info["MEINFO"] == ["AluYa5", "5", "307", "+"]  # declared Number=4
    # END=2827680 lies before POS: htslib ignores it and takes rlen from REF
    assert recs[0].end == 2827693 + len(recs[0].ref) - 1
    assert recs[1].end == 321887  # END from INFO/END


def test_rejected_file_raises():
    bad = CORPUS / "malformed/brentp+cyvcf2/cyvcf2/tests/test-invalid-header.vcf"
    with pytest.raises(oracle.BcftoolsError):
        oracle.records(bad)


@pytest.mark.parametrize(
    ("expected", "actual", "equal"),
    [(0.333, 0.33300000429, True), (9.6, 9.600000381, True), (1e6, 1000001.0, True),
     (9.6, 9.61, False), (None, None, True), (None, 0.0, False), (0.0, None, False),
     (float("nan"), float("nan"), True), (1.0, float("nan"), False)],
)
def test_float_equal(expected, actual, equal):
    assert oracle.float_equal(expected, actual) is equal


def test_docstring_examples():
    assert doctest.testmod(oracle).failed == 0
