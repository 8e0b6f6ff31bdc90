"""The same SQL over the same stores on every engine: cases whose answers come from bcftools.

Each :class:`Case` is a table (``variants``/``calls``) of a store with a region and samples,
and a query over it as the table ``t``; ``expected`` is computed from tests/oracle.py
(bcftools). The DuckDB path (``vcf_zarr(...)``), our scan tasks, Daft and Spark tests all run
these cases, so every engine is held to bcftools' answers. The SQL is plain enough for all
three dialects (no ``end`` column: a keyword in some).

:func:`cases` gives the cases that apply to a store (calls cases when it has samples, allele
and ``gt_AC`` cases when it has GT, summing every ploidy column; region cases when htslib can
index it), for the stores here and every corpus file bcftools reads (:data:`CORPUS_STORES`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import oracle
import pytest
from corpus import CORPUS, CorpusFile, readable_corpus

from vcfzarr_sql.format import region_index, spec


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
    #: the columns ``sql`` uses (what an engine without projection pushdown should read)
    columns: tuple[str, ...] = ("contig", "pos")

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
    from simulate import simulated_vcf

    return StoreCase("msprime", str(simulated_vcf(directory)), 10, 3)


#: Corpus stores are chunked like tests/engine/test_sql_corpus.py's (so ``convert_once`` shares them):
#: tiny chunks, but at most ~100 x 3 chunks for the few large files.
VARIANTS_CHUNK = 7
SAMPLES_CHUNK = 2


def corpus_store(corpus_file: CorpusFile) -> StoreCase:
    """A corpus file as a store case, chunked small."""
    return StoreCase(
        corpus_file.id,
        str(corpus_file.path),
        max(VARIANTS_CHUNK, (corpus_file.records or 0) // 100),
        max(SAMPLES_CHUNK, (corpus_file.samples or 0) // 3),
    )


#: Every corpus file bcftools reads, as a store case.
CORPUS_STORES = [corpus_store(f) for f in readable_corpus()]
#: Corpus files with more calls or records than this take seconds each: marked slow.
SLOW_CALLS, SLOW_RECORDS = 1_000_000, 10_000


def corpus_params(largest: bool = True) -> list:
    """:data:`CORPUS_STORES` as pytest parameters (ids: corpus paths), the large ones slow;
    ``largest=False``: without the stores of more than :data:`SLOW_CALLS` genotype calls."""
    sizes = {str(f.path): (f.records or 0, f.samples or 0) for f in readable_corpus()}

    def marks(store: StoreCase) -> list:
        records, samples = sizes[store.vcf]
        return [pytest.mark.slow] if records * samples > SLOW_CALLS or records > SLOW_RECORDS else []

    return [pytest.param(s, id=s.name, marks=marks(s)) for s in CORPUS_STORES
            if largest or sizes[s.vcf][0] * sizes[s.vcf][1] <= SLOW_CALLS]


def converted(stores: list[StoreCase], convert_once: Callable) -> dict[str, tuple[StoreCase, str]]:
    """``stores`` converted once each (the ``convert_once`` fixture): name -> (case, path)."""
    made = {}
    for case in stores:
        path = convert_once(case.vcf, variants_chunk_size=case.variants_chunk, samples_chunk_size=case.samples_chunk)
        made[case.name] = (case, str(path))
    return made


def _bcftools_rejects(store: StoreCase) -> str | None:
    """Why pysam's bcftools rejects the store's file (the converter does too), or None."""
    try:
        oracle.records(store.vcf)
    except oracle.BcftoolsError as err:
        return f"pysam's bcftools rejects this file (the converter does too): {err}"
    return None


def _converted(store: StoreCase, convert_once: Callable) -> str:
    return str(convert_once(store.vcf, variants_chunk_size=store.variants_chunk,
                            samples_chunk_size=store.samples_chunk))


def converted_corpus_file(corpus_file: CorpusFile, convert_once: Callable) -> str:
    """A corpus file's store, chunked as :func:`corpus_store` says, converted once per run
    (test_corpus_convert, test_sql_corpus and the engine cases share it)."""
    return _converted(corpus_store(corpus_file), convert_once)


def corpus_store_or_none(store: StoreCase, convert_once: Callable) -> str | None:
    """A corpus store case converted (once per run), or None when bcftools rejects it (for
    tests over all stores at once)."""
    return None if _bcftools_rejects(store) is not None else _converted(store, convert_once)


def converted_corpus_store(store: StoreCase, convert_once: Callable) -> str:
    """A corpus store case converted (once per run), skipped when bcftools rejects it."""
    reason = _bcftools_rejects(store)
    if reason is not None:
        pytest.skip(reason)
    return _converted(store, convert_once)


def literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def region_string(contig: str, start: int, end: int) -> str:
    """A bcftools ``-r`` string (contig names with ``:``, ``,`` or braces braced)."""
    name = "{" + contig + "}" if any(c in contig for c in ":,{}") else contig
    return f"{name}:{start}-{end}"


def _positions(vcf: str, region: str | None = None) -> list[tuple]:
    return sorted((r.chrom, r.pos) for r in oracle.records(vcf, region=region))


def _window(records: list) -> tuple[str, int, int]:
    """A contig and a POS window (1-based) covering its middle records."""
    contig = records[len(records) // 2].chrom
    pos = sorted(r.pos for r in records if r.chrom == contig)
    return contig, max(pos[len(pos) // 4], 1), max(pos[(3 * len(pos)) // 4], 1)


def _alt_alleles(vcf: str, region: str | None, samples: tuple[str, ...] | None) -> list[tuple]:
    """Non-reference alleles called (an allele count, every ploidy): bcftools' genotypes."""
    alleles, _ = oracle.genotype_arrays(vcf, region=region)
    keep = oracle._sample_indexes(vcf, samples)
    return [(int((alleles[:, keep, :] > 0).sum()),)]


