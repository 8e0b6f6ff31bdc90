"""Unit tests of the converter's pieces: schema from the header, dimensions and dtypes from the
data, atomic output, --force, independence from the number of workers, progress silence, and
crash isolation. Expected values come from the VCF text written here or from the oracle.
"""

from __future__ import annotations

import ctypes
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import oracle
import pytest
import zarr
from corpus import CORPUS
from store_support import zarr_array, zarr_read, zarr_values

from vcfzarr_sql.converter import convert, partitions
from vcfzarr_sql.converter.workers import WorkerPool
from vcfzarr_sql.errors import VcfParseError, VcfZarrError, VcfZarrWarning
from vcfzarr_sql.format import spec

HEADER = """\
##fileformat=VCFv4.3
##contig=<ID=1,length=4000000000>
##contig=<ID=2>
##FILTER=<ID=q10,Description="Quality below 10">
##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">
##INFO=<ID=AF,Number=A,Type=Float,Description="Allele frequency">
##INFO=<ID=XS,Number=.,Type=String,Description="Strings">
##INFO=<ID=C,Number=1,Type=Character,Description="A character">
##INFO=<ID=DB,Number=0,Type=Flag,Description="dbSNP">
##INFO=<ID=P2,Number=2,Type=Integer,Description="Pair">
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Allelic depths">
##FORMAT=<ID=PL,Number=G,Type=Integer,Description="Likelihoods">
##FORMAT=<ID=FT,Number=1,Type=String,Description="Sample filter">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO	FORMAT	S1	S2
"""

BODY = """\
1	100	rs1	A	C	30	PASS	DP=5;AF=0.5;XS=a,b,c,d;C=x;DB;P2=1,2	GT:AD:PL:FT	0|1:3,40000:0,1,2:ok	1/1:.:.:.
1	3000000000	.	A	C,G,T	.	q10	DP=.;UNDECLARED=u	GT:AD	0/1/2:1,2,3,4	1:.
2	5	.	G	.	.	.	.	GT	.	0|0
"""


def write_vcf(path: Path, body: str = BODY, header: str = HEADER) -> Path:
    path.write_text(header + body)
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> zarr.Group:
    tmp = tmp_path_factory.mktemp("schema")
    vcf = write_vcf(tmp / "in.vcf")
    convert(vcf, tmp / "out.vcz", show_progress=False)
    return zarr.open_group(str(tmp / "out.vcz"), mode="r")


def zarray(group: zarr.Group, name: str) -> dict:
    store = group.store
    assert isinstance(store, zarr.storage.LocalStore)
    return json.loads((Path(store.root) / name / ".zarray").read_text())


def dims(group: zarr.Group, name: str) -> list[object]:
    dimensions = group[name].attrs[spec.ARRAY_DIMENSIONS]
    assert isinstance(dimensions, list)
    return list(dimensions)


def test_group_attributes(store):
    assert store.attrs[spec.ATTR_VERSION] == "0.3"
    assert store.attrs[spec.ATTR_SOURCE].startswith("vcfzarr-sql ")
    header = store.attrs[spec.ATTR_HEADER]
    assert header.startswith("##fileformat=VCFv4.3\n")
    assert header.rstrip("\n").endswith("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS1\tS2")


def test_schema_from_header(store):
    """Array names, dimensions and dtypes follow each field's Number and Type."""
    assert dims(store, "variant_DP") == ["variants"]
    assert dims(store, "variant_AF") == ["variants", "alt_alleles"]
    assert dims(store, "variant_DB") == ["variants"] and store["variant_DB"].dtype == bool
    assert store["variant_C"].dtype == np.dtype("S1")
    assert zarray(store, "variant_XS")["dtype"] == "|O"
    assert zarray(store, "variant_XS")["filters"] == [{"id": "vlen-utf8"}]
    assert dims(store, "call_AD") == ["variants", "samples", "alleles"]
    assert dims(store, "call_PL") == ["variants", "samples", "genotypes"]
    assert dims(store, "call_FT") == ["variants", "samples"]
    assert dims(store, "call_genotype") == ["variants", "samples", "ploidy"]
    assert dims(store, "call_genotype_phased") == ["variants", "samples"]
    assert dims(store, "variant_allele") == ["variants", "alleles"]
    assert dims(store, "variant_filter") == ["variants", "filters"]
    assert dims(store, "region_index") == ["region_index_values", "region_index_fields"]


