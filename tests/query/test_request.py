"""vcfzarr_sql.query.request: a store's table schemas made once per open store."""

from __future__ import annotations

import oracle
import pytest

import vcfzarr_sql
from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query import schema
from vcfzarr_sql.query.request import table_schema


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
