"""Spark over VCF Zarr (the ``spark`` extra): :func:`register` and :func:`read`, from
:mod:`vcfzarr_sql.adapters.spark`, under the name users import."""

from vcfzarr_sql.adapters.spark import VczSparkSource, read, register

__all__ = ["VczSparkSource", "read", "register"]
