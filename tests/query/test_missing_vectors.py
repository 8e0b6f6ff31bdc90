"""A vector value with no present element, as bcftools 1.16 prints it: ``.`` (written ``.``,
or absent) and ``.,.`` (written ``.,.``) in INFO and FORMAT, Number=2, A and R, Integer and
Float. SQL shows ``.`` as NULL and ``.,.`` as a list of NULLs (our converter's stores keep
them apart); ``query -f tsv`` and ``view`` print what bcftools prints. Expected values:
bcftools query and view of a small written file."""

from __future__ import annotations

import csv
import io
import subprocess

import pytest

from vcfzarr_sql import dataset, open_store
from vcfzarr_sql.cli import main
from vcfzarr_sql.query.request import scan_request
from vcfzarr_sql.view import Selection, vcf_lines

VCF = """\
##fileformat=VCFv4.2
##contig=<ID=1,length=1000>
##INFO=<ID=P,Number=2,Type=Integer,Description="p">
##INFO=<ID=F,Number=2,Type=Float,Description="f">
##INFO=<ID=A,Number=A,Type=Integer,Description="a">
##INFO=<ID=R,Number=R,Type=Float,Description="r">
##FORMAT=<ID=GT,Number=1,Type=String,Description="gt">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description="ad">
##FORMAT=<ID=Q,Number=2,Type=Float,Description="q">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO	FORMAT	A	B	C
1	10	.	A	G	.	.	P=.;F=.;A=.;R=.	GT:AD:Q	0/1:.:.	1/1:.,.:.,.	0/0:1,2:1.5,.
1	20	.	A	G,T	.	.	P=.,.;F=.,.;A=.,.;R=.,.,.	GT:AD:Q	0/1:.,.,.:.,.	1/1:.:.	0/0:1,.,2:.,2.5
1	30	.	A	G	.	.	P=1,.;F=.,2.5;A=3;R=.,1.5	GT:AD:Q	0/1:1,.:.	1/1:.,3:.,.	0/0:1,2:1.5,.
1	40	.	A	G	.	.	.	GT	0/1	1/1	0/0
"""
QUERY = "%POS\t%P\t%F\t%A\t%R\t[%AD ]\t[%Q ]\n"


@pytest.fixture(scope="module")
def written(tmp_path_factory, convert_once):
    vcf = tmp_path_factory.mktemp("missing") / "missing.vcf"
    vcf.write_text(VCF)
    return vcf, convert_once(vcf)


def _bcftools(*args: str) -> str:
    return subprocess.run(["bcftools", *args], check=True, capture_output=True, text=True).stdout


def test_sql_shows_a_vector_written_missing_as_null_and_each_missing_element_as_null(written):
    _, store = written
    rows = dataset(open_store(store)).to_table(columns=["info_P", "info_R", "fmt_AD"]).to_pylist()
    assert [r["info_P"] for r in rows] == [None, [None, None], [1, None], None]
    assert [r["info_R"] for r in rows] == [None, [None, None, None], [None, 1.5], None]
    assert [r["fmt_AD"] for r in rows] == [[None, [None, None], [1, 2]], [[None, None, None], None, [1, None, 2]],
                                           [[1, None], [None, 3], [1, 2]], [None, None, None]]


def test_query_tsv_prints_missing_vectors_as_bcftools_query(written, capfd):
    vcf, store = written
    sql = f"SELECT pos, info_P, info_F, info_A, info_R, fmt_AD, fmt_Q FROM vcf_zarr('{store}')"
    assert main(["query", "-f", "tsv", sql]) == 0
    rows = list(csv.reader(io.StringIO(capfd.readouterr().out), delimiter="\t"))[1:]
    expected = [line.split("\t") for line in _bcftools("query", "-f", QUERY, str(vcf)).splitlines()]
    # a NULL value is an empty field (SQL NULL), where bcftools prints "."
    assert [[v or "." for v in row] for row in rows] == [[*e[:5], e[5].rstrip(), e[6].rstrip()] for e in expected]


def test_view_writes_vectors_written_missing_as_bcftools_view(written):
    vcf, store = written
    ours = "".join(vcf_lines(open_store(store), Selection())).splitlines()
    theirs = _bcftools("view", str(vcf)).splitlines()
    body = [line for line in ours if not line.startswith("#")]
    expected = [line for line in theirs if not line.startswith("#")]
    # one difference left: INFO written "." is stored as absent (a store cannot tell them apart)
    assert expected[0].split("\t")[7] == "P=.;F=.;A=.;R=." and body[0].split("\t")[7] == "."
    assert [line.split("\t")[:7] + line.split("\t")[8:] for line in body] == [
        line.split("\t")[:7] + line.split("\t")[8:] for line in expected]
    assert [line.split("\t")[7] for line in body[1:]] == [line.split("\t")[7] for line in expected[1:]]


def test_a_bio2zarr_store_cannot_tell_and_shows_null(written, bio2zarr_once):
    vcf, _ = written
    store = open_store(bio2zarr_once(vcf))
    assert not store.spells_missing_vectors
    rows = dataset(store).to_table(columns=["info_P"]).to_pylist()
    assert [r["info_P"] for r in rows] == [None, None, [1, None], None]
    assert scan_request(store, samples=["B", "A"]).sample_order is not None
