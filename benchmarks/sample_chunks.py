"""What ``samples :=`` saves at different sample chunk sizes (synthetic genotypes).

    python -m benchmarks.sample_chunks [--samples 2000] [--variants 4000]

Converts one VCF at several ``--samples-chunk-size`` values and times, for each store, the
same per-sample query over a few samples (``samples :=``) and over all of them. Prints bytes
read and the time of each, as ratios to the store with one sample chunk holding every sample:
``samples :=`` reads less only when the selected samples leave some sample chunks out.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import vcfzarr_sql
from vcfzarr_sql.engine.connection import Connection

QUERY = ("SELECT sample_id, avg((fmt_GT_1 <> fmt_GT_2)::INT) AS het "
         "FROM vcf_zarr_calls('{store}'{samples}) GROUP BY sample_id")


def write_vcf(path: Path, samples: int, variants: int) -> list[str]:
    rng = np.random.default_rng(7)
    names = [f"S{i:06d}" for i in range(samples)]
    with path.open("w") as f:
        f.write("##fileformat=VCFv4.2\n##contig=<ID=1>\n"
                '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
                "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t" + "\t".join(names) + "\n")
        for v in range(variants):
            alleles = (rng.random((samples, 2)) < rng.uniform(0.01, 0.5)).astype(int)
            calls = "\t".join(f"{a}|{b}" for a, b in alleles)
            f.write(f"1\t{100 + 10 * v}\t.\tA\tG\t.\tPASS\t.\tGT\t{calls}\n")
    return names


def timed(con: Connection, sql: str) -> tuple[float, float]:
    start = time.perf_counter()
    con.sql(sql).fetchall()
    return time.perf_counter() - start, con.last_stats["bytes_read"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--variants", type=int, default=4000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vcf = Path(tmp) / "calls.vcf"
        names = write_vcf(vcf, args.samples, args.variants)
        few = "[" + ", ".join(f"'{n}'" for n in names[:: args.samples // 10][:10]) + "]"
        base: dict[str, tuple[float, float]] = {}
        print(f"{args.samples} samples x {args.variants} variants; 10 samples spread over the cohort")
        for chunk in (args.samples, 1000, 100):
            store = str(Path(tmp) / f"c{chunk}.zarr")
            vcfzarr_sql.convert(vcf, store, samples_chunk_size=chunk, show_progress=False)
            con = vcfzarr_sql.connect()
            for label, samples in (("10 samples", f", samples := {few}"), ("all samples", "")):
                sql = QUERY.format(store=store, samples=samples)
                timed(con, sql)  # warm
                seconds, nbytes = min(timed(con, sql) for _ in range(3))
                base.setdefault(label, (seconds, nbytes))
                print(f"chunk {chunk:6d} {label:12s} {seconds:7.3f} s ({seconds / base[label][0]:.2f}x) "
                      f"{nbytes / 2**20:8.2f} MiB ({nbytes / base[label][1]:.2f}x)")


if __name__ == "__main__":
    main()
