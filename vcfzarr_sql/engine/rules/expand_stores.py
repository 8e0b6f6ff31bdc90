"""Rule: a call over several stores becomes one call per store.

``vcf_zarr(['chr1.zarr', 'chr2.zarr'])`` and ``vcf_zarr('chr*.zarr')`` (a glob of local
paths, expanded in sorted order) stand for the union of the stores' tables; each store keeps
its own pushdown. The stores of one scan call must have the same samples (checked when they
are opened, :meth:`~vcfzarr_sql.engine.relations.Registry.check_same_samples`).
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Callable, Iterable

from sqlglot import exp

from vcfzarr_sql.errors import QueryError

_GLOB_CHARACTERS = set("*?[")
#: The most stores one glob may name.
MAX_GLOB_STORES = 10_000
#: What a glob pattern names: its paths (a server confines them to its data directories).
Expander = Callable[[str], Iterable[str]]


def local_paths(pattern: str) -> Iterable[str]:
    """The local paths ``pattern`` matches (``~`` expanded)."""
    return glob.iglob(os.path.expanduser(pattern))


def is_glob(call: exp.Anonymous) -> bool:
    """Whether ``call``'s store argument is a glob pattern."""
    from vcfzarr_sql.store.kvstore import is_url  # (imports store/: once a query names a store)

    first = call.expressions[0] if call.expressions else None
    return (isinstance(first, exp.Literal) and first.is_string and not is_url(first.this)
            and bool(_GLOB_CHARACTERS & set(first.this)))


def _paths(function: str, node: exp.Expression, expand: Expander) -> list[str] | None:
    """The store paths a path argument names, or None when it is not a list or a glob."""
    if isinstance(node, exp.Array):
        paths = [e.this for e in node.expressions if isinstance(e, exp.Literal) and e.is_string]
        if len(paths) != len(node.expressions) or not paths:
            raise QueryError(f"{function}(): a list of stores must be a non-empty list of strings")
        return paths
    from vcfzarr_sql.store.kvstore import is_url

    if not (isinstance(node, exp.Literal) and node.is_string and not is_url(node.this)
            and _GLOB_CHARACTERS & set(node.this)):
        return None
    paths = sorted(itertools.islice(expand(node.this), MAX_GLOB_STORES + 1))
    if not paths:
        raise QueryError(f"{function}(): no store matches {node.this!r}")
    if len(paths) > MAX_GLOB_STORES:
        raise QueryError(f"{function}(): {node.this!r} matches more than {MAX_GLOB_STORES} stores")
    return paths


def expand_stores(call: exp.Anonymous, expand: Expander = local_paths) -> list[exp.Anonymous]:
    """One call per store named by ``call``'s first argument (``[call]`` for one store);
    ``expand`` gives the paths of a glob.

    >>> import sqlglot
    >>> calls = expand_stores(sqlglot.parse_one("vcf_zarr(['a.zarr', 'b.zarr'], region := '1')", read="duckdb"))
    >>> [c.sql("duckdb") for c in calls]
    ["VCF_ZARR('a.zarr', region := '1')", "VCF_ZARR('b.zarr', region := '1')"]
    """
    if not call.expressions or isinstance(call.expressions[0], (exp.PropertyEQ, exp.EQ, exp.Kwarg)):
        return [call]
    paths = _paths(call.name.lower(), call.expressions[0], expand)
    if paths is None:
        return [call]
    out = []
    for path in paths:
        single = call.copy()
        single.expressions[0].replace(exp.Literal.string(path))
        out.append(single)
    return out


def union_reference(relation_names: list[str], alias: str | None) -> str:
    """The SQL that stands for the union of several registered relations.

    >>> union_reference(["r1", "r2"], "vcf_zarr")
    '(SELECT * FROM r1 UNION ALL SELECT * FROM r2) AS vcf_zarr'
    """
    union = " UNION ALL ".join(f"SELECT * FROM {name}" for name in relation_names)
    return f"({union})" + (f" AS {alias}" if alias else "")
