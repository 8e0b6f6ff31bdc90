"""The connection API: table functions wherever a table may stand, parameters, statistics.

Expected values come from bcftools (tests/oracle.py) on the corpus' sample.vcf.gz (9 records,
3 samples, contigs 19, 20 and X), converted with 3 variants per chunk so pruning is visible.
"""

from __future__ import annotations

import collections
from pathlib import Path

import duckdb
import oracle
import pyarrow.parquet as pq
import pytest

import vcfzarr_sql
from vcfzarr_sql.errors import QueryError, StoreError

SAMPLE_VCF = oracle.CORPUS_SAMPLE
SECOND_VCF = str(Path(SAMPLE_VCF).parent / "sample_no_genotypes.vcf.gz")


@pytest.fixture(scope="session")
def store(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("engine-connection") / "sample.zarr"
    vcfzarr_sql.convert(SAMPLE_VCF, out, variants_chunk_size=3, show_progress=False)
    return str(out)


@pytest.fixture(scope="session")
def second_store(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("engine-connection") / "second.zarr"
    vcfzarr_sql.convert(SECOND_VCF, out, variants_chunk_size=2, show_progress=False)
    return str(out)


@pytest.fixture()
def con():
    with vcfzarr_sql.connect() as connection:
        yield connection


def _positions(records) -> list[tuple[str, int]]:
    return [(r.chrom, r.pos) for r in records]


def test_count_by_contig(con, store) -> None:
    rows = con.sql(
        f"SELECT contig, count(*) FROM vcf_zarr('{store}') GROUP BY contig ORDER BY contig"
    ).fetchall()
    expected = collections.Counter(r.chrom for r in oracle.records(SAMPLE_VCF))
    assert rows == sorted(expected.items())


def test_join_variants_to_calls(con, store) -> None:
    rows = con.sql(
        f"""SELECT v.contig, v.pos, c.sample_id, c.fmt_GT
        FROM vcf_zarr('{store}') v JOIN vcf_zarr_calls('{store}', samples := ['NA00002']) c
          ON v.contig = c.contig AND v.pos = c.pos AND v.ref = c.ref
        ORDER BY v.contig, v.pos"""
    ).fetchall()
    records = oracle.records(SAMPLE_VCF)
    calls = oracle.calls(SAMPLE_VCF, samples=["NA00002"])
    expected = [
        (r.chrom, r.pos, "NA00002", None if gt is None else list(gt.alleles))
        for r, [call] in zip(records, calls)
        for gt in [call["GT"]]
    ]
    assert rows == sorted(expected, key=lambda row: (row[0], row[1]))


def test_cte_subquery_and_union(con, store, second_store) -> None:
    cte = con.sql(
        f"WITH v AS (SELECT * FROM vcf_zarr('{store}')) SELECT count(*) FROM v WHERE contig = '20'"
    ).fetchall()
    sub = con.sql(
        f"SELECT count(*) FROM (SELECT pos FROM vcf_zarr('{store}') WHERE contig = '20') t"
    ).fetchall()
    union = con.sql(
        f"""SELECT 'a' AS s, count(*) FROM vcf_zarr('{store}')
        UNION ALL SELECT 'b', count(*) FROM vcf_zarr('{second_store}') ORDER BY s"""
    ).fetchall()
    expected_20 = sum(r.chrom == "20" for r in oracle.records(SAMPLE_VCF))
    assert cte == sub == [(expected_20,)]
    assert union == [("a", len(oracle.records(SAMPLE_VCF))), ("b", len(oracle.records(SECOND_VCF)))]


def test_view_outlives_the_query_that_created_it(con, store) -> None:
    con.sql(f"CREATE VIEW chr20 AS SELECT pos FROM vcf_zarr('{store}', region := '20')")
    con.sql("SELECT 1").fetchall()
    first = con.sql("SELECT pos FROM chr20 ORDER BY pos").fetchall()
    second = con.execute("SELECT count(*) FROM chr20").fetchone()
    expected = [r.pos for r in oracle.records(SAMPLE_VCF, region="20")]
    assert [p for (p,) in first] == expected
    assert second == (len(expected),)


def test_copy_to_parquet(con, store, tmp_path) -> None:
    out = tmp_path / "region.parquet"
    con.execute(f"COPY (SELECT contig, pos, ref, alt FROM vcf_zarr('{store}', region := '20:1-1230237')) TO '{out}'")
    table = pq.read_table(out)
    expected = oracle.records(SAMPLE_VCF, region="20:1-1230237")
    assert table.column("pos").to_pylist() == [r.pos for r in expected]
    assert table.column("alt").to_pylist() == [r.alt for r in expected]


def test_two_stores_in_one_query(con, store, second_store) -> None:
    rows = con.sql(
        f"""SELECT a.contig, a.pos FROM vcf_zarr('{store}') a
        SEMI JOIN vcf_zarr('{second_store}') b ON a.contig = b.contig AND a.pos = b.pos
        ORDER BY ALL"""
    ).fetchall()
    second = set(_positions(oracle.records(SECOND_VCF)))
    assert rows == sorted(p for p in _positions(oracle.records(SAMPLE_VCF)) if p in second)


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("SELECT pos FROM vcf_zarr(?, region := ?) WHERE pos >= ? ORDER BY pos", ["STORE", "20", 1110696]),
        ("SELECT pos FROM vcf_zarr($1, region := $3) WHERE pos >= $2 ORDER BY pos", ["STORE", 1110696, "20"]),
        ("SELECT pos FROM vcf_zarr($s, region := $r) WHERE pos >= $p ORDER BY pos", {"s": "STORE", "r": "20", "p": 1110696}),
    ],
)
def test_parameters(con, store, sql, params) -> None:
    params = (
        {k: store if v == "STORE" else v for k, v in params.items()}
        if isinstance(params, dict)
        else [store if v == "STORE" else v for v in params]
    )
    expected = [r.pos for r in oracle.records(SAMPLE_VCF, region="20") if r.pos >= 1110696]
    assert [p for (p,) in con.execute(sql, params).fetchall()] == expected
    assert [p for (p,) in con.sql(sql, params=params).fetchall()] == expected


