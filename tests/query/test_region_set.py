"""A set of regions as one predicate (vcfzarr_sql.query.region_set): the same rows and the same
chunks as the OR of one comparison term per region (Region.expression, evaluated by Arrow), and
the same records as ``bcftools view -R`` on real files."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from corpus import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

import vcfzarr_sql
from vcfzarr_sql.format.region_index import region_index
from vcfzarr_sql.query import expressions as ex
from vcfzarr_sql.query.expressions import parse
from vcfzarr_sql.query.plan import ScanRequest, plan_scan
from vcfzarr_sql.query.region import Region, format_regions, regions_expression
from vcfzarr_sql.query.residual import matching_mask

CONTIGS = ["1", "2", "x"]
DICT = pa.dictionary(pa.int32(), pa.string())
SCHEMA = pa.schema([("contig", DICT), ("pos", pa.int64()), ("end", pa.int64())])


def one_term_per_region(regions: tuple[Region, ...], targets: bool):
    """The reference: the OR of each region's comparisons (a balanced tree: stays shallow)."""
    terms = [r.expression(targets) for r in regions]
    while len(terms) > 1:
        terms = [a | b for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) // 2 * 2:]
    return terms[0]


region_lists = st.lists(
    st.builds(
        lambda contig, start, span: Region(contig, start, None if span is None else start + span),
        st.sampled_from(CONTIGS + ["nope"]), st.integers(1, 70), st.one_of(st.none(), st.integers(0, 15)),
    ),
    min_size=1, max_size=12,
).map(tuple)


@st.composite
def records(draw):
    """Sorted records (contig index, pos, length): POS 0 and lengths 0 and -1 (END before POS)
    included, as a malformed END can give."""
    n = draw(st.integers(1, 40))
    contig = np.sort(np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))))
    pos = np.array(draw(st.lists(st.integers(0, 80), min_size=n, max_size=n)))
    order = np.lexsort((pos, contig))
    length = np.array(draw(st.lists(st.integers(-1, 25), min_size=n, max_size=n)))
    return contig[order], pos[order], length


def batch_of(contig, pos, length) -> pa.RecordBatch:
    return pa.record_batch(
        [pa.DictionaryArray.from_arrays(pa.array(contig, pa.int32()), CONTIGS),
         pa.array(pos, pa.int64()), pa.array(pos + length - 1, pa.int64())],
        schema=SCHEMA,
    )


@settings(max_examples=300, deadline=None)
@given(data=records(), regions=region_lists, targets=st.booleans(), negated=st.booleans())
def test_rows_match_the_or_of_one_term_per_region(data, regions, targets, negated):
    batch = batch_of(*data)
    expected, got = one_term_per_region(regions, targets), regions_expression(regions, targets)
    if negated:
        expected, got = ~expected, ~got
    wanted = pa.Table.from_batches([batch]).filter(expected)  # Arrow's comparisons
    columns = frozenset(SCHEMA.names)
    residual = batch.filter(matching_mask(batch, parse(got), got, columns))  # numpy
    by_acero = pa.Table.from_batches([batch]).filter(got)  # the registered function
    assert residual.to_pylist() == wanted.to_pylist()
    assert by_acero.to_pylist() == wanted.to_pylist()
    as_strings = batch.set_column(0, "contig", batch["contig"].cast(pa.string()))  # (not a dictionary)
    assert as_strings.filter(matching_mask(as_strings, parse(got), got, columns))["pos"] == wanted["pos"].combine_chunks()


@settings(max_examples=300, deadline=None)
@given(data=records(), chunk=st.integers(1, 6), regions=region_lists, targets=st.booleans(),
       negated=st.booleans())
