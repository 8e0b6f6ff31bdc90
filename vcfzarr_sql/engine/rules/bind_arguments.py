"""Rule: a table-function call's arguments become a :class:`ScanSpec` (checked, typed values).

Arguments must be constants: literals, lists of literals, or parameters already inlined by
:func:`~vcfzarr_sql.engine.rules.inline_parameters`. Named arguments are written
``name := value`` (or ``name = value``), as in DuckDB's own table functions.
"""

from __future__ import annotations

from decimal import Decimal

from sqlglot import exp

from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS, ScanSpec
from vcfzarr_sql.errors import QueryError


def _constant(node: exp.Expression) -> object:
    """The Python value of a constant expression; QueryError when it is not one."""
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else node.to_py()
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, (exp.Array, exp.Tuple)):
        return [_constant(e) for e in node.expressions]
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        value = node.this.to_py()
        if isinstance(value, (int, float, Decimal)):
            return -value
    raise QueryError(f"{node.sql('duckdb')} is not a constant")


def _named(node: exp.Expression) -> tuple[str, exp.Expression] | None:
    if isinstance(node, (exp.PropertyEQ, exp.EQ, exp.Kwarg)) and isinstance(
        node.this, (exp.Identifier, exp.Column, exp.Var)
    ):
        return node.this.name.lower(), node.expression
    return None


def _string(function: str, argument: str, value: object) -> str:
    if not isinstance(value, str):
        raise QueryError(f"{function}(): {argument} must be a string, got {value!r}")
    return value


def _strings(function: str, argument: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise QueryError(f"{function}(): {argument} must be a list of strings, got {value!r}")
    return tuple(value)


def _region(function: str, value: object) -> str:
    if isinstance(value, list):
        return ",".join(_strings(function, "region", value))
    return _string(function, "region", value)


def bind_arguments(call: exp.Anonymous) -> ScanSpec:
    """The :class:`ScanSpec` a constant-argument call stands for.

    >>> import sqlglot
    >>> bind_arguments(sqlglot.parse_one(
    ...     "vcf_zarr('x.zarr', region := '1:10-20', samples := ['NA1'])", read="duckdb"))
    ScanSpec(function='vcf_zarr', path='x.zarr', region='1:10-20', samples=('NA1',))
    >>> bind_arguments(sqlglot.parse_one("vcf_zarr_samples('x.zarr', region := '1')", read="duckdb"))
    Traceback (most recent call last):
    ...
    vcfzarr_sql.errors.QueryError: vcf_zarr_samples(): unknown parameter 'region' (it takes no named parameters)
    """
    function = call.name.lower()
    allowed = TABLE_FUNCTIONS[function].parameters
    positional: list[exp.Expression] = []
    named: dict[str, object] = {}
    for argument in call.expressions:
        pair = _named(argument)
        if pair is None:
            if named:
                raise QueryError(f"{function}(): the store path must come before named parameters")
            positional.append(argument)
            continue
        name, value = pair
        if name not in allowed:
            takes = f"it takes {', '.join(allowed)}" if allowed else "it takes no named parameters"
            raise QueryError(f"{function}(): unknown parameter {name!r} ({takes})")
        if name in named:
            raise QueryError(f"{function}(): parameter {name!r} given twice")
        try:
            named[name] = _constant(value)
        except QueryError as err:
            raise QueryError(f"{function}(): {name} must be a constant: {err}") from None
    if len(positional) != 1:
        raise QueryError(
            f"{function}(): expected one store path argument, got {len(positional)} positional arguments"
        )
    try:
        path = _constant(positional[0])
    except QueryError as err:
        raise QueryError(f"{function}(): the store path must be a constant: {err}") from None
    region = named.get("region")
    samples = named.get("samples")
    return ScanSpec(
        function=function,
        path=_string(function, "the store path", path),
        region=None if region is None else _region(function, region),
        samples=None if samples is None else _strings(function, "samples", samples),
    )
