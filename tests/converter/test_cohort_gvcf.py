"""A cohort of gVCF batches reads as ``bcftools merge --gvcf REF.fa -m none`` (Debian bcftools
1.16) of its inputs: reference blocks cut where any batch's block starts or ends, none at a
position where a batch has another record (the blocks' samples are ``./.`` there), REF from
the block or the FASTA, ALT the union of the blocks' symbolic alleles (``<*>`` and
``<NON_REF>``, per-allele FORMAT values moved to it), END of the cut block; gVCF records that
differ only in the symbolic allele are one record.

Expected values: bcftools' merged VCF, read by the oracle, and the store ``convert`` makes of
it (queried with the same SQL). Batches (:mod:`gvcf_support`): a two-sample gVCF with
``<*>``, a plain VCF with records inside the blocks and at the gVCFs' records, a ``<NON_REF>``
gVCF whose blocks start elsewhere (its first block of each contig where the plain VCF has a
record), a third gVCF added later; two contigs; the corpus's GATK gVCF (CEUTrio,
``<NON_REF>``) against a slice of itself under another sample name; bcftools' own gVCF test
file against a copy of itself; and `compact` of the cohort.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import oracle
import pysam
import pytest
from cohort_support import sorted_rows
from corpus import CORPUS
from fill_tags import BCFTOOLS
from gvcf_support import EXTRA, SITES, merged_gvcf, write_gvcf, write_reference, write_vcf

import vcfzarr_sql
from vcfzarr_sql.cli.compact import compact
from vcfzarr_sql.converter import convert
from vcfzarr_sql.converter.cohort import add
from vcfzarr_sql.query.genotype_stats import COLUMNS as GT_COLUMNS
from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import view

pytestmark = pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools")

FORMAT_FIELDS = ("GT", "DP", "GQ", "MIN_DP", "AD", "PL")


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """(cohort path, bcftools' merged VCF, the store converted from it)."""
    directory = tmp_path_factory.mktemp("gvcf")
    reference = directory / "ref.fa"
    sequences = write_reference(reference)
    g1 = write_gvcf(directory / "g1.g.vcf", ["G1a", "G1b"], sequences, seed=1,
                    sites=[s for i, s in enumerate(SITES) if i % 3 != 2])
    v = write_vcf(directory / "v.vcf", ["V1"], sequences, seed=2,
                  sites=[s for i, s in enumerate(SITES) if i % 2 == 0] + EXTRA)
    g2 = write_gvcf(directory / "g2.g.vcf", ["G2"], sequences, seed=3, symbolic="<NON_REF>",
                    sites=[s for i, s in enumerate(SITES) if i % 3 != 0], starts={"1": 20, "2": 30})
    g3 = write_gvcf(directory / "g3.g.vcf", ["G3"], sequences, seed=4, sites=SITES[3:9])
    store = directory / "cohort.vcz"
    convert(g1, store, variants_chunk_size=7, samples_chunk_size=2)
    add(store, [v, g2], reference=reference)
    add(store, [g3], reference=reference)
    expected = merged_gvcf([g1, v, g2, g3], reference, directory / "merged.vcf")
    expected_store = directory / "merged.vcz"
    convert(expected, expected_store, variants_chunk_size=7, samples_chunk_size=2)
    return store, expected, expected_store


def test_view_writes_the_records_and_calls_bcftools_merge_gvcf_writes(cohort, tmp_path):
    store, expected, _ = cohort
    out = tmp_path / "cohort.vcf"
    view(store, out)
    records = oracle.records(expected)
    assert any(r.info.get("END") for r in records)  # (blocks were merged...)
    assert any("<NON_REF>" in r.alt and "<*>" in r.alt for r in records)  # (...joined)
    assert oracle.records(out) == records
    assert oracle.calls(out, FORMAT_FIELDS) == oracle.calls(expected, FORMAT_FIELDS)


GT_LIST = ", ".join(GT_COLUMNS)
QUERIES = [
    "SELECT * FROM vcf_zarr('{s}')",
    "SELECT * FROM vcf_zarr_calls('{s}')",
    "SELECT contig, pos, ref, alt, info_END, " + GT_LIST + " FROM vcf_zarr('{s}')",
    "SELECT * FROM vcf_zarr_sample_stats('{s}')",
    "SELECT contig, pos, alt, fmt_GT, fmt_PL, " + GT_LIST +
    " FROM vcf_zarr('{s}', region := '1:30-160,2:50-70', samples := ['G2', 'G1b', 'V1'])",
    "SELECT * FROM vcf_zarr_calls('{s}', samples := ['G3', 'G1a']) WHERE pos BETWEEN 35 AND 95",
    "SELECT * FROM vcf_zarr_sample_stats('{s}', samples := ['G2', 'V1'], region := '1')",
    "SELECT count(*) AS n, sum(pos) AS p FROM vcf_zarr('{s}') WHERE contig = '2' OR pos < 150",
]


@pytest.mark.parametrize("query", QUERIES)
def test_sql_over_the_cohort_equals_sql_over_the_merged_gvcf(cohort, query):
    store, _, expected_store = cohort
    con = vcfzarr_sql.connect()
    assert sorted_rows(con, query, store) == sorted_rows(con, query, expected_store)


def test_a_region_inside_a_block_finds_the_block_and_pushdown_is_exact(cohort):
    """A region starting inside a merged block finds it (its END is past the region's start);
    filters pushed down give the rows of the whole scan filtered here."""
    store, _, expected_store = cohort
    con = vcfzarr_sql.connect()
    everything = sorted_rows(con, "SELECT contig, pos, info_END, alt, fmt_GT FROM vcf_zarr('{s}')", store)
    block = next(r for r in everything if r["info_END"] and r["info_END"] - r["pos"] > 3)
    inside = f"{block['contig']}:{block['pos'] + 2}-{block['pos'] + 2}"
    query = f"SELECT contig, pos, info_END, alt, fmt_GT FROM vcf_zarr('{{s}}', region := '{inside}')"
    assert sorted_rows(con, query, store) == sorted_rows(con, query, expected_store) == [block]
    pushed = sorted_rows(con, "SELECT contig, pos, info_END, alt, fmt_GT FROM vcf_zarr('{s}') "
                        "WHERE contig = '1' AND pos BETWEEN 100 AND 300", store)
    assert pushed == [r for r in everything if r["contig"] == "1" and 100 <= r["pos"] <= 300]


def test_without_a_reference_a_cut_block_starts_with_n(tmp_path):
    """Without the FASTA (bcftools ``--gvcf -``), a block cut where no input's block starts
    has REF ``N``; where one starts, that block's REF."""
    sequences = write_reference(tmp_path / "ref.fa")
    g = write_gvcf(tmp_path / "g.g.vcf", ["G"], sequences, seed=5, sites=[])
    v = write_vcf(tmp_path / "v.vcf", ["V"], sequences, seed=6, sites=EXTRA[:1])
    store = tmp_path / "c.vcz"
    convert(g, store)
    add(store, [v])
    with open_store(store) as opened:
        contig = opened.read_array("variant_contig")
        position = opened.read_array("variant_position")
        alleles = opened.read_array("variant_allele")
    after = int(np.flatnonzero((position == EXTRA[0][1] + 1) & (contig == 0))[0])
    assert alleles[after, 0] == "N"
    starts = {(r.chrom, r.pos): r.ref for r in oracle.records(g)}
    for c, pos, ref in zip(contig.tolist(), position.tolist(), alleles[:, 0].tolist()):
        assert ref == starts.get((str(c + 1), pos), "N") or (c, pos) == (0, EXTRA[0][1])


def test_a_corpus_gvcf_against_a_slice_of_itself(tmp_path):
    """The GATK gVCF of the corpus (``<NON_REF>`` blocks, no FASTA: its blocks' own REF or
    ``N``), and a slice of it (every other record of 20:10,000,000-10,020,000) as another
    sample: blocks of different bounds over one another, records in both."""
    source = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/CEUTrio.20.21.gatk3.4.g.vcf.bgz"
    first, second = tmp_path / "first.vcf", tmp_path / "second.vcf"
    pysam.bcftools.view("-r", "20:10000000-10020000", "-o", str(first), str(source), catch_stdout=False)
    lines = first.read_text().splitlines(keepends=True)
    body = [line for line in lines if not line.startswith("#")]
    header = [line for line in lines if line.startswith("#")]
    header[-1] = header[-1].replace("NA12878", "COPY")
    second.write_text("".join(header + body[::2]))
    paths = [Path(pysam.tabix_index(str(p), preset="vcf", force=True)) for p in (first, second)]
    out, expected = _viewed_and_merged(paths, tmp_path, variants_chunk_size=100)
    fields = tuple(oracle.header(expected).format)
    assert oracle.records(out) == oracle.records(expected)
    assert oracle.calls(out, fields) == oracle.calls(expected, fields)


def _viewed_and_merged(paths: list[Path], tmp_path: Path, *, variants_chunk_size: int) -> tuple[Path, Path]:
    """``view`` of a cohort of ``paths[0]`` converted, then ``paths[1]`` added; and bcftools'
    ``merge --gvcf -`` of the two."""
    store = tmp_path / "c.vcz"
    convert(paths[0], store, variants_chunk_size=variants_chunk_size)
    add(store, [paths[1]])
    out = tmp_path / "cohort.vcf"
    view(store, out)
    return out, merged_gvcf(paths, Path("-"), tmp_path / "merged.vcf")


def test_bcftools_own_gvcf_and_its_info_rules(tmp_path):
    """bcftools' gVCF test file (mpileup's: no GT, blocks on six contigs, a one-position
    ``<*>`` record without END beside an indel) and a copy of it lacking every third record:
    INFO/QS summed and INFO/MinDP the minimum, as ``merge --gvcf`` merges them."""
    source = CORPUS / "samtools+bcftools/test/merge.gvcf.2.a.vcf"
    first, second = tmp_path / "a.vcf.gz", tmp_path / "b.vcf"
    pysam.bcftools.sort("-Oz", "-o", str(first), str(source), catch_stdout=False)
    pysam.bcftools.index(str(first), catch_stdout=False)
    lines = str(pysam.bcftools.view(str(first))).splitlines(keepends=True)
    body = [line for line in lines if not line.startswith("#")]
    header = [line for line in lines if line.startswith("#")]
    header[-1] = header[-1].replace("\tAAA", "\tBBB")
    second.write_text("".join(header + [line for i, line in enumerate(body) if i % 3 != 2]))
    paths = [first, Path(pysam.tabix_index(str(second), preset="vcf", force=True))]
    out, expected = _viewed_and_merged(paths, tmp_path, variants_chunk_size=4)
    records = oracle.records(expected)
    assert any(r.info.get("QS") == [2.0, 0.0] for r in records)  # (summed)
    assert oracle.records(out) == records
    fields = tuple(oracle.header(expected).format)
    assert oracle.calls(out, fields) == oracle.calls(expected, fields)


def test_compact_gives_the_answers_of_the_merged_gvcf(cohort, tmp_path):
    store, _, expected_store = cohort
    compacted = tmp_path / "compacted.vcz"
    compact(store, compacted)
    con = vcfzarr_sql.connect()
    for query in QUERIES[:4]:
        assert sorted_rows(con, query, compacted) == sorted_rows(con, query, expected_store)
