"""``query -s/-S`` print the samples as ``bcftools query -s/-S`` does: in the order listed, a
sample listed twice printed twice (expected values: bcftools query on sample.vcf.gz). The
``gt_`` columns count each selected sample once; ``-f vcf`` refuses a repeated sample, as
``bcftools view`` does."""

from __future__ import annotations

import csv
import io
import subprocess

import pytest
from corpus import CORPUS

from vcfzarr_sql.cli import main

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


def _bcftools(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bcftools", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def store(convert_once):
    """sample.vcf.gz in sample chunks of 2 (a list crosses chunks)."""
    return convert_once(SAMPLE, samples_chunk_size=2)


@pytest.mark.parametrize("samples", ["NA00003,NA00001,NA00003", "NA00002,NA00001", "NA00003,NA00002,NA00001",
                                     "NA00001,NA00001", "^NA00002"])
@pytest.mark.parametrize("from_file", [False, True])
def test_samples_in_listed_order_with_repeats_as_bcftools_query(samples, from_file, store, capfd, tmp_path):
    option = ["-s", samples]
    if from_file:
        listed = tmp_path / "samples.txt"
        listed.write_text("\n".join(samples.removeprefix("^").split(",")) + "\n")
        option = ["-S", ("^" if samples.startswith("^") else "") + str(listed)]
    expected = _bcftools("query", *option, "-f", "%POS\t[%SAMPLE,]\t[%GQ,]\t[%DP,]\n", str(SAMPLE))
    assert expected.returncode == 0, expected.stderr
    sql = f"SELECT pos, fmt_GQ, fmt_DP, gt_AN FROM vcf_zarr('{store}') WHERE pos > 0 ORDER BY contig, pos"
    assert main(["query", *option, "-f", "tsv", sql]) == 0
    rows = list(csv.reader(io.StringIO(capfd.readouterr().out), delimiter="\t"))[1:]
    assert [[pos, gq, dp] for pos, gq, dp, _ in rows] == [
        [pos, gq.rstrip(","), dp.rstrip(",")] for pos, _, gq, dp in (e.split("\t") for e in expected.stdout.splitlines())]
    # gt_AN counts each selected sample once (the alleles of NA00001 and NA00003 at 14370: 4)
    distinct = len(set(expected.stdout.splitlines()[0].split("\t")[1].rstrip(",").split(",")))
    assert rows[0][3] == str(2 * distinct)


def test_format_vcf_writes_listed_order_and_refuses_a_repeat_as_bcftools_view(store, capfd):
    sql = f"SELECT * FROM vcf_zarr('{store}')"
    assert main(["query", "-s", "NA00003,NA00001", "-f", "vcf", sql]) == 0
    theirs = _bcftools("view", "-s", "NA00003,NA00001", str(SAMPLE)).stdout
    # the sample names, then each sample's GT
    assert [[c.split(":")[0] for c in line.split("\t")[9:]]
            for line in capfd.readouterr().out.splitlines() if not line.startswith("##")] == [
        [c.split(":")[0] for c in line.split("\t")[9:]] for line in theirs.splitlines() if not line.startswith("##")]
    assert main(["query", "-s", "^NA00002", "-f", "vcf", sql]) == 0  # (the header named NA00002 before)
    assert capfd.readouterr().out.splitlines()[-1].count("\t") == 10
    assert _bcftools("view", "-s", "NA00001,NA00001", str(SAMPLE)).returncode != 0
    assert main(["query", "-s", "NA00001,NA00001", "-f", "vcf", sql]) == 1
    out, err = capfd.readouterr()
    assert out == "" and "sample 'NA00001' is listed twice" in err
