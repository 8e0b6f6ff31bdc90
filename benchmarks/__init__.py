"""Benchmarks of vcfzarr-sql against the tools people use today (see benchmarks/README.md)."""
