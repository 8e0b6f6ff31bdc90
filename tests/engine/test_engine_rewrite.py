"""The SQL rewrite: golden input/expected pairs in tests/fixtures/rewrite, and its errors."""

from __future__ import annotations

import doctest
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from vcfzarr_sql.engine.rewrite import rewrite
from vcfzarr_sql.errors import QueryError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "rewrite"
CASES = sorted(p.name.removesuffix(".in.sql") for p in FIXTURES.glob("*.in.sql"))


def _json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    params = _json(FIXTURES / f"{case}.params.json")
    query = rewrite((FIXTURES / f"{case}.in.sql").read_text(), params)
    assert query.sql == (FIXTURES / f"{case}.out.sql").read_text()
    if params is not None:
        assert query.parameters == _json(FIXTURES / f"{case}.out.params.json")
    assert all(name in query.sql for name in query.relations)


def test_golden_cases_exist() -> None:
    assert len(CASES) >= 15


def test_same_call_registers_one_relation() -> None:
    query = rewrite((FIXTURES / "same_call_twice.in.sql").read_text())
    assert len(query.relations) == 1


def test_relation_names_differ_by_arguments() -> None:
    names = {
        name
        for sql in (
            "SELECT * FROM vcf_zarr('/d/a.zarr')",
            "SELECT * FROM vcf_zarr('/d/a.zarr', region := '1')",
            "SELECT * FROM vcf_zarr('/d/a.zarr', samples := ['s1'])",
            "SELECT * FROM vcf_zarr_calls('/d/a.zarr')",
            "SELECT * FROM vcf_zarr('/d/b.zarr')",
        )
        for name in rewrite(sql).relations
    }
    assert len(names) == 5


