"""Daft and Spark against our DuckDB path on one store: a region query and a whole-store
aggregate, wall and CPU time as ratios, scaling over cores, and the cost of one scan task.

Every engine runs the same SQL over the same ``calls`` table (an allele sum: the non-reference
allele indexes of every call); answers must agree before anything is timed. CPU is the
process tree's (this process, Spark's JVM and its Python workers, Ray's). Run::

    python -m benchmarks.engines STORE [--region 1:1000000-1100000] [--repeats 3]

Needs the ``[test-engines]`` extra (daft, pyspark, ray) and Java 17.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING

import vcfzarr_sql
from benchmarks.served import tree_cpu

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SQL = "SELECT sum(fmt_GT_1) + sum(fmt_GT_2) AS alleles FROM t"
COLUMNS = ["fmt_GT_1", "fmt_GT_2"]


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process and every live descendant (from /proc)."""
    return tree_cpu(os.getpid())


def timed(run: Callable[[], int], repeats: int) -> tuple[float, float, int]:
    """(median wall s, median CPU s, answer) of ``run``."""
    answer, walls, cpus = run(), [], []  # warm-up (and the answer)
    for _ in range(repeats):
        cpu, wall = tree_cpu_seconds(), time.perf_counter()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(tree_cpu_seconds() - cpu)
    return statistics.median(walls), statistics.median(cpus), answer


def duckdb_case(store: str, region: str | None) -> Callable[[], int]:
    con = vcfzarr_sql.connect()
    where = "" if region is None else f", region := '{region}'"
    sql = SQL.replace("FROM t", f"FROM vcf_zarr_calls('{store}'{where})")
    return lambda: con.sql(sql).fetchall()[0][0]


def daft_case(store: str, region: str | None) -> Callable[[], int]:
    import daft

    from vcfzarr_sql.daft import read_vcf_zarr

    t = read_vcf_zarr(store, "calls", region=region)
    return lambda: daft.sql(SQL, t=t).to_pydict()["alleles"][0]


def spark_session(cores: int) -> SparkSession:
    from pyspark.sql import SparkSession

    import vcfzarr_sql.spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    vcfzarr_sql.spark.register(spark)
    return spark


def spark_case(spark: SparkSession, store: str, region: str | None) -> Callable[[], int]:
    import vcfzarr_sql.spark

    schema = "fmt_GT_1 BYTE, fmt_GT_2 BYTE"
    vcfzarr_sql.spark.read(spark, store, "calls", region=region, schema=schema).createOrReplaceTempView("t")
    return lambda: spark.sql(SQL).collect()[0][0]


def _run_task(payload: bytes) -> int:
    task = pickle.loads(payload)
    return sum(batch.num_rows for batch in task.to_batches())


def tasks_case(store: str, workers: int, min_tasks: int, target_bytes: float) -> Callable[[], int]:
    """The scan tasks of the aggregate's columns run in a pool of ``workers`` processes."""
    tasks = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, min_tasks=min_tasks, target_bytes=target_bytes)
    payloads = [pickle.dumps(t) for t in tasks]
    pool = ProcessPoolExecutor(workers)
    list(pool.map(_run_task, payloads))  # workers start and open the store
    return lambda: sum(pool.map(_run_task, payloads))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("--region", default=None, help="a 100 kb region (default: the store's middle)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    store = args.store
    cores = os.cpu_count() or 1
    if args.region is None:
        opened = vcfzarr_sql.open_store(store)
        index = opened.region_index
        middle = index[len(index) // 2]
        args.region = f"{opened.contigs[middle[1]]}:{middle[2]}-{middle[2] + 100_000}"
    opened = vcfzarr_sql.open_store(store)
    print(f"store {store}: {opened.num_variants} variants x {opened.num_samples} samples, "
          f"{opened.num_variant_chunks} x {opened.num_sample_chunks} chunks; {cores} cores")
    print(f"query: {SQL}")

    spark = spark_session(cores)
    rows = []
    for label, region in (("region " + args.region, args.region), ("whole store", None)):
        cases = {
            "duckdb (vcf_zarr_calls)": duckdb_case(store, region),
            "daft native": daft_case(store, region),
            f"spark local[{cores}]": spark_case(spark, store, region),
        }
        results = {name: timed(run, args.repeats) for name, run in cases.items()}
        answers = {int(answer) for _, _, answer in results.values()}
        assert len(answers) == 1, f"engines disagree on {label}: {results}"
        base_wall, base_cpu, _ = results["duckdb (vcf_zarr_calls)"]
        for name, (wall, cpu, _) in results.items():
            rows.append(f"| {label} | {name} | {wall:.3f} | {wall / base_wall:.2f}x | {cpu:.2f} | {cpu / base_cpu:.2f}x |")
    print("\n| query | engine | wall s | wall / duckdb | CPU s | CPU / duckdb |\n|---|---|---|---|---|---|")
    print("\n".join(rows))
    spark.stop()

    print("\nscaling of the whole-store aggregate over cores (tasks = 4 x cores)")
    print("| cores | scan tasks in a process pool, wall s | spark local[k], wall s |\n|---|---|---|")
    for k in range(1, cores + 1):
        pool_wall = timed(tasks_case(store, k, 4 * k, float("inf")), args.repeats)[0]
        session = spark_session(k)
        spark_wall = timed(spark_case(session, store, None), args.repeats)[0]
        session.stop()
        print(f"| {k} | {pool_wall:.3f} | {spark_wall:.3f} |")

    print("\ncost of one task (whole-store aggregate, one worker process)")
    few = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, min_tasks=1, target_bytes=float("inf"))
    many = vcfzarr_sql.scan_tasks(store, "calls", columns=COLUMNS, target_bytes=1)
    t_few = timed(tasks_case(store, 1, 1, float("inf")), args.repeats)[0]
    t_many = timed(tasks_case(store, 1, 1, 1), args.repeats)[0]
    per_task = (t_many - t_few) / max(len(many) - len(few), 1)
    print(f"{len(few)} task: {t_few:.3f} s; {len(many)} tasks: {t_many:.3f} s; "
          f"overhead per task {per_task * 1e3:.2f} ms (send, unpickle, revalidate, batch)")
    payload = pickle.dumps(many[0])
    started = time.perf_counter()
    for _ in range(100):
        pickle.loads(payload)
    print(f"task pickle {len(payload)} bytes; unpickling in a warm worker {(time.perf_counter() - started) * 10:.3f} ms")


if __name__ == "__main__":
    main()
