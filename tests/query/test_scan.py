"""Scanning stores through DuckDB and Polars (vcfzarr_sql.dataset): pushdown is exact and prunes.

* Differential: for random predicates, the pushed-down scan returns exactly the rows of a full
  scan filtered afterwards (a plain ``pa.Table`` through the same engine).
* Regions: rows equal bcftools ``-r`` (overlap) and ``-t`` (POS only), from tests/oracle.py, and
  the variant chunks read are exactly those whose region index rows overlap the query.
* LIMIT stops early, count(*), no columns, empty results, stores without a region_index.

Stores are written by bio2zarr with small chunks (several variant and sample chunks each).
"""

from __future__ import annotations

import gc
import shutil
import threading
from pathlib import Path

import duckdb
import numpy as np
import oracle
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from corpus import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simulate import simulated_vcf

import vcfzarr_sql
from vcfzarr_sql.errors import NotSupportedError, QueryError
from vcfzarr_sql.format import spec

#: name -> (corpus file, writer, variants chunk size, samples chunk size)
CORPUS_STORES = {
    "tabix": ("samtools+htslib/test/tabix/vcf_file.vcf", "ours", 4, 1),
    "combos": ("sgkit-dev+bio2zarr/tests/data/vcf/field_type_combos.vcf.gz", "bio2zarr", 10, 1),
    "sv": (
        (
            "broadinstitute+gatk/src/test/resources/org/broadinstitute/hellbender/tools/copynumber/"
            "gcnv-postprocess/intervals_output_SAMPLE_001.vcf.gz"
        ),
        "ours",
        16,
        1,
    ),
    "grch38": ("vcflib+vcflib/samples/grch38#chr4_10083863-10181258.vcf", "ours", 100, 20),
}
SIMULATED = "msprime"
STORE_NAMES = ["tabix", "combos", "sv", SIMULATED]


class Store:
    """A VCF (what the oracle reads) and its VCF Zarr store."""

    def __init__(self, vcf: Path, zarr: Path):
        self.vcf = str(vcf)
        self.zarr = str(zarr)
        self.store = vcfzarr_sql.open_store(self.zarr)
        self._full: dict[str, pa.Table] = {}

    def dataset(self, table: str = "variants", **kwargs) -> vcfzarr_sql.adapters.VczDataset:
        return vcfzarr_sql.dataset(self.store, table, **kwargs)

    def full(self, table: str = "variants") -> pa.Table:
        """The whole table, scanned without any filter."""
        if table not in self._full:
            self._full[table] = self.dataset(table).to_table()
        return self._full[table]


@pytest.fixture(scope="session")
def stores(tmp_path_factory, convert_once, bio2zarr_once) -> dict[str, Store]:
    made = {}
    for name, (path, writer, variants_chunk, samples_chunk) in CORPUS_STORES.items():
        vcf = CORPUS / path
        if writer == "ours":
            zarr = convert_once(vcf, variants_chunk_size=variants_chunk, samples_chunk_size=samples_chunk)
        else:
            zarr = bio2zarr_once(vcf, variants_chunk_size=variants_chunk, samples_chunk_size=samples_chunk)
        made[name] = Store(vcf, zarr)
    vcf = simulated_vcf(tmp_path_factory.mktemp("simulation"))
    made[SIMULATED] = Store(vcf, convert_once(vcf, variants_chunk_size=10, samples_chunk_size=3))
    return made


def query(sql: str, **tables) -> list[tuple]:
    """The rows of ``sql`` in a fresh DuckDB connection with ``tables`` registered by name."""
    con = duckdb.connect()
    try:
        for name, table in tables.items():
            con.register(name, table)
        return con.sql(sql).fetchall()
    finally:
        con.close()


def rows(result: list[tuple]) -> list[str]:
    """Rows as sorted reprs: SQL has no row order."""
    return sorted(map(repr, result))


# -- random predicates, rendered as SQL and as Polars expressions ------------------------------


