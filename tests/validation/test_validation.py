"""The spec validator and ``vcfzarr-sql validate``: clean stores pass, broken copies are caught."""

from __future__ import annotations

import doctest
import json
import shutil
import subprocess
import sys

import oracle
import pytest
import zarr
from corpus import CORPUS
from store_support import zarr_array, zarr_values

from vcfzarr_sql import validation
from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.validation import Problem, validate

BIO2ZARR = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf"
SAMPLE = BIO2ZARR / "sample.vcf.gz"
CLEAN = [
    SAMPLE,
    BIO2ZARR / "field_type_combos.vcf.gz",  # every Number x Type, Character as <U1
    BIO2ZARR / "sample_no_genotypes.vcf.gz",
    BIO2ZARR / "empty.vcf.gz",
    CORPUS / "brentp+cyvcf2/cyvcf2/tests/test.vcf.gz",
]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("vcf", CLEAN, ids=lambda p: p.name)
def test_bio2zarr_stores_are_valid(bio2zarr_once, vcf, zarr_format):
    assert validate(bio2zarr_once(vcf, zarr_format=zarr_format)) == []


def test_small_chunks_and_many_region_index_rows_are_valid(bio2zarr_once):
    store = bio2zarr_once(BIO2ZARR / "multi_contig.vcf.gz", variants_chunk_size=7)
    assert zarr_array(zarr.open_group(store, mode="r"), "region_index").shape[0] > 100
    assert validate(store) == []


@pytest.fixture
def broken(bio2zarr_once, tmp_path):
    """A writable copy of bio2zarr's Zarr v2 store of the VCF spec example."""
    copy = tmp_path / "broken.vcz"
    shutil.copytree(bio2zarr_once(SAMPLE), copy)
    return copy


def _edit_json(path, **changes):
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


def test_wrong_dimension_names(broken):
    _edit_json(broken / "variant_position/.zattrs", _ARRAY_DIMENSIONS=["variant"])
    _edit_json(broken / "call_DP/.zattrs", _ARRAY_DIMENSIONS=["samples", "variants"])
    assert validate(broken) == [
        Problem("variant_position", "dimensions ['variant'], expected ['variants']"),
        Problem("call_DP", "dimensions ['samples', 'variants'], expected ['variants', 'samples'] "
                           "+ at most one"),
        # swapped, call_DP's sizes disagree with sample_id's and variant_position's
        Problem("call_DP", "dimension 'samples' has size 9, but 3 in sample_id"),
        Problem("call_DP", "dimension 'variants' has size 3, but 9 in variant_position"),
        Problem("call_DP", "chunk size 3 along 'variants', but 9 in variant_position"),
    ]


def test_missing_dimension_names(broken):
    meta = json.loads((broken / "variant_quality/.zattrs").read_text())
    del meta["_ARRAY_DIMENSIONS"]
    (broken / "variant_quality/.zattrs").write_text(json.dumps(meta))
    assert validate(broken) == [Problem("variant_quality", "no dimension names")]


def test_dimension_names_must_name_every_dimension(broken):
    _edit_json(broken / "variant_allele/.zattrs", _ARRAY_DIMENSIONS=["variants"])
    _edit_json(broken / "variant_AF/.zattrs", _ARRAY_DIMENSIONS=["variants"])
    assert validate(broken) == [
        Problem("variant_allele", "1 dimension names for 2 dimensions"),
        Problem("variant_AF", "1 dimension names for 2 dimensions"),
    ]


def test_missing_arrays(broken):
    shutil.rmtree(broken / "variant_quality")
    shutil.rmtree(broken / "variant_length")
    assert validate(broken) == [
        Problem("variant_quality", "missing (mandatory array)"),
        Problem("variant_length", "missing (mandatory when region_index is present)"),
    ]


def test_bad_region_index(broken):
    ri = zarr.open_array(broken / "region_index", mode="r+")
    rows = zarr_values(ri)
    expected_row = rows[1].tolist()
    rows[1, 4] += 5  # maximum END
    ri[...] = rows
    assert validate(broken) == [
        Problem("region_index", f"row 1 is {rows[1].tolist()}, expected {expected_row}")
    ]


def test_region_index_with_missing_rows(broken):
    ri = zarr.open_array(broken / "region_index", mode="r")
    rows = zarr_values(ri)
    shutil.rmtree(broken / "region_index")
    zarr.create_array(broken, name="region_index", data=rows[:2], zarr_format=2,
                      attributes={"_ARRAY_DIMENSIONS": ["region_index_values",
                                                        "region_index_fields"]})
    assert validate(broken) == [
        Problem("region_index", "2 rows, expected 3 (one per chunk and contig)")
    ]


