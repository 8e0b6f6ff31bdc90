"""Chunk decoding against bcftools: every column of every chunk of stores of corpus files.

Stores are written by our converter and by bio2zarr, with tiny chunks (5 variants x 2 samples)
so that every file spans several variant and sample chunks; decoded batches, concatenated,
must equal the oracle (bcftools).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

import duckdb
import numpy as np
import oracle
import pyarrow as pa
import pytest
import zarr
from corpus import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from store_support import zarr_array, zarr_values

from vcfzarr_sql.format.spec import (
    FLOAT32_FILL_BITS,
    FLOAT32_MISSING_BITS,
    FLOAT64_FILL_BITS,
    FLOAT64_MISSING_BITS,
)
from vcfzarr_sql.query import arrays, schema
from vcfzarr_sql.query.decode import decode_calls, decode_variants
from vcfzarr_sql.store import open_store

CHUNKS = {"variants_chunk_size": 5, "samples_chunk_size": 2}
BIO2ZARR_DATA = "sgkit-dev+bio2zarr/tests/data/vcf/"
FILES = {
    "field_type_combos": BIO2ZARR_DATA + "field_type_combos.vcf.gz",
    "sample": BIO2ZARR_DATA + "sample.vcf.gz",
    "mixed_ploidy": BIO2ZARR_DATA + "mixed_ploidy.vcf.gz",
    "1kg_chrM": BIO2ZARR_DATA + "1kg_2020_chrM.vcf.gz",
    "missing": "samtools+bcftools/test/missing.vcf",
    "vcf_file": "samtools+htslib/test/tabix/vcf_file.vcf",
}
OURS, BIO2ZARR, BIO2ZARR_V3 = "ours", "bio2zarr", "bio2zarr-v3"
#: (writer, file name); bio2zarr reads a multi-contig file only when it is indexed, so it
#: skips the plain-text vcf_file.vcf.
CASES = (
    [(OURS, name) for name in FILES]
    + [(BIO2ZARR, n) for n in FILES if n != "vcf_file"]
    + [(BIO2ZARR_V3, "sample"), (BIO2ZARR_V3, "field_type_combos")]
)


@pytest.fixture(scope="session")
def store_of(convert_once, bio2zarr_once):
    """``store_of(writer, name) -> (VCF path, opened store)`` with small chunks."""

    def get(writer: str, name: str, **chunks: int) -> tuple[str, object]:
        vcf = CORPUS / FILES[name]
        chunks = chunks or CHUNKS
        if writer == OURS:
            path = convert_once(vcf, **chunks)
        else:
            path = bio2zarr_once(vcf, zarr_format=3 if writer == BIO2ZARR_V3 else 2, **chunks)
        return str(vcf), open_store(path)

    return get


def all_variants(store, columns, samples=None, split: int | None = None, chunks: int | None = None) -> pa.Table:
    """Every chunk's batch (the first ``chunks``: None, all); with ``split``, each chunk
    decoded as two batches of its records, before record ``split`` and from it
    (``decode_variants(rows=...)``)."""
    count = store.num_variant_chunks if chunks is None else min(chunks, store.num_variant_chunks)
    if split is None:
        return pa.Table.from_batches([decode_variants(store, c, columns, samples) for c in range(count)])
    batches = []
    for c in range(count):
        records = min(store.variants_chunk_size, store.num_variants - c * store.variants_chunk_size)
        cut = min(split, records)
        batches += [decode_variants(store, c, columns, samples, rows=slice(0, cut)),
                    decode_variants(store, c, columns, samples, rows=slice(cut, records))]
    return pa.Table.from_batches(batches)


def all_calls(store, columns, samples=None) -> dict[tuple[int, int], dict]:
    """Rows of every (variant chunk, sample chunk) batch, keyed by (record, sample index)."""
    rows = {}
    for c in range(store.num_variant_chunks):
        for sc in range(store.num_sample_chunks):
            batch = decode_calls(store, c, sc, columns, samples)
            lo = sc * store.samples_chunk_size
            hi = min(lo + store.samples_chunk_size, store.num_samples)
            in_chunk = [s for s in range(lo, hi) if samples is None or s in samples]
            first = c * store.variants_chunk_size
            for r, row in enumerate(batch.to_pylist()):
                rows[first + r // len(in_chunk), in_chunk[r % len(in_chunk)]] = row
    return rows


def same_value(expected, actual) -> bool:
    """Equal as bcftools prints it: floats at float32 precision, lists element by element."""
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(same_value, expected, actual))
    if isinstance(expected, float) or isinstance(actual, float):
        return oracle.float_equal(expected, actual)
    return expected == actual


def bio2zarr_padded(expected, actual) -> bool:
    """bio2zarr pads a call's Float vector shorter than the record's longest with missing
    where htslib has end-of-vector (bcftools prints ``-20,-5,-20``, bio2zarr stores
    ``-20,-5,-20,.,.,.``)."""
    if not (isinstance(expected, list) and isinstance(actual, list)):
        return False
    tail = actual[len(expected) :]
    return bool(tail) and all(a is None for a in tail) and same_value(
        expected, actual[: len(expected)]
    )


def genotype(gt: oracle.Genotype | None) -> list | None:
    return None if gt is None else list(gt.alleles)


def allele(gt: oracle.Genotype | None, k: int) -> int | None:
    """Allele ``k`` (1-based) of bcftools' genotype: None when missing or absent."""
    return gt.alleles[k - 1] if gt is not None and len(gt.alleles) >= k else None


