"""Random splits of one VCF into batches (samples, and the records each batch keeps), added in
a random order, read and compacted: always the answers of the store converted from
``bcftools merge -m none`` of the batches in that order (Hypothesis, a few small examples)."""

from __future__ import annotations

import gzip

import pysam
from cohort_support import POOL, merged, write_batch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import vcfzarr_sql
from vcfzarr_sql.cli.compact import compact
from vcfzarr_sql.converter import convert
from vcfzarr_sql.converter.cohort import add

SAMPLES = ["S1", "S2", "S3", "S4", "S5"]
QUERIES = (
    "SELECT * FROM vcf_zarr('{s}')",
    "SELECT * FROM vcf_zarr_calls('{s}')",
    "SELECT contig, pos, alt, gt_AC, gt_AN, gt_HWE, gt_F_MISSING FROM vcf_zarr('{s}')",
    "SELECT * FROM vcf_zarr_sample_stats('{s}')",
    "SELECT * FROM vcf_zarr_sample_stats('{s}', samples := ['S2', 'S4', 'S5'], region := '1')",
)


def _answers(con, store) -> list:
    return [sorted(con.sql(q.format(s=store)).to_arrow_table().to_pylist(), key=repr) for q in QUERIES]


def _batch(whole, path, samples: list[str], keep: list[bool]):
    """The records ``keep`` of ``whole`` for ``samples``, bgzipped and indexed."""
    lines = whole.read_text().splitlines()
    columns = lines[[i for i, line in enumerate(lines) if line.startswith("#CHROM")][0]].split("\t")
    picked = [columns.index(s) for s in samples]
    out, record = [], 0
    for line in lines:
        fields = line.split("\t")
        if line.startswith("##"):
            out.append(line)
            continue
        if not line.startswith("#"):
            record += 1
            if not keep[record - 1]:
                continue
        out.append("\t".join(fields[:9] + [fields[i] for i in picked]))
    path.write_text("\n".join(out) + "\n")
    return pysam.tabix_index(str(path), preset="vcf", force=True)


@settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(groups=st.lists(st.integers(0, 2), min_size=len(SAMPLES), max_size=len(SAMPLES)),  # per sample
       keep=st.lists(st.lists(st.booleans(), min_size=len(POOL), max_size=len(POOL)),
                     min_size=3, max_size=3),
       order=st.permutations([0, 1, 2]))
def test_random_batches_in_random_order_read_and_compact_as_bcftools_merges_them(
        tmp_path_factory, groups, keep, order):
    directory = tmp_path_factory.mktemp("split")
    whole = write_batch(directory / "whole.vcf", SAMPLES, POOL, seed=7)
    text = directory / "whole.txt"
    with gzip.open(whole, "rt") as f:
        text.write_text(f.read())
    groups = [0, 1, *groups[2:]]  # (two batches at least)
    batches = []
    for g in order:
        samples = [s for s, group in zip(SAMPLES, groups) if group == g]
        if samples:
            kept = [k or i == g for i, k in enumerate(keep[g])]  # (at least one record)
            batches.append(_batch(text, directory / f"batch{g}.vcf", samples, kept))
    cohort, compacted, expected = directory / "c.vcz", directory / "compact.vcz", directory / "m.vcz"
    convert(batches[0], cohort, variants_chunk_size=4)
    if len(batches) > 1:
        add(cohort, batches[1:])
    compact(cohort, compacted)
    convert(merged(batches, directory / "merged.vcf"), expected, variants_chunk_size=4)
    con = vcfzarr_sql.connect()
    want = _answers(con, expected)
    assert _answers(con, cohort) == want
    assert _answers(con, compacted) == want
