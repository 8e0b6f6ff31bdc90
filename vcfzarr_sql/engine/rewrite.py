"""SQL text with table-function calls -> SQL text DuckDB runs, plus the relations it needs.

Only the spans of the calls (and, when a call consumed one, the ``$n`` parameter references
that must be renumbered) are replaced; every other character of the query reaches DuckDB as
the user wrote it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from vcfzarr_sql.engine.argument_sources import NeedsSources
from vcfzarr_sql.engine.functions import ScanSpec
from vcfzarr_sql.engine.plain_calls import plain_rewrite
from vcfzarr_sql.errors import QueryError

if TYPE_CHECKING:  # sqlglot is imported only for SQL that calls a table function
    from vcfzarr_sql.engine.argument_sources import ArgumentSources
    from vcfzarr_sql.engine.call_sites import CallSite
    from vcfzarr_sql.engine.rules.expand_stores import Expander
    from vcfzarr_sql.engine.rules.inline_parameters import Parameters
    from vcfzarr_sql.engine.scan_defaults import ScanDefaults


@dataclass(frozen=True)
class RewrittenQuery:
    """What to run in DuckDB: the SQL, the relations to register first, the parameters."""

    sql: str
    relations: dict[str, ScanSpec]
    parameters: Parameters
    #: relation names of each call over several stores (they must have the same samples)
    unions: tuple[tuple[str, ...], ...] = ()
    #: whether a glob was expanded (then the rewrite is not remembered: files may come and go)
    globbed: bool = False


def _splice(sql: str, replacements: list[tuple[int, int, str]]) -> str:
    out, last = [], 0
    for start, stop, text in sorted(replacements):
        out += [sql[last:start], text]
        last = stop
    out.append(sql[last:])
    return "".join(out)


def _remaining_parameters(
    tokens: list, sites: list[CallSite], parameters: Parameters, consumed: set
) -> tuple[list[tuple[int, int, str]], Parameters]:
    """Parameters DuckDB still needs once the calls' own are gone, and ``$n`` renumberings."""
    from vcfzarr_sql.engine.call_sites import find_parameter_refs, positional_placeholders_outside

    refs = find_parameter_refs(tokens, sites)
    used_outside = {ref.key for ref in refs}
    if isinstance(parameters, Mapping):
        return [], {k: v for k, v in parameters.items() if k not in consumed - used_outside}
    assert parameters is not None  # consumed is empty without parameters
    values: Sequence[Any] = parameters
    outside = positional_placeholders_outside(tokens, sites)
    if any(isinstance(key, int) for key in consumed):
        extra = range(len(outside) + len(consumed), len(values))  # left for DuckDB to reject
        return [], [values[k] for k in [*outside, *extra]]
    dropped = {int(key) for key in consumed if key.isdigit()} - {
        int(key) for key in used_outside if key.isdigit()
    }
    kept = [n for n in range(1, len(values) + 1) if n not in dropped]
    new_number = {old: new for new, old in enumerate(kept, start=1)}
    renumbered = [
        (ref.start, ref.stop, f"${new_number[int(ref.key)]}")
        for ref in refs
        if ref.key.isdigit() and int(ref.key) in new_number
    ]
    return renumbered, [values[n - 1] for n in kept]


def rewrite(sql: str, parameters: Parameters = None, defaults: ScanDefaults | None = None,
            expand: Expander | None = None, sources: ArgumentSources | None = None) -> RewrittenQuery:
    """Replace every table-function call of ``sql`` by its registered relation's name
    (``expand``: the paths a glob of stores names; by default, the local file system's;
    ``sources``: how argument files are read and subqueries evaluated, none by default).
    A rewrite that read files or ran subqueries is not remembered.

    >>> q = rewrite("SELECT count(*) FROM vcf_zarr('/d/x.zarr') WHERE contig = '1'")
    >>> q.sql
    "SELECT count(*) FROM vcf_zarr_eef57a364634 AS vcf_zarr WHERE contig = '1'"
    >>> q.relations
    {'vcf_zarr_eef57a364634': ScanSpec(function='vcf_zarr', path='/d/x.zarr', region=None, samples=None, exclude_samples=False)}
    >>> q = rewrite("SELECT * FROM vcf_zarr(?) v WHERE pos > ?", ["/d/x.zarr", 5])
    >>> q.sql, q.parameters
    ('SELECT * FROM vcf_zarr_eef57a364634 v WHERE pos > ?', [5])
    """
    if "vcf_zarr" not in sql.lower():
        return RewrittenQuery(sql, {}, parameters)
    plain = plain_rewrite(sql, defaults) if parameters is None else None
    if plain is not None:  # read without sqlglot
        return RewrittenQuery(plain[0], plain[1], None)
    if parameters is None and len(sql) <= REMEMBERED_TEXT:
        # Relation names depend on the working and home directories (relative store paths).
        try:
            remembered = _rewrite_text(sql, os.getcwd(), os.path.expanduser("~"), defaults, expand)
        except NeedsSources:
            if sources is None:
                raise
        else:
            if not remembered.globbed:
                return RewrittenQuery(remembered.sql, dict(remembered.relations), None, remembered.unions)
    return _rewrite(sql, parameters, defaults, expand, sources)


