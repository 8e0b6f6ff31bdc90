"""``view -i/-e``: which records a bcftools filter expression keeps, against bcftools itself.

Every expression runs through pysam's bcftools (the oracle of ``tests/oracle.py``) and through
``view`` on a file written for the cases: each operator on present values, missing values,
absent keys and vectors with a missing element, for INFO and FORMAT fields, combined with
``&``/``|`` (within a sample) and ``&&``/``||`` (over the record), and the values bcftools
computes (GT classes, TYPE, ILEN, AC/AN/AF/MAF from GT, N_PASS, sMIN...).
"""

from __future__ import annotations

import subprocess
import sys

import pysam
import pysam.bcftools as bcftools
import pytest
from corpus import CORPUS

from vcfzarr_sql.cli import main
from vcfzarr_sql.converter import convert
from vcfzarr_sql.errors import NotSupportedError, QueryError
from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import Selection, vcf_lines

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"

CASES_VCF = """\
##fileformat=VCFv4.2
##contig=<ID=1,length=1000>
##FILTER=<ID=q10,Description="q">
##INFO=<ID=X,Number=1,Type=Integer,Description="x">
##INFO=<ID=S,Number=1,Type=String,Description="s">
##INFO=<ID=V,Number=.,Type=Integer,Description="v">
##INFO=<ID=F,Number=0,Type=Flag,Description="f">
##FORMAT=<ID=GT,Number=1,Type=String,Description="gt">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="dp">
##FORMAT=<ID=GQ,Number=1,Type=Integer,Description="gq">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description="ad">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO	FORMAT	A	B	C
1	10	rs1	A	G	50	PASS	X=5;S=abc;V=1,2	GT:DP:GQ:AD	0/1:5:20:1,2	1/1:20:5:0,3	./.:.:.:.
1	20	.	A	C	.	.	X=3;V=5,.	GT:DP:GQ:AD	0/0:15:15:3,.	0/1:.:30:.	1|1:3:.:2,2
1	30	rs2	AT	A,ATT	30	q10	S=.;F	GT:DP:GQ	1/2:5:5	0/0:12:3	./1:20:20
1	40	.	C	.	.	.	.	GT:DP	0/0:.	./.:.	0/0:5
1	50	rs3	G	T,C	10	PASS	V=.	GT	0/.	.	0|2
1	60	.	GA	TC	.	PASS	X=.	GT:DP:GQ	0/1:11:11	1/1:12:9	0/0:9:12
"""

MISSING = [  # issue 28 item 1: a missing value is unequal to anything
    'INFO/X!=5', 'INFO/X=5', 'QUAL!=50', 'ID!="rs1"', 'INFO/S!="abc"', 'INFO/S="."',
    'INFO/X!=5 && QUAL>0', 'INFO/X!=5 || INFO/S="abc"', 'INFO/V!=1', 'INFO/V!=5', 'INFO/V>3',
    'INFO/V=5', 'INFO/V[0]=1', 'INFO/V[1]!=2', 'INFO/X<5', 'INFO/X>=3', 'QUAL="."', 'INFO/X="."',
    'INFO/F=1', 'INFO/F!=1', 'INFO/F=0', 'ID="."', 'ID!="."', 'FILTER!="PASS"', 'FILTER="."',
    'FILTER!="."', 'FILTER="q10"', 'FILTER~"q10"', 'INFO/S="abc"', 'INFO/S~"b"',
    'QUAL>=30 && (INFO/X>4 || INFO/V<2)', 'ALT="."', 'ALT="C"', 'ALT!="C"', 'REF="A"',
    'CHROM="1"', 'POS>=30',
]
FORMAT = [  # item 2: & and | within a sample, && and || over the record
    'FMT/DP>10', 'FMT/DP!=5', 'FMT/DP=5', 'FMT/DP<10', 'FMT/DP>10 & FMT/GQ>10',
    'FMT/DP>10 && FMT/GQ>10', 'FMT/DP>10 | FMT/GQ>25', 'FMT/DP>10 || FMT/GQ>25', 'FMT/DP="."',
    'FMT/DP!="."', 'FMT/DP>10 & QUAL>20', 'FMT/DP>10 | QUAL>20', 'FMT/AD>2', 'FMT/AD<1',
    'FMT/AD!=2', 'FMT/AD=2', 'FMT/DP!=5 & FMT/GQ>10', 'FMT/DP!=5 && INFO/X!=5',
    'QUAL>20 & INFO/X>4', 'QUAL>20 | INFO/X>4',
]
COMPUTED = [  # item 4: what users write every day
    'GT="het"', 'GT="hom"', 'GT="alt"', 'GT="ref"', 'GT="mis"', 'GT!="het"', 'GT!="mis"',
    'GT!="ref"', 'GT="hap"', 'GT="het" & FMT/DP>10', 'GT="het" && FMT/DP>10', 'AC<3', 'AC>1',
    'AC=1', 'AN=6', 'AN<5', 'AF>0.3', 'AF>0', 'AF<0.1', 'MAF>0.3', 'MAF<0.2', 'MAF>0', 'MAF<0.3',
    'MAC=1', 'N_PASS(FMT/DP>10)=1', 'N_PASS(GT="het")>0', 'F_PASS(GT="het")>0.5', 'TYPE="snp"',
    'TYPE="indel"', 'TYPE="mnp"', 'TYPE="ref"', 'TYPE="other"', 'TYPE!="snp"', 'TYPE~"snp"',
    'ILEN>0', 'ILEN<0', 'ILEN=0', 'ILEN!=1', 'ILEN=1', 'sMIN(FMT/DP)<5', 'sMAX(FMT/DP)>15',
    'MIN(FMT/DP)<5', 'MAX(FMT/DP)>15', 'AVG(FMT/DP)>10', 'SUM(FMT/DP)>30', 'SUM(FMT/AD)>5',
    'N_ALT=2', 'N_SAMPLES=3', 'N_MISSING>0', 'F_MISSING>0.3',
]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """(the cases VCF, bgzipped and indexed; its store)."""
    root = tmp_path_factory.mktemp("filters")
    (root / "cases.vcf").write_text(CASES_VCF)
    vcf = root / "cases.vcf.gz"
    pysam.tabix_compress(str(root / "cases.vcf"), str(vcf))
    store = root / "cases.zarr"
    convert(str(vcf), str(store), show_progress=False)
    return vcf, store


