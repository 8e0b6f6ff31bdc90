"""Allele counts and frequencies computed from the genotypes, one row per ALT allele.

``fmt_GT`` holds each sample's allele indexes (NULL for a missing allele): AN counts the
called alleles, AC the calls of each ALT allele, AF = AC / AN.

    python examples/allele_frequencies.py demo.zarr --region 2:50000-90000
"""

from __future__ import annotations

import argparse
import csv
import sys

import vcfzarr_sql

SQL = """
WITH alleles AS (
    SELECT contig, pos, ref, alt, flatten(fmt_GT) AS called
    FROM vcf_zarr($store, region := $region)
)
SELECT contig, pos, ref, alt[k] AS alt, k AS allele,
       list_count(called) AS an,
       len([a FOR a IN called IF a = k]) AS ac,
       round(ac / nullif(an, 0), 6) AS af
FROM alleles, range(1, len(alt) + 1) AS t(k)
ORDER BY contig, pos, allele
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--region", required=True, help="bcftools-style region, e.g. 1:1-100000")
    args = parser.parse_args(argv)

    con = vcfzarr_sql.connect()
    result = con.execute(SQL, {"store": args.store, "region": args.region})
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["contig", "pos", "ref", "alt", "allele", "an", "ac", "af"])
    out.writerows(result.fetchall())


if __name__ == "__main__":
    main()