#: The longest query text whose rewrite is remembered (256 of them: at most 16 MB of texts).
REMEMBERED_TEXT = 64 << 10


@functools.lru_cache(maxsize=256)
def _rewrite_text(sql: str, cwd: str, home: str, defaults: ScanDefaults | None,
                  expand: Expander | None) -> RewrittenQuery:
    """The rewrite of a query without parameters, remembered: a warm session repeats queries.
    (Callers copy ``relations``: the remembered value must not change.)"""
    return _rewrite(sql, None, defaults, expand)


def _rewrite(sql: str, parameters: Parameters, defaults: ScanDefaults | None = None,
             expand: Expander | None = None, sources: ArgumentSources | None = None) -> RewrittenQuery:
    from vcfzarr_sql.engine.call_sites import tokenize
    from vcfzarr_sql.engine.sql_text import long_lists

    named = long_lists(sql)
    if named.lists:
        # Long lists of strings (samples := [...]) read by regular expressions, not tokenized
        # and parsed; the text read whole when one stood in a string or comment, or on an error.
        short = tokenize(named.text)
        if named.standing({(t.start, t.text) for t in short if t.token_type.name == "VAR"}):
            try:
                done = _rewrite_tokens(named.text, short, parameters, defaults, expand, sources, named.lists)
            except NeedsSources:
                raise
            except QueryError:
                pass
            else:
                return replace(done, sql=named.restored(done.sql))
    return _rewrite_tokens(sql, tokenize(sql), parameters, defaults, expand, sources)


def _rewrite_tokens(sql: str, tokens: list, parameters: Parameters, defaults: ScanDefaults | None,
                    expand: Expander | None, sources: ArgumentSources | None,
                    lists: Mapping[str, Sequence[str]] | None = None) -> RewrittenQuery:
    from vcfzarr_sql.engine.call_sites import find_call_sites
    from vcfzarr_sql.engine.rules import (
        bind_arguments,
        default_arguments,
        inline_parameters,
        placeholder_keys,
        reference_relation,
    )
    from vcfzarr_sql.engine.rules.expand_stores import expand_stores, is_glob, local_paths, union_reference

    sites = find_call_sites(sql, tokens)
    replacements = []
    relations: dict[str, ScanSpec] = {}
    consumed: set[int | str] = set()
    unions, globbed = [], False
    for site in sites:
        consumed.update(placeholder_keys(site.call, site.first_placeholder))
        call = inline_parameters(site.call, parameters, site.first_placeholder)
        calls = expand_stores(call, expand or local_paths)
        globbed |= is_glob(call)
        specs = [default_arguments(bind_arguments(c, sources, lists), defaults) for c in calls]
        relations.update((spec.relation_name, spec) for spec in specs)
        if len(specs) == 1:
            reference = reference_relation(site.call, specs[0].relation_name, site.needs_alias).sql("duckdb")
        else:
            names = [spec.relation_name for spec in specs]
            unions.append(tuple(names))
            reference = union_reference(names, site.call.name.lower() if site.needs_alias else None)
        replacements.append((site.start, site.stop, reference))
    if consumed:
        renumbered, parameters = _remaining_parameters(tokens, sites, parameters, consumed)
        replacements += renumbered
    return RewrittenQuery(_splice(sql, replacements), relations, parameters, tuple(unions), globbed)
