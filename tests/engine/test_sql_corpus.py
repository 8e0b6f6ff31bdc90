"""SQL over every corpus file bcftools reads equals bcftools' view of it (tests/oracle.py).

Each file is converted once per session with tiny chunks (7 variants x 2 samples; about 100 x 3
chunks for the few large files) so queries cross chunk boundaries and pruning is visible.
For each file:

- ``vcf_zarr``: the fixed columns and every INFO column equal ``oracle.records()``;
- ``vcf_zarr_calls``: GT, phasing and every FORMAT column equal ``oracle.calls()`` (for large
  files: all samples' GT against ``oracle.genotype_arrays()``, every field for two samples);
- ``WHERE contig = c AND pos BETWEEN a AND b`` equals ``bcftools -t c:a-b`` and
  ``region := 'c:a-b'`` equals ``bcftools -r c:a-b``, and ``last_stats`` shows that exactly the
  chunks whose region-index rows can match were read (computed here from bcftools' records).

Files that pysam's bcftools rejects (MANIFEST.tsv was made with bcftools 1.16) are skipped, as
is ``region :=`` on a file htslib cannot index (bcftools -r needs an index).
"""

from __future__ import annotations

import math
from typing import Any

import engine_cases
import numpy as np
import oracle
import pyarrow as pa
import pytest
from corpus import readable_corpus

import vcfzarr_sql
from vcfzarr_sql.format import spec

#: above this many calls, FORMAT fields are compared for SUBSET_SAMPLES samples only
MAX_FULL_CALLS = 50_000
SUBSET_SAMPLES = 2

FILES = readable_corpus()


def _chunking(corpus_file) -> tuple[int, int]:
    """(variants, samples) chunk sizes: tiny, but at most ~100 x 3 chunks for large files."""
    store = engine_cases.corpus_store(corpus_file)
    return store.variants_chunk, store.samples_chunk


@pytest.fixture(scope="session")
def stores(convert_once):
    """corpus file -> store path, converted on first use (shared with tests/engine_cases.py's)."""

    def get(corpus_file) -> str:
        return engine_cases.converted_corpus_file(corpus_file, convert_once)

    return get


@pytest.fixture(scope="module")
def con():
    with vcfzarr_sql.connect() as connection:
        yield connection


def _header(path: str):
    """bcftools' header; skips files that pysam's bcftools (newer than the MANIFEST's) rejects."""
    try:
        oracle.records(path)
    except oracle.BcftoolsError as err:
        pytest.skip(f"pysam's bcftools rejects this file (the converter does too): {err}")
    return oracle.header(path)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _same(expected: oracle.Value, actual: Any, vcf_type: str) -> bool:
    """Equal values; floats at bcftools' printed precision; lists element-wise."""
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            _same(e, a, vcf_type) for e, a in zip(expected, actual)
        )
    if vcf_type == "Float" and not isinstance(expected, (list, str)):
        return oracle.float_equal(expected, actual)
    return expected == actual


def _columns(table: pa.Table) -> dict[str, list]:
    return {name: table.column(name).to_pylist() for name in table.column_names}


def _field_columns(con, store: str, category: str) -> dict[str, str]:
    """VCF name -> column of the store's INFO or FORMAT fields, as ``vcf_zarr_fields`` says
    (``info_<Name>``, but fields whose IDs differ only in case get distinct names)."""
    sql = f"SELECT name, \"column\" FROM vcf_zarr_fields({_literal(store)}) WHERE category = ?"
    return dict(con.execute(sql, [category]).fetchall())


def _by_field(rows: dict[str, list], columns: dict[str, str], prefix: str) -> dict[str, list]:
    """``rows`` with each field's values also under ``prefix`` + its VCF name."""
    return {**rows, **{prefix + name: rows[column] for name, column in columns.items() if column in rows}}


def _variant_rows(con, store: str, header, where: str = "", region: str | None = None) -> dict[str, list]:
    columns = _field_columns(con, store, "INFO")
    info = "".join(f", {_quote(columns[name])}" for name in header.info)
    args = _literal(store) + (f", region := {_literal(region)}" if region is not None else "")
    sql = f"SELECT contig, pos, id, ref, alt, qual, filters{info} FROM vcf_zarr({args}) {where}"
    return _by_field(_columns(con.sql(sql).to_arrow_table()), columns, "info_")