@st.composite
def predicates(draw, store: Store, table: str):
    """A random predicate tree over the store's real values, as (SQL text, Polars expression)."""
    full = store.full(table)
    contigs = list(store.store.contigs) + ["nope"]
    positions = full["pos"].to_numpy()
    ends = full["end"].to_numpy()
    samples = list(store.store.samples) + ["zz"]
    ops = ["=", "<>", "<", "<=", ">", ">="]
    py_ops = {"=": "__eq__", "<>": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}

    def number(values):
        return int(draw(st.sampled_from(list(values)))) + draw(st.integers(-2, 2))

    info = [
        f.name for f in full.schema
        if f.name.startswith("info_") and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type))
    ]

    # the calls table's plain allele columns (fmt_GT_1, ...): integers DuckDB pushes down
    alleles = [
        f.name for f in full.schema
        if f.name.startswith("fmt_GT_") and pa.types.is_integer(f.type)
    ]

    def leaf():
        kind = draw(st.sampled_from(
            ["contig", "contig_in", "pos", "end", "pos_in", "between", "qual", "id_null", "like", "region"]
            + (["sample", "sample_in"] if table == "calls" else [])
            + (["info"] if info else [])
            + (["allele", "allele_null"] if alleles else [])
        ))
        if kind == "info":
            column, value = draw(st.sampled_from(info)), draw(st.integers(-1, 5))
            return f"{column} >= {value}", pl.col(column) >= value
        if kind == "allele":
            column, op, value = draw(st.sampled_from(alleles)), draw(st.sampled_from(ops)), draw(st.integers(-1, 3))
            return f"{column} {op} {value}", getattr(pl.col(column), py_ops[op])(value)
        if kind == "allele_null":
            column = draw(st.sampled_from(alleles))
            return f"{column} IS NULL", pl.col(column).is_null()
        if kind in ("contig", "sample"):
            column = "contig" if kind == "contig" else "sample_id"
            op, value = draw(st.sampled_from(ops)), draw(st.sampled_from(contigs if kind == "contig" else samples))
            # Polars pushes = and <> on the categorical itself; order comparisons need a cast
            target = pl.col(column) if op in ("=", "<>") else pl.col(column).cast(pl.String)
            return f"{column} {op} '{value}'", getattr(target, py_ops[op])(value)
        if kind in ("contig_in", "sample_in"):
            column = "contig" if kind == "contig_in" else "sample_id"
            values = draw(st.lists(st.sampled_from(contigs if kind == "contig_in" else samples), min_size=1, max_size=3))
            listed = ", ".join(f"'{v}'" for v in values)
            return f"{column} IN ({listed})", pl.col(column).is_in(values)
        if kind in ("pos", "end"):
            op, value = draw(st.sampled_from(ops)), number(positions if kind == "pos" else ends)
            return f'"{kind}" {op} {value}', getattr(pl.col(kind), py_ops[op])(value)
        if kind == "pos_in":
            values = [number(positions) for _ in range(draw(st.integers(1, 3)))]
            return f"pos IN ({', '.join(map(str, values))})", pl.col("pos").is_in(values)
        if kind == "between":
            lo = number(positions)
            hi = lo + draw(st.integers(0, 5000))
            return f"pos BETWEEN {lo} AND {hi}", pl.col("pos").is_between(lo, hi)
        if kind == "qual":
            value = draw(st.floats(0, 100, allow_nan=False))
            return f"qual > {value!r}", pl.col("qual") > value
        if kind == "id_null":
            return "id IS NULL", pl.col("id").is_null()
        if kind == "like":
            return "id LIKE 'rs%'", pl.col("id").cast(pl.String).str.starts_with("rs")
        # an overlap query written by hand (what region := does)
        contig, start = draw(st.sampled_from(contigs)), number(positions)
        end = start + draw(st.integers(0, 3000))
        return (
            f"(contig = '{contig}' AND pos <= {end} AND \"end\" >= {start})",
            (pl.col("contig") == contig) & (pl.col("pos") <= end) & (pl.col("end") >= start),
        )

    def tree(depth):
        if depth == 0 or draw(st.booleans()):
            return leaf()
        kind = draw(st.sampled_from(["and", "or", "not"]))
        if kind == "not":
            sql, expr = tree(depth - 1)
            return f"NOT ({sql})", ~expr
        (a_sql, a_expr), (b_sql, b_expr) = tree(depth - 1), tree(depth - 1)
        if kind == "and":
            return f"({a_sql} AND {b_sql})", a_expr & b_expr
        return f"({a_sql} OR {b_sql})", a_expr | b_expr

    return tree(3)


