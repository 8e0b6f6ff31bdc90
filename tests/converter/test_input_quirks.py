"""Unusual inputs that bcftools reads: INFO keys without a value (declared or not) and unsorted
records alternating between contigs inside one chunk. Each store is compared with bcftools.
"""

from __future__ import annotations

import oracle
import store_check

from vcfzarr_sql.converter import convert

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
