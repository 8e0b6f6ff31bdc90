"""Rule: prepared-statement parameters inside a table-function call become literals.

DuckDB never sees a call's arguments (the call is replaced by a registered relation), so
``vcf_zarr(?, region := $region)`` takes its values from the parameters given with the query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from vcfzarr_sql.errors import QueryError

Parameters = Sequence[Any] | Mapping[str, Any] | None


def placeholder_keys(call: exp.Expression, first_placeholder: int) -> list[int | str]:
    """The parameter each placeholder of ``call`` refers to, in text order.

    A positional ``?`` gives its 0-based ordinal in the whole query (``first_placeholder`` is
    the number of ``?`` before the call), ``$1`` gives ``"1"`` and ``$name`` gives ``"name"``.

    >>> import sqlglot
    >>> call = sqlglot.parse_one("vcf_zarr(?, region := $r, samples := [?, $2])", read="duckdb")
    >>> placeholder_keys(call, first_placeholder=3)
    [3, 'r', 4, '2']
    """
    keys: list[int | str] = []
    ordinal = first_placeholder
    for node in call.find_all(exp.Placeholder, bfs=False):
        if node.this is None:
            keys.append(ordinal)
            ordinal += 1
        else:
            keys.append(str(node.this))
    return keys


def _value(parameters: Parameters, key: int | str) -> Any:
    if parameters is None:
        raise QueryError(f"parameter {_spelling(key)} has no value: pass parameters with the query")
    try:
        if isinstance(parameters, Mapping):
            if isinstance(key, str) and not key.isdigit():
                return parameters[key]
            raise KeyError(key)
        if isinstance(key, str):
            if not key.isdigit() or int(key) < 1:
                raise KeyError(key)
            return parameters[int(key) - 1]
        return parameters[key]
    except (KeyError, IndexError):
        raise QueryError(f"parameter {_spelling(key)} has no value") from None


def _spelling(key: int | str) -> str:
    return f"? number {key + 1}" if isinstance(key, int) else f"${key}"


def inline_parameters(
    call: exp.Anonymous, parameters: Parameters, first_placeholder: int = 0
) -> exp.Anonymous:
    """``call`` with every placeholder replaced by the literal of its parameter value.

    >>> import sqlglot
    >>> call = sqlglot.parse_one("vcf_zarr(?, samples := $s)", read="duckdb")
    >>> inline_parameters(call, {"s": ["NA1", "NA2"]}, 0)
    Traceback (most recent call last):
    ...
    vcfzarr_sql.errors.QueryError: parameter ? number 1 has no value
    >>> call = sqlglot.parse_one("vcf_zarr($1, samples := $2)", read="duckdb")
    >>> inline_parameters(call, ["x.zarr", ["NA1", "NA2"]]).sql("duckdb")
    "VCF_ZARR('x.zarr', samples := ['NA1', 'NA2'])"
    """
    tree = call.copy()
    keys = placeholder_keys(tree, first_placeholder)
    nodes = list(tree.find_all(exp.Placeholder, bfs=False))
    values = {id(node): _value(parameters, key) for node, key in zip(nodes, keys)}
    if not values:
        return tree
    inlined = tree.transform(
        lambda node: exp.convert(values[id(node)]) if id(node) in values else node, copy=False
    )
    assert isinstance(inlined, exp.Anonymous)  # the root is the call, never a placeholder
    return inlined
