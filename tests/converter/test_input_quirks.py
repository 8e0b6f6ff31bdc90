"""Unusual inputs that bcftools reads: INFO keys without a value (declared or not) and unsorted
records alternating between contigs inside one chunk. Each store is compared with bcftools.
"""

from __future__ import annotations

import random
import subprocess

import oracle
import pytest
import store_check

import vcfzarr_sql
from vcfzarr_sql.converter import convert
from vcfzarr_sql.errors import VcfZarrWarning

HEADER = """\
##fileformat=VCFv4.2
##contig=<ID=1,length=1000>
##contig=<ID=2,length=1000>
##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">
##INFO=<ID=S,Number=1,Type=String,Description="A string">
##INFO=<ID=L,Number=.,Type=String,Description="Strings">
##INFO=<ID=A,Number=A,Type=Integer,Description="Per allele">
##INFO=<ID=DB,Number=0,Type=Flag,Description="A flag">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO
"""

#: FOO and BAR are not declared; htslib declares them Number=1,Type=String while reading.
VALUELESS = """\
1	10	.	A	C	.	.	DP=3;FOO
1	20	.	A	C	.	.	FOO;DP=4;S;L;A;DB
1	30	.	A	C	.	.	BAR=x;S=s;L=a,b;A=7
1	40	.	A	C	.	.	DP;BAR
"""

#: Records alternate between contigs 2 and 1 (an unsorted file); chunks of 4 records.
ALTERNATING = """\
2	500	.	A	C	.	.	.
1	10	.	ACGT	C	.	.	.
2	100	.	A	C	.	.	.
1	700	.	A	C	.	.	.
1	5	.	A	C	.	.	.
2	50	.	AAAAAAAAAA	C	.	.	.
1	6	.	A	C	.	.	.
"""


def converted(tmp_path, body: str, **kwargs) -> tuple[store_check.Stored, str]:
    vcf = tmp_path / "in.vcf"
    vcf.write_text(HEADER + body)
    convert(vcf, tmp_path / "out.vcz", show_progress=False, **kwargs)
    return store_check.Stored(tmp_path / "out.vcz"), str(vcf)


def test_info_keys_without_a_value_read_as_bcftools_reads_them(tmp_path):
    """A valueless key of a non-Flag field is present but missing (bcftools' expressions see it
    as "."), a valueless Flag is set; undeclared keys get htslib's String field."""
    stored, vcf = converted(tmp_path, VALUELESS)
    assert {"FOO", "BAR"} <= set(oracle.header(vcf).info)
    for check in (store_check.check_info, store_check.check_fixed):
        mismatches = check(stored, vcf)
        assert not mismatches, store_check.report(mismatches)


def test_region_index_has_one_row_per_contig_of_each_chunk(tmp_path):
    stored, vcf = converted(tmp_path, ALTERNATING, variants_chunk_size=4)
    mismatches = store_check.check_length_and_index(stored, vcf)
    assert not mismatches, store_check.report(mismatches)
    index = stored["region_index"].tolist()
    assert [row[:2] for row in index] == [[0, 0], [0, 1], [1, 0], [1, 1]]


def _shuffled_body(records: int = 300, seed: int = 7) -> str:
    """Records on contigs 1 and 2 in random order (some spanning 30 bases)."""
    rng = random.Random(seed)
    rows = [(rng.choice("12"), rng.randrange(1, 990), rng.choice(["A", "A", "A" * 30])) for _ in range(records)]
    return "".join(f"{c}\t{p}\t.\t{ref}\tC\t.\t.\t.\n" for c, p, ref in rows)


def _bcftools_sites(vcf: str, *args: str) -> list[tuple[str, int]]:
    out = subprocess.run(["bcftools", "view", "-H", *args, vcf], check=True, capture_output=True,
                         text=True).stdout
    return sorted((line.split("\t")[0], int(line.split("\t")[1])) for line in out.splitlines())


def test_unsorted_input_is_warned_about_and_queries_stay_correct(tmp_path):
    """An unsorted file converts with a warning naming its first record out of order; regions
    and contig/POS predicates then find what bcftools finds streaming the file (``-t`` with
    ``--targets-overlap 1`` is ``-r`` without an index, which an unsorted file cannot have)."""
    vcf = tmp_path / "in.vcf"
    vcf.write_text(HEADER + _shuffled_body())
    sites = [(r.chrom, r.pos) for r in oracle.records(str(vcf))]
    i = next(i for i in range(1, len(sites)) if sites[i][0] == sites[i - 1][0] and sites[i][1] < sites[i - 1][1]
             or sites[i][0] != sites[i - 1][0] and sites[i][0] in {c for c, _ in sites[:i - 1]})
    (contig, pos), (before, before_pos) = sites[i], sites[i - 1]
    with pytest.warns(VcfZarrWarning, match=rf"not sorted: {contig}:{pos} \(after {before}:{before_pos}"):
        convert(vcf, tmp_path / "out.vcz", show_progress=False, variants_chunk_size=16)
    store = tmp_path / "out.vcz"
    with vcfzarr_sql.connect() as con:
        for contig, lo, hi in [("1", 1, 50), ("2", 400, 420), ("1", 975, 1000), ("2", 1, 1000), ("1", 500, 500)]:
            region = f"{contig}:{lo}-{hi}"
            got = con.sql(f"SELECT contig, pos FROM vcf_zarr('{store}', region := '{region}') "
                          "ORDER BY ALL").fetchall()
            assert got == _bcftools_sites(str(vcf), "-t", region, "--targets-overlap", "1"), region
            got = con.sql(f"SELECT contig, pos FROM vcf_zarr('{store}') WHERE contig = '{contig}' "
                          f"AND pos BETWEEN {lo} AND {hi} ORDER BY ALL").fetchall()
            assert got == _bcftools_sites(str(vcf), "-t", region), region
