"""Join variants to a BED file of genes: variants and mean allele frequency per gene.

The BED file is read by DuckDB itself (``read_csv``); a variant belongs to a gene when its
reference span overlaps the gene's interval (BED starts are 0-based, VCF positions 1-based).
Contig and position predicates are pushed into the scan only when they are literals, so each
gene is queried with ``region :=`` built from the BED file (see docs/guide.md, "Joins").

    python examples/variants_per_gene.py demo.zarr examples/data/genes.bed
"""

from __future__ import annotations

import argparse
import csv
import sys

import vcfzarr_sql

SQL = """
SELECT g.name AS gene, g.contig, g.start_0 + 1 AS start, g."end",
       count(v.pos) AS variants,
       round(avg(v.info_AF[1]), 6) AS mean_af
FROM read_csv(?, delim = '\t', header = false,
              columns = {{'contig': 'VARCHAR', 'start_0': 'BIGINT', 'end': 'BIGINT', 'name': 'VARCHAR'}}) g
LEFT JOIN vcf_zarr(?, region := ?) v
  ON v.contig = g.contig AND v.pos <= g."end" AND v."end" > g.start_0
GROUP BY ALL
ORDER BY g.contig, start
"""


def regions_of(bed: str) -> str:
    """Every interval of a BED file as one bcftools region string."""
    with open(bed) as f:
        fields = [line.split("\t")[:3] for line in f if line.strip()]
    return ",".join(f"{c}:{int(s) + 1}-{e.strip()}" for c, s, e in fields)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("bed")
    args = parser.parse_args(argv)

    con = vcfzarr_sql.connect()
    rows = con.execute(SQL.format(), [args.bed, args.store, regions_of(args.bed)]).fetchall()
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["gene", "contig", "start", "end", "variants", "mean_af"])
    out.writerows(rows)
    stats = con.last_stats
    print(
        f"read {stats['variant_chunks_read']} of {stats['variant_chunks_total']} variant chunks",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