def test_undeclared_fields_contigs_filters(store):
    """A body-only INFO key becomes a Number=1 String array, as htslib declares it."""
    assert store["variant_UNDECLARED"][:].tolist() == [".", "u", "."]
    assert store["contig_id"][:].tolist() == ["1", "2"]
    assert store["contig_length"][:].tolist() == [4000000000, -1]
    assert store["filter_id"][:].tolist() == ["PASS", "q10"]
    assert store["filter_description"][:].tolist() == ["All filters passed", "Quality below 10"]


def test_dimensions_come_from_the_data(store):
    """Widths are the widest value in the VCF text above, never truncated."""
    assert store["variant_XS"].shape == (3, 4)  # XS=a,b,c,d
    assert store["variant_XS"][0].tolist() == ["a", "b", "c", "d"]
    assert store["variant_allele"].shape == (3, 4)  # A,C,G,T
    assert store["variant_allele"][2].tolist() == ["G", "", "", ""]
    assert store["call_genotype"].shape == (3, 2, 3)  # 0/1/2
    assert store["variant_P2"].shape == (3, 2)  # Number=2
    assert store["call_PL"].shape == (3, 2, 3)  # 0,1,2


def test_integer_dtypes_are_wide_enough(store):
    assert store["variant_position"].dtype == np.int64  # POS 3000000000
    assert store["variant_position"][:].tolist() == [100, 3000000000, 5]
    assert store["region_index"].dtype == store["variant_position"].dtype
    assert store["call_AD"].dtype.itemsize >= 4  # 40000
    assert store["call_AD"][0, 0].tolist()[:2] == [3, 40000]
    assert store["call_genotype"].dtype == np.int8


def test_missing_and_fill(store):
    gt = store["call_genotype"][:]
    assert gt[0].tolist() == [[0, 1, -2], [1, 1, -2]]
    assert gt[1].tolist() == [[0, 1, 2], [1, -2, -2]]
    assert gt[2].tolist() == [[-1, -2, -2], [0, 0, -2]]
    assert store["call_genotype_phased"][:].tolist() == [[True, False], [False, False], [False, True]]
    quality = store["variant_quality"][:].view(np.uint32)
    assert quality[1] == spec.FLOAT32_MISSING_BITS
    af = store["variant_AF"][:].view(np.uint32)
    assert af[0].tolist() == [np.float32(0.5).view(np.uint32), spec.FLOAT32_FILL_BITS, spec.FLOAT32_FILL_BITS]
    assert store["variant_DP"][:].tolist() == [5, -1, -1]
    assert store["variant_id"][:].tolist() == ["rs1", ".", "."]
    assert store["variant_filter"][:].tolist() == [[True, False], [False, True], [False, False]]


def test_length_and_region_index(store):
    assert store["variant_length"][:].tolist() == [1, 1, 1]
    assert store["region_index"][:].tolist() == [
        [0, 0, 100, 3000000000, 3000000000, 2],
        [0, 1, 5, 5, 5, 1],
    ]


def test_sites_only_has_no_call_arrays(tmp_path):
    vcf = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample_no_genotypes.vcf.gz"
    convert(vcf, tmp_path / "out.vcz", show_progress=False)
    group = zarr.open_group(str(tmp_path / "out.vcz"), mode="r")
    assert not [name for name in group.array_keys() if name.startswith("call_")]
    assert zarr_array(group, "sample_id").shape == (0,)
    assert zarr_array(group, "variant_position").shape == (len(oracle.records(vcf)),)


def test_non_ascii_format_strings_and_integer_gt(tmp_path):
    """cyvcf2 cannot read these two; the store must hold what bcftools reads."""
    utf8 = CORPUS / "pysam-developers+pysam/tests/cbcf_data/example_vcf43_with_utf8.vcf"
    convert(utf8, tmp_path / "utf8.vcz", show_progress=False)
    group = zarr.open_group(str(tmp_path / "utf8.vcz"), mode="r")
    expected = [[c["AN"] for c in row] for row in oracle.calls(utf8, ("AN",))]
    stored = [[None if x == "." else x for x in row] for row in zarr_values(zarr_array(group, "call_AN")).tolist()]
    assert stored == expected
    gcnv = (CORPUS / "broadinstitute+gatk/src/test/resources/org/broadinstitute/hellbender/tools/"
            "copynumber/gcnv-postprocess/intervals_output_SAMPLE_001.vcf.gz")
    convert(gcnv, tmp_path / "gcnv.vcz", show_progress=False)
    group = zarr.open_group(str(tmp_path / "gcnv.vcz"), mode="r")
    alleles, phased = oracle.genotype_arrays(gcnv)
    assert np.array_equal(zarr_values(zarr_array(group, "call_genotype")), alleles)
    assert np.array_equal(zarr_values(zarr_array(group, "call_genotype_phased")), phased)