def allele_columns(store) -> dict[str, int]:
    """``fmt_GT_<k>`` -> k for the store's allele columns."""
    derived = schema.genotype_columns(store.format_fields)
    return {name: index + 1 for name, index in derived.items() if index is not None}


def compared_fields(fields: dict, declared: dict, writer: str) -> list:
    """The store's fields that bcftools knows: all of them for our converter (bio2zarr drops
    fields the header does not declare)."""
    if writer == OURS:
        assert set(fields) == set(declared)
    return [f for name, f in fields.items() if name in declared]


def unspelled(expected, actual, writer: str) -> bool:
    """A vector written ``.,.`` (bcftools prints ``.,.``) that bio2zarr stores as it stores
    ``.``, so that it decodes as NULL (``VczStore.spells_missing_vectors``)."""
    return (writer != OURS and actual is None and isinstance(expected, list)
            and all(e is None for e in expected))


def same_call_value(expected, actual, field, writer: str) -> bool:
    if writer != OURS and field.vcf_type == "Float" and bio2zarr_padded(expected, actual):
        return True
    return same_value(expected, actual) or unspelled(expected, actual, writer)


def assert_variants_match_bcftools(vcf: str, store, writer: str) -> None:
    """Every column of every variants batch of ``store`` equals bcftools' view of ``vcf``;
    so do batches of part of a chunk's records (a region's edge chunk: :func:`all_variants`
    with ``split``, over the first three chunks, all columns but the ``gt_`` ones, which count
    whole chunks)."""
    header = oracle.header(vcf)
    columns = schema.variants_schema(store).names
    table = all_variants(store, columns)
    rows = table.to_pylist()
    per_record = [c for c in columns if not c.startswith("gt_")]
    parts = all_variants(store, per_record, split=2, chunks=3)
    for name in per_record:
        assert parts.column(name).to_pylist() == table.column(name).to_pylist()[: len(parts)], name
    records = oracle.records(vcf)
    calls = oracle.calls(vcf, list(store.format_fields))
    assert len(rows) == len(records)
    info = compared_fields(store.info_fields, header.info, writer)
    fmt = compared_fields(store.format_fields, header.format, writer)
    for v, (rec, row) in enumerate(zip(records, rows)):
        where = f"record {v} ({rec.chrom}:{rec.pos})"
        assert (row["contig"], row["pos"], row["end"]) == (rec.chrom, rec.pos, rec.end), where
        assert (row["id"], row["ref"], row["alt"]) == (rec.id, rec.ref, rec.alt), where
        assert oracle.float_equal(rec.qual, row["qual"]), where
        assert row["filters"] == rec.filters, where
        for f in info:
            expected = rec.info[f.name]
            actual = row["info_" + f.name]
            assert same_value(expected, actual) or unspelled(expected, actual, writer), (where, f.name)
        for f in fmt:
            values = row["fmt_" + f.name]
            assert len(values) == store.num_samples
            for s, value in enumerate(values):
                expected = calls[v][s][f.name]
                if f.name == schema.GT:
                    assert value == genotype(expected), (where, s)
                    for column, k in allele_columns(store).items():
                        assert row[column][s] == allele(expected, k), (where, s, column)
                else:
                    assert same_call_value(expected, value, f, writer), (where, s, f.name)


