"""``query``'s output files and messages: every row in a file, the format from the extension,
EXPLAIN as plan text, errors about the SQL as typed (no internal names or temporary paths).

Expected rows come from bcftools (tests/oracle.py) on the corpus' sample.vcf.gz.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import oracle
import pyarrow.parquet as pq
import pytest

import vcfzarr_sql
from vcfzarr_sql.cli import main

#: more rows than the table format shows on a terminal (1000): 9 records x 300
MANY = "SELECT v.pos, r.range AS k FROM vcf_zarr('{store}') v, range(300) r ORDER BY v.pos, k"
INTERNAL = re.compile(r"vcf_zarr_[0-9a-f]{12}|vcfzarr-sql-|vcfzarr_sql_result")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("cli-output") / "sample.zarr"
    vcfzarr_sql.convert(oracle.CORPUS_SAMPLE, out, variants_chunk_size=3, show_progress=False)
    return str(out)


@pytest.fixture(scope="module")
def expected() -> list[tuple[int, int]]:
    return sorted((r.pos, k) for r in oracle.records(oracle.CORPUS_SAMPLE) for k in range(300))


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_text_file_gets_every_row(capsys, store, tmp_path, expected):
    out_file = tmp_path / "out.txt"
    assert _run(capsys, "query", MANY.format(store=store), "-o", str(out_file)) == (0, "", "")
    header, rule, *rows = out_file.read_text().splitlines()
    assert header.split() == ["pos", "|", "k"] and set(rule) == {"-", "+"}
    assert [tuple(int(c) for c in row.split("|")) for row in rows] == expected


@pytest.mark.parametrize("extension", [".parquet", ".csv", ".tsv", ".json"])
def test_the_format_follows_the_extension(capsys, store, tmp_path, expected, extension):
    out_file = tmp_path / f"out{extension}"
    assert _run(capsys, "query", MANY.format(store=store), "-o", str(out_file))[0] == 0
    if extension == ".parquet":
        rows = pq.read_table(out_file).to_pylist()
    elif extension == ".json":
        rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    else:
        delimiter = "\t" if extension == ".tsv" else ","
        rows = list(csv.DictReader(out_file.open(), delimiter=delimiter))
    assert [(int(r["pos"]), int(r["k"])) for r in rows] == expected


def test_format_option_wins_over_the_extension(capsys, store, tmp_path):
    out_file = tmp_path / "out.parquet"
    sql = f"SELECT pos FROM vcf_zarr('{store}')"
    assert _run(capsys, "query", sql, "-f", "csv", "-o", str(out_file))[0] == 0
    positions = [r.pos for r in oracle.records(oracle.CORPUS_SAMPLE)]
    assert out_file.read_text().split() == ["pos", *map(str, positions)]


def test_explain_prints_the_plan_as_text(capsys, store):
    code, out, _ = _run(capsys, "query", f"EXPLAIN SELECT pos FROM vcf_zarr('{store}') WHERE contig = '20'")
    assert code == 0
    assert "explain_key" not in out and "\\n" not in out
    assert any("Filters:" in line for line in out.splitlines())


@pytest.mark.parametrize("comment", ["; -- the end", " -- the end", ";\n/* the end */"])
def test_a_trailing_comment_is_fine(capsys, store, comment):
    code, out, err = _run(capsys, "query", f"SELECT count(*) AS n FROM vcf_zarr('{store}'){comment}", "-f", "csv")
    assert (code, out.split(), err) == (0, ["n", str(len(oracle.records(oracle.CORPUS_SAMPLE)))], "")


def test_end_gets_a_hint_to_quote_it(capsys, store, monkeypatch):
    monkeypatch.chdir(Path(store).parent)
    code, _, err = _run(capsys, "query", "SELECT pos FROM vcf_zarr('sample.zarr') WHERE end > 1")
    assert code == 1
    if "LINE 1:" in err:  # DuckDB >= 1.2 shows the line: the SQL as typed
        assert "LINE 1: SELECT pos FROM vcf_zarr('sample.zarr') WHERE end > 1" in err
    assert 'write the column as "end"' in err and not INTERNAL.search(err)


@pytest.mark.parametrize("sql, fmt", [
    ("SELECT pos FROM vcf_zarr('{store}') WHERE", "table"),
    ("SELECT vcf_zarr.nosuch FROM vcf_zarr('{store}')", "table"),
    ("SELECT * FROM vcf_zarr('{store}') JOIN vcf_zarr('{store}') USING (nosuch)", "table"),
    ("SELECT CAST(id AS INTEGER) FROM vcf_zarr('{store}')", "csv"),
    ("SELECT CAST(id AS INTEGER) FROM vcf_zarr('{store}')", "json"),
])
def test_errors_show_no_internal_names_or_temporary_paths(capsys, store, sql, fmt):
    code, _, err = _run(capsys, "query", sql.format(store=store), "-f", fmt)
    assert code == 1 and err.startswith("error: ")
    assert not INTERNAL.search(err), err
