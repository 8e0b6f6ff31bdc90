"""``query --format vcf``: a SQL result with the VCF columns, written as VCF and compared with
``bcftools view`` of the same records, fields and samples."""

from __future__ import annotations

import subprocess

from corpus import CORPUS

from vcfzarr_sql.cli import main

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"
CHR22 = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/chr22.vcf.gz"


def _records(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("##")]


def _bcftools(path, view_args: list[str], keep: str) -> str:
    view = subprocess.run(["bcftools", "view", "-I", *view_args, str(path)], check=True,
                          capture_output=True)
    return subprocess.run(["bcftools", "annotate", "-x", keep], input=view.stdout, check=True,
                          capture_output=True).stdout.decode()


def test_sites_and_genotypes_equal_bcftools(convert_once, capfd):
    store = convert_once(CHR22)
    sql = (f"SELECT contig, pos, id, ref, alt, qual, filters, info_AC, info_DP, fmt_GT, fmt_GT_phased, fmt_DP "
           f"FROM vcf_zarr('{store}') WHERE qual > 1000 ORDER BY pos")
    assert main(["query", "-f", "vcf", "-s", "HG00096,HG00099", sql]) == 0
    ours = capfd.readouterr().out
    theirs = subprocess.run(
        ["bcftools", "query", "-H", "-s", "HG00096,HG00099", "-i", "QUAL>1000", "-f",
         "%CHROM\t%POS\t%ID\t%REF\t%ALT\t%QUAL\t%FILTER\tAC=%AC;DP=%DP\tGT:DP[\t%GT:%DP]\n", str(CHR22)],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    assert _records(ours)[1:] == theirs[1:]
    assert _records(ours)[0].split("\t")[-2:] == ["HG00096", "HG00099"]
    assert len(_records(ours)) > 10


def test_sites_only(convert_once, capfd):
    store = convert_once(SAMPLE)
    sql = f"SELECT contig, pos, id, ref, alt, qual, filters, info_DP, info_AF, info_DB FROM vcf_zarr('{store}')"
    assert main(["query", "-f", "vcf", "-r", "20", sql]) == 0
    theirs = _bcftools(SAMPLE, ["-G", "-r", "20"], "^INFO/DP,INFO/AF,INFO/DB")
    assert _records(capfd.readouterr().out) == _records(theirs)


def test_missing_columns_are_named(convert_once, capfd):
    store = convert_once(SAMPLE)
    assert main(["query", "-f", "vcf", f"SELECT contig, pos FROM vcf_zarr('{store}')"]) == 1
    assert "needs the columns contig, pos and ref (missing: ref)" in capfd.readouterr().err
