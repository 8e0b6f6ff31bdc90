"""The Arrow types of the variants and calls tables, from INFO/FORMAT definitions."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from vcfzarr_sql.query import schema
from vcfzarr_sql.store import FieldInfo

DICT_STRING = pa.dictionary(pa.int32(), pa.string())


def field(name, category, number, vcf_type, dtype, description="d", shape=()) -> FieldInfo:
    array = ("variant_" if category == "INFO" else "call_") + name
    return FieldInfo(name, category, array, number, vcf_type, description, np.dtype(dtype),
                     shape, (), ())


def store(info=(), fmt=()) -> SimpleNamespace:
    return SimpleNamespace(info_fields={f.name: f for f in info},
                           format_fields={f.name: f for f in fmt})


FIXED = [
    ("contig", DICT_STRING),
    ("pos", pa.int64()),
    ("end", pa.int64()),
    ("id", pa.string()),
    ("ref", pa.string()),
    ("alt", pa.list_(pa.string())),
    ("qual", pa.float32()),
    ("filters", pa.list_(pa.string())),
]


@pytest.mark.parametrize(
    ("number", "vcf_type", "dtype", "expected"),
    [
        ("1", "Integer", "i1", pa.int32()),
        ("1", "Integer", "<i2", pa.int32()),
        ("1", "Integer", ">i4", pa.int32()),
        ("1", "Integer", "<i8", pa.int64()),
        ("A", "Integer", "i1", pa.list_(pa.int32())),
        ("1", "Float", "<f4", pa.float32()),
        ("1", "Float", "<f8", pa.float32()),
        ("R", "Float", "<f4", pa.list_(pa.float32())),
        ("0", "Flag", "bool", pa.bool_()),
        ("1", "Character", "<U1", pa.string()),
        ("2", "Character", "|S1", pa.list_(pa.string())),
        ("1", "String", "O", pa.string()),
        (".", "String", "O", pa.list_(pa.string())),
        ("G", "Integer", "<i4", pa.list_(pa.int32())),
    ],
)
def test_info_types(number, vcf_type, dtype, expected):
    s = store(info=[field("X", "INFO", number, vcf_type, dtype)])
    assert schema.variants_schema(s).field("info_X").type == expected
    calls_type = schema.calls_schema(s).field("info_X").type
    assert calls_type == (DICT_STRING if expected == pa.string() else expected)


@pytest.mark.parametrize(
    ("number", "vcf_type", "dtype", "per_call"),
    [
        ("1", "Integer", "i1", pa.int32()),
        ("G", "Integer", "<i2", pa.list_(pa.int32())),
        ("1", "Float", "<f4", pa.float32()),
        ("2", "Float", "<f4", pa.list_(pa.float32())),
        ("1", "String", "O", pa.string()),
        ("1", "Character", "<U1", pa.string()),
    ],
)
def test_format_types(number, vcf_type, dtype, per_call):
    s = store(fmt=[field("X", "FORMAT", number, vcf_type, dtype)])
    assert schema.variants_schema(s).field("fmt_X").type == pa.list_(per_call)
    assert schema.calls_schema(s).field("fmt_X").type == per_call


@pytest.mark.parametrize("dtype", ["i1", "<i2", "<i4"])
def test_genotypes_keep_the_stored_width(dtype):
    s = store(fmt=[field("GT", "FORMAT", "1", "String", dtype)])
    allele = pa.from_numpy_dtype(np.dtype(dtype))
    variants, calls = schema.variants_schema(s), schema.calls_schema(s)
    assert variants.field("fmt_GT").type == pa.list_(pa.list_(allele))
    assert variants.field("fmt_GT_phased").type == pa.list_(pa.bool_())
    assert calls.field("fmt_GT").type == pa.list_(allele)
    assert calls.field("fmt_GT_phased").type == pa.bool_()


@pytest.mark.parametrize("dtype", ["i1", "<i4"])
def test_one_allele_column_per_ploidy_after_gt(dtype):
    gt = field("GT", "FORMAT", "1", "String", dtype, shape=(9, 3, 3))
    dp = field("DP", "FORMAT", "1", "Integer", "i4", shape=(9, 3))
    allele = pa.from_numpy_dtype(np.dtype(dtype))
    variants, calls = schema.variants_schema(store(fmt=[gt, dp])), schema.calls_schema(store(fmt=[gt, dp]))
    derived = ["fmt_GT_phased", "fmt_GT_1", "fmt_GT_2", "fmt_GT_3"]
    variant_fields = [n for n in variants.names if not n.startswith("gt_")]
    assert variant_fields[-6:] == calls.names[-6:] == ["fmt_GT", *derived, "fmt_DP"]
    for k in (1, 2, 3):
        assert calls.field(f"fmt_GT_{k}").type == allele
        assert variants.field(f"fmt_GT_{k}").type == pa.list_(allele)
        assert calls.field(f"fmt_GT_{k}").metadata[b"Description"].startswith(f"Allele {k} ".encode())


def test_a_format_field_keeps_the_name_of_a_derived_genotype_column():
    gt = field("GT", "FORMAT", "1", "String", "i1", shape=(9, 3, 2))
    own = [field(n, "FORMAT", "1", "Float", "<f4", shape=(9, 3)) for n in ("GT_2", "GT_phased")]
    for table in (schema.variants_schema, schema.calls_schema):
        t = table(store(fmt=[gt, *own]))
        assert len(set(t.names)) == len(t.names)
        assert [n for n in t.names if n.startswith("fmt_GT")] == ["fmt_GT", "fmt_GT_1", "fmt_GT_2", "fmt_GT_phased"]
        assert pa.types.is_floating(t.field("fmt_GT_2").type) or pa.types.is_floating(t.field("fmt_GT_2").type.value_type)


def test_table_layouts():
    s = store(
        info=[field("DP", "INFO", "1", "Integer", "i4")],
        fmt=[
            field("GT", "FORMAT", "1", "String", "i1"),
            field("AD", "FORMAT", "R", "Integer", "i2"),
        ],
    )
    variants = schema.variants_schema(s)
    assert [(f.name, f.type) for f in variants][: len(FIXED)] == FIXED
    assert variants.names[len(FIXED) :] == ["info_DP", "fmt_GT", "fmt_GT_phased", "fmt_AD"]
    calls = schema.calls_schema(s)
    repeated = {"id": DICT_STRING, "ref": DICT_STRING}
    assert [(f.name, f.type) for f in calls][: len(FIXED)] == [
        (name, repeated.get(name, t)) for name, t in FIXED
    ]
    assert calls.names[len(FIXED) :] == [
        "info_DP", "sample_id", "fmt_GT", "fmt_GT_phased", "fmt_AD"
    ]
    assert calls.field("sample_id").type == DICT_STRING


def test_fields_carry_their_vcf_definition():
    dp = field("DP", "INFO", "1", "Integer", "i4", description="Total depth, all samples")
    ad = field("AD", "FORMAT", "R", "Integer", "i2", description="Allelic depths")
    for table in (schema.variants_schema, schema.calls_schema):
        t = table(store(info=[dp], fmt=[ad]))
        assert t.field("info_DP").metadata == {
            b"Number": b"1", b"Type": b"Integer", b"Description": b"Total depth, all samples"
        }
        assert t.field("fmt_AD").metadata[b"Number"] == b"R"
        assert t.field("pos").metadata[b"Description"]


def _types(t: pa.DataType):
    yield t
    if pa.types.is_dictionary(t):
        yield from _types(t.value_type)
        yield t.index_type
    for i in range(t.num_fields):
        yield from _types(t.field(i).type)


def test_no_type_that_disables_duckdb_pushdown():
    s = store(
        info=[field("S", "INFO", ".", "String", "O"), field("C", "INFO", "1", "Character", "<U1")],
        fmt=[field("GT", "FORMAT", "1", "String", "i1"), field("S", "FORMAT", "1", "String", "O")],
    )
    for table in (schema.variants_schema(s), schema.calls_schema(s)):
        for f in table:
            for t in _types(f.type):
                assert not pa.types.is_string_view(t), f
                assert not pa.types.is_large_string(t) and not pa.types.is_large_list(t), f
                assert not pa.types.is_run_end_encoded(t), f
                assert not pa.types.is_list_view(t), f


def test_summary_columns_follow_the_fields_when_there_are_genotypes():
    gt = field("GT", "FORMAT", "1", "String", "i1", shape=(9, 3, 2))
    dp = field("DP", "FORMAT", "1", "Integer", "i4", shape=(9, 3))
    variants = schema.variants_schema(store(fmt=[gt, dp]))
    assert [n for n in variants.names if n.startswith("gt_")] == [
        "gt_AC", "gt_AN", "gt_AF", "gt_AC_Het", "gt_AC_Hom", "gt_AC_Hemi", "gt_NS", "gt_MAF",
        "gt_F_MISSING", "gt_HWE", "gt_ExcHet",
    ]
    assert variants.field("gt_AF").type == pa.list_(pa.float32())
    assert not any(n.startswith("gt_") for n in schema.calls_schema(store(fmt=[gt, dp])).names)
    assert not any(n.startswith("gt_") for n in schema.variants_schema(store(fmt=[dp])).names)