def _assert_records_equal(rows: dict[str, list], records, header) -> None:
    assert len(rows["pos"]) == len(records)
    assert rows["contig"] == [r.chrom for r in records]
    assert rows["pos"] == [r.pos for r in records]
    assert rows["id"] == [r.id for r in records]
    assert rows["ref"] == [r.ref for r in records]
    assert rows["alt"] == [r.alt for r in records]
    assert all(oracle.float_equal(r.qual, q) for r, q in zip(records, rows["qual"])), "qual"
    assert rows["filters"] == [r.filters for r in records]
    for name, field in header.info.items():
        column = rows["info_" + name]
        bad = [
            (r.chrom, r.pos, r.info[name], value)
            for r, value in zip(records, column)
            if not _same(r.info[name], value, field.vcf_type)
        ]
        assert not bad, f"INFO/{name}: first differences (chrom, pos, bcftools, ours): {bad[:3]}"


@pytest.mark.parametrize("corpus_file", FILES, ids=[f.id for f in FILES])
def test_variants(con, stores, corpus_file) -> None:
    path = str(corpus_file.path)
    header = _header(path)
    rows = _variant_rows(con, stores(corpus_file), header)
    _assert_records_equal(rows, oracle.records(path), header)


def _expected_genotype(gt) -> tuple[list | None, bool | None]:
    return (None, None) if gt is None else (list(gt.alleles), gt.phased)


def _expected_alleles(gt, slots: int) -> list[int | None]:
    """``fmt_GT_1`` ... ``fmt_GT_<slots>`` of bcftools' genotype: each allele, None past the end."""
    alleles = [] if gt is None else list(gt.alleles)
    return (alleles + [None] * slots)[:slots]


def _call_rows(con, store: str, header, samples: list[str] | None) -> dict[str, list]:
    columns = _field_columns(con, store, "FORMAT")
    fields = "".join(f", {_quote(columns[name])}" for name in header.format if name != "GT")
    gt = ", fmt_GT, fmt_GT_phased, COLUMNS('^fmt_GT_[0-9]+$')" if "GT" in header.format else ""
    args = _literal(store)
    if samples is not None:
        args += ", samples := [" + ", ".join(_literal(s) for s in samples) + "]"
    sql = f"SELECT contig, pos, sample_id{gt}{fields} FROM vcf_zarr_calls({args})"
    return _by_field(_columns(con.sql(sql).to_arrow_table()), columns, "fmt_")


def _sample_major(rows: dict[str, list], names: list[str]) -> dict[str, list]:
    """Rows stably sorted by sample: each sample's calls in record order.

    The calls table streams (variant chunk, sample chunk) blocks, so rows are variant-major
    only within a sample chunk.
    """
    rank = {name: k for k, name in enumerate(names)}
    order = sorted(range(len(rows["sample_id"])), key=lambda k: rank[rows["sample_id"][k]])
    return {column: [values[k] for k in order] for column, values in rows.items()}


def _assert_calls_equal(rows, path: str, header, samples: list[str] | None) -> None:
    names = samples if samples is not None else header.samples
    records = oracle.records(path)
    expected = oracle.calls(path, tuple(header.format), samples=samples)
    assert len(rows["pos"]) == len(records) * len(names)
    rows = _sample_major(rows, names)
    assert rows["sample_id"] == [name for name in names for _ in records]
    assert rows["pos"] == [r.pos for _ in names for r in records]
    flat = [record[s] for s in range(len(names)) for record in expected]
    for name, field in header.format.items():
        if name == "GT":
            alleles = sorted((c for c in rows if c.startswith("fmt_GT_") and c[7:].isdigit()), key=len)
            assert alleles, "no allele columns fmt_GT_1 ..."
            ours = list(zip(rows["fmt_GT"], rows["fmt_GT_phased"], zip(*(rows[c] for c in alleles))))
            bad = [
                (k, call["GT"], got)
                for k, (call, got) in enumerate(zip(flat, ours))
                if _expected_genotype(call["GT"])[0] != got[0]
                or (call["GT"] is not None and call["GT"].phased != got[1])
                or list(got[2]) != _expected_alleles(call["GT"], len(alleles))
            ]
        else:
            column = rows["fmt_" + name]
            bad = [
                (k, call[name], got)
                for k, (call, got) in enumerate(zip(flat, column))
                if not _same(call[name], got, field.vcf_type)
            ]
        assert not bad, f"FORMAT/{name}: first differences (call, bcftools, ours): {bad[:3]}"