def _bcftools_positions(vcf, *args: str) -> list[int]:
    text = bcftools.view("-H", *args, str(vcf))
    assert isinstance(text, str)
    return [int(line.split("\t")[1]) for line in text.splitlines()]


def _positions(store, **selection) -> list[int]:
    return [int(line.split("\t")[1]) for line in vcf_lines(open_store(store), Selection(**selection))
            if not line.startswith("#")]


@pytest.mark.parametrize("expression", MISSING + FORMAT + COMPUTED)
def test_expression_keeps_what_bcftools_keeps(expression, cases):
    vcf, store = cases
    assert _positions(store, include=expression) == _bcftools_positions(vcf, "-i", expression)
    assert _positions(store, exclude=expression) == _bcftools_positions(vcf, "-e", expression)


@pytest.mark.parametrize("expression", ["FMT/DP>10", "FMT/DP>10 & FMT/GQ>10", 'GT="het"', "AC>1",
                                        "AN=0", "AC!=0", "AF>0", "N_PASS(FMT/DP>10)=1"])
def test_samples_subset_filters_on_every_sample(expression, cases):
    """bcftools evaluates the expression on every sample of the file, then subsets (item 3)."""
    vcf, store = cases
    assert _positions(store, samples="C", include=expression) == _bcftools_positions(vcf, "-s", "C", "-i", expression)


@pytest.mark.parametrize("args", [("-s", "NA00001", "-i", "INFO/AC>1"), ("-s", "NA00001", "-i", "AN=2"),
                                  ("-s", "NA00002", "-i", "FMT/DP>4"), ("-s", "NA00001", "-i", 'GT="het"')])
def test_samples_subset_on_a_file_with_info_counts(args, convert_once):
    store = convert_once(SAMPLE)
    assert _positions(store, samples=args[1], include=args[3]) == _bcftools_positions(SAMPLE, *args)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("%QUAL>20", "%QUAL is not supported"),
        ('GT="RA"', "GT is compared"),
        ("AC[1]>0", "an index on AC"),
        ("INFO/X", "alone is not supported"),
        ("QUAL>INFO/X", "comparing two values"),
        ("MEDIAN(FMT/DP)>1", "MEDIAN"),
        ("sMAX(FMT/AD)>2", "Number=1"),
        ("FMT/AD[*:1]>2", "only a single 0-based index"),
        ('TYPE="snv"', "TYPE is compared"),
    ],
)
def test_unsupported_constructs_are_named(expression, message, cases):
    _, store = cases
    with pytest.raises(NotSupportedError, match=message):
        _positions(store, include=expression)


def test_refused_expression_writes_nothing(cases):
    """The whole command is checked before the header goes out: ``| bgzip`` gets no output
    and the command fails (item 5)."""
    _, store = cases
    command = "import sys; from vcfzarr_sql.cli import main; sys.exit(main())"
    run = subprocess.run([sys.executable, "-c", command, "view", str(store), "-i", 'GT="RA"'],
                         capture_output=True, text=True)
    assert run.returncode != 0 and run.stdout == ""
    assert "GT is compared" in run.stderr
    with pytest.raises(QueryError, match="no field"):
        next(vcf_lines(open_store(store), Selection(include="INFO/NOPE>1")))


