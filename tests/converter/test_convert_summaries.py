"""``convert`` computes the summary arrays from the genotypes in memory: it reads back no chunk
it wrote, and the counts are those of the VCF text written here (hand facts; the comparison
with bcftools is in tests/query/test_stored_counts.py and tests/stats/test_sample_stats.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vcfzarr_sql.converter import convert
from vcfzarr_sql.format import summaries
from vcfzarr_sql.store import open_store
from vcfzarr_sql.store.vcz import VczStore

VCF = """\
##fileformat=VCFv4.3
##contig=<ID=1>
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
#CHROM	POS	ID	REF	ALT	QUAL	FILTER	INFO	FORMAT	S1	S2	S3
1	10	.	A	T	.	.	.	GT	0/0	0/1	1/1
1	20	.	C	G,A	.	.	.	GT	./.	1/2	0|2
"""


def _no_chunk_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: VczStore, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"convert read back a chunk of {self.path}: {args}")

    for method in ("read_chunk_bytes", "read_chunks_bytes", "decode_chunk", "decode_chunk_strings"):
        monkeypatch.setattr(VczStore, method, refuse)


@pytest.mark.parametrize("workers", [1, 2])
def test_convert_reads_back_no_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    vcf = tmp_path / "in.vcf"
    vcf.write_text(VCF)
    with monkeypatch.context() as patch:
        _no_chunk_reads(patch)
        convert(vcf, tmp_path / "out.vcz", variants_chunk_size=1, samples_chunk_size=2,
                workers=workers)
    store = open_store(tmp_path / "out.vcz")
    # per record: samples with a called allele, with a missing genotype, alleles
    assert store.read_array(summaries.CALL_COUNTS).tolist() == [[3, 0, 2], [2, 1, 3]]
    classes = store.read_array(summaries.SAMPLE_CLASS_COUNTS)
    column = {name: i for i, name in enumerate(summaries.CLASSES)}
    expected = np.zeros((2, len(summaries.CLASSES), 3), dtype=int)
    expected[0, column["n_hom_ref"], 0] = expected[0, column["n_het"], 1] = 1
    expected[0, column["n_hom_alt"], 2] = 1
    expected[1, column["n_missing"], 0] = expected[1, column["n_het"], 1] = 1
    expected[1, column["n_het"], 2] = 1
    assert classes.tolist() == expected.tolist()
