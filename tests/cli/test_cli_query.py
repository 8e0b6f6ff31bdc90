"""The query, shell, info and demo commands, run through ``vcfzarr_sql.cli.main``.

Expected values come from bcftools (tests/oracle.py) on the corpus' sample.vcf.gz.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import os

import oracle
import pyarrow.parquet as pq
import pytest

import vcfzarr_sql
from vcfzarr_sql.cli import main
from vcfzarr_sql.cli.demo import DEMO_VCF

SAMPLE_VCF = oracle.CORPUS_SAMPLE


@pytest.fixture(scope="session")
def store(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("cli-query") / "sample.zarr"
    vcfzarr_sql.convert(SAMPLE_VCF, out, variants_chunk_size=3, show_progress=False)
    return str(out)


def _cells(out: str) -> list[list[str]]:
    """The cells of every row of the box tables DuckDB renders in ``out``."""
    return [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in out.splitlines()
        if line.startswith("│")
    ]


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_query_csv(capsys, store) -> None:
    code, out, _ = _run(
        capsys, "query", f"SELECT contig, pos, ref FROM vcf_zarr('{store}') WHERE contig = '20'", "-f", "csv"
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    expected = [r for r in oracle.records(SAMPLE_VCF) if r.chrom == "20"]
    assert [(row["contig"], int(row["pos"]), row["ref"]) for row in rows] == [
        (r.chrom, r.pos, r.ref) for r in expected
    ]


def test_query_json_lines(capsys, store) -> None:
    code, out, _ = _run(capsys, "query", f"SELECT pos, alt, qual FROM vcf_zarr('{store}')", "--format", "json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    records = oracle.records(SAMPLE_VCF)
    assert [row["pos"] for row in rows] == [r.pos for r in records]
    assert [row["alt"] for row in rows] == [r.alt for r in records]
    assert all(oracle.float_equal(r.qual, row["qual"]) for r, row in zip(records, rows))


def test_query_table(capsys, store) -> None:
    code, out, _ = _run(capsys, "query", f"SELECT count(*) AS n FROM vcf_zarr('{store}')")
    assert code == 0
    assert _cells(out) == [["n"], ["int64"], [str(len(oracle.records(SAMPLE_VCF)))]]


def test_query_parquet_to_file_with_stats(capsys, store, tmp_path) -> None:
    out_file = tmp_path / "x.parquet"
    code, _, err = _run(
        capsys, "query", f"SELECT pos FROM vcf_zarr('{store}', region := 'X')",
        "-f", "parquet", "-o", str(out_file), "--stats",
    )
    assert code == 0
    assert pq.read_table(out_file).column("pos").to_pylist() == [
        r.pos for r in oracle.records(SAMPLE_VCF, region="X")
    ]
    stats = json.loads(err.strip().splitlines()[-1])
    assert stats["variant_chunks_read"] == 1
    assert stats["variant_chunks_total"] == 3


def test_query_csv_to_file(capsys, store, tmp_path) -> None:
    out_file = tmp_path / "x.csv"
    code, out, _ = _run(capsys, "query", f"SELECT pos FROM vcf_zarr('{store}')", "-f", "csv", "-o", str(out_file))
    assert code == 0 and out == ""
    assert out_file.read_text().splitlines()[1:] == [str(r.pos) for r in oracle.records(SAMPLE_VCF)]


def test_query_parquet_needs_output(capsys, store) -> None:
    code, _, err = _run(capsys, "query", f"SELECT pos FROM vcf_zarr('{store}')", "-f", "parquet")
    assert code == 1
    assert err.strip() == "error: --format parquet needs -o FILE"


def test_query_errors_are_one_line(capsys, tmp_path) -> None:
    missing = tmp_path / "nope.zarr"
    code, out, err = _run(capsys, "query", f"SELECT * FROM vcf_zarr('{missing}')")
    assert code == 1
    assert err.startswith("error: ") and str(missing) in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in out + err


def test_query_passes_duckdb_errors_through(capsys, store) -> None:
    code, _, err = _run(capsys, "query", f"SELECT no_such_column FROM vcf_zarr('{store}')")
    assert code == 1
    assert err.startswith("error: Binder Error") and "no_such_column" in err


def test_shell_reads_a_script_from_stdin(capsys, monkeypatch, store) -> None:
    script = f"""
