"""Arguments from files and subqueries: ``regions_file :=``, ``samples_file :=`` (bcftools -R
and -S formats) and ``samples := (SELECT ...)``/``region := (SELECT ...)`` answer as bcftools
does and prune exactly like ``region :=``/``samples :=`` (the chunk keys read are counted)."""

from __future__ import annotations

import subprocess

import pytest
from corpus import CORPUS
from store_support import counted_reads

import vcfzarr_sql
from vcfzarr_sql.engine.connection import Connection
from vcfzarr_sql.errors import QueryError

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


def _bcftools(*args: str) -> list[str]:
    return sorted(subprocess.run(["bcftools", "query", *args, str(SAMPLE)], check=True,
                                 capture_output=True, text=True).stdout.splitlines())


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(SAMPLE, variants_chunk_size=2, samples_chunk_size=1))


def _keys_read(monkeypatch, con: Connection, store: str, sql: str) -> tuple[list, set[str]]:
    """The rows of ``sql`` (warm: the store opened before) and the chunk keys it read."""
    con.sql(f"SELECT count(*) FROM vcf_zarr_contigs('{store}')").fetchall()  # (reads the region index)
    singles, batches = counted_reads(monkeypatch, con.store(store)._kv)
    rows = sorted(con.sql(sql).fetchall())
    monkeypatch.undo()
    keys = {k for k in singles + [k for b in batches for k in b] if "/" in k}
    return rows, keys


def test_regions_file_prunes_like_region(store, tmp_path, monkeypatch):
    bed = tmp_path / "r.bed"
    bed.write_text("20\t1230236\t1234567\nX\t10\t11\n")
    with vcfzarr_sql.connect() as con:
        from_file, file_keys = _keys_read(
            monkeypatch, con, store, f"SELECT contig, pos FROM vcf_zarr('{store}', regions_file := '{bed}')")
        literal, literal_keys = _keys_read(
            monkeypatch, con, store, f"SELECT contig, pos FROM vcf_zarr('{store}', region := '20:1230237-1234567,X:11')")
        _, all_keys = _keys_read(monkeypatch, con, store, f"SELECT contig, pos FROM vcf_zarr('{store}')")
    assert [f"{c}\t{p}" for c, p in from_file] == _bcftools("-R", str(bed), "-f", "%CHROM\t%POS\n")
    assert from_file == literal and file_keys == literal_keys
    chunks = {k for k in file_keys if k.startswith("variant_position/")}
    assert chunks < {k for k in all_keys if k.startswith("variant_position/")}


def test_samples_file_reads_only_its_sample_chunks(store, tmp_path, monkeypatch):
    listed = tmp_path / "s.txt"
    listed.write_text("NA00002\n")
    sql = "SELECT pos, sample_id, fmt_GQ FROM vcf_zarr_calls('{}', {})"
    with vcfzarr_sql.connect() as con:
        from_file, file_keys = _keys_read(monkeypatch, con, store, sql.format(store, f"samples_file := '{listed}'"))
        literal, literal_keys = _keys_read(monkeypatch, con, store, sql.format(store, "samples := ['NA00002']"))
        excluded, _ = _keys_read(monkeypatch, con, store, sql.format(store, f"samples_file := '^{listed}'"))
    assert from_file == literal and file_keys == literal_keys
    assert {k.split("/")[1].split(".")[1] for k in file_keys if k.startswith("call_")} == {"1"}
    assert sorted(f"{p}\t{s}\t{'.' if q is None else q}" for p, s, q in excluded) == _bcftools(
        "-s", "^NA00002", "-f", "[%POS\t%SAMPLE\t%GQ\n]")


@pytest.mark.parametrize("subquery", [
    "(SELECT list(sample_id) FROM vcf_zarr_samples('{s}') WHERE sample_id <> 'NA00002')",
    "(SELECT sample_id FROM vcf_zarr_samples('{s}') WHERE sample_id <> 'NA00002')",
])
def test_samples_from_a_subquery(store, subquery, monkeypatch):
    sql = "SELECT pos, sample_id, fmt_GQ FROM vcf_zarr_calls('{}', samples := {})"
    with vcfzarr_sql.connect() as con:
        rows, keys = _keys_read(monkeypatch, con, store, sql.format(store, subquery.format(s=store)))
        literal, literal_keys = _keys_read(monkeypatch, con, store, sql.format(store, "['NA00001', 'NA00003']"))
    assert rows == literal and keys == literal_keys
    assert sorted(f"{p}\t{s}\t{'.' if q is None else q}" for p, s, q in rows) == _bcftools(
        "-s", "^NA00002", "-f", "[%POS\t%SAMPLE\t%GQ\n]")


