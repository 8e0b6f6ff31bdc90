"""``view``: the VCF written from a store equals ``bcftools view`` of the original file.

Compared after one normalisation each, for what a VCF Zarr store does not keep: the order of
INFO and FORMAT keys within a record (the store keeps header order), and keys present in a
record with only missing values (the store cannot tell them from an absent key: ``view``
writes GT always and other keys when a sample has a value; both sides drop such keys).
"""

from __future__ import annotations

import gzip
import re
import subprocess

import pysam
import pytest
from corpus import CORPUS, corpus_files
from store_support import STORE_FILES
from vcf_text import normalised as _normalised

from vcfzarr_sql.cli import main
from vcfzarr_sql.errors import NotSupportedError, QueryError
from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import Selection, vcf_lines

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"
CHR22 = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/chr22.vcf.gz"
#: htslib keeps per-record quirks (a duplicated GT key) no store represents
NOT_ROUND_TRIPPED = {"samtools+htslib/test/noroundtrip.vcf"}


def _bcftools_view(path, *args: str) -> str:
    return subprocess.run(["bcftools", "view", *args, str(path)], check=True, capture_output=True,
                          text=True).stdout


def _ours(store, **selection) -> str:
    return "".join(vcf_lines(open_store(store), Selection(**selection)))


READABLE = [f for f in corpus_files() if f.bcftools_reads and f.parses_cyvcf2.startswith("ok")
            and f.id not in NOT_ROUND_TRIPPED]


@pytest.mark.slow
@pytest.mark.parametrize("corpus_file", READABLE, ids=lambda f: f.id)
def test_whole_file_equals_bcftools(corpus_file, convert_once):
    try:
        store = convert_once(corpus_file.path)
    except QueryError as err:  # pragma: no cover (files the converter refuses are tested elsewhere)
        pytest.skip(str(err))
    assert _normalised(_ours(store)) == _normalised(_bcftools_view(corpus_file.path))


@pytest.mark.parametrize(
    ("args", "selection"),
    [
        (["-r", "20:1000-1234567"], {"regions": "20:1000-1234567"}),
        (["-r", "19,X:5-20"], {"regions": "19,X:5-20"}),
        (["-r", "X,20:1-20000,19,20:10000-1110696"], {"regions": "X,20:1-20000,19,20:10000-1110696"}),
        (["-t", "20:14370-1110696"], {"targets": "20:14370-1110696"}),
        (["-t", "^20"], {"targets": "^20"}),
        (["-s", "NA00003,NA00001"], {"samples": "NA00003,NA00001"}),
        (["-s", "^NA00002"], {"samples": "^NA00002"}),
        (["-s", "NA00002", "-I"], {"samples": "NA00002", "update_counts": False}),
        (["-i", "QUAL>=30"], {"include": "QUAL>=30"}),
        (["-e", "INFO/DP>10 || FILTER!=\"PASS\""], {"exclude": "INFO/DP>10 || FILTER!=\"PASS\""}),
        (["-i", "FMT/DP>4 && INFO/DB=1"], {"include": "FMT/DP>4 && INFO/DB=1"}),
        (["-i", "AF<0.1 | AA=\"T\""], {"include": "AF<0.1 | AA=\"T\""}),
        (["-i", "FILTER=\"q10\" || ID=\".\""], {"include": "FILTER=\"q10\" || ID=\".\""}),
        (["-r", "20", "-s", "NA00002", "-i", "QUAL>20"],
         {"regions": "20", "samples": "NA00002", "include": "QUAL>20"}),
    ],
)
def test_options_equal_bcftools(args, selection, convert_once):
    store = convert_once(SAMPLE)
    assert _normalised(_ours(store, **selection)) == _normalised(_bcftools_view(SAMPLE, *args))


def test_regions_and_samples_files_equal_bcftools(convert_once, tmp_path):
    store = convert_once(CHR22)
    regions = tmp_path / "r.tsv"
    regions.write_text("chr22\t10510061\t10600000\nchr22\t16000000\t16100000\n")
    bed = tmp_path / "r.bed"
    bed.write_text("chr22\t10510060\t10600000\tname\t0\t+\n")
    samples = tmp_path / "s.txt"
    samples.write_text("HG00099\nHG00096\n")
    for selection, args in [
        ({"regions_file": str(regions)}, ["-R", str(regions)]),
        ({"targets_file": str(bed)}, ["-T", str(bed)]),
        ({"samples_file": str(samples), "regions": "chr22:1-10600000"}, ["-S", str(samples), "-r", "chr22:1-10600000"]),
    ]:
        assert _normalised(_ours(store, **selection)) == _normalised(_bcftools_view(CHR22, *args)), args


@pytest.mark.parametrize("output_type", ["z", "b"])
def test_compressed_and_bcf_outputs_read_back_by_htslib(output_type, convert_once, tmp_path):
    store = convert_once(SAMPLE)
    out = tmp_path / f"out.{output_type}"
    assert main(["view", str(store), "-O", output_type, "-o", str(out), "-r", "20"]) == 0
    if output_type == "z":
        with open(out, "rb") as f:
            assert f.read(16)[12:14] == b"BC"  # BGZF blocks
        gzip.decompress(out.read_bytes())
    text = _bcftools_view(out)
    assert _normalised(text) == _normalised(_bcftools_view(SAMPLE, "-r", "20"))
    assert pysam.VariantFile(str(out)).header.samples[0] == "NA00001"


def test_cli_writes_vcf_to_stdout(convert_once, capfd):
    store = convert_once(SAMPLE)
    assert main(["view", str(store), "-s", "NA00001", "-t", "X"]) == 0
    assert _normalised(capfd.readouterr().out) == _normalised(_bcftools_view(SAMPLE, "-s", "NA00001", "-t", "X"))


