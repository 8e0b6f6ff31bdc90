"""Spark over VCF Zarr (vcfzarr_sql.spark, local[2]): the engine cases answer like bcftools and
DuckDB; the same view queried with and without a filter, alternately, stays correct (the guard
against Spark's reuse of stale pushed plans), and so does a self-join with a filter per side;
a region, a sample subset and a join read the same chunks and answer alike through
``spark.read.format``, ``USING vcf_zarr`` and ``vcfzarr_sql.spark.read`` (chunks counted from
the plan log, ``VCFZARR_SQL_SPARK_LOG``: Spark plans in worker processes); path forms; projection
by schema. One SparkSession for the module (starting one takes seconds)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the [spark] extra is not installed")

import engine_cases  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

import vcfzarr_sql  # noqa: E402
import vcfzarr_sql.spark as vcf_spark  # noqa: E402


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers import this interpreter's packages
    # each plan's JSON line (Spark plans in worker processes, which inherit the JVM's environment)
    os.environ["VCFZARR_SQL_SPARK_LOG"] = str(tmp_path_factory.mktemp("spark") / "plans.jsonl")
    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        # (its default is ./spark-warehouse: the checkout would keep an empty directory)
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    vcf_spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def stores(tmp_path_factory, convert_once) -> dict[str, tuple[engine_cases.StoreCase, str]]:
    sim = engine_cases.simulated(tmp_path_factory.mktemp("sim"))
    return engine_cases.converted([engine_cases.SAMPLE, sim], convert_once)


@contextlib.contextmanager
def _plans() -> Iterator[list[dict]]:
    """The plans Spark made while inside (from VCFZARR_SQL_SPARK_LOG's lines)."""
    log = Path(os.environ["VCFZARR_SQL_SPARK_LOG"])
    start = log.stat().st_size if log.exists() else 0
    plans: list[dict] = []
    yield plans
    with open(log) as file:
        file.seek(start)
        plans.extend(json.loads(line) for line in file)


def _rows(spark, sql: str) -> list[tuple]:
    return engine_cases.normalised([tuple(row) for row in spark.sql(sql).collect()])


def _view(spark, case: engine_cases.Case, path: str):
    """``t``: the case's table with the columns it uses (Spark does not prune a Python source's)."""
    full = spark.read.format("vcf_zarr").option("table", case.table).load(path).schema
    schema = StructType([full[c] for c in case.columns])
    df = vcf_spark.read(spark, path, case.table, region=case.region, samples=case.samples, schema=schema)
    df.createOrReplaceTempView("t")
    return df


def _assert_spark_answers_like_bcftools(spark, source: engine_cases.StoreCase, path: str) -> None:
    """Every case of ``source`` gives bcftools' rows; a region's partitions are our scan tasks
    of the same columns, which read exactly the chunks that may overlap it (Spark plans them in
    a worker process, so they are counted through the partitions)."""
    for case in engine_cases.cases(source):
        df = _view(spark, case, path)
        assert _rows(spark, case.sql) == engine_cases.normalised(case.expected(source.vcf)), case.id
        if case.region is not None:
            columns = list(dict.fromkeys([*case.columns, "pos"]))  # vcf_spark.read adds pos
            tasks = vcfzarr_sql.scan_tasks(path, case.table, columns=columns, region=case.region,
                                           samples=case.samples, min_tasks=spark.sparkContext.defaultParallelism)
            assert df.rdd.getNumPartitions() == len(tasks), case.id
            assert tasks.variant_chunks_read == engine_cases.region_chunks(source, case.region), case.id


def test_spark_answers_like_bcftools_and_duckdb(spark, stores):
    source, path = stores["msprime"]  # many variant and sample chunks
    _assert_spark_answers_like_bcftools(spark, source, path)
    with vcfzarr_sql.connect() as con:
        for case in engine_cases.cases(source):
            expected = engine_cases.normalised(case.expected(source.vcf))
            assert engine_cases.normalised(con.sql(case.duckdb_sql(path)).fetchall()) == expected, case.id


@pytest.mark.parametrize("source", engine_cases.corpus_params())
def test_spark_answers_like_bcftools_over_every_corpus_store(spark, convert_once, source):
    """(The DuckDB path's answers to the same cases: tests/adapters/test_scan_tasks.py.)"""
    _assert_spark_answers_like_bcftools(spark, source, engine_cases.converted_corpus_store(source, convert_once))


def test_one_view_queried_with_and_without_a_filter_alternately(spark, stores):
    source, path = stores["msprime"]
    records = engine_cases.oracle.records(source.vcf)
    in_region = sum(1 for r in records if r.chrom == "2" and r.pos < 6000)
    narrow = "contig STRING, pos LONG"
    vcf_spark.read(spark, path, schema=narrow).createOrReplaceTempView("guarded")
    spark.read.format("vcf_zarr").schema(narrow).load(path).createOrReplaceTempView("plain")
    for view, rounds in (("guarded", 2), ("plain", 1)):  # plain: no pushdown, every query reads all
        for _ in range(rounds):
            assert _rows(spark, f"SELECT count(*) FROM {view} WHERE contig = '2' AND pos < 6000") == [(in_region,)], view
            assert _rows(spark, f"SELECT count(*) FROM {view}") == [(len(records),)], view


def test_pushed_filters_prune_partitions(spark, stores):
    source, path = stores["msprime"]
    def read():
        return vcf_spark.read(spark, path, schema="contig STRING, pos LONG", target_bytes="100")

    everything = read().rdd.getNumPartitions()
    # a fresh relation: one planned whole before prunes by the OR of its scans' filters
    pruned = read().where("contig = '2' AND pos < 6000").rdd.getNumPartitions()
    assert 1 <= pruned < everything


def test_self_join_with_a_filter_on_each_side(spark, stores):
    """Spark 4.3 runs one plan for both scans of a relation (the last pushed): each side must
    still get its own rows (before: both sides ran the contig 20 plan, 15 pairs for 12)."""
    source, path = stores["sample"]
    records = engine_cases.oracle.records(source.vcf)
    vcf_spark.read(spark, path, schema="contig STRING, pos LONG").createOrReplaceTempView("sj")
    sql = "SELECT count(*) FROM sj a JOIN sj b ON a.pos < b.pos WHERE a.contig = '19' AND b.contig = '20'"
    expected = sum(1 for a in records for b in records if a.chrom == "19" and b.chrom == "20" and a.pos < b.pos)
    assert _rows(spark, sql) == [(expected,)]


def test_spark_path_forms_and_types(spark, stores, tmp_path):
    """``file:`` URIs load; a catalog table's query (no options in Spark 4.3) and a schema
    type other than the store's are refused with messages saying what to do."""
    source, path = stores["sample"]
    total = len(engine_cases.oracle.records(source.vcf))
    for form in (f"file:{path}", f"file://{path}"):
        assert spark.read.format("vcf_zarr").load(form).count() == total, form
    spark.sql(f"CREATE OR REPLACE TEMP VIEW pf USING vcf_zarr OPTIONS (path 'file:{path}')")
    assert _rows(spark, "SELECT count(*) FROM pf") == [(total,)]
    spark.sql(f"CREATE TABLE IF NOT EXISTS loc USING vcf_zarr LOCATION '{path}'")
    with pytest.raises(Exception, match="no path: give one with load"):
        spark.sql("SELECT count(*) FROM loc").collect()
    with pytest.raises(Exception, match="'pos' is bigint in the store, not int"):
        spark.read.format("vcf_zarr").schema("pos INT").load(path).collect()


def test_projection_by_schema_and_calls_options(spark, stores):
    source, path = stores["sample"]
    samples = engine_cases.oracle.header(source.vcf).samples[:2]
    df = (
        spark.read.format("vcf_zarr").option("table", "calls").option("region", "20")
        .option("samples", ",".join(samples)).schema("sample_id STRING, pos LONG").load(path)
    )
    rows = sorted(tuple(r) for r in df.collect())
    expected = sorted((s, r.pos) for r in engine_cases.oracle.records(source.vcf, region="20") for s in samples)
    assert rows == expected
    with pytest.raises(Exception, match="no column named 'nope'"):
        spark.read.format("vcf_zarr").schema("nope LONG").load(path).collect()


def test_read_with_a_schema_without_pos(spark, stores):
    source, path = stores["sample"]
    df = vcf_spark.read(spark, path, "calls", region="20", schema="sample_id STRING")
    assert df.columns == ["sample_id"]
    expected = len(engine_cases.oracle.records(source.vcf, region="20")) * len(engine_cases.oracle.header(source.vcf).samples)
    assert df.count() == expected


def _relation(spark, way: str, name: str, path: str, table: str, region: str | None, samples: tuple | None) -> None:
    """The temp view ``name``: ``table`` of ``path`` with the ``region`` and ``samples`` options,
    made the ``way`` a user would: ``format`` (``spark.read.format``), ``sql`` (``CREATE TEMP
    VIEW ... USING vcf_zarr``) or ``read`` (``vcfzarr_sql.spark.read``)."""
    options = {"table": table} | ({} if region is None else {"region": region})
    options |= {} if samples is None else {"samples": ",".join(samples)}
    if way == "format":
        spark.read.format("vcf_zarr").options(**options).load(path).createOrReplaceTempView(name)
    elif way == "sql":
        given = ", ".join(f"{k} '{v}'" for k, v in {"path": path, **options}.items())
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {name} USING vcf_zarr OPTIONS ({given})")
    else:
        vcf_spark.read(spark, path, table, region=region, samples=samples).createOrReplaceTempView(name)


def test_three_ways_in_read_the_same_chunks_and_answer_like_duckdb(spark, stores):
    """A region, a sample subset and a join, through ``spark.read.format``, ``USING vcf_zarr``
    and ``vcfzarr_sql.spark.read``: the same variant chunks read (those that may overlap the
    region, from bcftools' records) and DuckDB's answers. A WHERE region on whole-store
    relations: every way answers like DuckDB; only ``read`` prunes (Spark 4.3 runs one plan per
    relation: a plain relation pushes nothing, see vcfzarr_sql/adapters/spark.py)."""
    source, path = stores["msprime"]
    region = "2:1-6000"
    samples = tuple(engine_cases.oracle.header(source.vcf).samples[::2])
    in_region = engine_cases.region_chunks(source, region)
    queries = {  # SQL over views v (variants) and c (calls), DuckDB's tables in its place
        "region": ("SELECT count(*), sum(pos) FROM v", region),
        "samples": ("SELECT sample_id, count(*) FROM c GROUP BY sample_id", region),
        "join": ("SELECT count(*), count(DISTINCT c.sample_id) FROM v JOIN c ON v.contig = c.contig AND v.pos = c.pos",
                 region),
        "where": ("SELECT count(*), sum(pos) FROM v WHERE contig = '2' AND pos <= 6000", None),
    }
    with vcfzarr_sql.connect() as con:
        for label, (sql, where) in queries.items():
            r = "" if where is None else f", region := '{where}'"
            s = ", samples := [" + ", ".join(f"'{x}'" for x in samples) + "]"
            duck = sql.replace("FROM v", f"FROM vcf_zarr('{path}'{r}) v")
            duck = duck.replace("JOIN c", f"JOIN vcf_zarr_calls('{path}'{r}{s}) c").replace("FROM c", f"FROM vcf_zarr_calls('{path}'{r}{s}) c")
            expected = engine_cases.normalised(con.sql(duck).fetchall())
            chunks = {}
            for way in ("format", "sql", "read"):
                _relation(spark, way, "v", path, "variants", where, None)
                _relation(spark, way, "c", path, "calls", where, samples)
                with _plans() as plans:
                    assert _rows(spark, sql) == expected, (label, way)
                chunks[way] = sorted((p["table"], p["variant_chunks_read"]) for p in plans)
                total = plans[0]["variant_chunks_total"]
            if where is not None:
                assert len({tuple(c) for c in chunks.values()}) == 1, (label, chunks)
                assert {c for _, c in chunks["read"]} == {in_region}, (label, chunks)
            else:
                assert chunks["format"] == chunks["sql"] == [("variants", total)], chunks
                assert chunks["read"] == [("variants", in_region)] and in_region < total, chunks
