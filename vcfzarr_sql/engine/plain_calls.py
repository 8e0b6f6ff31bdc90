"""The rewrite of a text whose table-function calls each take one plain string (``FROM
vcf_zarr('x.zarr')``), found without sqlglot: importing sqlglot costs a CLI process about
0.09 CPU-s, a third of what it spends beyond its floor.

The text is read only where reading it is sure: no comment, quoted identifier, ``$``,
backslash, ``?`` or prefixed string (``E'...'``) outside its string literals, and each call's
surroundings one of the forms below. Anything else is left to the tokenizer
(:func:`vcfzarr_sql.engine.rewrite.rewrite`), which gives the same answer for what this reads.
"""

from __future__ import annotations

import re

from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS, ScanSpec
from vcfzarr_sql.engine.scan_defaults import ScanDefaults, default_arguments

_NAMES = "|".join(sorted(TABLE_FUNCTIONS, key=len, reverse=True))
#: a mention of a table function (a call or not), not qualified and not part of a longer name
_MENTION = re.compile(rf"(?<![\w.$])(?:{_NAMES})(?![\w$])", re.IGNORECASE)
_OPENS = re.compile(r"\s*\(")
#: a call whose one argument is one string without quotes or glob characters
_CALL = re.compile(rf"({_NAMES})\s*\(\s*'([^'*?\[]*)'\s*\)", re.IGNORECASE)
#: a call whose first argument, a string, is followed by more (or a literal that reads so: the
#: tokenizer gives the same answer)
_MORE_ARGUMENTS = re.compile(rf"(?<![\w.$])(?:{_NAMES})\s*\(\s*'[^']*'\s*,", re.IGNORECASE)
#: what makes the text outside string literals unsure to read without the tokenizer
_UNSURE = re.compile(r"--|/\*|[\"$\\?`]")
#: the call stands where a table does (the tokenizer's FROM, JOIN or comma before it)
_TABLE_POSITION = re.compile(r"(?:(?<![\w$])(?:FROM|JOIN)|,)\s*$", re.IGNORECASE)
#: after a call in table position: an alias of its own
_ALIASED = re.compile(r"\s*AS(?![\w$])", re.IGNORECASE)
#: after a call in table position: no alias (the end, or a keyword no alias can be)
_NOT_ALIASED = re.compile(
    r"\s*(?:$|[;),]|(?:WHERE|GROUP|ORDER|LIMIT|OFFSET|HAVING|QUALIFY|WINDOW|UNION|EXCEPT|INTERSECT|"
    r"JOIN|INNER|LEFT|RIGHT|FULL|CROSS|NATURAL|POSITIONAL|ASOF|SEMI|ANTI|ON|USING)(?![\w$]))",
    re.IGNORECASE)


def _masked(sql: str) -> str | None:
    """``sql`` with the contents of its string literals blanked (offsets kept), or None when
    the text outside them is unsure to read without the tokenizer."""
    parts = sql.split("'")
    if len(parts) % 2 == 0:
        return None  # a string not closed
    outside = parts[0::2]
    if any(_UNSURE.search(part) for part in outside) or \
            any(part[-1:].isalnum() or part[-1:] == "_" for part in outside[:-1]):
        return None
    return "'".join(part if k % 2 == 0 else " " * len(part) for k, part in enumerate(parts))


def plain_rewrite(sql: str, defaults: ScanDefaults | None = None) -> tuple[str, dict[str, ScanSpec]] | None:
    """The rewritten text and its relations (as :func:`~vcfzarr_sql.engine.rewrite.rewrite`
    gives them) when every table-function call of ``sql`` takes one plain string and is read
    surely here; None to leave ``sql`` to the tokenizer.

    >>> plain_rewrite("SELECT count(*) FROM vcf_zarr('/d/x.zarr') WHERE contig = '1'")
    ("SELECT count(*) FROM vcf_zarr_eef57a364634 AS vcf_zarr WHERE contig = '1'", {'vcf_zarr_eef57a364634': ScanSpec(function='vcf_zarr', path='/d/x.zarr', region=None, samples=None, exclude_samples=False)})
    >>> plain_rewrite("SELECT * FROM vcf_zarr('x', region := '1')") is None  # named parameters
    True
    >>> plain_rewrite("SELECT 'vcf_zarr(''x'')' FROM vcf_zarr('/d/x.zarr') AS v")[0]
    "SELECT 'vcf_zarr(''x'')' FROM vcf_zarr_eef57a364634 AS v"
    """
    if _MORE_ARGUMENTS.search(sql):  # (found before masking what may be a long list of literals)
        return None
    masked = _masked(sql)
    if masked is None:
        return None
    pieces: list[str] = []
    relations: dict[str, ScanSpec] = {}
    last = 0
    for mention in _MENTION.finditer(masked):
        if not _OPENS.match(masked, mention.end()):
            continue  # a name, not a call (``vcf_zarr.pos``)
        call = _CALL.match(sql, mention.start())
        if call is None or call.start() < last or masked[call.start(2):call.end(2)].strip() or \
                masked[:call.start()].rstrip().endswith("."):
            return None
        function = call.group(1).lower()
        spec = default_arguments(ScanSpec(function, call.group(2)), defaults)
        reference = spec.relation_name
        if _TABLE_POSITION.search(masked, 0, call.start()):
            if _NOT_ALIASED.match(masked, call.end()):
                reference += f" AS {function}"
            elif not _ALIASED.match(masked, call.end()):
                return None  # an alias the tokenizer would tell from a keyword
        pieces += [sql[last:call.start()], reference]
        relations[spec.relation_name] = spec
        last = call.end()
    if not relations:
        return None
    pieces.append(sql[last:])
    return "".join(pieces), relations
