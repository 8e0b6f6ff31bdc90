"""A store swapped for a link to another store while it is read (issue 23, item 3): the
store's directory is opened once and every key read relative to it, after checking that its
path still leads there; the swap is an error, never rows of the other store.

Hand facts: the two stores below hold positions 1000.. and 900000.. (written here).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import vcfzarr_sql
from vcfzarr_sql.converter import convert
from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.store import open_store
from vcfzarr_sql.store.confined import DataDirs

HEADER = ("##fileformat=VCFv4.2\n##contig=<ID=1>\n"
          "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n"
          "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS1\n")
RECORDS = 60_000
CHUNK = 500


def _store(directory: Path, name: str, first: int) -> Path:
    vcf = directory / f"{name}.vcf"
    vcf.write_text(HEADER + "".join(f"1\t{first + i}\t.\tA\tG\t50\tPASS\t.\tGT\t0|1\n"
                                    for i in range(RECORDS)))
    out = directory / f"{name}.vcz"
    convert(str(vcf), str(out), variants_chunk_size=CHUNK, show_progress=False)
    return out


@pytest.fixture
def stores(tmp_path) -> tuple[Path, Path]:
    """(a store in the data directory ``data``, a store outside it)."""
    data = tmp_path / "data"
    data.mkdir()
    return _store(data, "s", 1000), _store(tmp_path, "outside", 900_000)


def _swap(store: Path, outside: Path) -> None:
    os.rename(store, store.with_name("moved.vcz"))
    store.symlink_to(outside)


def test_a_served_store_swapped_for_a_link_is_an_error(stores):
    store, outside = stores
    opened = DataDirs.of([store.parent]).open_store(store.name)
    assert opened.read_chunk("variant_position", (0,))[0] == 1000
    _swap(store, outside)
    with pytest.raises(StoreError, match="the store's directory was moved or replaced"):
        opened.read_chunk("variant_position", (1,))
    opened.close()


def test_a_store_swapped_mid_scan_gives_no_row_of_the_other_store(stores):
    """A scan gave some rows, then the store is replaced by a link to another one: the rest of
    the scan is an error (before: the rest of the rows came from the other store). The scan
    is the dataset DuckDB reads (a lazy generator: DuckDB itself may read ahead to the end)."""
    store, outside = stores
    batches = vcfzarr_sql.dataset(str(store)).to_batches(columns=["pos"])
    assert next(batches).column(0).to_pylist()[0] == 1000
    _swap(store, outside)
    positions = []
    with pytest.raises(StoreError, match="moved or replaced"):
        for batch in batches:
            positions += batch.column(0).to_pylist()
    assert not [p for p in positions if p >= 900_000]


def test_a_plain_store_removed_mid_read_is_an_error(stores):
    store, _ = stores
    with open_store(store) as opened:
        opened.read_chunk("variant_position", (0,))
        shutil.rmtree(store)
        with pytest.raises(StoreError, match="moved or replaced"):
            opened.read_chunk("variant_position", (1,))
