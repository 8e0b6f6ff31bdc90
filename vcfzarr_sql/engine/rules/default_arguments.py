"""Rule: a region and samples given once (``query -r/-s``) apply to every scan call.

A call that names its own ``region`` or ``samples`` keeps it; metadata functions
(``vcf_zarr_samples``...) take neither.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS, ScanSpec


@dataclass(frozen=True)
class ScanDefaults:
    """The ``region`` and ``samples`` of every scan call that gives none of its own."""

    region: str | None = None
    samples: tuple[str, ...] | None = None
    exclude_samples: bool = False


def default_arguments(spec: ScanSpec, defaults: ScanDefaults | None) -> ScanSpec:
    """``spec`` with the defaults filled in where it has none.

    >>> d = ScanDefaults(region="20", samples=("NA1",))
    >>> default_arguments(ScanSpec("vcf_zarr", "x.zarr", region="19"), d)
    ScanSpec(function='vcf_zarr', path='x.zarr', region='19', samples=('NA1',), exclude_samples=False)
    >>> default_arguments(ScanSpec("vcf_zarr_samples", "x.zarr"), d)
    ScanSpec(function='vcf_zarr_samples', path='x.zarr', region=None, samples=None, exclude_samples=False)
    """
    if defaults is None or "region" not in TABLE_FUNCTIONS[spec.function].parameters:
        return spec
    return dataclasses.replace(
        spec,
        region=spec.region if spec.region is not None else defaults.region,
        samples=spec.samples if spec.samples is not None else defaults.samples,
        exclude_samples=spec.exclude_samples if spec.samples is not None else defaults.exclude_samples,
    )