def allele_counts(vcf: str, region: str | None, samples: tuple[str, ...] | None) -> list[tuple]:
    """``(contig, pos, AC)`` per record, AC counting each ALT in bcftools' genotypes of
    ``samples`` (all ploidies; None without ALT): ``bcftools +fill-tags``' AC."""
    alleles, _ = oracle.genotype_arrays(vcf, region=region)
    keep = oracle._sample_indexes(vcf, samples)
    rows = []
    for record, calls in zip(oracle.records(vcf, region=region), alleles[:, keep, :]):
        counts = [int((calls == a).sum()) for a in range(1, len(record.alt) + 1)]
        rows.append((record.chrom, record.pos, counts or None))
    return rows


def _ploidy(vcf: str) -> int:
    """The most alleles a call of ``vcf`` has (bcftools' genotypes)."""
    return oracle.genotype_arrays(vcf)[0].shape[-1]


def _region_records(vcf: str, region: str) -> list | None:
    """bcftools -r's records, or None when htslib cannot index the file (-r needs an index)."""
    try:
        return oracle.records(vcf, region=region)
    except OSError:
        return None


def cases(store: StoreCase) -> list[Case]:
    """The queries every engine answers over ``store``: those that apply to it (calls cases
    when it has samples, allele cases when they have GT, region cases when it has records)."""
    records = oracle.records(store.vcf)
    header = oracle.header(store.vcf)
    out = [Case("count", "variants", "SELECT count(*) AS n FROM t", lambda v: [(len(oracle.records(v)),)],
                columns=("pos",))]
    if not records:
        return out
    contig, lo, hi = _window(records)
    region = region_string(contig, lo, hi)
    in_region = _region_records(store.vcf, region) is not None
    samples = tuple(header.samples[::2])
    out.append(Case(
        "where",
        "variants",
        f"SELECT contig, pos FROM t WHERE contig = {literal(contig)} AND pos >= {lo} AND pos <= {hi}",
        lambda v: sorted(
            (r.chrom, r.pos) for r in oracle.records(v) if r.chrom == contig and lo <= r.pos <= hi
        ),
    ))
    if in_region:
        out.append(Case("region", "variants", "SELECT contig, pos FROM t", lambda v: _positions(v, region),
                        region=region))
    if not samples:
        return out
    out.append(Case(
        "calls-per-sample",
        "calls",
        f"SELECT sample_id, count(*) AS n FROM t WHERE contig = {literal(contig)} AND pos <= {hi}"
        " GROUP BY sample_id",
        lambda v: sorted(
            (s, sum(1 for r in oracle.records(v) if r.chrom == contig and r.pos <= hi)) for s in samples
        ),
        samples=samples,
        columns=("sample_id", "contig", "pos"),
    ))
    if "GT" not in header.format:
        return out
    gt = tuple(f"fmt_GT_{k}" for k in range(1, _ploidy(store.vcf) + 1))
    # coalesce: Daft (0.7.26) takes no branch, not ELSE, when a CASE condition is NULL (a
    # missing or absent allele); see test_daft.test_daft_case_when_null_is_null_not_else
    allele_count = (
        "SELECT sum("
        + " + ".join(f"CASE WHEN coalesce({c}, 0) > 0 THEN 1 ELSE 0 END" for c in gt)
        + ") AS ac FROM t"
    )
    gt_ac = "SELECT contig, pos, gt_AC FROM t"
    out += [
        Case("alleles", "calls", allele_count, lambda v: _alt_alleles(v, None, None), columns=gt),
        Case("gt_AC", "variants", gt_ac, lambda v: allele_counts(v, None, None),
             columns=("contig", "pos", "gt_AC")),
    ]
    if in_region:
        out += [
            Case("alleles-region-samples", "calls", allele_count, lambda v: _alt_alleles(v, region, samples),
                 region=region, samples=samples, columns=gt),
            Case("gt_AC-region-samples", "variants", gt_ac, lambda v: allele_counts(v, region, samples),
                 region=region, samples=samples, columns=("contig", "pos", "gt_AC")),
        ]
    return out


