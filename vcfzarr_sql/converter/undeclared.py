"""INFO keys the header does not declare: the ones bcftools shows as flags become Flag fields.

htslib declares an undeclared INFO or FORMAT key on the fly as ``Number=1,Type=String``
(``Description="Dummy"``). An INFO key that no record gives a value (``;K;``) is then present
without a value wherever it is used: ``bcftools view`` writes the bare key and ``bcftools query``
prints ``1`` where it is, ``.`` where it is not. The store keeps such a key as a Flag (so SQL
counts it and ``view`` writes it back), made of the parser's key-use column
(:func:`~vcfzarr_sql.converter.columns.key_use`). A key used both with and without a value stays
htslib's String: where it has no value it reads as missing, which the user is told.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from vcfzarr_sql.converter import columns as col
from vcfzarr_sql.converter.header import FieldDef
from vcfzarr_sql.converter.stats import ColumnStats


@dataclass(frozen=True)
class Undeclared:
    """The fields with undeclared INFO keys retyped, and what the user should know."""

    fields: list[FieldDef]
    flags: list[FieldDef]  # the undeclared keys stored as Flags
    columns: dict[str, str]  # a Flag's array -> the block column it is made of
    notes: list[str]  # one sentence each


def retype_undeclared(fields: Sequence[FieldDef], declared: Collection[tuple[str, str]],
                      stats: dict[str, ColumnStats]) -> Undeclared:
    """``fields`` (the header's, then htslib's additions) with every undeclared INFO key that no
    record gives a value made a Flag.

    >>> k = FieldDef("INFO", "K", "1", "String", "Dummy")
    >>> use = {col.key_use_column("variant_K"): ColumnStats(low=col.KEY_BARE, high=col.KEY_ABSENT)}
    >>> found = retype_undeclared([k], set(), use)
    >>> found.fields[0].number, found.fields[0].vcf_type, found.columns
    ('0', 'Flag', {'variant_K': 'use:variant_K'})
    """
    out, flags, columns, notes = [], [], {}, []
    for field in fields:
        use = stats.get(col.key_use_column(field.array))
        if field.category != "INFO" or field.key in declared or use is None:
            out.append(field)
        elif use.high < col.KEY_VALUED:
            flag = replace(field, number="0", vcf_type="Flag")
            out.append(flag)
            flags.append(flag)
            columns[field.array] = col.key_use_column(field.array)
        else:
            out.append(field)
            if use.low == col.KEY_BARE:
                notes.append(f"INFO/{field.name} is not declared in the header and is used both "
                             "with and without a value: stored as htslib declares it (Number=1, "
                             "String), where it has no value it reads as missing")
    return Undeclared(out, flags, columns, notes)