@pytest.mark.parametrize(("writer", "name"), CASES)
def test_variant_columns_match_bcftools(store_of, writer, name):
    vcf, store = store_of(writer, name)
    assert_variants_match_bcftools(vcf, store, writer)


def restyle(path, name: str, values: np.ndarray) -> None:
    """Rewrite array ``name`` of the Zarr v2 store ``path`` with ``values`` (another dtype)."""
    group = zarr.open_group(path, mode="a", zarr_format=2)
    old = zarr_array(group, name)
    attrs, chunks = dict(old.attrs), old.chunks
    del group[name]
    new = group.create_array(name, shape=values.shape, dtype=values.dtype, chunks=chunks,
                             fill_value=None, compressors=None)
    new[...] = values
    new.attrs.update(attrs)


def as_float64(values: np.ndarray) -> np.ndarray:
    """float32 values as float64, sentinels mapped to the spec's float64 bit patterns."""
    bits = values.view(np.uint32)
    wide = values.astype(np.float64)
    wide.view(np.uint64)[bits == FLOAT32_MISSING_BITS] = FLOAT64_MISSING_BITS
    wide.view(np.uint64)[bits == FLOAT32_FILL_BITS] = FLOAT64_FILL_BITS
    return wide


def test_other_writers_dtypes_decode_the_same(store_of, tmp_path):
    """float64 (with the float64 sentinels), big-endian ints and |S1 characters (spec 0.3)."""
    vcf, store = store_of(OURS, "field_type_combos")
    copy = tmp_path / "restyled.zarr"
    shutil.copytree(store.path, copy)
    group = zarr.open_group(copy, mode="r")
    for name in ("variant_IF1", "variant_IFA", "call_FFR", "variant_quality"):
        restyle(copy, name, as_float64(zarr_values(zarr_array(group, name))).astype(">f8"))
    for name in ("variant_II1", "call_FIA", "variant_position"):
        restyle(copy, name, zarr_values(zarr_array(group, name)).astype(">i4"))
    for name in ("variant_IC1", "call_FCA"):
        restyle(copy, name, zarr_values(zarr_array(group, name)).astype("S1"))
    zarr.consolidate_metadata(copy, zarr_format=2)
    store = open_store(copy)
    assert store.info_fields["IF1"].dtype == np.dtype(">f8")
    assert store.info_fields["IC1"].dtype == np.dtype("S1")
    assert_variants_match_bcftools(vcf, store, OURS)


def phased_comparable(gt: oracle.Genotype | None, writer: str) -> bool:
    """bio2zarr marks haploid calls phased; bcftools has no separator to say so."""
    return gt is not None and (writer == OURS or len(gt.alleles) > 1)


@pytest.mark.parametrize(
    ("writer", "name"), [c for c in CASES if c[1] in ("sample", "mixed_ploidy", "missing")]
)
def test_genotype_phasing_matches_bcftools(store_of, writer, name):
    vcf, store = store_of(writer, name)
    rows = all_variants(store, ["fmt_GT_phased"]).column(0).to_pylist()
    calls = oracle.calls(vcf, ["GT"])
    checked = 0
    for v, phased in enumerate(rows):
        for s, call in enumerate(calls[v]):
            if phased_comparable(call["GT"], writer):
                assert phased[s] == call["GT"].phased, (v, s)
                checked += 1
    assert checked > 0


