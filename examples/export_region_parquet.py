"""Export a region (variants and their genotypes) to a Parquet file with ``COPY ... TO``.

    python examples/export_region_parquet.py demo.zarr 1:100000-180000 alpha1.parquet
"""

from __future__ import annotations

import argparse

import vcfzarr_sql


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("region")
    parser.add_argument("output")
    args = parser.parse_args(argv)

    con = vcfzarr_sql.connect()
    output = args.output.replace("'", "''")  # COPY takes no parameter for its target
    con.execute(
        f"""COPY (SELECT contig, pos, "end", id, ref, alt, qual, filters, info_AF, fmt_GT
                  FROM vcf_zarr(?, region := ?))
            TO '{output}' (FORMAT parquet)""",
        [args.store, args.region],
    )
    (rows,) = con.execute(f"SELECT count(*) FROM read_parquet('{output}')").fetchone()
    print(f"{rows} variants -> {args.output}")


if __name__ == "__main__":
    main()
