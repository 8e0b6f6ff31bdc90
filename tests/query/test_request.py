"""vcfzarr_sql.query.request: a store's table schemas and sample positions made once per open
store; sample look-up against a naive one (hand facts)."""

from __future__ import annotations

from typing import cast

import numpy as np
import oracle
import pytest

import vcfzarr_sql
from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query import request, schema
from vcfzarr_sql.query.request import sample_selection, table_schema
from vcfzarr_sql.store.vcz import VczStore


@pytest.fixture(scope="module")
def sample_store(convert_once):
    return convert_once(oracle.CORPUS_SAMPLE, variants_chunk_size=3, samples_chunk_size=2)


def test_a_store_s_schemas_are_made_once(sample_store):
    store = vcfzarr_sql.open_store(sample_store)
    first = table_schema(store, "variants")
    assert table_schema(store, "variants") is first and first == schema.variants_schema(store)
    assert table_schema(store, "calls") == schema.calls_schema(store)
    again = vcfzarr_sql.open_store(sample_store)  # (opened again: a store of its own)
    assert table_schema(again, "variants") is not first


def test_an_unknown_table_is_an_error(sample_store):
    with pytest.raises(QueryError, match="table: expected one of"):
        table_schema(vcfzarr_sql.open_store(sample_store), "samples")


class _Store:
    """What sample_selection reads of a store (weak-referenceable, as a VczStore)."""

    def __init__(self, samples):
        self.samples, self.path = np.array(samples, dtype=object), "x.vcz"


def fake_store(samples) -> VczStore:
    return cast(VczStore, _Store(samples))


def naive(names, samples):
    """(indexes, order) by hand: the sorted distinct indexes, each listed name's rank among them."""
    listed = [names.index(s) for s in samples]
    chosen = sorted(set(listed))
    order = [chosen.index(i) for i in listed]
    return (None if len(chosen) == len(names) else chosen), (None if order == list(range(len(chosen))) else order)


@pytest.mark.parametrize("count", [1, 3, 255, 256, 700])  # (both ways of ranking: fewer and more than 256)
def test_sample_selection_is_the_naive_answer(count):
    names = [f"S{i}" for i in range(600)]
    rng = np.random.default_rng(count)
    samples = [names[i] for i in rng.integers(0, len(names), count)]
    indexes, order = sample_selection(fake_store(names), samples)
    want_indexes, want_order = naive(names, samples)
    assert (None if indexes is None else indexes.tolist()) == want_indexes
    assert (None if order is None else order.tolist()) == want_order


def test_sample_selection_hand_facts():
    store = fake_store(["A", "B", "C"])
    assert sample_selection(store, None) == (None, None)
    indexes, order = sample_selection(store, "B")
    assert indexes is not None and indexes.tolist() == [1] and order is None
    indexes, order = sample_selection(store, ["C", "B", "A"])
    assert indexes is None and order is not None and order.tolist() == [2, 1, 0]
    with pytest.raises(QueryError, match="no sample named 'D'"):
        sample_selection(store, ["A", "D", "E"])
    with pytest.raises(QueryError, match="the list is empty"):
        sample_selection(store, [])


def test_a_store_s_sample_positions_are_made_once(sample_store):
    store = vcfzarr_sql.open_store(sample_store)
    first = request._sample_positions(store)
    assert request._sample_positions(store) is first
    assert first == {name: i for i, name in enumerate(oracle.header(oracle.CORPUS_SAMPLE).samples)}