@pytest.mark.parametrize(
    ("selection", "error", "message"),
    [
        ({"include": "GT=\"RA\""}, NotSupportedError, "GT is compared"),
        # (bcftools keeps the records whose first sample is het: an index is no more ignored)
        ({"include": "GT[0]=\"het\""}, NotSupportedError, "GT\\[0\\]: FORMAT indexes"),
        ({"include": "FMT/GT[1]=\"alt\""}, NotSupportedError, "FMT/GT\\[1\\]: FORMAT indexes"),
        ({"include": "DB"}, NotSupportedError, "DB=1"),
        ({"include": "INFO/DP>10 && TYPE=\"snv\""}, NotSupportedError, "TYPE is compared"),
        ({"include": "INFO/NOPE>1"}, QueryError, "no field INFO/NOPE"),
        ({"include": "FILTER~\"q\" && POS~\"1\""}, NotSupportedError, "apply to strings"),
        ({"samples": "NOPE"}, QueryError, "'NOPE' is not in the store"),
        ({"regions": "20", "targets": "20"}, QueryError, "cannot be used together"),
    ],
)
def test_unsupported_or_wrong_options_are_clear_errors(selection, error, message, convert_once):
    store = convert_once(SAMPLE)
    with pytest.raises(error, match=message):
        _ours(store, **selection)


@pytest.mark.parametrize("option", ["-s", "-S"])
def test_a_sample_listed_twice_is_refused_as_bcftools_view_does(option, convert_once, capfd, tmp_path):
    store = convert_once(SAMPLE)
    listed = "NA00002,NA00001,NA00002"
    if option == "-S":
        listed = str(tmp_path / "s.txt")
        (tmp_path / "s.txt").write_text("NA00002\nNA00001\nNA00002\n")
    bcftools = subprocess.run(["bcftools", "view", option, listed, str(SAMPLE)], capture_output=True, text=True)
    assert bcftools.returncode != 0 and "Duplicate sample name" in bcftools.stderr
    assert main(["view", option, listed, str(store)]) == 1
    out, err = capfd.readouterr()
    assert out == "" and f"{option}: sample 'NA00002' is listed twice" in err
    # excluding a sample twice is excluding it (bcftools too)
    assert main(["view", option, "^" + listed, str(store)]) == 0
    assert _normalised(capfd.readouterr().out) == _normalised(_bcftools_view(SAMPLE, option, "^" + listed))


def test_samples_subset_recomputes_counts_and_declares_them(convert_once):
    """bcftools adds INFO/AC and INFO/AN (and their header lines) for a subset of samples."""
    mixed = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/mixed_ploidy.vcf.gz"
    store = convert_once(mixed)
    ours = _ours(store, samples="S3,S1")
    assert "##INFO=<ID=AN," in ours
    assert _normalised(ours) == _normalised(_bcftools_view(mixed, "-s", "S3,S1"))


def test_undeclared_keys_without_a_value_are_written_as_bcftools_writes_them(convert_once, tmp_path):
    """Keys no ##INFO line declares, used without a value (``FL``; ``E=`` htslib writes as
    ``E``), on most records: bcftools writes the bare key on each record that has it."""
    vcf = tmp_path / "flags.vcf"
    lines = [f"1\t{100 + i}\t.\tA\tC\t.\t.\tDP={i};{'FL;' if i % 10 else ''}{'E=' if i % 3 else 'X=y'}"
             f"\tGT:XQ\t0/1:{i}\n" for i in range(30)]
    vcf.write_text("##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n"
                   "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n"
                   "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS1\n" + "".join(lines))
    expected = _normalised(_bcftools_view(vcf))
    assert sum(";FL" in line or "\tFL;" in line for line in expected) == 27
    assert _normalised(_ours(convert_once(vcf, variants_chunk_size=7))) == expected


def _definitions(header: list[str]) -> dict[tuple[str, str], dict[str, str]]:
    """INFO/FORMAT/FILTER/contig lines by (kind, ID): their other attributes."""
    out = {}
    for line in header:
        kind, sep, rest = line.removeprefix("##").partition("=<")
        if sep and kind in ("INFO", "FORMAT", "FILTER", "contig"):
            attrs = dict(re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,>]*)', rest))
            out[kind, attrs.pop("ID")] = attrs
    return out


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("relpath", STORE_FILES)
def test_bio2zarr_store_without_vcf_header_is_written_as_bcftools_writes_the_source(
        relpath, zarr_format, bio2zarr_store):
    """bio2zarr keeps no vcf_header: the header is built from the store's metadata (as
    vcztools builds it) and holds bcftools' definitions; the records equal bcftools'. What the
    store cannot keep: the header's line order, a fixed Number above 1 (written ``.``), and a
    contig's attributes other than its length."""
    store = bio2zarr_store(relpath, zarr_format)
    assert not open_store(store).vcf_header
    ours, theirs = _normalised(_ours(store)), _normalised(_bcftools_view(CORPUS / relpath))
    assert [x for x in ours if not x.startswith("##")] == [x for x in theirs if not x.startswith("##")]
    want = _definitions(theirs)
    for (kind, _), attrs in want.items():
        if attrs.get("Number", ".").isdigit() and int(attrs["Number"]) > 1:
            attrs["Number"] = "."
        if kind == "contig":  # bio2zarr keeps a contig's length only (not assembly=, md5=...)
            for other in set(attrs) - {"length"}:
                del attrs[other]
    assert _definitions(ours) == want
    assert ours[0] == theirs[0]  # ##fileformat
    assert {x for x in theirs if x.startswith("##") and "=<" not in x} <= set(ours)
