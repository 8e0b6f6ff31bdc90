"""Rule: a region and samples given once (``query -r/-s``) apply to every scan call, and a
relative store path is taken from a base directory when one is given (a server's first data
directory: a view over the call then names the same store whatever the server's working
directory, see :mod:`~vcfzarr_sql.engine.saved_calls`).

A call that names its own ``region`` or ``samples`` keeps it; metadata functions
(``vcf_zarr_samples``...) take neither.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS, ScanSpec


@dataclass(frozen=True)
class ScanDefaults:
    """The ``region`` and ``samples`` of every scan call that gives none of its own, and the
    directory relative store paths are taken from (None: the working directory, when the
    store is opened)."""

    region: str | None = None
    samples: tuple[str, ...] | None = None
    exclude_samples: bool = False
    base: str | None = None


def default_arguments(spec: ScanSpec, defaults: ScanDefaults | None) -> ScanSpec:
    """``spec`` with the defaults filled in where it has none.

    >>> d = ScanDefaults(region="20", samples=("NA1",))
    >>> default_arguments(ScanSpec("vcf_zarr", "x.zarr", region="19"), d)
    ScanSpec(function='vcf_zarr', path='x.zarr', region='19', samples=('NA1',), exclude_samples=False)
    >>> default_arguments(ScanSpec("vcf_zarr_samples", "x.zarr"), d)
    ScanSpec(function='vcf_zarr_samples', path='x.zarr', region=None, samples=None, exclude_samples=False)
    >>> default_arguments(ScanSpec("vcf_zarr_samples", "x.zarr"), ScanDefaults(base="/data")).path
    '/data/x.zarr'
    """
    if defaults is not None and defaults.base is not None:
        from vcfzarr_sql.store.kvstore import is_url  # (imports store/: once a query names a store)

        if not is_url(spec.path) and not os.path.isabs(os.path.expanduser(spec.path)):
            spec = dataclasses.replace(spec, path=os.path.join(defaults.base, spec.path))
    if defaults is None or "region" not in TABLE_FUNCTIONS[spec.function].parameters:
        return spec
    return dataclasses.replace(
        spec,
        region=spec.region if spec.region is not None else defaults.region,
        samples=spec.samples if spec.samples is not None else defaults.samples,
        exclude_samples=spec.exclude_samples if spec.samples is not None else defaults.exclude_samples,
    )
