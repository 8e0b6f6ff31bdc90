"""The chunk sources a scan reads through (store/source.py): the store itself, a fetching
source over a remote store, a counting source over either; each reads what the store reads
and gives the store's metadata through ``store``."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from vcfzarr_sql.store.counting import CountingSource
from vcfzarr_sql.store.fetch import FetchingSource, fetching
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import open_store

pytest.importorskip("fsspec", reason="fsspec (test extra) is needed for URLs")


@pytest.fixture(scope="module")
def path(simulated_store) -> Path:
    return simulated_store[1]


def test_a_local_store_is_its_own_source(path):
    with open_store(path) as store:
        source: ChunkSource = fetching(store)
        assert source is store
        assert (source.store, source.fetcher) == (store, None)


def test_sources_over_a_remote_store_read_what_the_store_reads(path):
    with open_store(path) as local, open_store(f"file://{path}") as remote:
        fetcher = fetching(remote)
        assert isinstance(fetcher, FetchingSource)
        counting = CountingSource(fetcher)
        sources: list[ChunkSource] = [remote, fetcher, counting]
        for source in sources:
            assert source.store is remote
            assert source.fetcher is (None if source is remote else fetcher)
            for name, chunk in (("variant_position", (1,)), ("call_genotype", (1, 0, 0))):
                assert np.array_equal(source.read_chunk(name, chunk), local.read_chunk(name, chunk))
            assert np.array_equal(source.variant_length(1), local.variant_length(1))
            strings = source.read_chunk_strings("variant_allele", (1, 0))
            assert strings.to_pylist() == local.read_chunk("variant_allele", (1, 0)).ravel().tolist()


def test_a_counting_source_counts_the_stored_bytes_it_decodes(path):
    with open_store(f"file://{path}") as store:
        source = CountingSource(fetching(store))
        source.read_chunk("variant_position", (1,))
        source.read_chunk("call_genotype", (1, 1, 0))
        stats = source.stats(variant_chunks_total=store.num_variant_chunks,
                             sample_chunks_total=store.num_sample_chunks, wall_time_s=0.0)
    # (the chunk files' sizes on disk: Zarr v2 keys with "." separators)
    files = [Path(path) / "variant_position" / "1", Path(path) / "call_genotype" / "1.1.0"]
    assert stats["bytes_read"] == sum(os.path.getsize(f) for f in files)
    assert (stats["variant_chunks_read"], stats["sample_chunks_read"], stats["arrays_read"]) == (1, 1, 2)