DIFFERENTIAL = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
VARIANT_COLUMNS = 'contig, pos, "end", id, ref, alt, qual'


@pytest.mark.parametrize("name", STORE_NAMES)
@pytest.mark.parametrize("table", ["variants", "calls"])
def test_duckdb_pushdown_equals_filtering_a_full_scan(stores, name, table):
    store = stores[name]
    ds = store.dataset(table)
    full = store.full(table)
    columns = VARIANT_COLUMNS + (", sample_id" if table == "calls" else "")

    @DIFFERENTIAL
    @given(data=st.data())
    def check(data):
        where, _ = data.draw(predicates(store, table))
        pushed = query(f"SELECT {columns} FROM ds WHERE {where}", ds=ds)
        expected = query(f"SELECT {columns} FROM everything WHERE {where}", everything=full)
        assert rows(pushed) == rows(expected), where
        counted = query(f"SELECT count(*) FROM ds WHERE {where}", ds=ds)
        assert counted == [(len(expected),)]

    check()


@pytest.mark.parametrize("name", ["combos", SIMULATED])
@pytest.mark.parametrize("table", ["variants", "calls"])
def test_polars_pushdown_equals_filtering_a_full_scan(stores, name, table):
    store = stores[name]
    ds = store.dataset(table)
    full = pl.from_arrow(store.full(table))
    assert isinstance(full, pl.DataFrame)
    columns = ["contig", "pos", "end", "id", "qual"] + (["sample_id"] if table == "calls" else [])

    @DIFFERENTIAL
    @given(data=st.data())
    def check(data):
        _, expression = data.draw(predicates(store, table))
        pushed = pl.scan_pyarrow_dataset(ds).filter(expression).select(columns).collect()
        expected = full.filter(expression).select(columns)
        assert sorted(map(repr, pushed.rows())) == sorted(map(repr, expected.rows()))

    check()


def test_polars_pushes_filters_down(stores):
    store = stores["combos"]
    ds = store.dataset()
    got = pl.scan_pyarrow_dataset(ds).filter(pl.col("contig") == "2").select("pos").collect()
    assert got["pos"].to_list() == [r.pos for r in oracle.records(store.vcf) if r.chrom == "2"]
    assert ds.last_stats["variant_chunks_read"] < ds.last_stats["variant_chunks_total"]


def test_pushed_filters_prune_chunks(stores):
    store = stores["combos"]
    ds = store.dataset()
    query("SELECT pos FROM ds WHERE contig = '2'", ds=ds)
    index = store.store.region_index
    on_2 = np.unique(index[index[:, spec.RI_CONTIG] == store.store.contigs.index("2"), spec.RI_CHUNK])
    assert ds.last_stats["variant_chunks_read"] == len(on_2) < ds.last_stats["variant_chunks_total"]


def test_sample_predicates_prune_sample_chunks(stores):
    store = stores[SIMULATED]
    ds = store.dataset("calls")
    sample = store.store.samples[4]
    result = query(f"SELECT DISTINCT sample_id FROM ds WHERE sample_id = '{sample}' AND fmt_GT[1] = 1", ds=ds)
    assert result == [(sample,)]
    assert ds.last_stats["sample_chunks_read"] == 1 < ds.last_stats["sample_chunks_total"]


# -- regions against bcftools -------------------------------------------------------------------


