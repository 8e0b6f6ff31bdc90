"""The SQL table functions vcfzarr-sql adds to DuckDB, and a bound call of one of them.

A :class:`ScanSpec` is what a call such as ``vcf_zarr('x.zarr', region := '1:100-200')``
means once its arguments are known: which function, which store, which region and samples.
Equal specs name the same registered relation (:attr:`ScanSpec.relation_name`), so a view
created over a call keeps working for the connection's lifetime.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TableFunction:
    """One table function: its SQL name, the table it returns and its named parameters."""

    name: str
    table: str  # "variants", "calls", "sample_stats", "stats", "samples", "contigs" or "fields"
    parameters: tuple[str, ...]
    summary: str


_SCAN_PARAMETERS = ("region", "samples", "regions_file", "samples_file", "exclude_samples")

#: Every table function, by lower-case SQL name.
TABLE_FUNCTIONS: dict[str, TableFunction] = {
    f.name: f
    for f in (
        TableFunction("vcf_zarr", "variants", _SCAN_PARAMETERS, "one row per variant record"),
        TableFunction(
            "vcf_zarr_calls", "calls", _SCAN_PARAMETERS, "one row per (variant record, sample)"
        ),
        TableFunction(
            "vcf_zarr_sample_stats", "sample_stats", _SCAN_PARAMETERS,
            "one row per sample: genotype counts as bcftools stats -s counts them",
        ),
        TableFunction(
            "vcf_zarr_stats", "stats", ("section", *_SCAN_PARAMETERS),
            "one row per line of a bcftools stats section (section := 'SN', 'PSC', ...)",
        ),
        TableFunction("vcf_zarr_samples", "samples", (), "the samples of a store"),
        TableFunction("vcf_zarr_contigs", "contigs", (), "the contigs of a store"),
        TableFunction("vcf_zarr_fields", "fields", (), "the INFO and FORMAT fields of a store"),
    )
}


def canonical_path(path: str) -> str:
    """A store location that names the same store from any working directory.

    >>> canonical_path("/data/../data/x.zarr")
    '/data/x.zarr'
    >>> canonical_path("s3://bucket/x.zarr")
    's3://bucket/x.zarr'
    """
    from vcfzarr_sql.store.kvstore import is_url  # (imports store/: once a query names a store)

    if is_url(path):
        return path
    return os.path.abspath(os.path.expanduser(path))


@dataclass(frozen=True)
class ScanSpec:
    """A table-function call with its arguments bound to values."""

    function: str
    path: str
    region: str | None = None
    samples: tuple[str, ...] | None = None
    #: ``samples`` names the samples left out (bcftools ``-s ^A,B``)
    exclude_samples: bool = False
    #: ``vcf_zarr_stats``: the bcftools stats section (shown by :attr:`call_sql`, not by repr,
    #: which the other functions' calls keep as it was)
    section: str | None = field(default=None, repr=False)

    @property
    def table(self) -> str:
        return TABLE_FUNCTIONS[self.function].table

    @property
    def relation_name(self) -> str:
        """The stable name under which this call's relation is registered in DuckDB.

        >>> ScanSpec("vcf_zarr", "/data/x.zarr").relation_name
        'vcf_zarr_5335f9a62062'
        """
        key = repr((self.function, canonical_path(self.path), self.region, self.samples)
                   + (("exclude",) if self.exclude_samples else ())
                   + (() if self.section is None else (("section", self.section),)))
        return f"{self.function}_{hashlib.sha256(key.encode()).hexdigest()[:12]}"

    @property
    def call_sql(self) -> str:
        """The call as SQL text (how messages name the relation).

        >>> ScanSpec("vcf_zarr", "x.zarr", region="1:5-9", samples=("a", "b")).call_sql
        "vcf_zarr('x.zarr', region := '1:5-9', samples := ['a', 'b'])"
        """

        def literal(text: str) -> str:
            return "'" + text.replace("'", "''") + "'"

        arguments = [literal(self.path)]
        if self.region is not None:
            arguments.append(f"region := {literal(self.region)}")
        if self.samples is not None:
            arguments.append(f"samples := [{', '.join(map(literal, self.samples))}]")
        if self.exclude_samples:
            arguments.append("exclude_samples := true")
        if self.section is not None:
            arguments.append(f"section := {literal(self.section)}")
        return f"{self.function}({', '.join(arguments)})"
