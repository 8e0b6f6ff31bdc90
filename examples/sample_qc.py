"""Per-sample missingness and heterozygosity from the calls table (one row per sample).

A call is missing when none of its alleles is called; it is heterozygous when its called
alleles differ. Rates are over all calls (missing) and over non-missing calls (het).

    python examples/sample_qc.py demo.zarr [--region 1]
"""

from __future__ import annotations

import argparse
import csv
import sys

import vcfzarr_sql

SQL = """
SELECT sample_id,
       count(*) AS calls,
       count(*) FILTER (WHERE is_missing) AS missing,
       count(*) FILTER (WHERE NOT is_missing AND list_unique(called) > 1) AS het,
       round(missing / calls, 6) AS missing_rate,
       round(het / nullif(calls - missing, 0), 6) AS het_rate
FROM (
    SELECT sample_id,
           coalesce(list_count(fmt_GT) = 0, true) AS is_missing,
           [a FOR a IN fmt_GT IF a IS NOT NULL] AS called
    FROM vcf_zarr_calls(?, region := ?)
)
GROUP BY sample_id
ORDER BY sample_id
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--region", default=None, help="restrict to a region (default: all)")
    args = parser.parse_args(argv)

    con = vcfzarr_sql.connect()
    sql = SQL if args.region else SQL.replace(", region := ?", "")
    params = [args.store, args.region] if args.region else [args.store]
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["sample_id", "calls", "missing", "het", "missing_rate", "het_rate"])
    out.writerows(con.execute(sql, params).fetchall())


if __name__ == "__main__":
    main()
