"""Rewrite rules: pure functions over the sqlglot tree of one table-function call.

Applied in this order by :func:`vcfzarr_sql.engine.rewrite.rewrite`:

1. :func:`inline_parameters`: prepared-statement parameters inside the call become literals.
2. :func:`bind_arguments`: the call's arguments become a :class:`~vcfzarr_sql.engine.functions.ScanSpec`.
3. :func:`default_arguments`: a region and samples given once apply to calls without their own.
4. :func:`reference_relation`: the call becomes a reference to the registered relation.
"""

from vcfzarr_sql.engine.rules.bind_arguments import bind_arguments
from vcfzarr_sql.engine.rules.inline_parameters import inline_parameters, placeholder_keys
from vcfzarr_sql.engine.rules.reference_relation import reference_relation
from vcfzarr_sql.engine.scan_defaults import ScanDefaults, default_arguments

__all__ = [
    "ScanDefaults",
    "bind_arguments",
    "default_arguments", "inline_parameters", "placeholder_keys", "reference_relation"]