@pytest.mark.parametrize(("writer", "name"), CASES)
def test_call_rows_match_bcftools(store_of, writer, name):
    vcf, store = store_of(writer, name)
    header = oracle.header(vcf)
    columns = schema.calls_schema(store).names
    rows = all_calls(store, columns)
    variant_columns = [c for c in columns if c != schema.SAMPLE_ID and not c.startswith("fmt_")]
    variants = all_variants(store, variant_columns)
    calls = oracle.calls(vcf, list(store.format_fields))
    assert len(rows) == store.num_variants * store.num_samples
    fmt = compared_fields(store.format_fields, header.format, writer)
    for (v, s), row in rows.items():
        where = f"record {v}, sample {s}"
        assert row["sample_id"] == header.samples[s], where
        for column, value in variants.slice(v, 1).to_pylist()[0].items():
            assert row[column] == value, (where, column)
        for f in fmt:
            expected = calls[v][s][f.name]
            value = row["fmt_" + f.name]
            if f.name == schema.GT:
                assert value == genotype(expected), where
                for column, k in allele_columns(store).items():
                    assert row[column] == allele(expected, k), (where, column)
                if phased_comparable(expected, writer):
                    assert row["fmt_GT_phased"] == expected.phased, where
            else:
                assert same_call_value(expected, value, f, writer), (where, f.name)


def test_sample_subsets_match_bcftools(store_of):
    vcf, store = store_of(OURS, "sample")
    keep = np.array([0, 2])
    names = [oracle.header(vcf).samples[s] for s in keep]
    expected = oracle.calls(vcf, ["GT", "HQ"], samples=names)
    variants = all_variants(store, ["fmt_GT", "fmt_HQ"], keep).to_pylist()
    calls = all_calls(store, ["sample_id", "fmt_GT", "fmt_HQ"], keep)
    assert len(calls) == store.num_variants * len(keep)
    for v, row in enumerate(variants):
        assert row["fmt_GT"] == [genotype(c["GT"]) for c in expected[v]], v
        assert row["fmt_HQ"] == [c["HQ"] for c in expected[v]], v
        for s, call in zip(keep, expected[v]):
            assert calls[v, s]["fmt_GT"] == genotype(call["GT"]), (v, s)
            assert calls[v, s]["sample_id"] == names[list(keep).index(s)]


class CountingSource:
    """A store wrapper like the scan's: remembers what it read and what it returned."""

    def __init__(self, store):
        self.store = store
        self.read: list[tuple[str, tuple[int, ...]]] = []
        self.returned: dict[str, np.ndarray] = {}

    def read_chunk(self, name, chunk):
        self.read.append((name, chunk))
        self.returned[name] = self.store.read_chunk(name, chunk)
        return self.returned[name]

    def read_chunk_strings(self, name, chunk):
        self.read.append((name, chunk))
        return self.store.read_chunk_strings(name, chunk)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_reads_only_the_arrays_the_columns_need(store_of):
    store = store_of(OURS, "sample")[1]
    source = CountingSource(store)
    decode_variants(source, 1, ["ref", "alt"])
    assert source.read == [("variant_allele", (1, 0))]
    source = CountingSource(store)
    decode_calls(source, 1, 1, ["fmt_DP", "pos"])
    assert source.read == [("call_DP", (1, 1)), ("variant_position", (1,))]
    source = CountingSource(store)
    decode_variants(source, 0, ["fmt_GT"], samples=np.array([2]))
    assert source.read == [("call_genotype", (0, 1, 0))]


