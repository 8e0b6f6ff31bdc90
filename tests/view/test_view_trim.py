"""``view -a`` (trim ALT alleles) against bcftools view on hand-written records: Number=A, R
and G INFO and FORMAT values trimmed, GT renumbered, haploid and diploid G vectors, a
record left without ALT, AC/AN recounted; a polyploid G vector is refused, as bcftools
refuses it; with ``-m/-M/-v/-V``, which see the record before it is trimmed."""

from __future__ import annotations

import subprocess

import pytest
from vcf_text import normalised

from vcfzarr_sql.cli import main
from vcfzarr_sql.converter import convert

HEADER = """##fileformat=VCFv4.2
##contig=<ID=1,length=1000>
##INFO=<ID=XA,Number=A,Type=Integer,Description="a">
##INFO=<ID=XR,Number=R,Type=Float,Description="r">
##INFO=<ID=XG,Number=G,Type=Integer,Description="g">
##INFO=<ID=DP,Number=1,Type=Integer,Description="d">
##FORMAT=<ID=GT,Number=1,Type=String,Description="g">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description="ad">
##FORMAT=<ID=PL,Number=G,Type=Integer,Description="pl">
##FORMAT=<ID=FA,Number=A,Type=Float,Description="fa">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO	FORMAT	A	B	C
"""
RECORDS = """1	10	.	A	C,G,T	.	.	XA=1,2,3;XR=0,1,2,3;XG=0,1,2,3,4,5,6,7,8,9;DP=5	GT:AD:PL:FA	0/2:1,2,3,4:0,1,2,3,4,5,6,7,8,9:0.1,0.2,0.3	1|3:5,6,7,8:10,11,12,13,14,15,16,17,18,19:0.4,.,0.6	./.:.:.:.
1	20	.	A	C,G	.	.	XA=1,.;DP=5	GT:AD:PL:FA	0/0:1,2,3:0,1,2,3,4,5:0.1,0.2	0:1,2,3:0,1,2:.	0/0:.:.:.
1	30	.	A	C,G	.	.	XA=1,2;XG=1,2,3,4,5,6	GT:AD:PL	0/2:1,2,3:0,1,2,3,4,5	2:1,2,3:0,1,2	0/0/1:.:.
1	40	.	A	C	.	.	XA=1	GT	./.	.	./.
1	50	.	A	C,G,T	.	.	XA=1,2,3	GT:PL	0|3	1:0,1,2,3	0/3:0,1,2,3,4,5,6,7,8,9
1	52	.	AC	A,ATG,C	.	.	.	GT	0	0/1	0|2
1	54	.	T	.	.	.	.	GT	0/0	0/0	0/0
"""
#: a triploid's PL in a record -a trims: 10 values for 3 alleles
POLYPLOID = "1	60	.	A	C,G	.	.	.	GT:PL	0/0:0,1,2,3,4,5	0:0,1,2	0/0/1:0,1,2,3,4,5,6,7,8,9\n"


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory):
    root = tmp_path_factory.mktemp("trim")
    paths = {}
    for name, records in (("plain", RECORDS), ("polyploid", RECORDS + POLYPLOID)):
        vcf, store = root / f"{name}.vcf", root / f"{name}.zarr"
        vcf.write_text(HEADER + records)
        convert(str(vcf), str(store), show_progress=False)
        paths[name] = vcf, store
    return paths


@pytest.mark.parametrize("options", ["-a", "-a -s B", "-a -s A,B", "-a -s C", "-a -s C,A", "-a -I", "-a -G",
                                     "-a -c 1",
                                     # -m/-M/-v/-V see the record before -a trims it (bcftools)
                                     "-a -s B -m 3", "-a -s A -M 2", "-a -s C -m 2 -M 2", "-a -s A -v snps",
                                     "-a -s B -V snps", "-a -s C -v indels,other", "-a -s A -v ref",
                                     "-a -s C -V ref", "-v ref", "-V ref"])
def test_trim_alt_alleles_as_bcftools(options, trimmed, tmp_path):
    vcf, store = trimmed["plain"]
    args = options.split()
    expected = subprocess.run(["bcftools", "view", *args, str(vcf)], capture_output=True, text=True, check=True)
    out = tmp_path / "out.vcf"
    assert main(["view", str(store), *args, "-o", str(out)]) == 0
    assert normalised(out.read_text()) == normalised(expected.stdout)


def test_trim_refuses_a_polyploid_g_vector(trimmed, capfd):
    vcf, store = trimmed["polyploid"]
    assert subprocess.run(["bcftools", "view", "-a", str(vcf)], capture_output=True).returncode != 0
    assert main(["view", str(store), "-a", "-H"]) != 0
    out, err = capfd.readouterr()
    assert "FORMAT/PL at 1:60: -a cannot trim a Number=G value of 10 values for 3 alleles" in err
    assert main(["view", str(store), "-a", "-H", "-s", "A,B"]) != 0  # unselected: refused all the same
    assert "FORMAT/PL at 1:60" in capfd.readouterr().err
