"""Masks of the elements that hold no value, for fields whose real values equal a sentinel.

VCF Zarr marks a missing Integer with -1 and padding with -2, a missing string with ``"."``
and padding with ``""``; so a real ``SVLEN=-1``, ``CIEND=-2,2`` or ``L=a,,b`` would read as
missing or padding. Where a block of records has such values, the parser adds the field's
``mask_<array>`` column (True: missing or padding); the store gets a ``mask_<array>`` array
for the fields that had one in any block (other readers still see the sentinels), and blocks
without the column get the mask their sentinels imply.

>>> rows = [[-1, None], None, [3]]
>>> no_value_mask(rows, (3, 2), "int").tolist()
[[False, True], [True, True], [False, True]]
>>> no_value_mask([["a", "b"], [""]], (2, 2), "str") is None   # a lone "" is VCF's no value
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vcfzarr_sql.format import spec

#: Column kind -> the sentinels a real value may equal.
_SENTINELS = {"int": (spec.INT_MISSING, spec.INT_FILL), "str": (spec.STR_FILL,)}


def mask_name(array: str) -> str:
    """The mask array (and block column) of field array ``array``."""
    return spec.MASK_PREFIX + array


def _holds_values(row: Sequence, kind: str) -> list[bool]:
    """Which elements of one record's (or call's) values are values: not None (missing), not
    ``"."``, and not the lone ``""`` htslib gives for an empty string field."""
    if kind == "str":
        return [x is not None and x != spec.STR_MISSING and (x != "" or len(row) > 1) for x in row]
    return [x is not None for x in row]


def _may_hold_sentinels(rows: Sequence[Sequence | None], kind: str) -> bool:
    """A quick test (C-speed ``in`` per row) that is True whenever a value equals a sentinel."""
    if kind == "str":
        return any(row is not None and len(row) > 1 and "" in row for row in rows)
    sentinels = _SENTINELS.get(kind, ())
    return any(row is not None and any(s in row for s in sentinels) for row in rows)


def no_value_mask(rows: Sequence[Sequence | None], shape: tuple[int, ...], kind: str) -> np.ndarray | None:
    """Where the values of ``rows`` (stacked to ``shape``, the last axis the values of a row)
    hold no value, when some value equals a sentinel of ``kind``; else None."""
    if kind not in _SENTINELS or not _may_hold_sentinels(rows, kind):
        return None
    mask = np.ones((len(rows), shape[-1]), dtype=bool)
    for i, row in enumerate(rows):
        if row is not None:
            mask[i, : len(row)] = np.logical_not(_holds_values(row, kind))
    return mask.reshape(shape)


def implied_mask(values: np.ndarray) -> np.ndarray:
    """The mask of a block column without real sentinel values: where its sentinels are."""
    if values.dtype.kind == "i":
        return (values == spec.INT_MISSING) | (values == spec.INT_FILL)
    return (values == spec.STR_MISSING) | (values == spec.STR_FILL)