OPTIONS = [  # item 6: bcftools view's record filters besides -i/-e
    "-g hom", "-g ^hom", "-g het", "-g ^het", "-g miss", "-g ^miss", "-p", "-P", "-s C -p",
    "-s A -P", "-f PASS", "-f .", "-f q10", "-f PASS,.", "-U", "-u", "-s C -U", "-s C -u",
    "-s C -x", "-s B -x", "-s B -X", "-s C -X", "-c 2", "-c 4", "-C 2", "-c 2:minor",
    "-c 1:major", "-C 3:nonmajor", "-q 0.3:minor", "-q 0.5", "-Q 0.4", "-q 0.3 -s C",
    "-Q 0.4 -s C", "-q 0.1:minor -s C", "-c 1 -s C", "-C 0 -s C", "-m 3", "-M 2", "-m 2 -M 2",
    "-v snps", "-v indels", "-v mnps", "-v snps,indels", "-V snps", "-V indels,mnps", "-k", "-n",
    "-c 2 -i FMT/DP>10 -s B",
]


HAPLOID_VCF = """\
##fileformat=VCFv4.2
##contig=<ID=1,length=1000>
##FORMAT=<ID=GT,Number=1,Type=String,Description="gt">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO	FORMAT	A	B
1	1	.	A	C	.	.	.	GT	1	0/1
1	2	.	A	C	.	.	.	GT	0	0/1
1	3	.	A	C	.	.	.	GT	1	0
1	4	.	A	C	.	.	.	GT	.	0/1
1	5	.	A	C	.	.	.	GT	1/.	0/1
"""


def test_genotype_option_counts_a_called_haploid_as_hom(tmp_path):
    """``-g hom`` keeps a record with a called haploid genotype (bcftools' ``bcf_gt_type``
    classes it with the homozygous), where ``GT="hom"`` does not; ``.`` and ``1/.`` are not."""
    (tmp_path / "h.vcf").write_text(HAPLOID_VCF)
    vcf = tmp_path / "h.vcf.gz"
    pysam.tabix_compress(str(tmp_path / "h.vcf"), str(vcf))
    store = tmp_path / "h.zarr"
    convert(str(vcf), str(store), show_progress=False)
    for options in (["-g", "hom"], ["-g", "^hom"], ["-s", "A", "-g", "hom"], ["-i", 'GT="hom"']):
        assert _cli_positions(store, options, tmp_path / "out.vcf") == _bcftools_positions(vcf, *options), options


PHASED_MISSING_VCF = HAPLOID_VCF.replace("0/1\n", "0|1\n") + """\
1	6	.	A	C	.	.	.	GT	.|.	0|1
1	7	.	A	C	.	.	.	GT	1|.	0|1
1	8	.	A	C	.	.	.	GT	.|1	0|1
1	9	.	A	C	.	.	.	GT	./.	0|1
"""


def test_phased_options_skip_a_call_without_allele(tmp_path):
    """``-p``/``-P``: ``.|.`` has no called allele to carry a phase, so it is not phased (as
    bcftools 1.24: 1.16 holds ``1|.`` unphased too); a haploid call is, even ``.``."""
    (tmp_path / "p.vcf").write_text(PHASED_MISSING_VCF)
    vcf = tmp_path / "p.vcf.gz"
    pysam.tabix_compress(str(tmp_path / "p.vcf"), str(vcf))
    store = tmp_path / "p.zarr"
    convert(str(vcf), str(store), show_progress=False)
    for options in (["-p"], ["-P"], ["-s", "A", "-p"], ["-s", "B", "-P"]):
        assert _cli_positions(store, options, tmp_path / "out.vcf") == _bcftools_positions(vcf, *options), options


def _cli_positions(store, args: list[str], out) -> list[int]:
    assert main(["view", str(store), *args, "-o", str(out)]) == 0
    return [int(line.split("\t")[1]) for line in out.read_text().splitlines() if not line.startswith("#")]


@pytest.mark.parametrize("options", OPTIONS)
def test_record_options_keep_what_bcftools_keeps(options, cases, tmp_path):
    vcf, store = cases
    args = options.split()
    assert _cli_positions(store, args, tmp_path / "out.vcf") == _bcftools_positions(vcf, *args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-x"], "-x/-X need -s"),
        (["-c", "2:most"], "the allele is one of"),
        (["-v", "snp"], "unknown type 'snp'"),
        (["-g", "hap"], "expected one of hom, het, miss"),
    ],
)
def test_record_options_refused_before_output(args, message, cases, capfd):
    _, store = cases
    assert main(["view", str(store), *args]) != 0
    out, err = capfd.readouterr()
    assert out == "" and message in err