# ---------------------------------------------------------------------------------------------
# Output handling


def test_existing_output_is_refused_unless_forced(tmp_path):
    vcf = write_vcf(tmp_path / "in.vcf")
    out = tmp_path / "out.vcz"
    convert(vcf, out, show_progress=False)
    old = out / "variant_position" / "99"  # a stale chunk of the old store (a user's own file
    old.write_text("x")  # inside is never deleted: test_convert_safety, issue 23)
    with pytest.raises(VcfZarrError, match="already exists"):
        convert(vcf, out, show_progress=False)
    assert old.exists()
    convert(vcf, out, force=True, show_progress=False)
    assert not old.exists()
    assert zarr_array(zarr.open_group(str(out), mode="r"), "variant_position").shape == (3,)


def test_bad_input_leaves_nothing_behind(tmp_path):
    vcf = write_vcf(tmp_path / "bad.vcf", body="1\tnotapos\t.\tA\tC\t.\t.\t.\tGT\t0\t0\n")
    with pytest.raises(VcfParseError, match=f"^{tmp_path / 'bad.vcf'}: "):
        convert(vcf, tmp_path / "out.vcz", show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.vcf"]


def test_crashing_worker_becomes_a_parse_error(tmp_path):
    """A worker that dies of a segfault is reported as a VcfParseError for the input file."""
    with WorkerPool("input.vcf", 1, tmp_path) as pool:
        with pytest.raises(VcfParseError, match="^input.vcf: .*crashed"):
            pool.run(ctypes.string_at, [(0,)])


def test_truncated_bgzf_is_refused(tmp_path):
    source = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"
    truncated = tmp_path / "t.vcf.gz"
    truncated.write_bytes(source.read_bytes()[:-28])
    with pytest.raises(VcfParseError, match="EOF marker"):
        convert(truncated, tmp_path / "out.vcz", show_progress=False)


# ---------------------------------------------------------------------------------------------
# Workers


def store_digest(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    "name",
    ["multi_contig.vcf.gz", "1kg_2020_chr20_annotations.bcf", "sample.vcf.gz"],
)
def test_store_is_identical_for_any_number_of_workers(tmp_path, monkeypatch, name):
    """Several partitions (index regions) and workers give the very same bytes as one."""
    monkeypatch.setattr(partitions, "MIN_PARTITION_BYTES", 1)
    vcf = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf" / name
    kwargs: dict[str, Any] = {"variants_chunk_size": 7, "samples_chunk_size": 2, "show_progress": False}
    convert(vcf, tmp_path / "one.vcz", workers=1, **kwargs)
    convert(vcf, tmp_path / "three.vcz", workers=3, **kwargs)
    assert store_digest(tmp_path / "one.vcz") == store_digest(tmp_path / "three.vcz")


def test_index_regions_cut_a_contig(monkeypatch):
    monkeypatch.setattr(partitions, "MIN_PARTITION_BYTES", 1)
    vcf = CORPUS / "vcflib+vcflib/samples/1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz"
    parts, total = partitions.plan_partitions(vcf, 2, [])
    assert len(parts) > 1
    assert total is None or total == len(oracle.records(vcf))
    starts = [p.start for p in parts]
    assert starts[0] is None
    assert all(a is not None and b is not None and a < b for a, b in zip(starts[1:], starts[2:]))


def test_one_worker_without_progress_reads_no_index(monkeypatch):
    def unread(*args):
        raise AssertionError("the index was read")

    monkeypatch.setattr(partitions, "read_index", unread)
    vcf = CORPUS / "vcflib+vcflib/samples/1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz"
    assert partitions.plan_partitions(vcf, 1, [], count=False) == ([partitions.Partition(0)], None)


# ---------------------------------------------------------------------------------------------
# CLI


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vcfzarr_sql", "convert", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_prints_only_its_summary_without_a_terminal(tmp_path):
    vcf = write_vcf(tmp_path / "in.vcf")
    result = run_cli(str(vcf), str(tmp_path / "out.vcz"))
    assert (result.returncode, result.stdout) == (0, "")
    [summary] = result.stderr.splitlines()  # no progress bar, one summary line
    assert summary.startswith(f"{tmp_path / 'out.vcz'}: ") and " records, " in summary
    result = run_cli(str(vcf), str(tmp_path / "out.vcz"), "--quiet", "--force", "--workers", "2")
    assert (result.returncode, result.stderr) == (0, "")


def test_cli_error_is_one_line(tmp_path):
    vcf = write_vcf(tmp_path / "in.vcf")
    result = run_cli(str(vcf), str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: {tmp_path}: already exists (use --force to replace it)"]
    bad = CORPUS / "malformed/bihealth+vcfpy/tests/vcfs_from_the_wild/issue-16.vcf"
    result = run_cli(str(bad), str(tmp_path / "out.vcz"))
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {bad}: ")
    assert not os.path.exists(tmp_path / "out.vcz")


def test_compressor_and_chunks_are_configurable(tmp_path):
    from numcodecs import Zstd

    vcf = write_vcf(tmp_path / "in.vcf")
    convert(vcf, tmp_path / "out.vcz", compressor=Zstd(level=1), variants_chunk_size=2,
            samples_chunk_size=1, show_progress=False)
    group = zarr.open_group(str(tmp_path / "out.vcz"), mode="r")
    assert zarray(group, "call_genotype")["compressor"] == Zstd(level=1).get_config()
    assert zarray(group, "call_genotype")["chunks"] == [2, 1, 3]
    assert zarr_values(zarr_array(group, "call_genotype")).tolist()[1] == [[0, 1, 2], [1, -2, -2]]


def test_values_that_contradict_the_header_are_kept_and_warned_about(tmp_path):
    """test-hemi.vcf declares INFO/AC Number=A, yet some records carry more AC values than ALT
    alleles (bcftools reads them whole): the store keeps them whole and the user is told."""
    path = CORPUS / "brentp+cyvcf2/cyvcf2/tests/test-hemi.vcf"
    assert oracle.header(path).info["AC"].number == "A"
    overfull = [r for r in oracle.records(path) if r.info["AC"] and len(r.info["AC"]) > len(r.alt)]
    assert overfull, "the corpus file no longer has the case this test is about"
    with pytest.warns(VcfZarrWarning, match=r"INFO/AC is declared Number=A but a record has up to"):
        convert(path, tmp_path / "hemi.zarr")
    ac = zarr_read(tmp_path / "hemi.zarr", "variant_AC")
    rows = {(r.chrom, r.pos): i for i, r in enumerate(oracle.records(path))}
    for record in overfull:
        stored = [int(v) for v in ac[rows[record.chrom, record.pos]] if v != spec.INT_FILL]
        assert stored == record.info["AC"]


def test_conforming_input_gives_no_warning(tmp_path, recwarn):
    convert(CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz", tmp_path / "s.zarr")
    assert not [w for w in recwarn if issubclass(w.category, VcfZarrWarning)]


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_has_the_total_the_index_gives(workers, tmp_path, capsys):
    """With a .tbi/.csi index the parse bar knows how many records there are (so tqdm shows
    a total and an ETA), with one worker as with several."""
    vcf = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/chr22.vcf.gz"
    total = int(subprocess.run(["bcftools", "index", "-n", str(vcf)], capture_output=True,
                               text=True, check=True).stdout)
    convert(vcf, tmp_path / "out.vcz", workers=workers, show_progress=True)
    err = capsys.readouterr().err
    assert re.search(rf"Parse: +\d+%\|.*\| \d+/{total} \[", err), err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["in.vcf"], "Error: Missing argument OUTPUT: the store to write in.vcf into"),
        ([], "Error: Missing arguments INPUT... OUTPUT"),
    ],
)
def test_cli_names_the_missing_argument(args, message, tmp_path):
    result = subprocess.run([sys.executable, "-m", "vcfzarr_sql", "convert", *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith(message), result.stderr


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "the file is empty, not a VCF or BCF"),
        (b"hello world\nfoo\n", "not a VCF or BCF: a VCF starts with '##fileformat=VCF', this one with 'hello world'"),
        (gzip.compress(b"hello world\n", mtime=0), "compressed, but not a VCF or BCF inside"),
        (b"garbage\x00\x01\n",  # htslib: [E::hts_hopen] Failed to open file
         "not a VCF or BCF: a VCF starts with '##fileformat=VCF', this one with 'garbage\\x00\\x01'"),
    ],
)
def test_an_unreadable_input_is_one_line_naming_the_file_and_why(content, reason, tmp_path):
    bad = tmp_path / "bad.vcf"
    bad.write_bytes(content)
    result = run_cli(str(bad), str(tmp_path / "out.vcz"))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: {bad}: {reason}" + (
        " (htslib reads bgzip or gzip of VCF/BCF)" if content[:2] == b"\x1f\x8b" else "")]
    assert not (tmp_path / "out.vcz").exists()
