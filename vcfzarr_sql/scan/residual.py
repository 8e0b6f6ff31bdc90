"""A scan task's residual filter evaluated on its batch: the rows that satisfy it.

``RecordBatch.filter(expression)`` runs the expression through pyarrow's query engine (Acero),
which costs ~0.2-0.4 ms per batch even for a region's three comparisons, and copies every
column it filters. Here the filter's call tree (:func:`~vcfzarr_sql.scan.expressions.parse`)
is evaluated by calling the same compute functions with the same arguments and options on the
filter columns alone; a function this module does not know leaves the batch to Acero. Rows
where the filter is false or null are dropped, as Acero drops them.

>>> import pyarrow as pa, pyarrow.compute as pc
>>> from vcfzarr_sql.scan.expressions import parse
>>> batch = pa.record_batch([pa.array([5, 6, 7, 8])], names=["pos"])
>>> middle = (pc.field("pos") >= 6) & (pc.field("pos") <= 7)
>>> matching_rows(batch, parse(middle), middle, frozenset(["pos"]))["pos"].to_pylist()
[6, 7]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.scan.expressions import Call, Column, Literal, Node

#: Functions called with no options.
_PLAIN = frozenset(
    {
        "and", "and_kleene", "or", "or_kleene", "invert", "if_else", "is_valid",
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    }
)
#: ``is_in``'s null_matching_behavior values pyarrow's SetLookupOptions can give: skip_nulls.
_SKIP_NULLS = {0: False, 1: True}

_ROW_NUMBER = "__vcfzarr_sql_row"


class _Unknown(Exception):
    """A node this module does not evaluate (Acero does)."""


def _options(call: Call) -> pc.FunctionOptions | None:
    if call.function in _PLAIN and call.options is None:
        return None
    if call.function == "is_null" and call.options is not None:
        return pc.NullOptions(nan_is_null=call.options["nan_is_null"].as_py())
    if call.function == "is_in" and call.options is not None:
        behaviour = call.options["null_matching_behavior"].as_py()
        if behaviour in _SKIP_NULLS:
            return pc.SetLookupOptions(
                call.options["value_set"].values, skip_nulls=_SKIP_NULLS[behaviour]
            )
    raise _Unknown(call.function)


def _evaluate(node: Node, batch: pa.RecordBatch) -> pa.Array | pa.Scalar:
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Column):
        index = -1 if node.nested else batch.schema.get_field_index(node.name)
        if index < 0:
            raise _Unknown(node.name)
        return batch.column(index)
    options = _options(node)
    arguments = [_evaluate(a, batch) for a in node.arguments]
    return pc.call_function(node.function, arguments, options)


def _selected(batch: pa.RecordBatch, tree: Node) -> np.ndarray | None:
    """Whether each row satisfies ``tree`` (null: no), or None when this module cannot tell."""
    try:
        result = _evaluate(tree, batch)
    except (_Unknown, pa.ArrowException):  # Acero decides (or reports the error)
        return None
    if isinstance(result, pa.Scalar):
        if not pa.types.is_boolean(result.type):
            return None
        return np.full(batch.num_rows, result.as_py() is True)
    if not pa.types.is_boolean(result.type) or len(result) != batch.num_rows:
        return None
    return pc.fill_null(result, False).to_numpy(zero_copy_only=False)


def matching_rows(
    batch: pa.RecordBatch,
    tree: Node | None,
    expression: pc.Expression,
    filter_columns: frozenset[str],
) -> pa.RecordBatch:
    """The rows of ``batch`` that satisfy ``expression``, which reads ``filter_columns`` and
    whose call tree is ``tree`` (None: it could not be parsed).

    A batch whose rows all match is returned as it is, a run of matching rows as a zero-copy
    slice, other selections by mask.
    """
    probe = batch.select([name for name in batch.schema.names if name in filter_columns])
    selected = None if tree is None else _selected(probe, tree)
    if selected is None:
        selected = _selected_by_acero(probe, expression)
    kept = np.flatnonzero(selected)
    if len(kept) == batch.num_rows:
        return batch
    if not len(kept) or kept[-1] - kept[0] + 1 == len(kept):
        return batch.slice(int(kept[0]) if len(kept) else 0, len(kept))
    return batch.filter(pa.array(selected))


def _selected_by_acero(probe: pa.RecordBatch, expression: pc.Expression) -> np.ndarray:
    """Whether each row of ``probe`` (the filter's columns) satisfies ``expression``, by
    pyarrow's own filter of the probe plus a row number."""
    numbered = probe.append_column(_ROW_NUMBER, pa.array(np.arange(probe.num_rows, dtype=np.int64)))
    kept = numbered.filter(expression).column(_ROW_NUMBER).to_numpy()
    selected = np.zeros(probe.num_rows, dtype=bool)
    selected[kept] = True
    return selected
