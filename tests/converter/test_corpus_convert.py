"""Every readable corpus file, converted, matches bcftools in every aspect (read with zarr-python).

One test per (file, aspect); each file is converted once per run, with small chunks, as
tests/engine_cases.py chunks it (``engine_cases.converted_corpus_file``: the same store as
tests/engine/test_sql_corpus.py's), so files span several variant and sample chunks.

Where bcftools' values cannot be stored as the spec says (Character values longer than one
character, several values of a Number=1 field, Number=A/R vectors longer than any record's
alleles), the store keeps them whole and the ``valid`` aspect expects the validator to report
exactly those arrays (:func:`store_check.unrepresentable`).
"""

from __future__ import annotations

import re

import engine_cases
import oracle
import pytest
import store_check
from corpus import readable_corpus

from vcfzarr_sql.converter import convert
from vcfzarr_sql.errors import VcfParseError

#: Files MANIFEST.tsv marks readable (by bcftools 1.16) that the oracle, pysam's bcftools 1.24,
#: rejects: the converter must reject them too (one-line VcfParseError, no store).
REJECTED_BY_BCFTOOLS = {
    "broadinstitute+gatk/src/test/resources/org/broadinstitute/hellbender/tools/walkers/"
    "GnarlyGenotyper/chrY_haploid_dragen.g.vcf":
        "a second '#CHROM' line inside the body: htslib 1.24 cannot parse POS 'POS'",
    "EBIvariation+vcf-validator/test/input_files/v4.3/passed/passed_meta_pedigree.vcf":
        "a body line with an empty CHROM: htslib 1.24 reports a VCF parse error",
}

FILES = [f for f in readable_corpus() if f.id not in REJECTED_BY_BCFTOOLS]
REJECTED = [f for f in readable_corpus() if f.id in REJECTED_BY_BCFTOOLS]


@pytest.mark.parametrize("aspect", list(store_check.CHECKS))
@pytest.mark.parametrize("vcf", FILES, ids=lambda f: f.id)
def test_matches_bcftools(convert_once, vcf, aspect):
    stored = store_check.Stored(engine_cases.converted_corpus_file(vcf, convert_once))
    mismatches = store_check.CHECKS[aspect](stored, vcf.path)
    assert not mismatches, f"{vcf.id}, {aspect}:\n{store_check.report(mismatches)}"


@pytest.mark.parametrize("vcf", REJECTED, ids=lambda f: f.id)
def test_files_bcftools_rejects_are_rejected(vcf, tmp_path):
    with pytest.raises(oracle.BcftoolsError):
        oracle.records(vcf.path)  # because of: REJECTED_BY_BCFTOOLS[vcf.id]
    output = tmp_path / "out.vcz"
    with pytest.raises(VcfParseError, match=f"^{re.escape(str(vcf.path))}: "):
        convert(str(vcf.path), str(output))
    assert list(tmp_path.iterdir()) == []
