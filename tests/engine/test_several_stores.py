"""``vcf_zarr([...])`` and ``vcf_zarr('glob*')``: one table over several stores, compared with
bcftools on the original file; pushdown still prunes each store."""

from __future__ import annotations

import subprocess

import pytest
from corpus import CORPUS

from vcfzarr_sql.converter import convert
from vcfzarr_sql.engine import connect
from vcfzarr_sql.errors import QueryError

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


@pytest.fixture(scope="module")
def per_contig_stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("stores")
    for contig in ("19", "20", "X"):
        part = root / f"part{contig}.vcf.gz"
        subprocess.run(["bcftools", "view", "-r", contig, "-Oz", "-o", str(part), str(SAMPLE)], check=True)
        convert(part, root / f"chr{contig}.zarr", show_progress=False)
    return root


def _bcftools_query(*args: str) -> list[tuple]:
    out = subprocess.run(["bcftools", "query", *args, "-f", "%CHROM\t%POS\t[%GT,]\n", str(SAMPLE)],
                         check=True, capture_output=True, text=True).stdout
    return [(c, int(p), g) for c, p, g in (line.split("\t") for line in out.splitlines())]



@pytest.mark.parametrize("form", ["list", "glob"])
def test_union_equals_the_original_file(form, per_contig_stores):
    stores = sorted(str(p) for p in per_contig_stores.glob("chr*.zarr"))
    argument = repr(stores) if form == "list" else repr(str(per_contig_stores / "chr*.zarr"))
    con = connect()
    rows = con.sql(f"SELECT contig, pos FROM vcf_zarr({argument}) ORDER BY contig, pos").fetchall()
    assert rows == [r[:2] for r in _bcftools_query()]
    rows = con.sql(
        f"SELECT contig, pos FROM vcf_zarr({argument}, samples := ['NA00002']) v "
        "WHERE v.contig = '20' AND v.pos >= 17330 ORDER BY pos"
    ).fetchall()
    assert rows == [r[:2] for r in _bcftools_query("-r", "20:17330-", "-s", "NA00002")]
    stats = con.last_stats
    assert stats["variant_chunks_read"] == 1 and stats["variant_chunks_total"] == 3  # pruned per store


def test_calls_table_over_several_stores(per_contig_stores):
    stores = sorted(str(p) for p in per_contig_stores.glob("chr*.zarr"))
    rows = connect().sql(
        f"SELECT count(*) FROM vcf_zarr_calls({stores!r}) WHERE fmt_GT IS NOT NULL"
    ).fetchall()
    expected = sum(len(line[2].rstrip(",").split(",")) for line in _bcftools_query())
    assert rows == [(expected,)]


def test_stores_with_different_samples_are_refused(per_contig_stores, tmp_path):
    fewer = tmp_path / "fewer.vcf.gz"
    subprocess.run(["bcftools", "view", "-s", "NA00001", "-Oz", "-o", str(fewer), str(SAMPLE)], check=True)
    convert(fewer, tmp_path / "fewer.zarr", show_progress=False)
    with pytest.raises(QueryError, match="different samples"):
        connect().sql(f"SELECT * FROM vcf_zarr(['{per_contig_stores / 'chr19.zarr'}', '{tmp_path / 'fewer.zarr'}'])")
    with pytest.raises(QueryError, match="no store matches"):
        connect().sql(f"SELECT * FROM vcf_zarr('{tmp_path}/nothing*.zarr')")
