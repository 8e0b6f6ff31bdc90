"""The values ``view`` writes, character for character as bcftools writes them: floats (htslib's
``kputd``: ties round up, ``%g`` outside [1e-4, 999999]) over many random float32 values, and
FILTER as far as the store can know it."""

from __future__ import annotations

import subprocess

import numpy as np

from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import vcf_lines
from vcfzarr_sql.view.values import cell_codes, float_text, float_text_sql, float_texts

HEADER = """##fileformat=VCFv4.2
##FILTER=<ID=PASS,Description="All filters passed">
##FILTER=<ID=LowQual,Description="l">
##FILTER=<ID=ANEUPLOID,Description="a">
##FILTER=<ID=UNRESOLVED,Description="u">
##contig=<ID=1>
##INFO=<ID=F,Number=1,Type=Float,Description="f">
##INFO=<ID=V,Number=.,Type=Float,Description="v">
##FORMAT=<ID=FL,Number=1,Type=Float,Description="fl">
#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB
"""


def _float32_values(count: int, seed: int = 28) -> np.ndarray:
    """Random bit patterns, log-uniform magnitudes of both signs and crafted ties, as float32."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
    logs = (10.0 ** rng.uniform(-9, 12, count) * rng.choice([-1, 1], count)).astype(np.float32)
    ties = np.concatenate([
        [117756.5, 2.5, 0.5, 1.0000005, 999999.5, 999999.0, 1234565.0, 1e-4, 9.99995e-5, 0.0001234565,
         99999.95, 0.0, -0.0, 1e-5, 3.4028235e38, 1.4e-45],
        rng.integers(0, 1_000_000, count // 4) + 0.5,  # integer + .5: exact in float32 below 2^23
        rng.integers(100_000, 1_000_000, count // 4) / 10.0 ** rng.integers(1, 10, count // 4),
    ]).astype(np.float32)
    values = np.concatenate([ties, bits, logs])
    return values[np.isfinite(values)]


def _text(value: np.float32) -> str:
    return repr(float(value))  # exact: htslib reads it back to the same float32


def test_random_float32_values_equal_bcftools(convert_once, tmp_path):
    values = _float32_values(6000)
    rows = -(-len(values) // 6)
    padded = np.resize(values, rows * 6).reshape(rows, 6)
    lines = [
        f"1\t{k + 1}\t.\tA\tC\t{_text(abs(v[0]))}\tPASS\tF={_text(v[1])};V={','.join(map(_text, v[2:4]))}"
        f"\tFL\t{_text(v[4])}\t{_text(v[5])}"
        for k, v in enumerate(padded)
    ]
    vcf = tmp_path / "floats.vcf"
    vcf.write_text(HEADER + "\n".join(lines) + "\n")
    theirs = subprocess.run(["bcftools", "view", "-H", str(vcf)], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    ours = [line.rstrip("\n") for line in vcf_lines(open_store(convert_once(vcf)))][1:]
    assert len(ours) == len(theirs) == rows
    differ = [(a, b) for a, b in zip(ours, theirs) if a != b]
    assert not differ, differ[:5]
    assert theirs[0].split("\t")[5] == "117757"  # the crafted ties come first


def test_filters_are_written_in_header_order_once_each(convert_once, tmp_path):
    """The store keeps FILTER as a boolean per header filter (VCF Zarr 0.3 ``variant_filter``):
    a record's order and repeats are lost; ``view`` writes header order, each once."""
    vcf = tmp_path / "filters.vcf"
    records = ["ANEUPLOID;LowQual", "LowQual;ANEUPLOID", "UNRESOLVED;UNRESOLVED", "PASS", "."]
    vcf.write_text(HEADER + "".join(f"1\t{k + 1}\t.\tA\tC\t1\t{f}\t.\tFL\t1\t2\n" for k, f in enumerate(records)))
    theirs = subprocess.run(["bcftools", "view", "-H", str(vcf)], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    assert [line.split("\t")[6] for line in theirs] == records  # bcftools keeps each record's
    ours = [line.split("\t")[6] for line in list(vcf_lines(open_store(convert_once(vcf))))[1:]]
    assert ours == ["LowQual;ANEUPLOID", "LowQual;ANEUPLOID", "UNRESOLVED", "PASS", "."]


def test_float_text_in_sql_equals_float_text():
    """The SQL twin ``query -f csv|tsv`` writes FLOAT with gives float_text's text for every value
    (random bits, log-uniform magnitudes, crafted ties; NaN, infinities, zeros)."""
    import duckdb
    import pyarrow as pa

    values = np.concatenate([_float32_values(6000), np.array([np.nan, -np.inf, np.inf, 0.0, -0.0], np.float32)])
    con = duckdb.connect()
    con.register("floats", pa.table({"x": pa.array(values, pa.float32())}))
    ours = [text for (text,) in con.sql(f"SELECT {float_text_sql('x')} FROM floats").fetchall()]
    expected = [float_text(float(v)) for v in values]
    assert ours == expected


def test_floats_at_the_edges_of_the_range_print_as_htslib_does():
    """NaN, infinities, zeros and the bounds of the range formatted on arrays (hand facts of
    htslib 1.16's kputd: %g outside [1e-4, 999999], six significant digits inside)."""
    edges = [(np.nan, b"nan"), (-np.inf, b"-inf"), (np.inf, b"inf"), (0.0, b"0"), (-0.0, b"-0"),
             (999999.0, b"999999"), (np.nextafter(999999.0, 1e9), b"999999"), (999999.5, b"1e+06"), (1e-4, b"0.0001"),
             (np.nextafter(1e-4, 0), b"0.0001"), (-1e-4, b"-0.0001"), (0.001, b"0.001"),
             (0.01, b"0.01"), (0.1, b"0.1"), (1.0, b"1"), (10.0, b"10"), (100.0, b"100"),
             (1000.0, b"1000"), (10000.0, b"10000"), (100000.0, b"100000"),
             (1234567.0, b"1.23457e+06"), (-2.5e-7, b"-2.5e-07")]
    values, texts = zip(*edges)
    assert float_texts(np.array(values)) == list(texts)
    assert [float_text(v) for v in values] == [t.decode() for t in texts]


def test_integer_vectors_of_a_small_range_print_as_htslib_does():
    """Integer cells through the table of every value of their range (``_integer_cells``):
    negative values, the missing value (``.``) and fill (ends the vector), with a lead of one
    byte (written over the first comma) or several (a table of first elements of its own)."""
    values = np.array([[-5, 3, 0], [-1, -2, -2], [120, -1, -2], [7, -2, -2]], np.int32)
    for lead in (":", ";AD="):
        cells = cell_codes(values, "Integer", lead=lead).matrix()
        texts = [bytes(row).replace(b"\0", b"").decode() for row in cells]
        assert texts == [f"{lead}-5,3,0", f"{lead}.", f"{lead}120,.", f"{lead}7"]
