"""Rule: a table-function call's arguments become a :class:`ScanSpec` (checked, typed values).

Arguments must be constants: literals, lists of literals, or parameters already inlined by
:func:`~vcfzarr_sql.engine.rules.inline_parameters`; ``region`` and ``samples`` may also be a
subquery, and ``regions_file``/``samples_file`` name files (both read through
:class:`~vcfzarr_sql.engine.argument_sources.ArgumentSources`). Named arguments are
written ``name := value`` (or ``name = value``), as in DuckDB's own table functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from sqlglot import exp

from vcfzarr_sql.engine.argument_sources import ArgumentSources, NeedsSources
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


def _subquery(function: str, name: str, node: exp.Subquery, sources: ArgumentSources | None) -> object:
    """The value of ``name := (SELECT ...)``: a list (one row holding a list, or one value a
    row), or for ``region`` rows of (contig, start, end), 1-based and inclusive."""
    if sources is None or sources.evaluate is None:
        raise NeedsSources(f"{function}(): {name} := (SELECT ...) needs a session to evaluate it")
    rows = sources.evaluate(node.this.sql("duckdb"))
    if name == "region" and rows and len(rows[0]) == 3:
        from vcfzarr_sql.query.region import Region, format_regions

        try:
            return format_regions(tuple(Region(str(c), int(b), int(e)) for c, b, e in rows))
        except (TypeError, ValueError):
            raise QueryError(f"{function}(): region := (SELECT contig, start, end ...) needs "
                             "a contig and two positions in every row") from None
    if rows and len(rows[0]) != 1:
        raise QueryError(f"{function}(): {name} := (SELECT ...) must return one column, got {len(rows[0])}")
    if len(rows) == 1 and isinstance(rows[0][0], list):
        return rows[0][0]
    return [row[0] for row in rows]


def _files(function: str, named: dict[str, object], sources: ArgumentSources | None) -> None:
    """Replace ``regions_file`` and ``samples_file`` in ``named`` by the region and samples
    their files give (bcftools ``-R`` and ``-S``; ``samples_file := '^x.txt'`` excludes)."""
    from vcfzarr_sql.query.region import format_regions, parse_regions_file
    from vcfzarr_sql.query.request import parse_samples_file

    for file_name, name in (("regions_file", "region"), ("samples_file", "samples")):
        if file_name not in named:
            continue
        path = _string(function, file_name, named.pop(file_name))
        if name in named:
            raise QueryError(f"{function}(): give {name} or {file_name}, not both")
        if sources is None or sources.read_lines is None:
            raise NeedsSources(f"{function}(): {file_name} is not available here (give {name} := ...)")
        if file_name == "samples_file":
            if path.startswith("^"):
                if "exclude_samples" in named:
                    raise QueryError(f"{function}(): give exclude_samples or samples_file := '^...', not both")
                path, named["exclude_samples"] = path[1:], True
            named[name] = list(parse_samples_file(sources.read_lines(path)))
        else:
            named[name] = format_regions(parse_regions_file(sources.read_lines(path), path))


def bind_arguments(call: exp.Anonymous, sources: ArgumentSources | None = None,
                   lists: Mapping[str, Sequence[str]] | None = None) -> ScanSpec:
    """The :class:`ScanSpec` a constant-argument call stands for (``lists``: the strings of
    the lists of string literals the text names, :func:`~vcfzarr_sql.engine.sql_text.long_lists`).

    >>> import sqlglot
    >>> bind_arguments(sqlglot.parse_one(
    ...     "vcf_zarr('x.zarr', region := '1:10-20', samples := ['NA1'])", read="duckdb"))
    ScanSpec(function='vcf_zarr', path='x.zarr', region='1:10-20', samples=('NA1',), exclude_samples=False)
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
            values = [p for p in allowed if p in ("region", "samples")]
            takes = f"it takes {', '.join(values)}" if values else "it takes no named parameters"
            others = [p for p in allowed if p not in values]
            also = f" (and {', '.join(others)})" if others else ""
            raise QueryError(f"{function}(): unknown parameter {name!r} ({takes}){also}")
        if name in named:
            raise QueryError(f"{function}(): parameter {name!r} given twice")
        if isinstance(value, exp.Subquery) and name in ("region", "samples"):
            named[name] = _subquery(function, name, value, sources)
            continue
        if lists and isinstance(value, exp.Column) and value.name in lists:
            named[name] = list(lists[value.name])
            continue
        try:
            named[name] = _constant(value)
        except QueryError as err:
            raise QueryError(f"{function}(): {name} must be a constant: {err}") from None
    _files(function, named, sources)
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
    exclude = named.get("exclude_samples", False)
    if not isinstance(exclude, bool):
        raise QueryError(f"{function}(): exclude_samples must be true or false, got {exclude!r}")
    if exclude and samples is None:
        raise QueryError(f"{function}(): exclude_samples needs samples (the ones to leave out)")
    section = named.get("section")
    return ScanSpec(
        function=function,
        path=_string(function, "the store path", path),
        region=None if region is None else _region(function, region),
        samples=None if samples is None else _strings(function, "samples", samples),
        exclude_samples=exclude,
        section=None if section is None else _string(function, "section", section),
    )
