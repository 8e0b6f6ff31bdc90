"""The same SQL over the same stores on every engine: cases whose answers come from bcftools.

Each :class:`Case` is a table (``variants``/``calls``) of a store with a region and samples,
and a query over it as the table ``t``; ``expected`` is computed from tests/oracle.py
(bcftools). The DuckDB path (``vcf_zarr(...)``), our scan tasks, Daft and Spark tests all run
these cases, so every engine is held to bcftools' answers. The SQL is plain enough for all
three dialects (no ``end`` column: a keyword in some).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import oracle
from corpus import CORPUS


@dataclass(frozen=True)
class StoreCase:
    """A VCF and how it is converted (small chunks: many variant and sample chunks)."""

    name: str
    vcf: str
    variants_chunk: int
    samples_chunk: int


@dataclass(frozen=True)
class Case:
    id: str
    table: str
    sql: str
    expected: Callable[[str], list[tuple]]
    region: str | None = None
    samples: tuple[str, ...] | None = None

    def duckdb_sql(self, path: str) -> str:
        """The query on the DuckDB path: ``t`` as a ``vcf_zarr`` / ``vcf_zarr_calls`` call."""
        args = [f"'{path}'"]
        if self.region is not None:
            args.append(f"region := '{self.region}'")
        if self.samples is not None:
            args.append("samples := [" + ", ".join(f"'{s}'" for s in self.samples) + "]")
        function = "vcf_zarr" if self.table == "variants" else "vcf_zarr_calls"
        return self.sql.replace("FROM t", f"FROM {function}({', '.join(args)})", 1)


SAMPLE = StoreCase("sample", oracle.CORPUS_SAMPLE, 3, 2)
TABIX = StoreCase("tabix", str(CORPUS / "samtools+htslib/test/tabix/vcf_file.vcf"), 4, 1)


def simulated(directory: Path) -> StoreCase:
    """Two contigs of an msprime simulation, 10 variants x 3 samples per chunk."""
    from test_scan import _simulated_vcf

    return StoreCase("msprime", str(_simulated_vcf(directory)), 10, 3)


def converted(stores: list[StoreCase], convert_once: Callable) -> dict[str, tuple[StoreCase, str]]:
    """``stores`` converted once each (the ``convert_once`` fixture): name -> (case, path)."""
    made = {}
    for case in stores:
        path = convert_once(case.vcf, variants_chunk_size=case.variants_chunk, samples_chunk_size=case.samples_chunk)
        made[case.name] = (case, str(path))
    return made


def _positions(vcf: str, region: str | None = None) -> list[tuple]:
    return sorted((r.chrom, r.pos) for r in oracle.records(vcf, region=region))


def _window(vcf: str) -> tuple[str, int, int]:
    """A contig and a POS window covering its middle records."""
    records = oracle.records(vcf)
    contig = records[len(records) // 2].chrom
    pos = sorted(r.pos for r in records if r.chrom == contig)
    return contig, pos[len(pos) // 4], pos[(3 * len(pos)) // 4]


def _alt_alleles(vcf: str, region: str | None, samples: tuple[str, ...] | None) -> list[tuple]:
    """Non-reference alleles called (an allele count): from bcftools' genotypes."""
    alleles, _ = oracle.genotype_arrays(vcf, region=region)
    keep = oracle._sample_indexes(vcf, samples)
    return [(int((alleles[:, keep, :2] > 0).sum()),)]


def cases(store: StoreCase) -> list[Case]:
    """The queries every engine answers over ``store``."""
    contig, lo, hi = _window(store.vcf)
    region = f"{contig}:{lo}-{hi}"
    samples = tuple(oracle.header(store.vcf).samples[::2])
    allele_count = (
        "SELECT sum(CASE WHEN fmt_GT_1 > 0 THEN 1 ELSE 0 END"
        " + CASE WHEN fmt_GT_2 > 0 THEN 1 ELSE 0 END) AS ac FROM t"
    )
    return [
        Case("region", "variants", "SELECT contig, pos FROM t", lambda v: _positions(v, region), region=region),
        Case(
            "where",
            "variants",
            f"SELECT contig, pos FROM t WHERE contig = '{contig}' AND pos >= {lo} AND pos <= {hi}",
            lambda v: sorted(
                (r.chrom, r.pos) for r in oracle.records(v) if r.chrom == contig and lo <= r.pos <= hi
            ),
        ),
        Case("count", "variants", "SELECT count(*) AS n FROM t", lambda v: [(len(oracle.records(v)),)]),
        Case("alleles", "calls", allele_count, lambda v: _alt_alleles(v, None, None)),
        Case(
            "alleles-region-samples",
            "calls",
            allele_count,
            lambda v: _alt_alleles(v, region, samples),
            region=region,
            samples=samples,
        ),
        Case(
            "calls-per-sample",
            "calls",
            f"SELECT sample_id, count(*) AS n FROM t WHERE contig = '{contig}' AND pos <= {hi}"
            " GROUP BY sample_id",
            lambda v: sorted(
                (s, sum(1 for r in oracle.records(v) if r.chrom == contig and r.pos <= hi))
                for s in samples
            ),
            samples=samples,
        ),
    ]


def normalised(rows: list) -> list[tuple]:
    """Rows as sorted tuples of plain Python values (engines differ in row and int types)."""
    plain = [tuple(int(v) if isinstance(v, np.integer) else v for v in row) for row in rows]
    return sorted(plain)


def overlapping_chunks(store: StoreCase, region: str) -> set[int]:
    """Variant chunks holding a record bcftools reports for ``region``."""
    everything = oracle.records(store.vcf)
    index = {(r.chrom, r.pos, r.ref, tuple(r.alt)): i for i, r in enumerate(everything)}
    hits = oracle.records(store.vcf, region=region)
    return {index[(r.chrom, r.pos, r.ref, tuple(r.alt))] // store.variants_chunk for r in hits}
