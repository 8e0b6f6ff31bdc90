"""Against bcftools, on stores from every writer and on damaged ones: the contig column (taken
from the region index where it gives a chunk one contig), the region index's checks, and
filters on the dictionary columns (plain strings with pyarrow < 26)."""

from __future__ import annotations

import collections
import shutil
import subprocess

import oracle
import pytest
import zarr
from fill_tags import BCFTOOLS, bcftools, simulated_vcf
from store_support import zarr_array, zarr_values

import vcfzarr_sql
from vcfzarr_sql.format import spec

pytestmark = pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools")

# -- helpers ------------------------------------------------------------------------------------


def _bgzip(vcf) -> str:
    subprocess.run(bcftools("view", "-Oz", "-o", f"{vcf}.gz", str(vcf)), check=True)
    subprocess.run(bcftools("index", "-f", "-t", f"{vcf}.gz"), check=True)
    return f"{vcf}.gz"


def _rewrite_region_index(src, dst, change) -> str:
    """A copy of store ``src`` whose region_index is ``change(region_index)``."""
    shutil.copytree(src, dst)
    group = zarr.open_group(str(dst), mode="r+", zarr_format=2)
    old = zarr_array(group, spec.REGION_INDEX)
    new, attrs = change(zarr_values(old).copy()), dict(old.attrs)
    del group[spec.REGION_INDEX]
    group.create_array(spec.REGION_INDEX, data=new.astype(old.dtype),
                       chunks=(max(len(new), 1), spec.REGION_INDEX_FIELDS), attributes=attrs)
    zarr.consolidate_metadata(str(dst), zarr_format=2)
    return str(dst)


def _zarr_contigs(path) -> list[str]:
    group = zarr.open_group(str(path), mode="r")
    names = list(zarr_values(zarr_array(group, "contig_id")))
    return [names[i] for i in zarr_values(zarr_array(group, "variant_contig"))]


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs_store(tmp_path_factory, convert_once):
    """Two contigs, 120 records in chunks of 7 (contig 2 starts inside chunk 8), 24 samples."""
    vcf = simulated_vcf(tmp_path_factory.mktemp("runs") / "runs.vcf", seed=5)
    return str(convert_once(vcf, variants_chunk_size=7, samples_chunk_size=10))


# -- contig from the region index ------------------------------------------------------------------


def _contigs_vcf(path, order) -> str:
    """Records on contigs ``order`` (body order; header order c1..c4), few per contig, so that
    chunks of 1..6 records end inside contigs, at their ends and in a short last chunk."""
    counts = {"c1": 5, "c2": 1, "c3": 9, "c4": 2}
    lines = ["##fileformat=VCFv4.2"] + [f"##contig=<ID={c},length=1000>" for c in counts]
    lines += ['##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
              "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS1\tS2"]
    for contig in order:
        lines += [f"{contig}\t{10 * k + 1}\t.\tA\tC\t.\t.\t.\tGT\t0/1\t./." for k in range(counts[contig])]
    path.write_text("\n".join(lines) + "\n")
    return _bgzip(path)


def _bcftools_contigs(vcf, region=None) -> list[tuple[str, int]]:
    args = bcftools("query", "-f", "%CHROM\t%POS\n") + (["-r", region] if region else [])
    out = subprocess.run([*args, str(vcf)], capture_output=True, check=True).stdout.decode()
    return [(c, int(p)) for c, p in (line.split("\t") for line in out.splitlines())]


@pytest.mark.parametrize("order", [("c1", "c2", "c3", "c4"), ("c3", "c4", "c1", "c2")])
@pytest.mark.parametrize("writer", ["ours", "bio2zarr-v2", "bio2zarr-v3"])
@pytest.mark.parametrize("chunk", [1, 2, 4, 5, 6])
def test_contig_column_equals_bcftools(tmp_path_factory, convert_once, bio2zarr_once, order, writer, chunk):
    vcf = _contigs_vcf(tmp_path_factory.mktemp("contigs") / f"{'-'.join(order)}.vcf", order)
    if writer == "ours":
        store = convert_once(vcf, variants_chunk_size=chunk)
    else:
        store = bio2zarr_once(vcf, zarr_format=int(writer[-1]), variants_chunk_size=chunk)
    rows = vcfzarr_sql.sql(f"SELECT contig, pos FROM vcf_zarr('{store}')").fetchall()
    # (bio2zarr stores records in header contig order, not file order)
    assert (rows if writer == "ours" else sorted(rows)) == (
        _bcftools_contigs(vcf) if writer == "ours" else sorted(_bcftools_contigs(vcf)))
    grouped = vcfzarr_sql.sql(f"SELECT contig, count(*) FROM vcf_zarr('{store}') GROUP BY contig "
                      "ORDER BY contig").fetchall()
    assert grouped == sorted(collections.Counter(c for c, _ in rows).items())
    for region in ("c3", "c1:1-21,c4", "c2:1-1"):
        got = vcfzarr_sql.sql(f"SELECT contig, pos FROM vcf_zarr('{store}', region := '{region}')").fetchall()
        assert sorted(got) == sorted(_bcftools_contigs(vcf, region)), region