def overlapping_chunks(store, contig: str, start: int, end: int | None) -> set[int]:
    """Variant chunks whose region index rows overlap contig:start-end (by index arithmetic)."""
    index = store.region_index
    if contig not in store.contigs:
        return set()
    hit = (index[:, spec.RI_CONTIG] == store.contigs.index(contig)) & (index[:, spec.RI_MAX_END] >= start)
    if end is not None:
        hit &= index[:, spec.RI_START] <= end
    return set(index[hit, spec.RI_CHUNK].tolist())


def oracle_rows(records) -> list[str]:
    return sorted(repr((r.chrom, r.pos, r.end, r.ref, r.alt)) for r in records)


@st.composite
def regions(draw, store: Store):
    """A bcftools region (contig, start, end or None) around the store's real positions."""
    full = store.full()
    i = draw(st.integers(0, full.num_rows - 1))
    contig = full["contig"][i].as_py()
    start = max(1, full["pos"][i].as_py() + draw(st.integers(-50, 50)))
    end = draw(st.one_of(st.none(), st.just(start), st.integers(start, start + 20_000)))
    return contig, start, end


def region_text(contig: str, start: int, end: int | None) -> str:
    return f"{contig}:{start}-" if end is None else f"{contig}:{start}-{end}"


@pytest.mark.parametrize("name", ["tabix", "sv", SIMULATED])
def test_region_rows_and_chunks_read_match_bcftools_and_the_index(stores, name):
    store = stores[name]

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(region=regions(store))
    def check(region):
        text = region_text(*region)
        ds = store.dataset(region=text)
        got = query('SELECT contig, pos, "end", ref, alt FROM ds', ds=ds)
        assert sorted(map(repr, got)) == oracle_rows(oracle.records(store.vcf, region=text)), text
        assert ds.last_stats["variant_chunks_read"] == len(overlapping_chunks(store.store, *region))

    check()


def test_region_lists_whole_contigs_and_unknown_contigs_match_bcftools(stores):
    store = stores["sv"]
    first, *_, last = store.store.contigs
    for text in [first, f"{last},{first}:1-2000000", "nope", f"{first}:1-5000000,{first}:4000000-9000000"]:
        ds = store.dataset(region=text)
        got = query('SELECT contig, pos, "end", ref, alt FROM ds', ds=ds)
        assert sorted(map(repr, got)) == oracle_rows(oracle.records(store.vcf, region=text)), text


@pytest.mark.parametrize(
    "text",
    ["grch38#chr4:10100000-10120000", "{grch38#chr4}:10100000-10120000", "{grch38#chr4}", "grch38#chr4:10150000-"],
)
def test_region_contig_names_with_special_characters_match_bcftools(stores, text):
    store = stores["grch38"]
    ds = store.dataset(region=text)
    got = query('SELECT contig, pos, "end", ref, alt FROM ds', ds=ds)
    assert sorted(map(repr, got)) == oracle_rows(oracle.records(store.vcf, region=text))


def test_region_and_pushed_filter_are_anded(stores):
    store = stores["sv"]
    contig = store.store.contigs[0]
    ds = store.dataset(region=contig)
    got = query('SELECT contig, pos, "end", ref, alt FROM ds WHERE pos > 3000000', ds=ds)
    expected = [r for r in oracle.records(store.vcf, region=contig) if r.pos > 3_000_000]
    assert sorted(map(repr, got)) == oracle_rows(expected)


@pytest.mark.parametrize("name", ["sv", SIMULATED])
def test_pos_between_matches_bcftools_targets(stores, name):
    store = stores[name]

    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(region=regions(store))
    def check(region):
        contig, start, end = region
        end = start + 5000 if end is None else end
        ds = store.dataset()
        got = query(
            f"SELECT contig, pos, \"end\", ref, alt FROM ds WHERE contig = '{contig}' AND pos BETWEEN {start} AND {end}",
            ds=ds,
        )
        expected = oracle.records(store.vcf, targets=f"{contig}:{start}-{end}")
        assert sorted(map(repr, got)) == oracle_rows(expected)

    check()


