"""Values where a naive reader loses fidelity, against bcftools (issue 15).

``tests/data/corpus/vcfzarr-sql/fidelity.vcf`` holds POS 0 records, real Integer values -1
and -2 (the spec's missing and fill sentinels), empty strings inside String lists and fields
whose IDs differ only in case. It is also in the corpus (MANIFEST.tsv), so test_sql_corpus
compares every column of it with bcftools; the tests here are the pointed ones.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import oracle
import pysam
import pytest
from corpus import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_support import zarr_array

import vcfzarr_sql

FIDELITY = CORPUS / "vcfzarr-sql" / "fidelity.vcf"


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(FIDELITY, variants_chunk_size=3, samples_chunk_size=2))


@pytest.fixture(scope="module")
def con():
    connection = vcfzarr_sql.connect()
    yield connection
    connection.close()


@pytest.mark.parametrize("region", ["1", "1:1", "1:1-", "1:1-2", "1:2", "1:2-3", "2", "2:1-3", "1,2"])
def test_pos_0_records_are_in_no_region_as_in_bcftools(con, store, region) -> None:
    got = con.sql(
        f"SELECT contig, pos, ref FROM vcf_zarr('{store}', region := '{region}') ORDER BY contig, pos"
    ).fetchall()
    expected = [(r.chrom, r.pos, r.ref) for r in oracle.records(FIDELITY, region=region)]
    assert got == expected


def _bcftools_query(*args: str) -> list[list[str]]:
    out = pysam.bcftools.query(*args, str(FIDELITY))
    assert isinstance(out, str)
    return [line.split(" ") for line in out.splitlines()]


@pytest.mark.parametrize(
    "category, twins", [("INFO", ["DP", "dp", "Dp"]), ("FORMAT", ["DQ", "dq"])]
)
def test_case_twin_fields_have_distinct_columns_in_every_table(con, store, category, twins) -> None:
    fields = dict(
        con.execute(
            f"SELECT name, \"column\" FROM vcf_zarr_fields('{store}') WHERE category = ?", [category]
        ).fetchall()
    )
    columns = [fields[name] for name in twins]
    assert len({c.casefold() for c in columns}) == len(twins)
    for table in ("vcf_zarr", "vcf_zarr_calls"):
        described = [name for name, *_ in con.sql(f"DESCRIBE SELECT * FROM {table}('{store}')").fetchall()]
        assert set(columns) <= set(described), table
        assert len({c.casefold() for c in described}) == len(described), table


def test_each_case_twin_column_reads_its_own_field(con, store) -> None:
    header = oracle.header(FIDELITY)
    records = oracle.records(FIDELITY)
    fields = dict(con.sql(f"SELECT name, \"column\" FROM vcf_zarr_fields('{store}')").fetchall())
    for name in ("DP", "dp", "Dp"):
        assert header.info[name]
        got = con.sql(f"SELECT {fields[name]} FROM vcf_zarr('{store}')").fetchall()
        expected = [r.info[name] for r in records]
        assert [v for (v,) in got] == expected, name


def test_filters_on_case_twin_columns_match_bcftools(con, store) -> None:
    fields = dict(con.sql(f"SELECT name, \"column\" FROM vcf_zarr_fields('{store}')").fetchall())
    for name in ("DP", "dp"):
        got = con.sql(f"SELECT pos FROM vcf_zarr('{store}') WHERE {fields[name]} > 7").fetchall()
        expected = _bcftools_query("-i", f"INFO/{name}>7", "-f", "%POS\n")
        assert [str(p) for (p,) in got] == [p for (p,) in expected], name
    got = con.sql(
        f"SELECT pos, sample_id FROM vcf_zarr_calls('{store}') WHERE {fields['dq']} >= 4 ORDER BY pos, sample_id"
    ).fetchall()
    assert [[str(p), s] for p, s in got] == _bcftools_query("-i", "FMT/dq>=4", "-f", "[%POS %SAMPLE\n]")


# -- values equal to the spec's sentinels, empty strings in lists -----------------------------

INTEGER_FIELDS = ["SVLEN", "CIPOS", "CIEND", "OFF", "DP"]
MASKED = ["variant_SVLEN", "variant_CIPOS", "variant_CIEND", "variant_OFF", "variant_L",
          "variant_DP", "variant_dp", "call_FS", "call_FI", "call_DQ", "call_dq"]


def _fields(con, store: str) -> dict[tuple[str, str], str]:
    rows = con.sql(f"SELECT category, name, \"column\" FROM vcf_zarr_fields('{store}')").fetchall()
    return {(category, name): column for category, name, column in rows}


@pytest.mark.parametrize("name", INTEGER_FIELDS + ["L", "NOTE"])
def test_info_values_equal_to_sentinels_match_bcftools(con, store, name) -> None:
    column = _fields(con, store)["INFO", name]
    got = [v for (v,) in con.sql(f"SELECT {column} FROM vcf_zarr('{store}')").fetchall()]
    assert got == [r.info[name] for r in oracle.records(FIDELITY)]


@pytest.mark.parametrize("name", ["FS", "FI", "DQ", "dq"])
def test_format_values_equal_to_sentinels_match_bcftools(con, store, name) -> None:
    column = _fields(con, store)["FORMAT", name]
    header = oracle.header(FIDELITY)
    records = oracle.records(FIDELITY)
    calls = oracle.calls(FIDELITY, [name])
    got = con.sql(f"SELECT {column} FROM vcf_zarr('{store}')").fetchall()
    assert [values for (values,) in got] == [[call[name] for call in record] for record in calls]
    per_call = con.sql(
        f"SELECT contig, pos, ref, sample_id, {column} FROM vcf_zarr_calls('{store}')"
    ).fetchall()
    expected = {
        (r.chrom, r.pos, r.ref, sample): call[name]
        for r, record in zip(records, calls)
        for sample, call in zip(header.samples, record)
    }
    assert {row[:4]: row[4] for row in per_call} == expected
    assert len(per_call) == len(expected)


@pytest.mark.parametrize(
    "sql, expression",
    [
        ("info_SVLEN = -1", "INFO/SVLEN=-1"),
        ("info_SVLEN = -2", "INFO/SVLEN=-2"),
        ("info_SVLEN < 0", "INFO/SVLEN<0"),
        ("info_SVLEN IS NULL", "INFO/SVLEN=\".\""),
        ("info_DP = -2", "INFO/DP=-2"),
    ],
)
def test_filters_on_values_equal_to_sentinels_match_bcftools(con, store, sql, expression) -> None:
    got = con.sql(f"SELECT contig, pos FROM vcf_zarr('{store}') WHERE {sql} ORDER BY contig, pos").fetchall()
    expected = _bcftools_query("-i", expression, "-f", "%CHROM %POS\n")
    assert [[c, str(p)] for c, p in got] == expected


def test_masks_only_for_fields_with_values_equal_to_sentinels(store) -> None:
    import zarr

    group = zarr.open_group(store, mode="r")
    masks = sorted(name[len("mask_") :] for name in group.array_keys() if name.startswith("mask_"))
    assert masks == sorted(MASKED)  # not NOTE, not the Float Dp, not GT
    for name in masks:
        assert zarr_array(group, "mask_" + name).shape == zarr_array(group, name).shape


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vcfzarr_sql", *args], capture_output=True, text=True)


def test_convert_warns_and_validate_notes_the_masks(tmp_path) -> None:
    from vcfzarr_sql.validation import notes, validate

    out = tmp_path / "fidelity.vcz"
    converted = _cli("convert", str(FIDELITY), str(out))
    assert converted.returncode == 0, converted.stderr
    warned = [line for line in converted.stderr.splitlines() if line.startswith("warning: ")]
    assert any("INFO/SVLEN" in line and "mask_variant_SVLEN" in line for line in warned), warned
    assert not any("INFO/NOTE" in line or "INFO/Dp " in line for line in warned), warned
    assert validate(out) == []
    assert sorted(note.split(":")[0] for note in notes(out)) == sorted("mask_" + m for m in MASKED)
    checked = _cli("validate", str(out))
    assert checked.returncode == 0, checked.stderr
    assert "note: mask_variant_SVLEN: " in checked.stdout


def test_other_readers_see_the_specs_meaning(store, tmp_path) -> None:
    """vcztools ignores the masks (it writes every variant_/call_ array into the VCF body, so
    they are not named ``<array>_mask``): its VCF has the records, with the sentinels' meaning."""
    vcztools = Path(sys.executable).with_name("vcztools")
    result = subprocess.run([str(vcztools), "view", store], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    body = [line.split("\t") for line in result.stdout.splitlines() if not line.startswith("#")]
    assert [(c, int(p)) for c, p, *_ in body] == [(r.chrom, r.pos) for r in oracle.records(FIDELITY)]
    assert "mask" not in result.stdout


def test_other_writers_stores_are_read_as_they_are(bio2zarr_once, con, tmp_path_factory) -> None:
    """bio2zarr keeps no mask: a real -1 is missing there, as the spec reads it (docs/guide.md)."""
    folder = tmp_path_factory.mktemp("bio2zarr-input")
    lines = FIDELITY.read_text().splitlines(keepends=True)  # bio2zarr 0.2 rejects POS 0
    (folder / "fidelity.vcf").write_text("".join(x for x in lines if x.startswith("#") or x.split("\t")[1] != "0"))
    indexed = folder / "fidelity.vcf.gz"
    pysam.tabix_compress(str(folder / "fidelity.vcf"), str(indexed))
    pysam.tabix_index(str(indexed), preset="vcf", csi=True)
    store = bio2zarr_once(indexed)
    got = con.sql(f"SELECT pos, info_SVLEN FROM vcf_zarr('{store}') WHERE contig = '1' AND pos = 1").fetchall()
    assert got == [(1, None)]


# -- generated files: negative integers, empty list elements, case-twin IDs --------------------

_IDS = ["X", "x", "Ab", "aB", "AB"]  # case twins among them
_INTEGERS = st.sampled_from(["-2", "-1", "0", "1", "7", "."])
_STRINGS = st.sampled_from(["", "a", "bc", "."])


@st.composite
def _value(draw, vcf_type: str, number: str) -> str:
    """One INFO value or FORMAT call value, as VCF text."""
    if vcf_type == "Integer":
        count = {"1": 1, "2": 2}.get(number) or draw(st.integers(1, 3))
        return ",".join(draw(st.lists(_INTEGERS, min_size=count, max_size=count)))
    if number == "1":
        return draw(st.sampled_from(["a", "bc", "."]))
    elements = draw(st.lists(_STRINGS, min_size=1, max_size=3))
    if len(elements) == 1 and elements[0] == "":
        elements = ["", ""]  # a lone empty string is no value (bcftools prints it as a flag)
    return ",".join(elements)


@st.composite
def _vcf(draw) -> str:
    """A small VCF whose fields have case-twin IDs, negative Integers and empty list strings."""
    fields = []
    for category in ("INFO", "FORMAT"):
        names = draw(st.lists(st.sampled_from(_IDS), min_size=1, max_size=3, unique=True))
        for name in names:
            vcf_type = draw(st.sampled_from(["Integer", "String"]))
            number = draw(st.sampled_from(["1", "2", "."] if vcf_type == "Integer" else ["1", "."]))
            fields.append((category, name, vcf_type, number))
    lines = ["##fileformat=VCFv4.3", "##contig=<ID=1,length=1000>"]
    lines += [f'##{c}=<ID={n},Number={num},Type={t},Description="{c} {n}">' for c, n, t, num in fields]
    lines.append("\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", "S1", "S2"]))
    info = [f for f in fields if f[0] == "INFO"]
    fmt = [f for f in fields if f[0] == "FORMAT"]
    for pos in range(1, draw(st.integers(1, 6)) + 1):
        present = [f for f in info if draw(st.booleans())]
        text = ";".join(f"{n}={draw(_value(t, num))}" for _, n, t, num in present) or "."
        keys = [f for f in fmt if draw(st.booleans())]
        calls = [":".join(draw(_value(t, num)) for _, _, t, num in keys) or "." for _ in range(2)]
        lines.append("\t".join(["1", str(pos), ".", "A", "C", ".", "PASS", text,
                                ":".join(n for _, n, _, _ in keys) or ".", *calls]))
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=_vcf())
def test_generated_fields_match_bcftools(tmp_path_factory, text) -> None:
    folder = tmp_path_factory.mktemp("generated")
    vcf, out = folder / "generated.vcf", folder / "generated.vcz"
    vcf.write_text(text)
    vcfzarr_sql.convert(vcf, out, variants_chunk_size=2, show_progress=False)
    header = oracle.header(vcf)
    records = oracle.records(vcf)
    with vcfzarr_sql.connect() as con:
        columns = _fields(con, str(out))
        for name in header.info:
            got = con.sql(f"SELECT \"{columns['INFO', name]}\" FROM vcf_zarr('{out}')").fetchall()
            assert [v for (v,) in got] == [r.info[name] for r in records], (name, text)
        for name in header.format:
            calls = oracle.calls(vcf, [name])
            got = con.sql(f"SELECT \"{columns['FORMAT', name]}\" FROM vcf_zarr('{out}')").fetchall()
            assert [v for (v,) in got] == [[c[name] for c in record] for record in calls], (name, text)


@pytest.mark.parametrize("args, selection", [([], {}), (["-s", "S3,S1"], {"samples": "S3,S1"}),
                                             (["-i", "INFO/SVLEN=-1"], {"include": "INFO/SVLEN=-1"})])
def test_view_prints_values_equal_to_sentinels_as_bcftools(store, args, selection) -> None:
    from vcfzarr_sql.store import open_store
    from vcfzarr_sql.view import Selection, vcf_lines

    ours = [line for line in "".join(vcf_lines(open_store(store), Selection(**selection))).splitlines()
            if not line.startswith("#")]
    theirs = subprocess.run(["bcftools", "view", "-H", *args, str(FIDELITY)], check=True,
                            capture_output=True, text=True).stdout.splitlines()
    assert ours == theirs
