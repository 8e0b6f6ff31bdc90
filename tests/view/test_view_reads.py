"""``view`` reads through a scan plan: ``view -r`` opens only the genotype chunks whose
region-index rows overlap the region (counted at the store's key reads, expected from the
region index read with zarr), and a URL store's chunks are fetched in windows."""

from __future__ import annotations

import re

import numpy as np
import pytest
import zarr
from corpus import CORPUS
from store_support import counted_reads

from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import Selection, vcf_lines

CHR22 = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/chr22.vcf.gz"
SAMPLES_CHUNK = 30
_CHUNK_KEY = re.compile(r"call_genotype/(\d+)[./](\d+)[./]0$")


@pytest.fixture(scope="module")
def chr22(convert_once) -> str:
    """100 records in 10 variant chunks, 100 samples in 4 sample chunks."""
    return str(convert_once(CHR22, variants_chunk_size=10, samples_chunk_size=SAMPLES_CHUNK))



def _array(path: str, name: str) -> np.ndarray:
    """Array ``name`` of the store at ``path``, read with zarr."""
    return np.asarray(zarr.open_array(f"{path}/{name}", mode="r")[...])


def _overlapping_chunks(path: str, contig: str, start: int, end: int) -> set[int]:
    """Variant chunks with a region-index row overlapping ``contig:start-end`` (the rows'
    columns: chunk, contig, first POS, last POS, largest END, records)."""
    index = _array(path, "region_index")
    contig_id = list(_array(path, "contig_id")).index(contig)
    hit = (index[:, 1] == contig_id) & (index[:, 2] <= end) & (index[:, 4] >= start)
    return set(index[hit, 0].tolist())


@pytest.mark.parametrize(("samples", "sample_chunks"), [
    (None, {0, 1, 2, 3}),
    ("HG00100,HG00101", None),  # the sample chunks holding them
])
def test_view_region_opens_only_the_overlapping_genotype_chunks(chr22, monkeypatch, samples, sample_chunks):
    start, end = 10510700, 10511400
    expected_chunks = _overlapping_chunks(chr22, "chr22", start, end)
    assert expected_chunks == {2, 3, 4}  # (the region's edges fall inside chunks 2 and 4)
    if sample_chunks is None:
        names = list(_array(chr22, "sample_id"))
        sample_chunks = {names.index(s) // SAMPLES_CHUNK for s in samples.split(",")}
    store = open_store(chr22)
    assert len(store.region_index)  # (the index is read before counting)
    singles, batches = counted_reads(monkeypatch, store._kv)
    text = "".join(vcf_lines(store, Selection(regions=f"chr22:{start}-{end}", samples=samples)))
    opened = singles + [key for batch in batches for key in batch]
    genotype_chunks = {tuple(int(i) for i in m.groups()) for k in opened if (m := _CHUNK_KEY.match(k))}
    assert genotype_chunks == {(c, s) for c in expected_chunks for s in sample_chunks}
    positions = [int(line.split("\t")[1]) for line in text.splitlines() if not line.startswith("#")]
    assert positions and min(positions) >= 10510628 and max(positions) <= end


def test_view_of_a_url_store_fetches_chunks_in_windows(chr22, monkeypatch):
    pytest.importorskip("fsspec", reason="fsspec (test extra) is needed for URLs")
    expected = "".join(vcf_lines(open_store(chr22), Selection(regions="chr22:10510700-10513600")))
    store = open_store(f"file://{chr22}")
    assert len(store.region_index)
    singles, batches = counted_reads(monkeypatch, store._kv)
    assert "".join(vcf_lines(store, Selection(regions="chr22:10510700-10513600"))) == expected
    # the first chunk's reads teach what a task reads; the other six chunks come in batches
    fetched = {k.split("/")[1].split(".")[0] for batch in batches for k in batch if "/" in k}
    assert batches and fetched >= {"3", "4", "5", "6", "7", "8"}
    assert not any(k.startswith("call_genotype/") and k.split("/")[1].split(".")[0] != "2" for k in singles)
    assert np.all([len(b) > 1 for b in batches])