.mode csv
SELECT contig, count(*) AS n
FROM vcf_zarr('{store}')
GROUP BY contig ORDER BY contig;
.stats
SELECT nope;
.timer off
CREATE VIEW v AS SELECT * FROM vcf_zarr('{store}', region := '19');
SELECT count(*) AS n19 FROM v;
.quit
SELECT 'not run';
"""
    monkeypatch.setattr("sys.stdin", io.StringIO(script))
    code, out, err = _run(capsys, "shell")
    assert code == 1  # one statement failed
    assert "error: 1 statement(s) failed" in err
    assert "Binder Error" in err and "nope" in err
    counts = collections.Counter(r.chrom for r in oracle.records(SAMPLE_VCF))
    lines = out.splitlines()
    assert lines[:4] == ["contig,n", *(f"{c},{n}" for c, n in sorted(counts.items()))]
    stats = json.loads(lines[4])
    # contig is decoded only in the chunks (of 3 records) that hold more than one contig; the
    # region index gives the others'
    chroms = [r.chrom for r in oracle.records(SAMPLE_VCF)]
    mixed = sum(len(set(chroms[i : i + 3])) > 1 for i in range(0, len(chroms), 3))
    assert (stats["variant_chunks_read"], stats["variant_chunks_total"]) == (mixed, 3)
    assert lines[5:] == ["n19", str(counts["19"])]
    assert "not run" not in out


def test_shell_help_and_unknown_command(capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(".help\n.bogus\n"))
    code, out, err = _run(capsys, "shell")
    assert code == 1
    assert "vcf_zarr_calls" in out and ".stats" in out
    assert "error: unknown command .bogus (try .help)" in err


def test_info(capsys, store) -> None:
    code, out, _ = _run(capsys, "info", store)
    assert code == 0
    header = oracle.header(SAMPLE_VCF)
    assert "VCF Zarr 0.3" in out
    assert f"records:   {len(oracle.records(SAMPLE_VCF))} in 3 chunks of 3" in out
    assert all(sample in out for sample in header.samples)
    cells = _cells(out)
    counts = collections.Counter(r.chrom for r in oracle.records(SAMPLE_VCF))
    for contig, length in header.contigs:
        assert [contig, "NULL" if length is None else str(length), str(counts[contig])] in cells
    fields = {(row[0], row[1]): row for row in cells if row[0] in ("INFO", "FORMAT")}
    for category, defs in (("INFO", header.info), ("FORMAT", header.format)):
        for field in defs.values():
            row = fields[category, field.name]
            assert row[3:6] == [field.number, field.vcf_type, field.description]


def test_info_of_a_missing_store(capsys, tmp_path) -> None:
    code, _, err = _run(capsys, "info", str(tmp_path / "nope.zarr"))
    assert code == 1 and err.startswith("error: ") and "nope.zarr" in err


def test_demo(capsys, tmp_path) -> None:
    code, out, _ = _run(capsys, "demo", "--keep", str(tmp_path / "demo.zarr"))
    assert code == 0
    cells = _cells(out)
    records = oracle.records(DEMO_VCF)
    for contig in ("1", "2"):
        positions = [r.pos for r in records if r.chrom == contig]
        assert [contig, str(len(positions)), str(positions[0]), str(positions[-1])] in cells
    in_targets = oracle.records(DEMO_VCF, targets="2:300000-400000")
    passed = sum(r.filters == ["PASS"] for r in in_targets)
    first_row = cells.index(["records", "pass", "mean_qual"]) + 2  # after the types row
    assert cells[first_row][:2] == [str(len(in_targets)), str(passed)]
    assert out.count("variant chunks") == 5
    assert "read 11 of 11 variant chunks" in out  # records per contig reads everything
    # per-sample missingness and heterozygosity on contig 2, from bcftools' genotypes
    alleles, _ = oracle.genotype_arrays(DEMO_VCF, targets="2")
    first, second = alleles[..., 0], alleles[..., 1]
    missing = ((first < 0) & (second < 0)).mean(axis=0)
    called = (first >= 0) & (second >= 0)
    het = (called & (first != second)).sum(axis=0) / called.sum(axis=0)
    samples = oracle.header(DEMO_VCF).samples
    expected = sorted(zip(samples, missing.round(4), het.round(4)), key=lambda r: (-r[1], r[0]))
    first_row = cells.index(["sample_id", "calls", "missing", "het"]) + 2
    got = [(c[0], float(c[2]), float(c[3])) for c in cells[first_row : first_row + 5]]
    assert got == [(s, float(m), float(h)) for s, m, h in expected[:5]]


def test_shell_prompts_at_a_terminal(capsys, monkeypatch, store) -> None:
    from vcfzarr_sql.cli import shell

    lines = iter(["SELECT count(*) AS n", f"FROM vcf_zarr('{store}');", ".timer off", ".quit"])
    prompts = []

    def fake_input(prompt: str) -> str:
        prompts.append(prompt)
        return next(lines)

    monkeypatch.setattr("builtins.input", fake_input)
    session = shell.Session(vcfzarr_sql.connect())
    shell.run_shell(session, shell.terminal_reader(), interactive=True)
    out, err = capsys.readouterr()
    assert prompts == [shell.PROMPT, shell.CONTINUATION, shell.PROMPT, shell.PROMPT]
    assert _cells(out)[-1] == [str(len(oracle.records(SAMPLE_VCF)))]
    assert "Run Time: " in err
    assert session.done and session.failures == 0


def test_demo_on_a_file_without_dp_or_genotypes(capsys, tmp_path) -> None:
    vcf = tmp_path / "plain.vcf"
    vcf.write_text(
        "##fileformat=VCFv4.2\n##contig=<ID=chrA>\n##contig=<ID=chrB>\n"
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
        + "".join(f"chr{c}\t{p}\t.\tA\tG\t{p % 50}\tPASS\t.\n" for c in "AB" for p in range(100, 2100, 10))
    )
    code, out, err = _run(capsys, "demo", "--vcf", str(vcf))
    assert (code, err) == (0, "")
    cells = _cells(out)
    for contig in ("chrA", "chrB"):
        positions = [r.pos for r in oracle.records(str(vcf)) if r.chrom == contig]
        assert [contig, str(len(positions)), str(positions[0]), str(positions[-1])] in cells
    title = next(line for line in out.splitlines() if "bcftools view -t" in line)
    targets = title.split("bcftools view -t ")[1].rstrip(")")
    first_row = cells.index(["records", "pass", "mean_qual"]) + 2
    assert cells[first_row][0] == str(len(oracle.records(str(vcf), targets=targets)))


def test_a_view_saved_in_a_database_file_works_in_the_next_session(capsys, monkeypatch, store, tmp_path) -> None:
    database = str(tmp_path / "saved.db")
    monkeypatch.chdir(os.path.dirname(store))
    relative = os.path.basename(store)
    script = f"CREATE VIEW v AS SELECT pos FROM vcf_zarr('{relative}', region := '20');\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(script))
    assert _run(capsys, "shell", "-d", database) == (0, "", "")
    monkeypatch.chdir(tmp_path)  # another directory, another session
    monkeypatch.setattr("sys.stdin", io.StringIO(".mode csv\nSELECT count(*) AS n FROM v;\n.tables\n"))
    code, out, err = _run(capsys, "shell", "-d", database)
    assert (code, err) == (0, "")
    expected = sum(r.chrom == "20" for r in oracle.records(SAMPLE_VCF))
    assert out.split() == ["n", str(expected), "name", "v"]  # no internal relation names
