"""INFO and FORMAT keys the header does not declare, as bcftools reads them.

htslib declares an undeclared key on the fly (``Number=1,Type=String``). A key that never has a
value is what bcftools shows as a flag: ``bcftools view`` writes the bare key and ``bcftools
query -f '%INFO/K'`` prints ``1`` where it is and ``.`` where it is not. The store keeps such
keys as Flags, so SQL counts them. Keys first used late in the file (after the first block of
records, or only in a later partition) become fields too.
"""

from __future__ import annotations

import subprocess

import oracle
import pysam
import pytest
import store_check

import vcfzarr_sql
from vcfzarr_sql.converter import convert

HEADER = """\
##fileformat=VCFv4.2
##contig=<ID=1,length=100000>
##contig=<ID=2,length=100000>
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO	FORMAT	S1	S2
"""


def _bcftools_info_keys(vcf) -> list[list[str]]:
    """The INFO keys of each record as ``bcftools view`` writes it."""
    out = subprocess.run(["bcftools", "view", "-H", str(vcf)], check=True, capture_output=True,
                         text=True).stdout
    return [[kv.partition("=")[0] for kv in line.split("\t")[7].split(";")]
            for line in out.splitlines()]


def _flag_file(path):
    """11 records without any ##INFO line: FL bare on 10 of them (a flag on 91% of records),
    DP with values, MX bare on one record and valued on another."""
    lines = []
    for i in range(11):
        info = [f"DP={i + 3}"] + (["FL"] if i != 4 else []) + (["MX"] if i == 2 else [])
        info += ["MX=v"] if i == 6 else []
        lines.append(f"1\t{100 + i}\t.\tA\tC\t.\t.\t{';'.join(info)}\tGT\t0/1\t1/1\n")
    path.write_text(HEADER + "".join(lines))
    return path


def test_undeclared_key_without_a_value_is_a_flag(tmp_path):
    vcf = _flag_file(tmp_path / "flags.vcf")
    convert(vcf, tmp_path / "flags.vcz", show_progress=False)
    with_flag = sum("FL" in keys for keys in _bcftools_info_keys(vcf))
    assert with_flag == 10
    with vcfzarr_sql.connect() as con:
        got = con.sql(f"SELECT count(*) FILTER (info_FL), count(*) FILTER (NOT info_FL) "
                      f"FROM vcf_zarr('{tmp_path / 'flags.vcz'}')").fetchall()
        dp = con.sql(f"SELECT list(info_DP ORDER BY pos) FROM vcf_zarr('{tmp_path / 'flags.vcz'}')").fetchall()
    assert got == [(with_flag, 11 - with_flag)]
    assert dp == [([str(i + 3) for i in range(11)],)]  # valued keys: htslib's String
    stored = store_check.Stored(tmp_path / "flags.vcz")
    for check in (store_check.check_info, store_check.check_fixed):
        mismatches = check(stored, vcf)
        assert not mismatches, store_check.report(mismatches)


def test_undeclared_key_with_and_without_values_is_a_string_and_warned_about(tmp_path):
    vcf = _flag_file(tmp_path / "flags.vcf")
    with pytest.warns(vcfzarr_sql.VcfZarrWarning, match=r"INFO/MX is not declared .* without a value"):
        convert(vcf, tmp_path / "flags.vcz", show_progress=False)
    assert oracle.header(vcf).info["MX"].vcf_type == "String"


def _late_file(folder, first_use: int, records: int = 2000):
    """Records on contigs 1 and 2 (half each); from record ``first_use`` (0-based) on, every
    third record has the undeclared INFO keys LATE=<n> and LF (bare) and the undeclared FORMAT
    key LQ. bgzipped and indexed, so that two workers parse the contigs apart."""
    lines = []
    for i in range(records):
        contig, pos = ("1", i + 1) if i < records // 2 else ("2", i + 1 - records // 2)
        late = i >= first_use and i % 3 == first_use % 3
        info = f"LATE={i};LF" if late else "."
        fmt, calls = ("GT:LQ", f"0/1:{i}\t1/1:q") if late else ("GT", "0/1\t0/0")
        lines.append(f"{contig}\t{pos}\t.\tA\tC\t.\t.\t{info}\t{fmt}\t{calls}\n")
    plain = folder / "late.vcf"
    plain.write_text(HEADER + "".join(lines))
    pysam.tabix_compress(str(plain), str(folder / "late.vcf.gz"))
    pysam.tabix_index(str(folder / "late.vcf.gz"), preset="vcf")
    return folder / "late.vcf.gz"


@pytest.mark.parametrize("workers", [1, 2])
def test_keys_first_used_after_the_first_chunk_become_fields(tmp_path, workers):
    """The first use is record 1500: after the first 1,000-record block (one worker) and only
    in the second partition (two workers: one per contig)."""
    vcf = _late_file(tmp_path, first_use=1500)
    convert(vcf, tmp_path / "late.vcz", workers=workers, show_progress=False)
    header = oracle.header(vcf)
    assert {"LATE", "LF"} <= set(header.info) and "LQ" in header.format
    stored = store_check.Stored(tmp_path / "late.vcz")
    for check in (store_check.check_info, store_check.check_format, store_check.check_genotypes):
        mismatches = check(stored, vcf)
        assert not mismatches, store_check.report(mismatches)
    flagged = sum("LF" in keys for keys in _bcftools_info_keys(vcf))
    with vcfzarr_sql.connect() as con:
        got = con.sql(f"SELECT count(*) FILTER (info_LF), count(info_LATE) "
                      f"FROM vcf_zarr('{tmp_path / 'late.vcz'}')").fetchall()
    assert got == [(flagged, flagged)] and flagged == 167
