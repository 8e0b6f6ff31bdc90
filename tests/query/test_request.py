"""vcfzarr_sql.query.request: sample names looked up in the store's Arrow names (hand facts)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import numpy as np
import pyarrow as pa
import pytest

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query.request import sample_selection
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