def test_register_wraps_an_existing_connection(store) -> None:
    raw = duckdb.connect()
    raw.execute("CREATE TABLE wanted AS SELECT '20' AS contig, 14370 AS pos")
    con = vcfzarr_sql.register(raw)
    rows = con.sql(f"SELECT v.pos FROM vcf_zarr('{store}') v JOIN wanted USING (contig, pos)").fetchall()
    assert rows == [(14370,)]
    assert con.duckdb_connection is raw


def test_module_level_sql(store) -> None:
    [(count,)] = vcfzarr_sql.sql(f"SELECT count(*) FROM vcf_zarr('{store}')").fetchall()
    assert count == len(oracle.records(SAMPLE_VCF))


def test_metadata_tables(con, store) -> None:
    header = oracle.header(SAMPLE_VCF)
    samples = con.sql(f"SELECT sample_index, sample_id FROM vcf_zarr_samples('{store}')").fetchall()
    assert samples == list(enumerate(header.samples))
    contigs = con.sql(f"SELECT contig, num_variants FROM vcf_zarr_contigs('{store}')").fetchall()
    counts = collections.Counter(r.chrom for r in oracle.records(SAMPLE_VCF))
    assert contigs == [(name, counts[name]) for name, _ in header.contigs]
    fields = con.sql(
        f"SELECT category, name, number, type, description FROM vcf_zarr_fields('{store}')"
    ).fetchall()
    expected = [
        (category, f.name, f.number, f.vcf_type, f.description)
        for category, defs in (("INFO", header.info), ("FORMAT", header.format))
        for f in defs.values()
    ]
    assert sorted(fields) == sorted(expected)


