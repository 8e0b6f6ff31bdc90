"""A region count through Spark's own ways in (``spark.read.format("vcf_zarr").load(p)`` with a
filter, a ``USING vcf_zarr`` view) against ``vcfzarr_sql.spark.read``, which pushes filters
down: wall and CPU (this process, Spark's JVM and its Python workers), and the variant chunks
each plan reads (from ``VCFZARR_SQL_SPARK_LOG``). Run::

    python -m benchmarks.spark_pushdown STORE CONTIG START END [--repeats 3]

Needs the ``[spark]`` extra and Java 17.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.engines import spark_session, timed

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _count(spark: SparkSession, sql: str) -> int:
    return int(spark.sql(sql).collect()[0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("contig")
    parser.add_argument("start", type=int)
    parser.add_argument("end", type=int)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    log = Path(tempfile.mkdtemp()) / "plans.jsonl"
    os.environ["VCFZARR_SQL_SPARK_LOG"] = str(log)  # before Spark starts: its workers inherit it
    spark = spark_session(os.cpu_count() or 1)
    import vcfzarr_sql.spark

    where = f"contig = '{args.contig}' AND pos >= {args.start} AND pos <= {args.end}"
    spark.read.format("vcf_zarr").load(args.store).createOrReplaceTempView("loaded")
    spark.sql(f"CREATE OR REPLACE TEMP VIEW using_view USING vcf_zarr OPTIONS (path '{args.store}')")
    vcfzarr_sql.spark.read(spark, args.store).createOrReplaceTempView("read")
    print("| way in | wall s | CPU s | variant chunks read | answer |\n|---|---|---|---|---|")
    for view in ("loaded", "using_view", "read"):
        log.write_text("")
        wall, cpu, answer = timed(partial(_count, spark, f"SELECT count(*) FROM {view} WHERE {where}"), args.repeats)
        lines = log.read_text().splitlines()  # (none from a version without the log)
        plan = json.loads(lines[-1]) if lines else {"variant_chunks_read": "?", "variant_chunks_total": "?"}
        print(f"| {view} | {wall:.2f} | {cpu:.2f} | {plan['variant_chunks_read']} of {plan['variant_chunks_total']} | {answer} |")
    spark.stop()


if __name__ == "__main__":
    main()
