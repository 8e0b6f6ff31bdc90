"""Variants in a gene's region: look the gene up in a BED file, then query with ``region :=``.

``region :=`` has bcftools ``-r`` semantics: every record whose reference span overlaps the
region, including deletions that start before it.

    python examples/variants_in_gene_region.py demo.zarr BETA2
    python examples/variants_in_gene_region.py demo.zarr BETA2 --bed examples/data/genes.bed
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import vcfzarr_sql

GENES_BED = Path(__file__).parent / "data" / "genes.bed"


def gene_region(bed: str, gene: str) -> str:
    """The bcftools region string of ``gene`` (BED is 0-based, half-open; regions are 1-based)."""
    for line in Path(bed).read_text().splitlines():
        contig, start, end, name = line.split("\t")[:4]
        if name == gene:
            return f"{contig}:{int(start) + 1}-{end}"
    raise SystemExit(f"error: gene {gene!r} is not in {bed}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("gene")
    parser.add_argument("--bed", default=str(GENES_BED))
    args = parser.parse_args(argv)

    con = vcfzarr_sql.connect()
    rows = con.execute(
        # FLOAT as text: its own shortest digits (32.9), not the Python float's (32.900001525878906)
        """SELECT contig, pos, id, ref, array_to_string(alt, ',') AS alt,
                  CAST(qual AS VARCHAR) AS qual, CAST(info_AF[1] AS VARCHAR) AS af
           FROM vcf_zarr(?, region := ?)
           ORDER BY contig, pos""",
        [args.store, gene_region(args.bed, args.gene)],
    ).fetchall()
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["contig", "pos", "id", "ref", "alt", "qual", "af"])
    out.writerows(rows)
    stats = con.last_stats
    print(
        f"{len(rows)} variants; read {stats['variant_chunks_read']} of "
        f"{stats['variant_chunks_total']} variant chunks",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
