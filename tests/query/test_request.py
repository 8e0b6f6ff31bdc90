"""vcfzarr_sql.query.request: sample names looked up in the store's Arrow names (hand facts,
bcftools' header samples), a store's table schemas made once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import numpy as np
import oracle
import pyarrow as pa
import pytest

import vcfzarr_sql
from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.format import spec
from vcfzarr_sql.query import schema
from vcfzarr_sql.query.request import sample_selection, table_schema
from vcfzarr_sql.store.vcz import VczStore

STORE = cast(VczStore, SimpleNamespace(sample_names=pa.array(["NA1", "NA2", "é3", "NA4"]), path="x.vcz"))


@pytest.mark.parametrize(("samples", "indexes", "order"), [
    (["é3"], [2], None),
    ("NA2", [1], None),
    (("NA4", "NA1"), [0, 3], [1, 0]),
    (np.array(["NA2", "NA2"]), [1], [0, 0]),
    (["NA4", "NA2", "é3", "NA1"], None, [3, 1, 2, 0]),
    (["NA1", "NA2", "é3", "NA4"], None, None),
])
def test_samples_as_store_indexes_and_order(samples, indexes, order):
    got_indexes, got_order = sample_selection(STORE, samples)
    assert (None if got_indexes is None else got_indexes.tolist()) == indexes
    assert (None if got_order is None else got_order.tolist()) == order


@pytest.mark.parametrize(("samples", "named"), [
    (["NA1", "NA5", "NA6"], "'NA5'"),
    (["NA1", None], "None"),
    (["NA1", 3], "3"),
    (["NA1", "\ud800"], r"'\\ud800'"),  # (a lone surrogate: no UTF-8, no stored name)
    (["na1"], "'na1'"),
])
def test_an_unknown_sample_is_named(samples, named):
    with pytest.raises(QueryError, match=rf"^samples: no sample named {named} in x\.vcz$"):
        sample_selection(STORE, samples)


def test_an_empty_list_is_an_error():
    with pytest.raises(QueryError, match="the list is empty"):
        sample_selection(STORE, [])


@pytest.fixture(scope="module")
def sample_store(convert_once):
    return convert_once(oracle.CORPUS_SAMPLE, variants_chunk_size=3, samples_chunk_size=2)


def test_a_store_of_several_sample_chunks(sample_store):
    """Our converter's store, two samples a chunk: names looked up in all of its chunks."""
    store = vcfzarr_sql.open_store(sample_store)
    samples = oracle.header(oracle.CORPUS_SAMPLE).samples
    assert store.array_info(spec.SAMPLE_ID).grid[0] > 1
    indexes, order = sample_selection(store, samples[::-1])
    assert indexes is None and order is not None and order.tolist() == list(range(len(samples)))[::-1]
    indexes, order = sample_selection(store, samples[-1:])
    assert indexes is not None and indexes.tolist() == [len(samples) - 1] and order is None


def test_a_store_s_schemas_are_made_once(sample_store):
    store = vcfzarr_sql.open_store(sample_store)
    first = table_schema(store, "variants")
    assert table_schema(store, "variants") is first and first == schema.variants_schema(store)
    assert table_schema(store, "calls") == schema.calls_schema(store)
    again = vcfzarr_sql.open_store(sample_store)  # (opened again: a store of its own)
    assert table_schema(again, "variants") is not first