def test_chunks_and_residuals_match_the_or_of_one_term_per_region(data, chunk, regions, targets, negated):
    contig, pos, length = data
    layout = SimpleNamespace(
        contigs=CONTIGS, samples=np.array(["a"], object), samples_chunk_size=1, num_sample_chunks=1,
        num_variant_chunks=-(-len(contig) // chunk),
        region_index=region_index(contig, pos, np.maximum(length, 1), chunk),
    )
    expected, got = one_term_per_region(regions, targets), regions_expression(regions, targets)
    if negated:
        expected, got = ~expected, ~got
    assert isinstance(ex.bind_filter(got, SCHEMA), (ex.Regions, ex.Not))

    def tasks(filter):
        plan = plan_scan(layout, ScanRequest("variants", SCHEMA, filter=filter))
        return [(t.variant_chunk, t.filter is None) for t in plan.tasks]

    assert tasks(got) == tasks(expected)


# -- real files against bcftools -R -----------------------------------------------------------

SV = CORPUS / ("broadinstitute+gatk/src/test/resources/org/broadinstitute/hellbender/tools/copynumber/"
               "gcnv-postprocess/intervals_output_SAMPLE_001.vcf.gz")
KG = CORPUS / "vcflib+vcflib/samples/1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz"


def _spans(vcf) -> list[tuple[str, int, int]]:
    lines = subprocess.run(["bcftools", "query", "-f", "%CHROM\t%POS\t%END\n", str(vcf)], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    return [(c, int(p), int(e)) for c, p, e in (line.split("\t") for line in lines)]


def _many_regions(spans, count: int, seed: int) -> tuple[Region, ...]:
    """``count`` regions around the records of a third of the file: one base at, inside or just
    outside a record's span, a few wider ones, and a whole contig."""
    rng = np.random.default_rng(seed)
    picked = rng.integers(len(spans) // 3, 2 * len(spans) // 3, count)
    regions = []
    for k, i in enumerate(picked):
        contig, pos, end = spans[i]
        base = int(rng.choice([pos - 1, pos, (pos + end) // 2, end, end + 1]))
        wide = k % 50 == 0
        regions.append(Region(contig, max(base, 1), max(base, 1) + (int(rng.integers(0, 5000)) if wide else 0)))
    return (*regions, Region(spans[-1][0], 1, None))


def _rows_and_chunks(ds) -> tuple[list[tuple], int]:
    con = duckdb.connect()
    con.register("ds", ds)
    rows = sorted(con.sql('SELECT contig, pos, "end" FROM ds').fetchall())
    return rows, ds.last_stats["variant_chunks_read"]


@pytest.mark.parametrize("vcf, chunk", [(SV, 16), (KG, 100)])
def test_many_regions_match_bcftools_and_read_the_chunks_of_one_term_per_region(vcf, chunk, convert_once, tmp_path):
    store = vcfzarr_sql.open_store(convert_once(vcf, variants_chunk_size=chunk, samples_chunk_size=1000))
    spans = _spans(vcf)
    regions = _many_regions(spans, 400, seed=len(spans))
    listed = tmp_path / "regions.tsv"
    listed.write_text("".join(f"{r.contig}\t{r.start}\t{r.end}\n" for r in regions if r.end is not None))
    without_whole = tuple(r for r in regions if r.end is not None)
    oracle = subprocess.run(["bcftools", "query", "-R", str(listed), "-f", "%CHROM\t%POS\t%END\n", str(vcf)],
                            check=True, capture_output=True, text=True).stdout.splitlines()
    expected = sorted({(c, int(p), int(e)) for c, p, e in (line.split("\t") for line in oracle)})

    got, chunks = _rows_and_chunks(vcfzarr_sql.dataset(store, region=format_regions(without_whole)))
    reference, reference_chunks = _rows_and_chunks(
        vcfzarr_sql.dataset(store).filter(one_term_per_region(without_whole, targets=False)))
    assert got == expected == reference
    assert chunks == reference_chunks < store.num_variant_chunks
    with_whole = _rows_and_chunks(vcfzarr_sql.dataset(store, region=format_regions(regions)))
    assert with_whole == _rows_and_chunks(vcfzarr_sql.dataset(store).filter(one_term_per_region(regions, False)))
    assert set(with_whole[0]) >= {s for s in spans if s[0] == regions[-1].contig}