def test_last_stats_counts_only_the_chunks_read(con, store) -> None:
    con.sql(f"SELECT * FROM vcf_zarr('{store}')").fetchall()
    everything = con.last_stats
    con.sql(f"SELECT pos FROM vcf_zarr('{store}') WHERE contig = 'X'").fetchall()
    x_only = con.last_stats
    total = -(-len(oracle.records(SAMPLE_VCF)) // 3)
    assert everything["variant_chunks_total"] == total
    assert everything["variant_chunks_read"] == total
    assert x_only["variant_chunks_read"] == 1  # the X records are the last chunk's
    assert 0 < x_only["bytes_read"] < everything["bytes_read"]


def test_last_stats_sums_over_stores(con, store, second_store) -> None:
    con.sql(
        f"SELECT count(*) FROM vcf_zarr('{store}') UNION ALL SELECT count(*) FROM vcf_zarr('{second_store}')"
    ).fetchall()
    stats = con.last_stats
    assert stats["variant_chunks_total"] == -(-len(oracle.records(SAMPLE_VCF)) // 3) + -(
        -len(oracle.records(SECOND_VCF)) // 2
    )


def test_last_stats_of_a_query_through_a_view(con, store) -> None:
    con.sql(f"CREATE VIEW v AS SELECT * FROM vcf_zarr('{store}')")
    con.sql("SELECT count(*) FROM v WHERE contig = '19'").fetchall()
    assert con.last_stats["variant_chunks_read"] == 1


def test_explain_shows_the_pushed_filter(con, store) -> None:
    plan = "".join(
        row[1] for row in con.sql(f"EXPLAIN SELECT pos FROM vcf_zarr('{store}') WHERE contig = '20'").fetchall()
    )
    # DuckDB quotes the column name from 1.5 on: compare without quotes.
    assert "Filters:contig='20'" in plan.replace(" ", "").replace('"', "")


# ---------------------------------------------------------------------------------------------
# Errors a user can act on: one line naming the argument


def _one_line_error(con, sql, kind):
    with pytest.raises(kind) as err:
        con.sql(sql).fetchall()
    message = str(err.value)
    assert "\n" not in message
    return message


def test_unknown_store_path(con, tmp_path) -> None:
    missing = tmp_path / "missing.zarr"
    assert str(missing) in _one_line_error(con, f"SELECT * FROM vcf_zarr('{missing}')", StoreError)


def test_not_a_vcf_zarr_store(con, tmp_path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "data.txt").write_text("hello")
    assert str(plain) in _one_line_error(con, f"SELECT * FROM vcf_zarr('{plain}')", StoreError)


def test_bad_region(con, store) -> None:
    message = _one_line_error(con, f"SELECT * FROM vcf_zarr('{store}', region := '20:abc-5')", QueryError)
    assert "region" in message and "20:abc-5" in message


def test_unknown_sample(con, store) -> None:
    message = _one_line_error(con, f"SELECT * FROM vcf_zarr('{store}', samples := ['NOPE'])", QueryError)
    assert "NOPE" in message


def test_unknown_parameter(con, store) -> None:
    message = _one_line_error(con, f"SELECT * FROM vcf_zarr('{store}', regions := '20')", QueryError)
    assert "regions" in message


def test_wrong_argument_type(con, store) -> None:
    message = _one_line_error(con, f"SELECT * FROM vcf_zarr('{store}', samples := 'NA00001')", QueryError)
    assert "samples" in message


def test_duckdb_errors_pass_through(con, store) -> None:
    with pytest.raises(duckdb.BinderException, match="no_such_column"):
        con.sql(f"SELECT no_such_column FROM vcf_zarr('{store}')").fetchall()


def test_connect_passes_duckdb_config() -> None:
    with vcfzarr_sql.connect(threads=1) as con:
        assert con.sql("SELECT current_setting('threads')").fetchall() == [(1,)]


def test_query_is_sql_and_other_attributes_are_duckdbs(con, store) -> None:
    rows = con.query(f"SELECT count(*) FROM vcf_zarr_samples('{store}')").fetchall()
    assert rows == [(len(oracle.header(SAMPLE_VCF).samples),)]
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    assert con.table("t").fetchall() == [(1,)]  # DuckDB's own method, through the proxy


def test_metadata_queries_scan_nothing(con, store) -> None:
    con.sql(f"SELECT * FROM vcf_zarr_contigs('{store}')").fetchall()
    assert con.last_stats["variant_chunks_read"] == 0
    assert con.last_stats["bytes_read"] == 0


def test_cursors_are_full_sessions_one_per_thread(con, store) -> None:
    """DuckDB's advice for threads is a cursor each: cursors know the table functions, and the
    views over them made on the connection."""
    import concurrent.futures

    con.sql(f"CREATE VIEW chr20 AS SELECT pos FROM vcf_zarr('{store}', region := '20')")
    expected = [r.pos for r in oracle.records(SAMPLE_VCF, region="20")]

    def positions(cursor) -> list[int]:
        rows = cursor.sql(f"SELECT pos FROM vcf_zarr('{store}', region := '20') ORDER BY pos")
        return [p for (p,) in rows.fetchall()]

    cursors = [con.cursor() for _ in range(3)]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        assert list(pool.map(positions, cursors)) == [expected] * 3
    assert [p for (p,) in cursors[0].sql("SELECT pos FROM chr20 ORDER BY pos").fetchall()] == expected
    with cursors[1].cursor() as nested:
        assert nested.execute(f"SELECT count(*) FROM vcf_zarr('{store}')").fetchone() == (
            len(oracle.records(SAMPLE_VCF)),
        )


def test_executemany_knows_the_table_functions(con, store) -> None:
    con.execute("CREATE TABLE counts (contig VARCHAR, n BIGINT)")
    con.executemany(
        f"INSERT INTO counts SELECT ?, count(*) FROM vcf_zarr('{store}', region := ?)",
        [["19", "19"], ["20", "20"]],
    )
    expected = collections.Counter(r.chrom for r in oracle.records(SAMPLE_VCF))
    assert con.sql("SELECT * FROM counts ORDER BY contig").fetchall() == [
        ("19", expected["19"]), ("20", expected["20"])
    ]
