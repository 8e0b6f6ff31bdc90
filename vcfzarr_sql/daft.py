"""Daft over VCF Zarr (the ``daft`` extra): :func:`read_vcf_zarr`, from
:mod:`vcfzarr_sql.adapters.daft`, under the name users import."""

from vcfzarr_sql.adapters.daft import VczDaftSource, read_vcf_zarr

__all__ = ["VczDaftSource", "read_vcf_zarr"]
