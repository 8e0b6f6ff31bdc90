"""Genotype statistics as tables: per-sample counts (``vcf_zarr_sample_stats``).

A client of :mod:`vcfzarr_sql.query`: its chunks come from the query's plan.
"""
