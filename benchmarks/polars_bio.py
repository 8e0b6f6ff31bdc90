"""polars-bio as a competitor: the store its VCF Zarr reader accepts, and its genotype scan.

polars-bio 0.36's ``scan_vcf_zarr`` accepts only ``vcf_zarr_version`` "0.4": it refuses our
stores (0.3, as the product writes) and bio2zarr 0.2's (0.5). To run it on the same chunks we
read, :func:`readable_store` makes a sibling view of the store whose arrays are symlinks to the
store's and whose group metadata says 0.4 (cached; nothing else changes). Every answer it gives
is checked against bcftools' before it is timed, as for every tool.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The only version polars-bio's VCZ reader accepts.
POLARS_BIO_VERSION = "0.4"
_GROUP_METADATA = (".zattrs", ".zmetadata")


def readable_store(store: Path) -> Path:
    """``store`` itself if polars-bio reads it, else a symlinked view labelled version 0.4."""
    attributes = json.loads((store / ".zattrs").read_text())
    if attributes.get("vcf_zarr_version") == POLARS_BIO_VERSION:
        return store
    view = store.with_name(f"{store.stem}.as-{POLARS_BIO_VERSION}.vcz")
    if not (view / ".zgroup").exists():
        view.mkdir(exist_ok=True)
        for entry in store.iterdir():
            if entry.name not in _GROUP_METADATA and not (view / entry.name).exists():
                (view / entry.name).symlink_to(entry.resolve())
        for name in _GROUP_METADATA:
            if (store / name).exists():
                (view / name).write_text(_relabelled(json.loads((store / name).read_text())))
    return view


def _relabelled(metadata: dict) -> str:
    """``.zattrs`` or ``.zmetadata`` with every ``vcf_zarr_version`` set to 0.4."""
    if "vcf_zarr_version" in metadata:
        metadata["vcf_zarr_version"] = POLARS_BIO_VERSION
    for entry in metadata.get("metadata", {}).values():
        if isinstance(entry, dict) and "vcf_zarr_version" in entry:
            entry["vcf_zarr_version"] = POLARS_BIO_VERSION
    return json.dumps(metadata, indent=2)


def genotype_calls(store: Path) -> int:
    """Whole-store ``GT`` scan with polars-bio's VCZ reader: the number of calls read."""
    import polars as pl
    import polars_bio as pb

    frame = pb.scan_vcf_zarr(str(readable_store(store)), info_fields=[], format_fields=["GT"])
    calls = pl.col("genotypes").struct.field("GT").list.len().sum()
    return frame.select(calls).collect().item()