@pytest.mark.parametrize("writer", [OURS, BIO2ZARR])
def test_batches_carry_the_schema_types_in_the_requested_order(store_of, writer):
    store = store_of(writer, "field_type_combos")[1]
    cases: list[tuple[pa.Schema, Callable[..., pa.RecordBatch], tuple[int, ...]]] = [
        (schema.variants_schema(store), decode_variants, (1,)),
        (schema.calls_schema(store), decode_calls, (1, 0)),
    ]
    for table, decode, args in cases:
        columns = table.names[::-1]
        batch = decode(store, *args, columns)
        assert batch.schema == pa.schema([table.field(c) for c in columns])  # types, order


@pytest.mark.parametrize("writer", [OURS, BIO2ZARR])
def test_a_sample_chunk_without_selected_samples_has_no_rows(store_of, writer):
    store = store_of(writer, "field_type_combos")[1]  # 2 samples: one sample chunk
    table = schema.calls_schema(store)
    batch = decode_calls(store, 0, 0, table.names, samples=np.array([], dtype=np.int64))
    assert batch.num_rows == 0
    assert batch.schema == table
    none = np.array([], dtype=np.int64)
    batch = decode_variants(store, 0, ["fmt_FI2", "fmt_FS2"], samples=none)
    assert batch.column("fmt_FI2").to_pylist() == [[]] * 5 == batch.column("fmt_FS2").to_pylist()


def test_no_columns_still_counts_rows(store_of):
    store = store_of(OURS, "sample")[1]  # 9 records, 3 samples
    assert [decode_variants(store, c, []).num_rows for c in range(2)] == [5, 4]
    assert decode_calls(store, 1, 1, []).num_rows == 4
    assert decode_calls(store, 1, 0, [], samples=np.array([1, 2])).num_rows == 4


def test_numbers_are_zero_copy_when_stored_as_their_arrow_type(store_of):
    store = store_of(BIO2ZARR, "sample")[1]  # genotypes stored as int8
    source = CountingSource(store)  # chunk 0: all diploid, so genotypes need no trimming
    batch = decode_calls(source, 0, 0, ["fmt_GT", "qual"])
    genotypes = source.returned["call_genotype"]
    assert genotypes.dtype == np.int8
    assert batch.column("fmt_GT").values.buffers()[1].address == genotypes.ctypes.data
    batch = decode_variants(source, 0, ["qual"])
    quality = source.returned["variant_quality"]
    assert batch.column("qual").buffers()[1].address == quality.ctypes.data


@pytest.mark.parametrize("name", ["field_type_combos", "sample"])
def test_duckdb_reads_the_batches(store_of, name):
    store = store_of(OURS, name)[1]
    variants = all_variants(store, schema.variants_schema(store).names)
    calls = pa.Table.from_batches(
        [
            decode_calls(store, c, s, schema.calls_schema(store).names)
            for c in range(store.num_variant_chunks)
            for s in range(store.num_sample_chunks)
        ]
    )
    for tbl in (variants, calls):
        relation = duckdb.sql("select * from tbl")
        assert relation is not None
        got = relation.fetchall()
        expected = [tuple(row.values()) for row in tbl.to_pylist()]
        assert len(got) == len(expected) == tbl.num_rows
        for g, e in zip(got, expected):
            assert same_value(list(e), list(g)), (g, e)


def test_sample_selection_reads_only_the_sample_chunks_it_needs(store_of):
    vcf, store = store_of(OURS, "sample", samples_chunk_size=1)  # 3 samples, 3 sample chunks
    source = CountingSource(store)
    batch = decode_variants(source, 0, ["fmt_GT"], samples=np.array([0, 2]))
    assert source.read == [("call_genotype", (0, 0, 0)), ("call_genotype", (0, 2, 0))]
    expected = oracle.calls(vcf, ["GT"], samples=["NA00001", "NA00003"])
    assert batch.column(0).to_pylist() == [[genotype(c["GT"]) for c in r] for r in expected]