def _assert_all_genotypes_equal(con, store: str, path: str) -> None:
    """Every call's GT, via the variants table's fmt_GT lists, against bcftools' arrays."""
    alleles, phased = oracle.genotype_arrays(path)
    table = con.sql(f"SELECT fmt_GT, fmt_GT_phased FROM vcf_zarr({_literal(store)})").to_arrow_table()
    calls = table.column("fmt_GT").combine_chunks().flatten()  # one list per call
    lone_missing = (alleles[..., 0] == spec.INT_MISSING) & (
        (alleles.shape[-1] == 1) | (alleles[..., 1:] == spec.INT_FILL).all(axis=-1)
    )
    # a lone '.' is NULL; every other call lists its alleles up to the padding
    assert np.array_equal(np.asarray(calls.is_null()), lone_missing.reshape(-1))
    lengths = (alleles != spec.INT_FILL).sum(axis=-1).reshape(-1)
    present = ~lone_missing.reshape(-1)
    got_lengths = np.asarray(calls.value_lengths().fill_null(0))
    assert np.array_equal(got_lengths[present], lengths[present])
    values = calls.filter(pa.array(present)).flatten()
    expected_values = alleles.reshape(-1, alleles.shape[-1])[present]
    expected_values = expected_values[expected_values != spec.INT_FILL]
    got = np.asarray(values.fill_null(spec.INT_MISSING)).astype(np.int64)
    assert np.array_equal(got, expected_values)
    got_phased = np.asarray(table.column("fmt_GT_phased").combine_chunks().flatten())
    assert np.array_equal(got_phased[present], phased.reshape(-1)[present])


@pytest.mark.parametrize("corpus_file", FILES, ids=[f.id for f in FILES])
def test_calls(con, stores, corpus_file) -> None:
    path = str(corpus_file.path)
    header = _header(path)
    store = stores(corpus_file)
    n_calls = len(oracle.records(path)) * len(header.samples)
    if n_calls <= MAX_FULL_CALLS:
        _assert_calls_equal(_call_rows(con, store, header, None), path, header, None)
        return
    if "GT" in header.format:
        _assert_all_genotypes_equal(con, store, path)
    subset = header.samples[-1:] + header.samples[:SUBSET_SAMPLES - 1]  # out of store order
    _assert_calls_equal(_call_rows(con, store, header, subset), path, header, subset)


#: The guide's per-sample and per-record genotype counts (docs/guide.md, "The allele columns").
SAMPLE_COUNTS_SQL = """
SELECT sample_id,
       count(*) FILTER (WHERE fmt_GT_1 IS NULL AND fmt_GT_2 IS NULL) AS missing,
       count(*) FILTER (WHERE fmt_GT_1 <> fmt_GT_2)                AS het
FROM vcf_zarr_calls({store})
GROUP BY sample_id ORDER BY sample_id
"""
RECORD_COUNTS_SQL = """
SELECT contig, pos,
       len(list_filter(fmt_GT_1, lambda a: a > 0))
         + len(list_filter(fmt_GT_2, lambda a: a > 0)) AS ac,
       list_count(fmt_GT_1) + list_count(fmt_GT_2)     AS an
FROM vcf_zarr({store})
"""

GT_FILES = [f for f in FILES if f.records and f.samples]