def test_region_calls_match_bcftools_genotypes(stores):
    store = stores[SIMULATED]
    text = "2:5000-15000"
    samples = [str(s) for s in store.store.samples[[1, 7]]]
    ds = store.dataset("calls", samples=samples, region=text)
    got = query("SELECT pos, sample_id, fmt_GT FROM ds ORDER BY pos, sample_id", ds=ds)
    positions = [r.pos for r in oracle.records(store.vcf, region=text)]
    expected_calls = oracle.calls(store.vcf, ("GT",), region=text, samples=samples)
    expected = sorted(
        (pos, sample, list(call["GT"].alleles))
        for pos, per_sample in zip(positions, expected_calls)
        for sample, call in zip(samples, per_sample)
    )
    assert got == expected


def test_samples_selects_the_fmt_lists_of_the_variants_table(stores):
    store = stores[SIMULATED]
    samples = [str(s) for s in store.store.samples[[2, 3, 9]]]
    ds = store.dataset(samples=samples)
    got = query("SELECT pos, fmt_GT FROM ds WHERE contig = '1' ORDER BY pos", ds=ds)
    expected = [
        (r.pos, [list(call["GT"].alleles) for call in per_sample])
        for r, per_sample in zip(
            oracle.records(store.vcf, region="1"), oracle.calls(store.vcf, ("GT",), region="1", samples=samples)
        )
    ]
    assert got == expected
    chunks = {i // store.store.samples_chunk_size for i in (2, 3, 9)}
    assert ds.last_stats["sample_chunks_read"] == len(chunks) < ds.last_stats["sample_chunks_total"]


def test_bad_region_and_unknown_sample_are_query_errors(stores):
    store = stores["tabix"]
    with pytest.raises(QueryError, match="^region: "):
        store.dataset(region="1:abc")
    with pytest.raises(QueryError, match="samples: .*'nobody'"):
        store.dataset("calls", samples=["nobody"])


# -- scan mechanics -----------------------------------------------------------------------------


def test_limit_stops_early_and_leaves_no_threads(stores):
    store = stores["combos"]
    ds = store.dataset()
    ds.to_table()  # per-call (fmt_) columns: the shared decode pool is started once
    before = threading.active_count()
    assert len(query("SELECT * FROM ds LIMIT 3", ds=ds)) == 3
    gc.collect()
    assert ds.last_stats["variant_chunks_read"] <= ds.last_stats["variant_chunks_total"] // 2
    assert threading.active_count() == before
    head = ds.head(3, columns=["pos"])
    assert head["pos"].to_pylist() == store.full()["pos"].to_pylist()[:3]
    assert ds.last_stats["variant_chunks_read"] <= 8


def test_per_call_columns_decode_in_the_scan_threads_site_columns_as_read(stores, monkeypatch):
    """Genotype chunks are decoded ahead in the pool; site columns on the consumer's thread
    (in threads they measured 1.6x slower). Both give the full scan's rows."""
    from vcfzarr_sql.query import decode

    store = stores[SIMULATED]
    threads: dict[str, set[str]] = {"variants": set(), "calls": set()}
    for table, function in (("variants", "decode_variants"), ("calls", "decode_calls")):
        real = getattr(decode, function)

        def recording(*args, _real=real, _table=table, **kwargs):
            threads[_table].add(threading.current_thread().name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(decode, function, recording)
    ds = store.dataset()
    sites = ds.to_table(columns=["contig", "pos", "ref"])
    assert threads["variants"] == {threading.current_thread().name}
    # (site scans join chunks into larger batches: compare values, not dictionaries per batch)
    assert sites.to_pylist() == store.full().select(["contig", "pos", "ref"]).to_pylist()
    threads["variants"].clear()
    genotypes = ds.to_table(columns=["pos", "fmt_GT"])
    assert threads["variants"] and all(n.startswith("vcfzarr-scan") for n in threads["variants"])
    assert genotypes == store.full().select(["pos", "fmt_GT"])
    store.dataset("calls").to_table(columns=["pos", "sample_id"])
    assert threads["calls"] and all(n.startswith("vcfzarr-scan") for n in threads["calls"])


def test_count_rows_reads_nothing_when_chunks_match_whole(stores):
    store = stores["combos"]
    ds = store.dataset()
    assert ds.count_rows() == store.full().num_rows == len(oracle.records(store.vcf))
    assert ds.last_stats["bytes_read"] == 0
    assert query("SELECT count(*) FROM ds", ds=ds) == [(store.full().num_rows,)]
    on_1 = ds.count_rows(filter=pc.field("contig") == "1")
    assert on_1 == sum(r.chrom == "1" for r in oracle.records(store.vcf))


def test_no_columns_and_empty_results(stores):
    store = stores["tabix"]
    ds = store.dataset()
    table = ds.to_table(columns=[])
    assert (table.num_columns, table.num_rows) == (0, len(oracle.records(store.vcf)))
    empty = ds.to_table(columns=["pos", "contig"], filter=pc.field("contig") == "nope")
    assert empty.num_rows == 0 and empty.schema.names == ["pos", "contig"]
    assert query("SELECT pos FROM ds WHERE pos < 0", ds=ds) == []


def test_batches_have_exactly_the_requested_schema(stores):
    store = stores[SIMULATED]
    ds = store.dataset("calls")
    scanner = ds.scanner(columns=["fmt_GT", "pos"], filter=(pc.field("sample_id") == "tsk_3") & (pc.field("qual") > -1))
    assert scanner.projected_schema == pa.schema([ds.schema.field("fmt_GT"), ds.schema.field("pos")])
    for batch in scanner.to_reader():
        assert batch.schema == scanner.projected_schema
    assert scanner.stats == ds.last_stats


def test_filter_and_select_return_new_datasets(stores):
    store = stores["tabix"]
    ds = store.dataset()
    narrowed = ds.filter(pc.field("contig") == "1").select(["pos", "ref"])
    assert narrowed is not ds and ds.schema.names[0] == "contig"
    assert narrowed.schema.names == ["pos", "ref"]
    expected = [(r.pos, r.ref) for r in oracle.records(store.vcf) if r.chrom == "1"]
    assert sorted(query("SELECT pos, ref FROM narrowed", narrowed=narrowed)) == sorted(expected)
    with pytest.raises(QueryError, match="'alt'"):
        narrowed.scanner(columns=["alt"])
    assert narrowed.take([0]).to_pylist() == [{"pos": expected[0][0], "ref": expected[0][1]}]
    with pytest.raises(NotSupportedError, match="get_fragments"):
        ds.get_fragments()


def test_bio2zarr_store_without_region_index_reads_the_same(stores, tmp_path):
    store = stores["combos"]
    bare = tmp_path / "bare.zarr"
    shutil.copytree(store.zarr, bare)
    shutil.rmtree(bare / spec.REGION_INDEX)
    ds = vcfzarr_sql.dataset(str(bare), region="1:50-120")
    got = query('SELECT contig, pos, "end", ref, alt FROM ds', ds=ds)
    assert sorted(map(repr, got)) == oracle_rows(oracle.records(store.vcf, region="1:50-120"))
    assert ds.last_stats["variant_chunks_read"] < ds.last_stats["variant_chunks_total"]


def test_store_without_records(convert_once):
    vcf = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/empty.vcf.gz"
    ds = vcfzarr_sql.dataset(str(convert_once(vcf)), "calls")
    assert ds.count_rows() == len(oracle.records(vcf)) == 0
    assert query("SELECT pos, sample_id FROM ds WHERE contig = '1'", ds=ds) == []


def test_stats_start_at_nothing_read_and_are_replaced_by_the_scan(stores):
    ds = stores["tabix"].dataset()
    scanner = ds.scanner(columns=["pos"])
    assert ds.last_stats is scanner.stats
    assert (scanner.stats["variant_chunks_read"], scanner.stats["bytes_read"]) == (0, 0)
    before = scanner.stats
    scanner.to_table()
    assert ds.last_stats is scanner.stats is not before
    assert scanner.stats["variant_chunks_read"] == scanner.stats["variant_chunks_total"] > 1
