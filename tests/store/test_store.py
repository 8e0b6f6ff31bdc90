"""vcfzarr_sql.store on stores written by bio2zarr (VCF Zarr 0.5, Zarr v2 and v3).

Expected metadata comes from bcftools (tests/oracle.py); expected chunk values from zarr-python's
own read of the same region; expected region indexes from bio2zarr and the spec's example.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import oracle
import pysam.bcftools
import pytest
import zarr
from corpus import CORPUS
from store_support import (
    STORE_FILES,
    assert_chunks_match_zarr,
    assert_same_values,
    copy_store,
    zarr_read,
    zarr_values,
    zip_store,
)

import vcfzarr_sql
from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.derived import build_region_index

pytestmark = pytest.mark.filterwarnings(
    "ignore:The data type"  # zarr-python, when bio2zarr writes Character fields to Zarr v3
)

FORMATS = [2, 3]
CASES = [
    pytest.param(f, z, id=f"{f.rsplit('/', 1)[-1]}-v{z}") for f in STORE_FILES for z in FORMATS
]


def _expected_number(declared: str) -> str:
    """bio2zarr 0.5 stores no header: a fixed Number N > 1 has no reserved dimension and reads as
    '.' (the store cannot tell N from '.')."""
    return "." if declared.isdigit() and int(declared) > 1 else declared


def _fields_and_header(store, header):
    """(store fields, bcftools' definitions) for INFO, then FORMAT."""
    return ((store.info_fields, header.info), (store.format_fields, header.format))


def _all_chunks(store, name):
    return itertools.product(*(range(n) for n in store.array_info(name).grid))


# -- metadata --------------------------------------------------------------------------------


@pytest.mark.parametrize(("relpath", "zarr_format"), CASES)
def test_metadata_matches_bcftools_header(bio2zarr_store, relpath, zarr_format):
    store = vcfzarr_sql.open_store(bio2zarr_store(relpath, zarr_format))
    header = oracle.header(CORPUS / relpath)
    assert store.version == "0.5" and store.zarr_format == zarr_format
    assert store.samples.dtype == object
    assert store.samples.tolist() == header.samples
    assert store.num_samples == len(header.samples)
    assert store.contigs == [name for name, _ in header.contigs]
    lengths = [length for _, length in header.contigs]
    if store.contig_lengths is None:
        assert lengths == [None] * len(lengths)
    else:
        assert store.contig_lengths.tolist() == [-1 if x is None else x for x in lengths]
    assert list(zip(store.filters, store.filter_descriptions)) == header.filters
    for category, fields, declared in (
        ("INFO", store.info_fields, header.info),
        ("FORMAT", store.format_fields, header.format),
    ):
        assert set(fields) == set(declared), category
        for name, field in fields.items():
            want = declared[name]
            assert field.category == category
            assert (field.number, field.vcf_type, field.description) == (
                _expected_number(want.number), want.vcf_type, want.description
            ), f"{category}/{name}"
            info = store.array_info(field.array)
            assert (field.dtype, field.shape, field.chunks, field.dims) == (
                info.dtype, info.shape, info.chunks, info.dims
            )


@pytest.mark.parametrize(("relpath", "zarr_format"), CASES)
def test_chunking(bio2zarr_store, relpath, zarr_format):
    store = vcfzarr_sql.open_store(bio2zarr_store(relpath, zarr_format))
    records = oracle.records(CORPUS / relpath)
    assert store.num_variants == len(records)
    if records:
        assert store.variants_chunk_size == 7
        assert store.num_variant_chunks == -(-len(records) // 7)
    if store.format_fields:
        assert store.samples_chunk_size == 2
        assert store.num_sample_chunks == -(-store.num_samples // 2)


def test_gt_field_and_masks_are_not_fields(bio2zarr_store):
    store = vcfzarr_sql.open_store(bio2zarr_store(STORE_FILES[0], 2))
    gt = store.format_fields["GT"]
    assert (gt.array, gt.number, gt.vcf_type) == (spec.CALL_GENOTYPE, "1", "String")
    assert list(store.format_fields)[0] == "GT"
    arrays = {f.array for f in [*store.info_fields.values(), *store.format_fields.values()]}
    assert {"call_genotype_mask", "call_genotype_phased", "variant_id_mask"} & arrays == set()
    assert store.has_array("call_genotype_mask") and not store.has_array("nope")


# -- chunks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("relpath", "zarr_format"), CASES)
def test_every_chunk_equals_zarr_python(bio2zarr_store, relpath, zarr_format):
    path = bio2zarr_store(relpath, zarr_format)
    store = vcfzarr_sql.open_store(path)
    assert sum(assert_chunks_match_zarr(store, path, name) for name in store.array_names) > 0


def test_missing_chunk_is_fill_value(bio2zarr_store):
    """zarr-python skips chunks equal to the fill value: such keys read as a chunk of fill."""
    path = bio2zarr_store(STORE_FILES[0], 2)
    store = vcfzarr_sql.open_store(path)
    absent = [
        c for c in _all_chunks(store, spec.CALL_GENOTYPE_PHASED)
        if store.read_chunk_bytes(spec.CALL_GENOTYPE_PHASED, c) is None
    ]
    assert absent, "the sample store has all-unphased chunks, which bio2zarr does not write"
    expected = zarr_read(path, spec.CALL_GENOTYPE_PHASED)
    for i, j in absent:
        got = store.decode_chunk(spec.CALL_GENOTYPE_PHASED, None, (i, j))
        assert got.dtype == np.bool_ and not got.any()
        assert_same_values(got, expected[i * 7 : (i + 1) * 7, j * 2 : (j + 1) * 2], f"{i}, {j}")


def test_read_chunk_bytes_and_decode_chunk_compose(bio2zarr_store):
    store = vcfzarr_sql.open_store(bio2zarr_store(STORE_FILES[0], 3))
    raw = store.read_chunk_bytes("variant_position", (1,))
    assert isinstance(raw, bytes)
    assert store.decode_chunk("variant_position", raw, (1,)).tolist() == [
        r.pos for r in oracle.records(CORPUS / STORE_FILES[0])[7:9]
    ]


@pytest.mark.parametrize("chunk", [(3,), (-1,), (0, 0)])
def test_chunk_out_of_grid_is_an_error(bio2zarr_store, chunk):
    store = vcfzarr_sql.open_store(bio2zarr_store(STORE_FILES[0], 2))
    with pytest.raises(StoreError, match="has no chunk"):
        store.read_chunk_bytes("variant_position", chunk)


def test_empty_dimension_has_one_empty_chunk(bio2zarr_store):
    store = vcfzarr_sql.open_store(bio2zarr_store(STORE_FILES[5], 2))  # empty.vcf.gz: no records
    assert store.num_variants == 0 and store.num_variant_chunks == 0
    assert store.read_chunk_bytes(spec.VARIANT_POSITION, (0,)) is None
    assert store.read_chunk(spec.VARIANT_POSITION, (0,)).shape == (0,)
    assert store.read_chunk(spec.CALL_GENOTYPE, (0, 0, 0)).shape == (0, 1, 1)
    assert store.region_index.shape == (0, spec.REGION_INDEX_FIELDS)


def test_unknown_array_is_an_error(bio2zarr_store):
    store = vcfzarr_sql.open_store(bio2zarr_store(STORE_FILES[0], 2))
    with pytest.raises(StoreError, match="no array 'variant_XYZ'"):
        store.read_chunk("variant_XYZ", (0,))


def test_concurrent_reads_agree(bio2zarr_store):
    from concurrent.futures import ThreadPoolExecutor

    store = vcfzarr_sql.open_store(bio2zarr_store(STORE_FILES[1], 2))
    tasks = [(name, c) for name in store.array_names for c in _all_chunks(store, name)] * 3
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: store.read_chunk(*t), tasks))
    for (name, chunk), got in zip(tasks, results):
        assert_same_values(got, store.read_chunk(name, chunk), f"{name} {chunk}")


# -- variant_length and the region index ------------------------------------------------------


@pytest.mark.parametrize(("relpath", "zarr_format"), CASES)
def test_variant_length_matches_bcftools_end(bio2zarr_store, tmp_path, relpath, zarr_format):
    path = bio2zarr_store(relpath, zarr_format)
    derived = vcfzarr_sql.open_store(copy_store(path, tmp_path / "s", drop=(spec.VARIANT_LENGTH,)))
    stored = vcfzarr_sql.open_store(path)
    expected = [r.end - r.pos + 1 for r in oracle.records(CORPUS / relpath)]
    for store in (stored, derived):
        lengths = [store.variant_length(k) for k in range(store.num_variant_chunks)]
        assert all(x.dtype == np.int64 for x in lengths)
        assert (np.concatenate(lengths).tolist() if lengths else []) == expected


@pytest.mark.parametrize(("relpath", "zarr_format"), CASES)
def test_region_index_equals_bio2zarr(bio2zarr_store, tmp_path, relpath, zarr_format):
    path = bio2zarr_store(relpath, zarr_format)
    stored = vcfzarr_sql.open_store(path)
    written = zarr_read(path, spec.REGION_INDEX)
    assert stored.region_index.dtype == np.int64
    assert np.array_equal(stored.region_index, written)
    rebuilt = vcfzarr_sql.open_store(copy_store(path, tmp_path / "s", drop=(spec.REGION_INDEX,)))
    assert not rebuilt.has_array(spec.REGION_INDEX)
    assert np.array_equal(rebuilt.region_index, written)
    assert rebuilt.region_index is rebuilt.region_index  # built once


def _spec_example_store(path, zarr_format):
    """The region index example of the VCF Zarr spec: 9 records, chunks of 3, no region_index."""
    group = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
    group.attrs[spec.ATTR_VERSION] = "0.3"
    columns: dict[str, np.ndarray] = {
        spec.VARIANT_CONTIG: np.array([0, 0, 1, 1, 1, 1, 1, 1, 2], dtype=np.int8),
        spec.VARIANT_POSITION: np.array(
            [111, 112, 14370, 17330, 1110696, 1230237, 1234567, 1235237, 10], dtype=np.int32
        ),
        spec.VARIANT_ALLELE: np.array([["A", "T"]] * 8 + [["AT", "A"]], dtype=str),
        spec.CONTIG_ID: np.array(["19", "20", "X"], dtype=str),
    }
    for name, data in columns.items():
        dims = ["variants", "alleles"][: data.ndim] if name != spec.CONTIG_ID else ["contigs"]
        chunks = (3, 2)[: data.ndim] if name != spec.CONTIG_ID else (3,)
        extra = (
            {"attributes": {spec.ARRAY_DIMENSIONS: dims}}
            if zarr_format == 2
            else {"dimension_names": dims}
        )
        group.create_array(name, data=data, chunks=chunks, **extra)
    return path


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_region_index_of_the_spec_example(tmp_path, zarr_format):
    store = vcfzarr_sql.open_store(_spec_example_store(tmp_path / "ex.vcz", zarr_format))
    assert store.variant_length(2).tolist() == [1, 1, 2]
    assert store.region_index.tolist() == [
        [0, 0, 111, 112, 112, 2],
        [0, 1, 14370, 14370, 14370, 1],
        [1, 1, 17330, 1230237, 1230237, 3],
        [2, 1, 1234567, 1235237, 1235237, 2],
        [2, 2, 10, 10, 11, 1],
    ]
    assert store.samples.tolist() == [] and store.format_fields == {}


def test_bad_region_index_shape_is_an_error(tmp_path):
    path = _spec_example_store(tmp_path / "ex.vcz", 2)
    zarr.open_group(str(path), mode="r+").create_array(
        spec.REGION_INDEX, data=np.zeros((2, 5), dtype=np.int32),
        attributes={spec.ARRAY_DIMENSIONS: [spec.DIM_REGION_INDEX_VALUES, "x"]},
    )
    with pytest.raises(StoreError, match=r"region_index has shape \(2, 5\)"):
        _ = vcfzarr_sql.open_store(path).region_index


# -- a VCF Zarr 0.3 / 0.2 store with a vcf_header ---------------------------------------------


@pytest.mark.parametrize("version", ["0.2", "0.3"])
def test_header_gives_fixed_numbers_and_descriptions(bio2zarr_store, tmp_path, version):
    """A store with the ``vcf_header`` attribute (VCF Zarr 0.2/0.3) takes Number/Type/Description
    and (0.2: no filter_description array) FILTER descriptions from it."""
    relpath = STORE_FILES[0]
    path = copy_store(bio2zarr_store(relpath, 2), tmp_path / "s", drop=(spec.FILTER_DESCRIPTION,))
    attrs = json.loads((path / ".zattrs").read_text())
    header_text = pysam.bcftools.view("-h", str(CORPUS / relpath))
    attrs.update({spec.ATTR_VERSION: version, spec.ATTR_HEADER: header_text})
    (path / ".zattrs").write_text(json.dumps(attrs))
    store = vcfzarr_sql.open_store(path)
    header = oracle.header(CORPUS / relpath)
    assert store.version == version and store.vcf_header.startswith("##fileformat")
    assert list(zip(store.filters, store.filter_descriptions)) == header.filters
    for fields, declared in _fields_and_header(store, header):
        assert list(fields) == [n for n in declared if n in fields]
        for name, field in fields.items():
            want = declared[name]
            assert (field.number, field.vcf_type, field.description) == (
                want.number, want.vcf_type, want.description
            )
    assert store.format_fields["HQ"].number == "2"


def test_vcf_zarr_0_4_without_header(bio2zarr_store, tmp_path):
    """0.4 is 0.5 as far as a reader goes (no vcf_header; descriptions in array attributes)."""
    path = copy_store(bio2zarr_store(STORE_FILES[0], 3), tmp_path / "s")
    root = json.loads((path / "zarr.json").read_text())
    root["attributes"][spec.ATTR_VERSION] = "0.4"
    (path / "zarr.json").write_text(json.dumps(root))
    store = vcfzarr_sql.open_store(path)
    assert (store.version, store.vcf_header) == ("0.4", None)
    assert store.info_fields == vcfzarr_sql.open_store(bio2zarr_store(STORE_FILES[0], 3)).info_fields


# -- where the store lives -------------------------------------------------------------------


def _same_store(a, b) -> None:
    assert (a.samples.tolist(), a.contigs, a.filters) == (b.samples.tolist(), b.contigs, b.filters)
    assert a.info_fields == b.info_fields and a.format_fields == b.format_fields
    assert np.array_equal(a.region_index, b.region_index)
    for name in a.array_names:
        for chunk in _all_chunks(a, name):
            assert_same_values(a.read_chunk(name, chunk), b.read_chunk(name, chunk), name)


@pytest.mark.parametrize("zarr_format", FORMATS)
@pytest.mark.parametrize("prefix", ["", "store.vcz/"], ids=["root", "folder"])
def test_zip_store(bio2zarr_store, tmp_path, zarr_format, prefix):
    path = bio2zarr_store(STORE_FILES[0], zarr_format)
    with vcfzarr_sql.open_store(zip_store(path, tmp_path / "s.zip", prefix)) as zipped:
        _same_store(zipped, vcfzarr_sql.open_store(path))


def test_zip_written_by_zarr_zipstore(bio2zarr_store, tmp_path):
    path = bio2zarr_store(STORE_FILES[0], 2)
    target = zarr.storage.ZipStore(tmp_path / "z.zip", mode="w")
    source = zarr.open_group(str(path), mode="r")
    dest = zarr.open_group(target, mode="w", zarr_format=2, attributes=dict(source.attrs))
    for name, array in source.arrays():
        extra: dict[str, Any] = {"filters": array.filters} if array.dtype == object else {}
        dest.create_array(
            name, data=zarr_values(array), chunks=array.chunks, attributes=dict(array.attrs),
            **extra,
        )
    target.close()
    _same_store(vcfzarr_sql.open_store(tmp_path / "z.zip"), vcfzarr_sql.open_store(path))


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_memory_url(bio2zarr_store, zarr_format):
    fsspec = pytest.importorskip("fsspec", reason="fsspec (test extra) is needed for URLs")
    path = bio2zarr_store(STORE_FILES[1], zarr_format)
    fs = fsspec.filesystem("memory")
    root = f"/store-v{zarr_format}.vcz"
    for f in path.rglob("*"):
        if f.is_file():
            fs.pipe(f"{root}/{f.relative_to(path)}", f.read_bytes())
    _same_store(vcfzarr_sql.open_store(f"memory://{root}"), vcfzarr_sql.open_store(path))


def test_file_url(bio2zarr_store):
    pytest.importorskip("fsspec", reason="fsspec (test extra) is needed for URLs")
    path = bio2zarr_store(STORE_FILES[0], 3)
    _same_store(vcfzarr_sql.open_store(path.as_uri()), vcfzarr_sql.open_store(path))


# -- errors ----------------------------------------------------------------------------------


def _one_line_naming(err: pytest.ExceptionInfo, path) -> str:
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    return message


def test_missing_path(tmp_path):
    with pytest.raises(StoreError) as err:
        vcfzarr_sql.open_store(tmp_path / "nope.vcz")
    assert "no such file or directory" in _one_line_naming(err, tmp_path / "nope.vcz")


def test_missing_url():
    pytest.importorskip("fsspec", reason="fsspec (test extra) is needed for URLs")
    with pytest.raises(StoreError, match="memory://nothing-here.vcz: no such file"):
        vcfzarr_sql.open_store("memory://nothing-here.vcz")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "not a Zarr store"),
        (lambda p: p.write_text("x"), "not a Zarr store"),
        (lambda p: zarr.open_group(str(p), mode="w", zarr_format=2), "without vcf_zarr_version"),
        (lambda p: zarr.open_group(str(p), mode="w", zarr_format=3), "without vcf_zarr_version"),
        (lambda p: zarr.open_group(str(p), mode="w", attributes={"vcf_zarr_version": "9.9"}),
         "VCF Zarr version 9.9 is not supported"),
        (lambda p: zarr.open_group(str(p), mode="w", attributes={"vcf_zarr_version": "0.3"}),
         "no variant_contig array"),
        (lambda p: zarr.create_array(str(p), shape=(2,), dtype="i4", zarr_format=2),
         "a Zarr array, not a VCF Zarr store"),
        (lambda p: zarr.create_array(str(p), shape=(2,), dtype="i4", zarr_format=3),
         "a Zarr array, not a VCF Zarr store"),
    ],
    ids=["empty-dir", "text-file", "v2-group", "v3-group", "version", "no-arrays", "v2-array",
         "v3-array"],
)
def test_not_a_vcf_zarr_store(tmp_path, make, message):
    path = tmp_path / "bad.vcz"
    make(path)
    with pytest.raises(StoreError) as err:
        vcfzarr_sql.open_store(path)
    assert message in _one_line_naming(err, path)