def _plain(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(_plain(v) for v in value)
    return value


def normalised(rows: list) -> list[tuple]:
    """Rows as sorted tuples of plain Python values (engines differ in row and int types)."""
    return sorted((_plain(row) for row in rows), key=repr)


def overlapping_chunks(store: StoreCase, region: str) -> set[int]:
    """Variant chunks holding a record bcftools reports for ``region``."""
    everything = oracle.records(store.vcf)
    index = {(r.chrom, r.pos, r.ref, tuple(r.alt)): i for i, r in enumerate(everything)}
    hits = oracle.records(store.vcf, region=region)
    return {index[(r.chrom, r.pos, r.ref, tuple(r.alt))] // store.variants_chunk for r in hits}


def window(region: str) -> tuple[str, int, int]:
    """``region``'s contig, start and end (as :func:`region_string` writes them)."""
    name, span = region.rsplit(":", 1)
    start, end = span.split("-")
    return name.strip("{}"), int(start), int(end)


def region_chunks(store: StoreCase, region: str) -> int:
    """How many variant chunks a scan of ``region`` reads: those whose region-index rows may
    hold a record ``bcftools -r`` reports (counted from bcftools' records)."""
    return len(chunks_to_read(oracle.records(store.vcf), store.variants_chunk, *window(region), overlap=True))


def chunks_to_read(records, chunk_size: int, contig: str, start: int, end: int, overlap: bool) -> set[int]:
    """Chunks with a region-index row that may hold a match (of ``bcftools -r`` when
    ``overlap``, else of ``-t``), computed from bcftools' records."""
    names = {name: k for k, name in enumerate(dict.fromkeys(r.chrom for r in records))}
    index = region_index.region_index(
        np.array([names[r.chrom] for r in records]),
        np.array([r.pos for r in records]),
        np.array([r.end - r.pos + 1 for r in records]),
        chunk_size,
    )
    last = spec.RI_MAX_END if overlap else spec.RI_END
    hits = (
        (index[:, spec.RI_CONTIG] == names[contig])
        & (index[:, spec.RI_START] <= end)
        & (index[:, last] >= start)
    )
    return set(index[hits, spec.RI_CHUNK].tolist())
