"""The guide's recipes, run as written (from docs/guide.md) and compared with bcftools."""

from __future__ import annotations

import re
from pathlib import Path

import oracle

import vcfzarr_sql

GUIDE = Path(__file__).parents[2] / "docs" / "guide.md"

#: BED6 with the header lines BED files carry, and a BED3 line (no name)
BED = """\
browser position chr20:1-2000000
track name=genes description="some genes"
# a comment
20\t14000\t15000\tG1\t0\t+
20\t1110695\t1234567\tG2\t0\t-
19\t0\t111\tG3\t0\t+
X\t100\t200\tG4\t0\t+
20\t17329\t17330
"""


def recipe(name: str) -> str:
    """The SQL block that follows ``<!-- recipe: name ...-->`` in the guide."""
    text = GUIDE.read_text()
    match = re.search(rf"<!-- recipe: {name}\b.*?-->\n```sql\n(.*?)```", text, re.DOTALL)
    assert match, f"no recipe {name} in {GUIDE}"
    return match.group(1)


def test_bed_join_counts_variants_per_feature_like_bcftools(tmp_path):
    store = tmp_path / "calls.zarr"
    vcfzarr_sql.convert(oracle.CORPUS_SAMPLE, store, variants_chunk_size=3, show_progress=False)
    bed = tmp_path / "genes.bed"
    bed.write_text(BED)
    sql = recipe("bed-join").replace("'genes.bed'", f"'{bed}'").replace("'calls.zarr'", f"'{store}'")
    con = vcfzarr_sql.connect()  # kept: a relation does not keep its connection open
    got = dict(con.sql(sql).fetchall())
    expected = {}
    for line in BED.splitlines():
        if line.startswith(("browser", "track", "#")):
            continue
        contig, start, end, *rest = line.split("\t")
        region = f"{contig}:{int(start) + 1}-{end}"
        expected[rest[0] if rest else region] = len(oracle.records(oracle.CORPUS_SAMPLE, region=region))
    assert got == expected
    assert any(expected.values()) and 0 in expected.values()