def test_region_from_a_table_prunes(store, monkeypatch):
    with vcfzarr_sql.connect() as con:
        con.sql("CREATE TABLE bed AS SELECT * FROM (VALUES ('20', 1230236, 1234567), ('X', 10, 11)) t(chrom, s, e)")
        sql = "SELECT contig, pos FROM vcf_zarr('{}', region := {})"
        rows, keys = _keys_read(monkeypatch, con, store, sql.format(
            store, "(SELECT chrom, s + 1, e FROM bed)"))
        strings, string_keys = _keys_read(monkeypatch, con, store, sql.format(
            store, "(SELECT chrom || ':' || (s + 1) || '-' || e FROM bed)"))
        literal, literal_keys = _keys_read(monkeypatch, con, store, sql.format(store, "'20:1230237-1234567,X:11'"))
    assert rows == strings == literal and keys == string_keys == literal_keys


def test_files_are_refused_where_the_session_says_so(store, tmp_path):
    import duckdb

    (tmp_path / "r.bed").write_text("20\t0\t10\n")
    con = Connection(duckdb.connect(), read_files=False)
    with pytest.raises(QueryError, match="regions_file is not available"):
        con.sql(f"SELECT * FROM vcf_zarr('{store}', regions_file := '{tmp_path / 'r.bed'}')")


@pytest.mark.parametrize(("arguments", "message"), [
    ("regions_file := 'missing.bed'", "missing.bed: No such file"),
    ("region := '20', regions_file := 'x.bed'", "give region or regions_file, not both"),
    ("samples := (SELECT 1, 2)", "must return one column"),
    ("exclude_samples := true", "exclude_samples needs samples"),
])
def test_argument_errors(store, arguments, message):
    with vcfzarr_sql.connect() as con, pytest.raises(QueryError, match=message):
        con.sql(f"SELECT * FROM vcf_zarr('{store}', {arguments})")


def test_a_view_keeps_excluded_samples_in_a_database_file(store, tmp_path):
    db = str(tmp_path / "x.duckdb")
    with vcfzarr_sql.connect(db) as con:
        con.execute(f"CREATE VIEW v AS SELECT DISTINCT sample_id FROM vcf_zarr_calls('{store}', "
                    "samples := ['NA00002'], exclude_samples := true)")
    with vcfzarr_sql.connect(db) as con:
        assert sorted(con.sql("SELECT * FROM v").fetchall()) == [("NA00001",), ("NA00003",)]


def test_a_join_alone_reads_every_chunk_and_region_from_the_table_prunes(store):
    """DuckDB 2.0.1 pushes no join-derived filter into an Arrow scan (the guide's Joins section
    says so): if this starts to prune, DuckDB changed and the guide must too."""
    join = ("SELECT v.contig, v.pos FROM vcf_zarr('{}'{}) v JOIN bed b "
            "ON v.contig = b.chrom AND v.pos <= b.e AND v.\"end\" > b.s")
    with vcfzarr_sql.connect() as con:
        con.sql("CREATE TABLE bed AS SELECT * FROM (VALUES ('20', 1230236, 1234567), ('X', 10, 11)) t(chrom, s, e)")
        alone = sorted(con.sql(join.format(store, "")).fetchall())
        alone_stats = con.last_stats
        pruned = sorted(con.sql(join.format(store, ", region := (SELECT chrom, s + 1, e FROM bed)")).fetchall())
        pruned_stats = con.last_stats
    assert alone == pruned == [("20", 1230237), ("20", 1234567), ("X", 10)]
    assert alone_stats["variant_chunks_read"] == alone_stats["variant_chunks_total"] == 5
    assert pruned_stats["variant_chunks_read"] == 3



def test_a_failing_subquery_is_named(store):
    with vcfzarr_sql.connect() as con, pytest.raises(QueryError, match="the argument subquery .* failed: .*no_such_table"):
        con.sql(f"WITH no_such_table AS (SELECT 1) SELECT * FROM vcf_zarr('{store}', "
                "region := (SELECT chrom FROM no_such_table))")

