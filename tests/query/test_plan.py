"""The scan planner (vcfzarr_sql.query.plan, .prune) as pure logic over hand-written layouts."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.format.region_index import region_index
from vcfzarr_sql.query.plan import ChunkTask, ScanRequest, plan_scan
from vcfzarr_sql.query.region import parse_regions, regions_expression

DICT = pa.dictionary(pa.int32(), pa.string())
VARIANTS = pa.schema([("contig", DICT), ("pos", pa.int64()), ("end", pa.int64()), ("qual", pa.float32())])
CALLS = VARIANTS.append(pa.field("sample_id", DICT))

# The region index example of the VCF Zarr 0.3 spec (chunks of 3 variants, contigs "0", "1", "2").
SPEC_CONTIG = np.array([0, 0, 1, 1, 1, 1, 1, 1, 2])
SPEC_POS = np.array([111, 112, 14370, 17330, 1110696, 1230237, 1234567, 1235237, 10])
SPEC_LENGTH = np.array([1, 1, 1, 1, 1, 1, 1, 1, 2])


def layout(contig=SPEC_CONTIG, pos=SPEC_POS, length=SPEC_LENGTH, chunk=3, samples=("a", "b", "c"), samples_chunk=2):
    return SimpleNamespace(
        contigs=["0", "1", "2"],
        samples=np.array(samples, dtype=object),
        samples_chunk_size=samples_chunk,
        num_sample_chunks=-(-len(samples) // samples_chunk),
        num_variant_chunks=-(-len(contig) // chunk),
        region_index=region_index(contig, pos, length, chunk),
    )


def chunks(filter, table="variants", **kwargs):
    schema = VARIANTS if table == "variants" else CALLS
    plan = plan_scan(layout(), ScanRequest(table, schema, filter=filter, **kwargs))
    return [(t.variant_chunk, t.filter is not None) for t in plan.tasks]


def region(text):
    return regions_expression(parse_regions(text))


def test_spec_example_overlap_query():
    # "the query 1:1-20000 matches ... chunk indexes 0 and 1"
    assert [c for c, _ in chunks(region("1:1-20000"))] == [0, 1]


@pytest.mark.parametrize(
    "filter, expected",
    [
        (None, [(0, False), (1, False), (2, False)]),
        (pc.field("contig") == "2", [(2, True)]),
        (pc.field("contig") == "1", [(0, True), (1, False), (2, True)]),
        (pc.field("contig") != "1", [(0, True), (2, True)]),
        (pc.field("contig") == "nope", []),
        ((pc.field("contig") == "1") & (pc.field("pos") >= 17330), [(1, False), (2, True)]),
        ((pc.field("contig") == "2") & (pc.field("end") >= 11), [(2, True)]),
        ((pc.field("contig") == "2") & (pc.field("end") >= 12), []),
        (pc.field("pos") < 111, [(2, True)]),
        (pc.field("pos").isin([112, 10]), [(0, True), (2, True)]),
        (((pc.field("contig") == "0") & (pc.field("pos") > 111)) | (pc.field("pos") == 1230237), [(0, True), (1, True)]),
        (~((pc.field("contig") == "1") & (pc.field("pos") < 2_000_000)), [(0, True), (2, True)]),
        (pc.field("pos") == pa.scalar(None, pa.int64()), []),
        (pc.field("pos").is_null(), []),
        (pc.field("pos").is_valid(), [(0, False), (1, False), (2, False)]),
        (pc.field("qual") > 3, [(0, True), (1, True), (2, True)]),
        ((pc.field("qual") > 3) & (pc.field("contig") == "2"), [(2, True)]),
        ((pc.field("qual") > 3) | (pc.field("contig") == "2"), [(0, True), (1, True), (2, True)]),
    ],
)
def test_variant_chunks_and_residuals(filter, expected):
    assert chunks(filter) == expected


def test_task_columns_add_filter_columns_only_where_a_residual_is_evaluated():
    filter = (pc.field("contig") == "1") & (pc.field("pos") >= 17330)
    plan = plan_scan(layout(), ScanRequest("variants", VARIANTS, columns=("qual",), filter=filter))
    assert [(t.variant_chunk, t.columns) for t in plan.tasks] == [(1, ("qual",)), (2, ("contig", "pos", "qual"))]
    assert plan.schema.names == ["qual"]
    assert plan.tasks[0].num_rows == 3


def test_output_schema_follows_requested_order():
    plan = plan_scan(layout(), ScanRequest("variants", VARIANTS, columns=("pos", "contig")))
    assert plan.schema.names == ["pos", "contig"]


def test_unknown_column_and_table_are_query_errors():
    with pytest.raises(QueryError, match="'nope'"):
        plan_scan(layout(), ScanRequest("variants", VARIANTS, columns=("nope",)))
    with pytest.raises(QueryError, match="table"):
        plan_scan(layout(), ScanRequest("genotypes", VARIANTS))


def _samples(task: ChunkTask) -> list[int]:
    assert task.samples is not None
    return task.samples.tolist()


def calls_tasks(filter=None, samples=None):
    plan = plan_scan(layout(), ScanRequest("calls", CALLS, filter=filter, samples=samples))
    return [(t.variant_chunk, t.sample_chunk, _samples(t), t.filter is not None) for t in plan.tasks]


def test_calls_tasks_cross_variant_and_sample_chunks():
    assert calls_tasks(pc.field("contig") == "2") == [(2, 0, [0, 1], True), (2, 1, [2], True)]


def test_sample_predicates_prune_sample_chunks_and_samples():
    assert calls_tasks((pc.field("sample_id") == "b") & (pc.field("contig") == "0")) == [(0, 0, [1], True)]
    assert calls_tasks(pc.field("sample_id").isin(["a", "c"])) == [
        (c, s, idx, False) for c in range(3) for s, idx in ((0, [0]), (1, [2]))
    ]
    assert calls_tasks(pc.field("sample_id") == "zz") == []


def test_samples_selection_limits_sample_chunks():
    assert calls_tasks(pc.field("contig") == "0", samples=np.array([2])) == [(0, 1, [2], True)]


def test_sample_or_variant_predicate_keeps_every_sample():
    tasks = calls_tasks((pc.field("sample_id") == "a") | (pc.field("contig") == "2"))
    assert {(c, s) for c, s, _, _ in tasks} == {(0, 0), (1, 0), (2, 0), (2, 1)}


# -- soundness: a planned scan never misses a matching row ---------------------------------------

CONTIG_NAMES = ["0", "1", "2"]
SAMPLES = ("a", "b", "c")


@st.composite
def data_layouts(draw):
    n = draw(st.integers(1, 25))
    contig = np.sort(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    pos = np.array(draw(st.lists(st.integers(1, 60), min_size=n, max_size=n)))
    order = np.lexsort((pos, contig))
    length = np.array(draw(st.lists(st.integers(1, 15), min_size=n, max_size=n)))
    return contig[order], pos[order], length, draw(st.integers(1, 6))


def leaves():
    int_literal = st.integers(-2, 80)
    contig_literal = st.sampled_from(CONTIG_NAMES + ["nope"])
    sample_literal = st.sampled_from(list(SAMPLES) + ["zz"])
    ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])

    def compare(column, op, value):
        f = pc.field(column)
        return {"==": f == value, "!=": f != value, "<": f < value, "<=": f <= value, ">": f > value, ">=": f >= value}[op]

    return st.one_of(
        st.builds(compare, st.sampled_from(["pos", "end"]), ops, int_literal),
        st.builds(compare, st.just("contig"), ops, contig_literal),
        st.builds(compare, st.just("sample_id"), ops, sample_literal),
        st.builds(lambda v: pc.field("contig").isin(v), st.lists(contig_literal, min_size=1, max_size=3)),
        st.builds(lambda v: pc.field("sample_id").isin(v), st.lists(sample_literal, min_size=1, max_size=3)),
        st.builds(lambda c, v: pc.field(c).isin(v), st.sampled_from(["pos", "end"]), st.lists(int_literal, min_size=1, max_size=3)),
        st.builds(lambda c: pc.field(c).is_null(), st.sampled_from(["pos", "qual"])),
        st.builds(lambda v: pc.field("qual") > v, st.floats(0, 10)),
        st.just(pc.field("pos") == pa.scalar(None, pa.int64())),
        st.builds(lambda r: regions_expression(parse_regions(r)), st.sampled_from(["1:10-30", "0", "2:40-", "1:5,0:20-21"])),
    )


predicates = st.recursive(
    leaves(),
    lambda inner: st.one_of(
        st.builds(lambda a, b: a & b, inner, inner),
        st.builds(lambda a, b: a | b, inner, inner),
        st.builds(lambda a: ~a, inner),
        st.builds(lambda a: pc.if_else(a, a, pa.scalar(None, pa.bool_())), inner),
    ),
    max_leaves=5,
)


def rows_table(contig, pos, length, samples):
    n = len(contig)
    return pa.table(
        {
            "contig": pa.DictionaryArray.from_arrays(pa.array(np.repeat(contig, len(samples)), pa.int32()), CONTIG_NAMES),
            "pos": np.repeat(pos, len(samples)).astype(np.int64),
            "end": np.repeat(pos + length - 1, len(samples)).astype(np.int64),
            "qual": pa.array(np.tile([1.0, None, 7.5], n * len(samples))[: n * len(samples)], pa.float32()),
            "sample_id": pa.array(np.tile(np.array(samples, dtype=object), n)).dictionary_encode(),
            "_variant": np.repeat(np.arange(n), len(samples)),
            "_sample": np.tile(np.arange(len(samples)), n),
        }
    )


@settings(max_examples=200, deadline=None)
@given(data=data_layouts(), filter=predicates)
def test_plan_keeps_every_matching_row_and_drops_residuals_only_when_all_match(data, filter):
    contig, pos, length, chunk = data
    lay = layout(contig, pos, length, chunk)
    table = rows_table(contig, pos, length, SAMPLES)
    matching = table.filter(filter)
    plan = plan_scan(lay, ScanRequest("calls", CALLS, filter=filter))
    covered = {}
    for task in plan.tasks:
        for s in _samples(task):
            covered[(task.variant_chunk, int(s))] = task
    for v, s in zip(matching["_variant"].to_pylist(), matching["_sample"].to_pylist()):
        assert (v // chunk, s) in covered, "a matching row's chunk was pruned"
    all_rows = set(zip(table["_variant"].to_pylist(), table["_sample"].to_pylist()))
    matching_rows = set(zip(matching["_variant"].to_pylist(), matching["_sample"].to_pylist()))
    for (c, s), task in covered.items():
        if task.filter is None:
            rows = {(v, s) for v, t in all_rows if v // chunk == c and t == s}
            assert rows <= matching_rows, "a task without residual holds a non-matching row"
