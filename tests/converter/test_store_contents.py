"""The decoded contents of every array ``convert`` writes stay what they were: a change of codec
or of the parser's path may change the stored bytes, never the values.

The digests were taken from the stores the converter of commit 10e0baa (before the codec and
parser changes of issue 29) wrote for these inputs; an array added later is not checked here.
A change that is meant to change an array's values updates its digest here, and says so.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
import zarr
from corpus import CORPUS
from store_support import zarr_array, zarr_values

from vcfzarr_sql.converter import convert

BIO2ZARR = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf"


def gt_only_vcf(path: Path) -> Path:
    """A bgzipped GT-only VCF read by the fast path: 40 records of 6 samples, diploid calls
    unphased, phased and missing, multi-allelic records and two haploid ones."""
    header = ["##fileformat=VCFv4.2", "##contig=<ID=1,length=1000>",
              '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
              "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t" + "\t".join(f"S{j}" for j in range(6))]
    lines = []
    for i in range(40):
        alt = "C,G" if i % 7 == 3 else "C"
        calls = []
        for j in range(6):
            a, b = (i * j) % (3 if i % 7 == 3 else 2), (i + j) % 2
            calls.append("./." if (i + 2 * j) % 11 == 0 else
                         str(a) if i in (20, 21) else f"{a}{'|' if (i + j) % 3 == 0 else '/'}{b}")
        lines.append(f"1\t{i + 1}\t.\tA\t{alt}\t.\t.\t.\tGT\t" + "\t".join(calls))
    path.write_text("\n".join([*header, *lines]) + "\n")
    subprocess.run(["bgzip", "-f", str(path)], check=True)
    return path.with_name(path.name + ".gz")


def decoded_digests(store: Path) -> dict[str, str]:
    """SHA-256 of each array's dtype, shape and decoded values (strings, whatever numpy dtype
    the zarr version reads them as, by their UTF-8 text, NUL-separated)."""
    group = zarr.open_group(str(store), mode="r")
    out = {}
    for name in sorted(group.array_keys()):
        values = zarr_values(zarr_array(group, name))
        text = values.dtype.kind in "OTU"
        digest = hashlib.sha256(f"{'text' if text else values.dtype.str}{values.shape}".encode())
        if text:
            digest.update("\0".join(map(str, values.ravel().tolist())).encode())
        else:
            digest.update(values.tobytes())
        out[name] = digest.hexdigest()[:16]
    return out


EXPECTED = {
    "gt_only": {
        "call_genotype": "704d05f1c17faca6",
        "call_genotype_phased": "a9b85d8bbd336b19",
        "contig_id": "5bbdd4f6fa4ffc26",
        "contig_length": "8ca9cafc52706380",
        "filter_description": "d955f4a1929aa0e3",
        "filter_id": "e3672c3715667c85",
        "region_index": "060e67174df01804",
        "sample_id": "367f4e8788037d45",
        "summary_call_depth_counts": "f94bf42f3794d309",
        "summary_gt_allele_counts": "6f13b6a0230590b8",
        "summary_gt_call_counts": "0ea4dac115562550",
        "summary_gt_hwe": "552050a702f5424c",
        "summary_gt_packed": "6679d90bd98710a2",
        "summary_gt_packed_exact": "01c96a911125c4f2",
        "summary_hwe_genotype_counts": "ceec6048e23f9990",
        "summary_indel_vaf": "237914d899c488ad",
        "summary_sample_call_stats": "a3e61ddbdf28fc07",
        "summary_sample_class_counts": "277f6085e1da850a",
        "variant_allele": "cd054208c99d29eb",
        "variant_contig": "16fcf0ac82bf2b22",
        "variant_filter": "75132ae021033f68",
        "variant_id": "2ab748575aefd761",
        "variant_length": "920c052f37af8084",
        "variant_position": "f6fc26995bfcc3c5",
        "variant_quality": "6f2cfc3bc5593603",
    },
    "sample.vcf.gz": {
        "call_DP": "17d041dcfc8fcb6b",
        "call_GQ": "46447f975d367e4f",
        "call_HQ": "48b4c3c38a39c122",
        "call_genotype": "8bfcc34111c8604a",
        "call_genotype_phased": "1eec1af6dd464818",
        "contig_id": "794e81323a219cc5",
        "filter_description": "3eae2dcf02634bfe",
        "filter_id": "299971d296cb3057",
        "region_index": "2c0c26617533c57e",
        "sample_id": "d079cf96322c9225",
        "summary_call_depth_counts": "b1d815ef17fa381f",
        "summary_gt_allele_counts": "4f37fec9406710cf",
        "summary_gt_call_counts": "454c74ca07e828ae",
        "summary_gt_hwe": "8afa775214a53f4d",
        "summary_gt_packed": "3efd7b4c6c273d83",
        "summary_gt_packed_exact": "16f1a6e0a8577775",
        "summary_hwe_genotype_counts": "64509ab614cb646a",
        "summary_indel_vaf": "a3b8b716e06ce6a2",
        "summary_sample_call_stats": "c9dde4bdb43e604c",
        "summary_sample_class_counts": "8bc30e7dd6f6b374",
        "variant_AA": "436b7920e1264854",
        "variant_AC": "383ea5ebff3da234",
        "variant_AF": "a348aa5b3c0fe055",
        "variant_AN": "680efcb7d06ecf04",
        "variant_DB": "b60f74fcbfc2e97b",
        "variant_DP": "93df28db8371e1a6",
        "variant_H2": "bf4cf91cf22a836a",
        "variant_NS": "abc7ee7eb81fe4d6",
        "variant_allele": "25612bd2cebcd1c8",
        "variant_contig": "0be1b250a7cdd60d",
        "variant_filter": "e9450ebcc0972ccb",
        "variant_id": "e3d7ba6ec8cdd0f3",
        "variant_length": "31b8428edcb8c7ae",
        "variant_position": "e027f4b4da87805c",
        "variant_quality": "ba774186f209fd5f",
    },
    "mixed_ploidy.vcf.gz": {
        "call_DP": "d3d18f952e0cc013",
        "call_genotype": "2f650c127d787494",
        "call_genotype_phased": "b8cc7513092042d5",
        "contig_id": "5bbdd4f6fa4ffc26",
        "contig_length": "8ca9cafc52706380",
        "filter_description": "d955f4a1929aa0e3",
        "filter_id": "e3672c3715667c85",
        "region_index": "d7404780bb5a31d6",
        "sample_id": "c2444b201db2ff44",
        "summary_call_depth_counts": "e8b8bed17f5eabbf",
        "summary_gt_allele_counts": "16be826231f3e529",
        "summary_gt_call_counts": "234a7a66641738f5",
        "summary_gt_hwe": "3d9cd451cba40c5d",
        "summary_gt_packed": "3e37d01009761294",
        "summary_gt_packed_exact": "586683eab2d4400e",
        "summary_hwe_genotype_counts": "4da556adf8eb9e26",
        "summary_indel_vaf": "631a01b0c09ac212",
        "summary_sample_call_stats": "a5f5643d9a1c500d",
        "summary_sample_class_counts": "df4270ba65283045",
        "variant_allele": "d097fe64a7c658a1",
        "variant_contig": "81478dc1c51497c5",
        "variant_filter": "3aab1bda9cb22b2f",
        "variant_id": "e4274b414932257c",
        "variant_length": "e271e0a109a519ed",
        "variant_position": "08baf058345c736d",
        "variant_quality": "74614cff2dbdf430",
    },
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_decoded_arrays_are_unchanged(tmp_path, name, kernels):
    vcf = gt_only_vcf(tmp_path / "gt.vcf") if name == "gt_only" else BIO2ZARR / name
    convert(vcf, tmp_path / "out.vcz", variants_chunk_size=7, samples_chunk_size=4, show_progress=False)
    found = decoded_digests(tmp_path / "out.vcz")
    assert {k: found.get(k) for k in EXPECTED[name]} == EXPECTED[name]