def genotype_blocks(min_ploidy: int, lowest: int) -> st.SearchStrategy[np.ndarray]:
    """int8 genotype blocks (calls, ploidy) with values from ``lowest`` (-2: fill; -3: also
    values no writer should store) to 3."""
    return st.integers(min_ploidy, 4).flatmap(
        lambda ploidy: hnp.arrays(
            np.int8, st.tuples(st.integers(0, 40), st.just(ploidy)), elements=st.integers(lowest, 3)
        )
    )


@settings(max_examples=200, deadline=None)
@given(genotype_blocks(0, -2))
def test_genotype_fast_path_equals_the_general_lists(genotypes):
    """The genotype hot path gives exactly the lists the general sentinel handling gives."""
    fast = arrays.genotype_array(genotypes, pa.int8())
    general = arrays.list_array(genotypes, pa.int8(), arrays.NULL_IF_LONE_MISSING)
    fast.validate(full=True)
    assert fast.to_pylist() == general.to_pylist()
    assert fast.null_count == general.null_count
    assert fast.flatten().null_count == general.flatten().null_count


@settings(max_examples=200, deadline=None)
@given(genotype_blocks(1, -3))
def test_allele_columns_are_the_elements_of_the_genotype_lists(genotypes):
    """``fmt_GT_<k>`` is exactly what ``fmt_GT[k]`` gives: fill anywhere (also in malformed
    rows), missing, lone missing, shorter calls."""
    lists = arrays.list_array(genotypes, pa.int8(), arrays.NULL_IF_LONE_MISSING).to_pylist()
    for index in range(genotypes.shape[1]):
        column = arrays.allele_array(genotypes, index, pa.int8())
        column.validate(full=True)
        expected = [row[index] if row is not None and len(row) > index else None for row in lists]
        assert column.to_pylist() == expected


STRING_VALUES = st.sampled_from(["", ".", "A", "AT", "é", "..", "日本"])


def _expected_string(value: str) -> str | None:
    return None if value in (".", "") else value


def _expected_string_list(row: list[str], null_rows: str) -> list | None:
    """VCF Zarr semantics, written out: fill ("") dropped, "." a null element, and the row
    null when it holds no present value (unless ALT-like, never null)."""
    elements = [None if v == "." else v for v in row if v != ""]
    if null_rows == arrays.NULL_IF_NO_VALUE and all(e is None for e in elements):
        return None
    return elements


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(object, st.tuples(st.integers(0, 12), st.integers(1, 4)), elements=STRING_VALUES),
    st.randoms(use_true_random=False),
)
def test_string_blocks_give_the_vcf_zarr_values(values, random):
    """A StringBlock of shuffled Arrow strings (as assembled from several chunks) decodes
    to the values the VCF Zarr sentinels mean."""
    order = list(range(values.size))
    random.shuffle(order)
    strings = pa.array([values.reshape(-1)[i] for i in order], type=pa.string())
    positions = np.argsort(order).reshape(values.shape)
    block = arrays.StringBlock(strings, positions)
    rows = values.tolist()
    for null_rows in (arrays.NULL_IF_NO_VALUE, arrays.NEVER_NULL):
        got = arrays.list_array(block, pa.string(), null_rows)
        got.validate(full=True)
        assert got.to_pylist() == [_expected_string_list(r, null_rows) for r in rows]
    scalars = arrays.scalar_array(block[:, 0], pa.string())
    assert scalars.to_pylist() == [_expected_string(r[0]) for r in rows]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(STRING_VALUES, st.text(max_size=300)), min_size=2), st.data())
def test_take_strings_equals_arrow_take(values, data):
    strings = pa.array(values, type=pa.string()).slice(1)  # (an offset into the buffers)
    indexes = st.lists(st.integers(0, len(strings) - 1), max_size=20)
    positions = np.array(data.draw(indexes), dtype=np.int64)
    got = arrays.take_strings(strings, positions)
    got.validate(full=True)
    assert got.to_pylist() == strings.take(positions).to_pylist()