@pytest.mark.parametrize("corpus_file", GT_FILES, ids=[f.id for f in GT_FILES])
def test_the_guides_genotype_counts_match_bcftools(con, stores, corpus_file) -> None:
    """Missing and heterozygous calls per sample, AC and AN per record, from the first two
    allele columns, as bcftools' genotypes give them: half-missing, haploid and mixed-ploidy
    calls included."""
    path = str(corpus_file.path)
    header = _header(path)
    genotypes, _ = oracle.genotype_arrays(path)
    if "GT" not in header.format or genotypes.shape[-1] < 2:
        pytest.skip("no diploid GT")
    store = _literal(stores(corpus_file))
    first, second = genotypes[..., 0], genotypes[..., 1]
    missing = ((first < 0) & (second < 0)).sum(axis=0)
    het = ((first >= 0) & (second >= 0) & (first != second)).sum(axis=0)
    expected = [(s, int(m), int(h)) for s, m, h in zip(header.samples, missing, het)]
    assert sorted(con.sql(SAMPLE_COUNTS_SQL.format(store=store)).fetchall()) == sorted(expected)
    pair = genotypes[..., :2]
    records = oracle.records(path)
    expected_counts = [
        (r.chrom, r.pos, int((calls > 0).sum()), int((calls >= 0).sum()))
        for r, calls in zip(records, pair)
    ]
    assert sorted(con.sql(RECORD_COUNTS_SQL.format(store=store)).fetchall()) == sorted(expected_counts)


# ---------------------------------------------------------------------------------------------
# Regions (bcftools -r, overlap) and positions (bcftools -t), with the chunks read


def _queries(records) -> list[tuple[str, int, int]]:
    """(contig, start, end) intervals: the middle third of the first and of the last contig."""
    contigs = list(dict.fromkeys(r.chrom for r in records))
    out = []
    for contig in dict.fromkeys([contigs[0], contigs[-1]]):
        positions = sorted(r.pos for r in records if r.chrom == contig)
        lo, hi = positions[len(positions) // 3], positions[(2 * len(positions)) // 3]
        out.append((contig, max(lo, 1), max(hi, 1)))  # regions are 1-based (POS 0 exists)
    return out


REGION_FILES = [f for f in FILES if f.records]


def _targets(path: str, region: str) -> list:
    """``bcftools -t`` records, less those with POS 0: bcftools puts them in every interval of
    their contig (htslib keeps POS 0 as -1), where ``pos BETWEEN a AND b`` rightly has none."""
    return [r for r in oracle.records(path, targets=region) if r.pos >= 1]


def _regions(path: str, region: str) -> list:
    try:
        return oracle.records(path, region=region)
    except OSError as err:  # bcftools -r needs an index
        pytest.skip(f"htslib cannot index this file, so bcftools -r cannot read it: {err}")


@pytest.mark.parametrize("overlap", [False, True], ids=["where-pos-like-t", "region-like-r"])
@pytest.mark.parametrize("corpus_file", REGION_FILES, ids=[f.id for f in REGION_FILES])
def test_positions_and_regions(con, stores, corpus_file, overlap: bool) -> None:
    """``WHERE contig = c AND pos BETWEEN a AND b`` is ``bcftools view -t c:a-b``;
    ``region := 'c:a-b'`` is ``bcftools view -r c:a-b`` (overlap)."""
    path = str(corpus_file.path)
    header = _header(path)
    store = stores(corpus_file)
    records = oracle.records(path)
    chunk_size, _ = _chunking(corpus_file)
    for contig, start, end in _queries(records):
        region = engine_cases.region_string(contig, start, end)
        if overlap:
            expected_records = _regions(path, region)
            rows = _variant_rows(con, store, header, region=region)
        else:
            expected_records = _targets(path, region)
            where = f"WHERE contig = {_literal(contig)} AND pos BETWEEN {start} AND {end}"
            rows = _variant_rows(con, store, header, where=where)
        _assert_records_equal(rows, expected_records, header)
        stats = con.last_stats
        assert stats["variant_chunks_total"] == math.ceil(len(records) / chunk_size)
        expected = engine_cases.chunks_to_read(records, chunk_size, contig, start, end, overlap)
        assert stats["variant_chunks_read"] == len(expected)