def test_validate_accepts_bio2zarr_index_of_a_chunk_with_contigs_out_of_header_order(
        tmp_path_factory, bio2zarr_once):
    """bio2zarr writes one region_index row per run of a contig, in record order; a chunk
    holding the end of c4 and the start of c1 (body order c3, c4, c1, c2) gets rows (c4, c1),
    ours (c1, c4). Both are valid indexes of the same records (the scan reads both alike)."""
    vcf = _contigs_vcf(tmp_path_factory.mktemp("contigs") / "c3-c4-c1-c2.vcf", ("c3", "c4", "c1", "c2"))
    store = bio2zarr_once(vcf, variants_chunk_size=4)
    assert vcfzarr_sql.validate(str(store)) == []


def test_a_region_index_that_does_not_add_up_is_a_store_error(tmp_path, runs_store):
    """Record counts that do not add up to the store's records: the index is stale, and it is
    refused rather than trusted for pruning and contigs. (An index edited so that it still
    adds up is trusted as written; validate reports it row by row.)"""
    def stale(ri):
        ri[0, spec.RI_COUNT] -= 1
        return ri

    path = _rewrite_region_index(runs_store, tmp_path / "stale.vcz", stale)
    assert [p.where for p in vcfzarr_sql.validate(path)] == [spec.REGION_INDEX]
    with pytest.raises(vcfzarr_sql.StoreError, match="region_index names 119 records, not the store's 120"):
        vcfzarr_sql.dataset(path).to_table(columns=["contig"])


def test_out_of_range_contig_in_the_region_index_is_a_store_error(tmp_path, runs_store):
    """A region_index row naming contig -1 or 7 (of 2) is a StoreError, not the last contig's
    name or an IndexError."""
    for value, name in ((-1, "neg.vcz"), (7, "big.vcz")):
        def bad(ri, value=value):
            ri[0, spec.RI_CONTIG] = value
            return ri

        path = _rewrite_region_index(runs_store, tmp_path / name, bad)
        with pytest.raises(vcfzarr_sql.StoreError, match="region_index names a contig the store does not have"):
            vcfzarr_sql.dataset(path).to_table(columns=["contig"])


# -- dictionary columns (plain strings with pyarrow < 26) ---------------------------------------------

SAMPLE_VCF = oracle.CORPUS_SAMPLE


@pytest.fixture(scope="module")
def sample_store(convert_once):
    return str(convert_once(SAMPLE_VCF, variants_chunk_size=3, samples_chunk_size=2))


def _calls_oracle():
    records = oracle.records(SAMPLE_VCF)
    samples = oracle.header(SAMPLE_VCF).samples
    return [(s, r.chrom, r.pos, r.id, r.ref) for r in records for s in samples]


CALL_FILTERS = [
    ("sample_id = 'NA00002' AND contig = '20'", lambda s, c, p, i, r: s == "NA00002" and c == "20"),
    ("sample_id IN ('NA00003', 'NA00001') AND contig IN ('X', '19')",
     lambda s, c, p, i, r: s in ("NA00003", "NA00001") and c in ("X", "19")),
    ("sample_id LIKE 'NA0000_' AND sample_id <> 'NA00002'", lambda s, c, p, i, r: s != "NA00002"),
    ("id IS NULL", lambda s, c, p, i, r: i is None),
    ("id IS NOT NULL AND id LIKE 'rs60%'", lambda s, c, p, i, r: i is not None and i.startswith("rs60")),
    ("ref IN ('G', 'GTC') OR contig > '20'", lambda s, c, p, i, r: r in ("G", "GTC") or c > "20"),
    ("contig COLLATE NOCASE = 'x'", lambda s, c, p, i, r: c == "X"),
    ("contig IN ('20', NULL) AND sample_id IS DISTINCT FROM 'NA00001'",
     lambda s, c, p, i, r: c == "20" and s != "NA00001"),
]


@pytest.mark.parametrize("where, keep", CALL_FILTERS, ids=[w for w, _ in CALL_FILTERS])
def test_dictionary_column_filters_equal_bcftools(sample_store, where, keep):
    """Run under both environments (pyarrow 26: dictionary columns; pyarrow 21: plain strings)."""
    got = vcfzarr_sql.sql(f"SELECT sample_id, contig, pos, id, ref FROM vcf_zarr_calls('{sample_store}') "
                  f"WHERE {where}").fetchall()
    assert sorted(got, key=repr) == sorted((row for row in _calls_oracle() if keep(*row)), key=repr)


def test_contig_group_by_and_join_equal_bcftools(sample_store):
    expected = collections.Counter(r.chrom for r in oracle.records(SAMPLE_VCF))
    got = vcfzarr_sql.sql(f"SELECT v.contig, count(*) FROM vcf_zarr('{sample_store}') v "
                  f"JOIN (SELECT DISTINCT contig FROM vcf_zarr_calls('{sample_store}', "
                  "samples := ['NA00003'])) c USING (contig) GROUP BY v.contig ORDER BY 1").fetchall()
    assert got == sorted(expected.items())
