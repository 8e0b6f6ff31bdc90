"""A SQL result -> VCF lines (``query --format vcf``).

The result needs ``contig``, ``pos`` and ``ref``; ``id``, ``alt``, ``qual``, ``filters``,
``info_<TAG>`` and ``fmt_<TAG>`` columns (as ``vcf_zarr`` names them, ``fmt_`` lists over
the samples of the header) are written when present, NULL as ``.``. The header is the
store's, with the INFO and FORMAT lines of the fields the result has.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view.header import header_text
from vcfzarr_sql.view.values import MISSING, float_text

REQUIRED = ("contig", "pos", "ref")
#: fmt_ columns derived from GT that are not FORMAT fields of their own
_GT_DERIVED = ("fmt_GT_phased",)


def _text(value: object) -> str:
    if value is None:
        return MISSING
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, list):
        return ",".join(_text(v) for v in value) if value else MISSING
    return str(value)


def _genotype(alleles: Sequence[int | None] | None, phased: bool | None) -> str:
    if alleles is None:
        return MISSING
    parts = [MISSING if a is None else str(a) for a in alleles]
    return ("|" if phased else "/").join(parts) if parts else MISSING


def _info(row: dict, info: list[str]) -> str:
    parts = []
    for column in info:
        value, name = row[column], column.removeprefix("info_")
        if value is None or value is False or value == []:
            continue
        parts.append(name if value is True else f"{name}={_text(value)}")
    return ";".join(parts) or MISSING


def _samples(row: dict, fmt: list[str], num_samples: int) -> str:
    keys, columns = [], []
    for column in fmt:
        values = row[column] or [None] * num_samples
        if len(values) != num_samples:
            raise QueryError(f"{column} has {len(values)} values, the header {num_samples} samples")
        name = column.removeprefix("fmt_")
        if name == "GT":
            phased = row.get("fmt_GT_phased") or [False] * num_samples
            values = [_genotype(g, p) for g, p in zip(values, phased)]
        elif any(v is not None for v in values):
            values = [_text(v) for v in values]
        else:
            continue
        keys.append(name)
        columns.append(values)
    if not keys:
        return "\t".join([MISSING] * (num_samples + 1))
    return ":".join(keys) + "\t" + "\t".join(map(":".join, zip(*columns)))


def table_vcf_lines(batches: Iterable[pa.RecordBatch], schema: pa.Schema, store: VczStore,
                    samples: Sequence[str] | None = None) -> Iterator[str]:
    """The VCF text of a result (header first), over the store's header and ``samples``
    (default: all samples of the store), in the order the ``fmt_`` lists hold them."""
    missing = [c for c in REQUIRED if c not in schema.names]
    if missing:
        raise QueryError(f"--format vcf needs the columns contig, pos and ref (missing: {', '.join(missing)})")
    names = list(store.samples if samples is None else samples)
    info = [c for c in schema.names if c.startswith("info_")]
    fmt = [c for c in schema.names if c.startswith("fmt_") and c not in _GT_DERIVED
           and c.removeprefix("fmt_") in store.format_fields]
    yield header_text(store, names if fmt else [])
    for batch in batches:
        for row in batch.to_pylist():
            fixed = [
                _text(row["contig"]), _text(row["pos"]), _text(row.get("id")), _text(row["ref"]),
                _text(row.get("alt")), _text(row.get("qual")),
                ";".join(row["filters"]) if row.get("filters") else MISSING, _info(row, info),
            ]
            if fmt:
                fixed.append(_samples(row, fmt, len(names)))
            yield "\t".join(fixed) + "\n"