def test_relative_and_absolute_paths_name_the_same_relation(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    relative = rewrite("SELECT * FROM vcf_zarr('x.zarr')").relations
    absolute = rewrite(f"SELECT * FROM vcf_zarr('{tmp_path}/x.zarr')").relations
    assert relative.keys() == absolute.keys()


@pytest.mark.parametrize(
    ("sql", "params", "message"),
    [
        ("SELECT * FROM vcf_zarr('x.zarr', reigon := '1')", None, "vcf_zarr(): unknown parameter 'reigon' (it takes region, samples)"),
        ("SELECT * FROM vcf_zarr_samples('x.zarr', samples := ['a'])", None, "vcf_zarr_samples(): unknown parameter 'samples'"),
        ("SELECT * FROM vcf_zarr(42)", None, "vcf_zarr(): the store path must be a string, got 42"),
        ("SELECT * FROM vcf_zarr()", None, "vcf_zarr(): expected one store path argument, got 0"),
        ("SELECT * FROM vcf_zarr('a', 'b')", None, "vcf_zarr(): expected one store path argument, got 2"),
        ("SELECT * FROM vcf_zarr(path_column)", None, "vcf_zarr(): the store path must be a constant"),
        ("SELECT * FROM vcf_zarr('x', samples := 'NA1')", None, "vcf_zarr(): samples must be a list of strings, got 'NA1'"),
        ("SELECT * FROM vcf_zarr('x', samples := [1, 2])", None, "vcf_zarr(): samples must be a list of strings"),
        ("SELECT * FROM vcf_zarr('x', region := 1)", None, "vcf_zarr(): region must be a string, got 1"),
        ("SELECT * FROM vcf_zarr('x', region := '1', region := '2')", None, "parameter 'region' given twice"),
        ("SELECT * FROM vcf_zarr(region := '1', 'x')", None, "the store path must come before named parameters"),
        ("SELECT * FROM vcf_zarr(?)", None, "parameter ? number 1 has no value"),
        ("SELECT * FROM vcf_zarr(?) WHERE pos = ?", [], "parameter ? number 1 has no value"),
        ("SELECT * FROM vcf_zarr($store)", {"other": 1}, "parameter $store has no value"),
        ("SELECT * FROM vcf_zarr($1)", {"1": "x"}, "parameter $1 has no value"),
        ("SELECT * FROM vcf_zarr('x'", None, "missing closing parenthesis"),
    ],
)
def test_errors_name_the_argument(sql: str, params: dict[str, object] | None, message: str) -> None:
    with pytest.raises(QueryError) as err:
        rewrite(sql, params)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_parameters_pass_through_untouched_without_calls_consuming_them() -> None:
    query = rewrite("SELECT * FROM vcf_zarr('/d/x.zarr') WHERE pos > $1 AND ref = $2", [5, "A"])
    assert query.parameters == [5, "A"]
    assert query.sql.endswith("WHERE pos > $1 AND ref = $2")


def test_numbered_parameter_used_inside_and_outside_a_call_is_kept() -> None:
    query = rewrite("SELECT $2 AS r, * FROM vcf_zarr($1, region := $2)", ["/d/x.zarr", "1"])
    assert query.sql.startswith("SELECT $1 AS r, ")
    assert query.parameters == ["1"]
    assert next(iter(query.relations.values())).region == "1"


def test_region_list_is_joined() -> None:
    query = rewrite("SELECT * FROM vcf_zarr('/d/x.zarr', region := ['1:1-10', '2'])")
    assert next(iter(query.relations.values())).region == "1:1-10,2"


ENGINE_MODULES = [
    "vcfzarr_sql.engine.call_sites",
    "vcfzarr_sql.engine.functions",
    "vcfzarr_sql.engine.rewrite",
    "vcfzarr_sql.engine.stats",
    "vcfzarr_sql.engine.connection",
    "vcfzarr_sql.engine.rules.inline_parameters",
    "vcfzarr_sql.engine.rules.bind_arguments",
    "vcfzarr_sql.engine.rules.reference_relation",
    "vcfzarr_sql.cli.demo",
]


@pytest.mark.parametrize("name", ENGINE_MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert attempted > 0 and failed == 0


def _names(count: int, quote: str = "") -> str:
    return "[" + ", ".join(f"'{quote}S{i:05d}'" for i in range(count)) + "]"


LONG = _names(40)
LONG_LIST_QUERIES = [
    f"SELECT pos FROM vcf_zarr('/d/x.zarr', samples := {LONG}) WHERE pos > $1",
    f"SELECT * FROM vcf_zarr('/d/x.zarr', region := {_names(33)}, samples := {LONG})",
    f"SELECT * FROM vcf_zarr_sample_stats('/d/x.zarr', samples := {LONG}, exclude_samples := true)",
    # a list outside every call, one in a comment, one in a $$ string: kept as written
    f"SELECT list_contains({LONG}, s) FROM vcf_zarr_calls('/d/x.zarr', samples := {LONG}) -- ({LONG})",
    f"SELECT $$x, {LONG}$$ AS t, * FROM vcf_zarr('/d/x.zarr', samples:={LONG}) /* ={LONG} */",
    # strings the regular expressions do not read (quotes, backslashes): tokenized
    f"SELECT * FROM vcf_zarr('/d/x.zarr', samples := {_names(40, quote=chr(39) * 2)})",
    f"SELECT * FROM vcf_zarr('/d/x.zarr', samples := {_names(40, quote=chr(92))})",
    # a list in a quoted identifier: the text tokenized whole
    f"SELECT 1 AS \"x={LONG}\" FROM vcf_zarr('/d/x.zarr')",
]


@pytest.mark.parametrize("sql", LONG_LIST_QUERIES)
def test_long_string_lists_rewrite_as_the_tokenizer_reads_them(sql: str) -> None:
    """The lists read by regular expressions give the rewrite of the text tokenized whole."""
    from vcfzarr_sql.engine.call_sites import tokenize
    from vcfzarr_sql.engine.rewrite import _rewrite_tokens

    params = [5] if "$1" in sql else None
    expected = _rewrite_tokens(sql, tokenize(sql), params, None, None, None)
    got = rewrite(sql, params)
    assert (got.sql, got.relations, got.parameters) == (expected.sql, expected.relations, expected.parameters)


def test_long_string_list_errors_are_the_tokenizers() -> None:
    sql = f"SELECT * FROM vcf_zarr('/d/x.zarr', samples := {LONG}, samples := {LONG})"
    with pytest.raises(QueryError, match="given twice"):
        rewrite(sql)


def test_ten_thousand_samples_cost_little_to_rewrite() -> None:
    import time

    sql = f"SELECT pos FROM vcf_zarr('/d/x.zarr', samples := {_names(10_000)}) WHERE pos > 1"
    costs = []
    for k in range(3):
        started = time.process_time()
        query = rewrite(sql.replace("pos > 1", f"pos > {k}"))  # (not a remembered text)
        costs.append(time.process_time() - started)
    assert len(next(iter(query.relations.values())).samples or ()) == 10_000
    assert min(costs) < 0.05, costs
