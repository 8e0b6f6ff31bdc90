"""Whole-store aggregates: allele counts from genotypes, per-sample missingness, records per contig.

Tools: vcfzarr-sql (warm session), bcftools (``+fill-tags`` | ``query``, ``stats -s``, ``query``,
``index -s``), vcztools, polars-bio on the VCF.gz, DuckDB over the Parquet export, and the floor
(:mod:`benchmarks.floor`: numcodecs decode of exactly the needed chunks, numpy reduce). Expected
answers come from bcftools: INFO/AC filled by ``+fill-tags``, ``stats -s`` nMissing, ``index -s``.

    python -m benchmarks.aggregates --size quick
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks import floor, ours, report
from benchmarks.data import generate
from benchmarks.harness import OURS, Case, Measurement, measure, run_process, shell, venv_bin
from benchmarks.sizes import Files, Size

ALLELE_COUNT = "allele count per variant (from GT)"
MISSINGNESS = "missing calls per sample"
CONTIGS = "count(*) by contig"
#: Our same answer from the genotype lists (``fmt_GT``) instead of the allele columns.
LISTS = f"{OURS} (fmt_GT lists)"


# --- expected answers (bcftools) ---------------------------------------------------------------

def expected_allele_counts(files: Files) -> tuple[int, int]:
    """(records, sum of INFO/AC): AC as filled by ``bcftools +fill-tags`` when the data was made."""
    table = pq.read_table(files.variants_parquet, columns=["info_AC"])
    return table.num_rows, pc.sum(pc.list_flatten(table["info_AC"])).as_py()


def parse_psc_missing(stats: bytes) -> np.ndarray:
    """nMissing per sample (column 14 of the PSC lines of ``bcftools stats -s -``), in sample order."""
    rows = [line.split(b"\t") for line in stats.splitlines() if line.startswith(b"PSC\t")]
    return np.array([int(row[13]) for row in rows], dtype=np.int64)


def parse_index_stats(text: bytes) -> dict[str, int]:
    """{contig: records} from ``bcftools index -s`` / ``vcztools index -s``."""
    rows = [line.split(b"\t") for line in text.strip().splitlines()]
    return {row[0].decode(): int(row[-1]) for row in rows}


def count_lines(text: bytes) -> dict[str, int]:
    return dict(Counter(line.decode() for line in text.splitlines()))


def sum_fields(text: bytes) -> tuple[int, int]:
    lines = text.splitlines()
    return len(lines), sum(int(v) for line in lines for v in line.split(b","))


# --- cases ---------------------------------------------------------------------------------------

def process_case(tool: str, argv: list[str], parse: Callable[[bytes], Any], note: str) -> Case:
    return Case(tool, lambda: parse(run_process(argv).stdout), note=note)


def our_case(session: dict, sql: str, answer: Callable[[Any], Any], note: str, tool: str = OURS) -> Case:
    def run() -> Any:
        if "con" not in session:
            session["con"] = ours.connect()
        return answer(ours.arrow_table(session["con"].sql(sql)))

    return Case(tool, run, note=note)


def polars_bio_scan(files: Files, genotypes: bool) -> pl.LazyFrame:
    import polars_bio as pb

    return pb.scan_vcf(str(files.vcf), info_fields=[], format_fields=["GT"] if genotypes else [])


def allele_count_cases(files: Files, store: Path, session: dict) -> list[Case]:
    parquet = duckdb.connect()

    def polars_bio() -> tuple[int, int]:
        calls = pl.col("genotypes").struct.field("GT")
        per_variant = calls.list.eval(pl.element().str.count_matches("[1-9]")).list.sum()
        frame = polars_bio_scan(files, True).select(ac=per_variant).select(n=pl.len(), total=pl.col("ac").sum()).collect(engine="streaming")
        return frame["n"][0], frame["total"][0]

    def duckdb_parquet() -> tuple[int, int]:
        (row,) = parquet.sql(
            f"SELECT count(*), sum(ac) FROM (SELECT contig, pos, sum((gt0 > 0)::INT + (gt1 > 0)::INT) AS ac "
            f"FROM read_parquet('{files.calls_parquet}') GROUP BY contig, pos)"
        ).fetchall()
        return int(row[0]), int(row[1])

    bcftools = f"bcftools +fill-tags {files.bcf} -Ou -- -t AC | bcftools query -f '%AC\\n'"

    def answer(table: pa.Table) -> tuple[int, int]:
        return table.column(0)[0].as_py(), table.column(1)[0].as_py()

    return [
        our_case(
            session,
            f"SELECT count(*), sum(ac) FROM (SELECT contig, pos, len(list_filter(fmt_GT_1, lambda a: a > 0)) "
            f"+ len(list_filter(fmt_GT_2, lambda a: a > 0)) AS ac FROM vcf_zarr('{store}'))",
            answer,
            "per-variant `len(list_filter(fmt_GT_1, ...)) + len(list_filter(fmt_GT_2, ...))` over `vcf_zarr`",
        ),
        our_case(
            session,
            f"SELECT count(*), sum(ac) FROM (SELECT contig, pos, "
            f"list_count(list_filter(flatten(fmt_GT), lambda a: a > 0)) AS ac FROM vcf_zarr('{store}'))",
            answer,
            "per-variant `list_count(list_filter(flatten(fmt_GT), ...))` over `vcf_zarr`",
            tool=LISTS,
        ),
        process_case("bcftools", shell(bcftools), sum_fields, "`bcftools +fill-tags -t AC | bcftools query -f %AC`"),
        Case("polars-bio VCF", polars_bio, note="`pb.scan_vcf` GT strings, count non-zero alleles per record"),
        Case("DuckDB Parquet", duckdb_parquet, note="GROUP BY contig, pos over the long calls table"),
        Case("floor (numcodecs)", lambda: floor.allele_counts(store), note="raw chunk bytes -> numcodecs -> numpy, thread pool"),
    ]


def missingness_cases(files: Files, store: Path, session: dict) -> list[Case]:
    parquet = duckdb.connect()

    def polars_bio() -> np.ndarray:
        calls = pl.col("genotypes").struct.field("GT")
        frame = (
            polars_bio_scan(files, True)
            .select(gt=calls, sample=pl.int_ranges(0, calls.list.len()))
            .explode(["gt", "sample"], empty_as_null=True)
            .group_by("sample")
            .agg(missing=pl.col("gt").str.starts_with(".").sum())
            .sort("sample")
            .collect(engine="streaming")
        )
        return frame["missing"].to_numpy().astype(np.int64)

    def duckdb_parquet() -> np.ndarray:
        rows = parquet.sql(
            f"SELECT sample_id, count(*) FILTER (WHERE gt0 IS NULL) FROM read_parquet('{files.calls_parquet}') "
            "GROUP BY sample_id ORDER BY sample_id"
        ).fetchall()
        return np.array([n for _, n in rows], dtype=np.int64)

    return [
        *(
            our_case(
                session,
                f"SELECT sample_id, count(*) FILTER (WHERE {first} IS NULL) AS missing "
                f"FROM vcf_zarr_calls('{store}') GROUP BY sample_id ORDER BY sample_id",
                lambda t: np.asarray(t.column("missing").to_numpy(), dtype=np.int64),
                f"GROUP BY sample_id over `vcf_zarr_calls`, `{first} IS NULL`",
                tool=tool,
            )
            for first, tool in (("fmt_GT_1", OURS), ("fmt_GT[1]", LISTS))
        ),
        process_case("bcftools", ["bcftools", "stats", "-s", "-", str(files.bcf)], parse_psc_missing, "`bcftools stats -s -` (PSC nMissing; computes much more)"),
        Case("polars-bio VCF", polars_bio, note="explode GT strings with sample index, group by sample"),
        Case("DuckDB Parquet", duckdb_parquet, note="GROUP BY sample_id over the long calls table"),
        Case("floor (numcodecs)", lambda: floor.sample_missingness(store), note="raw chunk bytes -> numcodecs -> numpy, thread pool"),
    ]


def contig_cases(files: Files, store: Path, session: dict) -> list[Case]:
    parquet = duckdb.connect()

    def polars_bio() -> dict[str, int]:
        frame = polars_bio_scan(files, False).group_by("chrom").len().collect(engine="streaming")
        return dict(zip(frame["chrom"].to_list(), frame["len"].to_list()))

    def duckdb_parquet() -> dict[str, int]:
        rows = parquet.sql(f"SELECT contig, count(*) FROM read_parquet('{files.variants_parquet}') GROUP BY contig").fetchall()
        return {str(c): int(n) for c, n in rows}

    return [
        our_case(
            session,
            f"SELECT contig, count(*) AS n FROM vcf_zarr('{store}') GROUP BY contig",
            lambda t: {str(c): int(n) for c, n in zip(t.column("contig").to_pylist(), t.column("n").to_pylist())},
            "`GROUP BY contig` over `vcf_zarr`",
        ),
        process_case("bcftools", ["bcftools", "query", "-f", "%CHROM\\n", str(files.bcf)], count_lines, "`bcftools query -f %CHROM` (scan; `index -s` below reads the index)"),
        process_case("bcftools index -s", ["bcftools", "index", "-s", str(files.bcf)], parse_index_stats, "record counts stored in the CSI index (no scan)"),
        Case("vcztools index -s", lambda: parse_index_stats(run_process([venv_bin("vcztools"), "index", "-s", str(store)]).stdout), note="`vcztools index -s` on the same store"),
        Case("polars-bio VCF", polars_bio, note="`pb.scan_vcf(...).group_by('chrom').len()`"),
        Case("DuckDB Parquet", duckdb_parquet, note="GROUP BY contig over the variants table"),
        Case("floor (numcodecs)", lambda: floor.contig_counts(store), note="raw chunk bytes -> numcodecs -> numpy, thread pool"),
    ]


def run_suite(size: Size, skip: Sequence[str] = ()) -> tuple[list[Measurement], str]:
    files = generate(size)
    store, origin = ours.query_store(files)
    session: dict = {}
    expected_missing = parse_psc_missing(subprocess.run(["bcftools", "stats", "-s", "-", str(files.bcf)], check=True, capture_output=True).stdout)
    expected_contigs = parse_index_stats(subprocess.run(["bcftools", "index", "-s", str(files.bcf)], check=True, capture_output=True).stdout)
    results = measure(CONTIGS, contig_cases(files, store, session), expected_contigs, size.repeats, skip)
    results += measure(ALLELE_COUNT, allele_count_cases(files, store, session), expected_allele_counts(files), size.repeats, skip)
    results += measure(MISSINGNESS, missingness_cases(files, store, session), expected_missing, size.repeats, skip)
    return results, f"Store {origin}. Answers checked: (records, sum of AC); nMissing per sample; records per contig."


def main(argv: list[str] | None = None) -> list[Measurement]:
    return report.suite_main("aggregates", run_suite, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