def test_differently_chunked_variant_arrays_are_an_error(bio2zarr_store, tmp_path):
    path = copy_store(bio2zarr_store(STORE_FILES[0], 2), tmp_path / "s")
    meta = json.loads((path / "variant_DP" / ".zarray").read_text())
    meta["chunks"] = [4]
    (path / "variant_DP" / ".zarray").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match="chunked differently"):
        vcfzarr_sql.open_store(path)


# -- our own converter -------------------------------------------------------------------------


def test_store_written_by_our_converter(convert_once, tmp_path):
    relpath = STORE_FILES[0]
    out = convert_once(CORPUS / relpath, variants_chunk_size=4, samples_chunk_size=2)
    store = vcfzarr_sql.open_store(out)
    header = oracle.header(CORPUS / relpath)
    assert store.version == spec.WRITE_VERSION and store.zarr_format == 2
    assert store.samples.tolist() == header.samples
    assert list(zip(store.filters, store.filter_descriptions)) == header.filters
    for fields, declared in _fields_and_header(store, header):
        for name, field in fields.items():
            want = declared[name]
            assert (field.number, field.vcf_type) == (want.number, want.vcf_type), name
    for name in store.array_names:
        assert_chunks_match_zarr(store, out, name)
    written = store.region_index
    rebuilt = vcfzarr_sql.open_store(copy_store(out, tmp_path / "copy", drop=(spec.REGION_INDEX,)))
    assert np.array_equal(rebuilt.region_index, build_region_index(store))
    assert np.array_equal(rebuilt.region_index, written)