def test_region_index_dtype_follows_variant_position(broken):
    rows = zarr_values(zarr.open_array(broken / "region_index", mode="r"))
    shutil.rmtree(broken / "region_index")
    zarr.create_array(broken, name="region_index", data=rows.astype("int64"), zarr_format=2,
                      attributes={"_ARRAY_DIMENSIONS": ["region_index_values",
                                                        "region_index_fields"]})
    assert validate(broken) == [
        Problem("region_index", "dtype int64 differs from variant_position's int32")
    ]


def test_unequal_variant_chunks(broken):
    _edit_json(broken / "variant_NS/.zarray", chunks=[5])
    for key in list((broken / "variant_NS").iterdir()):
        if key.name[0].isdigit():
            key.unlink()  # chunks of the old grid: the array reads as fill, which is fine here
    assert validate(broken) == [
        Problem("variant_NS", "chunk size 5 along 'variants', but 9 in variant_position")
    ]


def test_dtype_kind(broken):
    _edit_json(broken / "variant_quality/.zarray", dtype="<i4")
    assert validate(broken) == [Problem("variant_quality", "dtype int32 is not float")]


def test_version_and_header_attributes(broken):
    group = zarr.open_group(broken, mode="r+")
    group.attrs["vcf_zarr_version"] = "0.3"
    assert validate(broken) == [Problem("attrs", "missing vcf_header (mandatory in VCF Zarr 0.3)")]
    group.attrs["vcf_header"] = "#CHROM\tPOS\n"
    assert validate(broken) == [
        Problem("attrs", "vcf_header does not run from ##fileformat to #CHROM")
    ]
    group.attrs["vcf_zarr_version"] = "9.9"
    assert validate(broken) == [
        Problem("attrs", "vcf_zarr_version is '9.9', expected one of 0.2, 0.3, 0.4, 0.5")
    ]


def test_fields_checked_against_the_header(broken):
    """A 0.3 store with a vcf_header: INFO/FORMAT arrays must follow its Number and Type."""
    group = zarr.open_group(broken, mode="r+")
    group.attrs["vcf_zarr_version"] = "0.3"
    group.attrs["vcf_header"] = oracle.bcftools.view("-h", str(SAMPLE))
    assert validate(broken) == []
    # AC is Number=. : its dimension must not be a reserved one
    _edit_json(broken / "variant_AC/.zattrs", _ARRAY_DIMENSIONS=["variants", "alt_alleles"])
    # DP is Integer
    _edit_json(broken / "variant_DP/.zarray", dtype="<f4")
    assert validate(broken) == [
        Problem("variant_AC", "Number=. field uses reserved dimension 'alt_alleles'"),
        Problem("variant_DP", "dtype float32 is not int (Type=Integer)"),
    ]


def test_mask_arrays_must_match(broken):
    _edit_json(broken / "call_genotype_mask/.zarray", dtype="|i1")
    assert validate(broken) == [Problem("call_genotype_mask", "dtype int8 is not bool")]


def test_zarr_v3_dimension_names(bio2zarr_once, tmp_path):
    copy = tmp_path / "v3.vcz"
    shutil.copytree(bio2zarr_once(SAMPLE, zarr_format=3), copy)
    _edit_json(copy / "variant_contig/zarr.json", dimension_names=["contigs"])
    problems = validate(copy)
    assert Problem("variant_contig", "dimensions ['contigs'], expected ['variants']") in problems
    assert Problem("variant_contig", "dimension 'contigs' has size 9, but 3 in contig_id") in problems


def test_zip_store(bio2zarr_once, tmp_path):
    archive = shutil.make_archive(str(tmp_path / "sample.vcz"), "zip",
                                  root_dir=bio2zarr_once(SAMPLE))
    assert archive.endswith(".zip")
    assert validate(archive) == []


def test_not_a_store(tmp_path):
    with pytest.raises(StoreError, match=f"^{tmp_path}: not a Zarr group"):
        validate(tmp_path)
    with pytest.raises(StoreError, match="no such file or directory"):
        validate(tmp_path / "missing.vcz")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "vcfzarr_sql", "validate", *map(str, args)],
                          capture_output=True, text=True)


def test_cli(bio2zarr_once, broken, tmp_path):
    ok = _cli(bio2zarr_once(SAMPLE))
    assert (ok.returncode, ok.stderr) == (0, "")
    assert ok.stdout.endswith("valid VCF Zarr\n")

    shutil.rmtree(broken / "variant_quality")
    shutil.rmtree(broken / "filter_id")
    bad = _cli(broken)
    assert bad.returncode == 1
    assert bad.stdout.splitlines() == [
        "variant_quality: missing (mandatory array)",
        "filter_id: missing (mandatory array)",
    ]
    assert bad.stderr == f"error: {broken}: 2 problem(s) with the VCF Zarr spec\n"

    missing = _cli(tmp_path / "nope.vcz")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == f"error: {tmp_path / 'nope.vcz'}: not a Zarr group (no such file or directory)\n"


def test_docstring_examples():
    assert doctest.testmod(validation).failed == 0
