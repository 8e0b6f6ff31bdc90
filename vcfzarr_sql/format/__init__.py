"""The store format's names and layouts, with no I/O: VCF Zarr's constants (:mod:`.spec`), the
region index (:mod:`.region_index`), our ``summary_*`` arrays (:mod:`.summaries`).

The bottom layer: it imports nothing of the package but :mod:`vcfzarr_sql.errors`.
"""
