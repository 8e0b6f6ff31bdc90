"""VCF Zarr constants: versions, array names, reserved dimensions and sentinel values.

Everything here comes from the VCF Zarr specification (0.3, with the 0.4/0.5 differences noted)
and is shared by the converter, the validator and the reader.
"""

from __future__ import annotations

import numpy as np

#: The version our converter writes.
WRITE_VERSION = "0.3"
#: Versions the reader and the validator accept.
READ_VERSIONS = ("0.2", "0.3", "0.4", "0.5")

# Integer sentinels (all int dtypes).
INT_MISSING = -1
INT_FILL = -2

# Float sentinels: the BCF signalling NaNs, as bit patterns.
FLOAT32_MISSING_BITS = 0x7F800001
FLOAT32_FILL_BITS = 0x7F800002
FLOAT64_MISSING_BITS = 0x7FF0000000000001
FLOAT64_FILL_BITS = 0x7FF0000000000002
FLOAT32_MISSING = np.array(FLOAT32_MISSING_BITS, dtype=np.uint32).view(np.float32)[()]
FLOAT32_FILL = np.array(FLOAT32_FILL_BITS, dtype=np.uint32).view(np.float32)[()]

# String / character sentinels.
STR_MISSING = "."
STR_FILL = ""

# Reserved dimension names.
DIM_VARIANTS = "variants"
DIM_SAMPLES = "samples"
DIM_PLOIDY = "ploidy"
DIM_ALLELES = "alleles"
DIM_ALT_ALLELES = "alt_alleles"
DIM_GENOTYPES = "genotypes"
DIM_CONTIGS = "contigs"
DIM_FILTERS = "filters"
DIM_PARENTS = "parents"
DIM_REGION_INDEX_VALUES = "region_index_values"
DIM_REGION_INDEX_FIELDS = "region_index_fields"
RESERVED_DIMENSIONS = frozenset(
    {
        DIM_VARIANTS,
        DIM_SAMPLES,
        DIM_PLOIDY,
        DIM_ALLELES,
        DIM_ALT_ALLELES,
        DIM_GENOTYPES,
        DIM_CONTIGS,
        DIM_FILTERS,
        DIM_PARENTS,
        DIM_REGION_INDEX_VALUES,
        DIM_REGION_INDEX_FIELDS,
    }
)

#: VCF Number -> dimension name for the Number codes with a reserved dimension.
NUMBER_DIMENSION = {"A": DIM_ALT_ALLELES, "R": DIM_ALLELES, "G": DIM_GENOTYPES}

# Array names.
VARIANT_CONTIG = "variant_contig"
VARIANT_POSITION = "variant_position"
VARIANT_ID = "variant_id"
VARIANT_ALLELE = "variant_allele"
VARIANT_QUALITY = "variant_quality"
VARIANT_FILTER = "variant_filter"
VARIANT_LENGTH = "variant_length"
CALL_GENOTYPE = "call_genotype"
CALL_GENOTYPE_PHASED = "call_genotype_phased"
CONTIG_ID = "contig_id"
CONTIG_LENGTH = "contig_length"
FILTER_ID = "filter_id"
FILTER_DESCRIPTION = "filter_description"
SAMPLE_ID = "sample_id"
REGION_INDEX = "region_index"

INFO_PREFIX = "variant_"
FORMAT_PREFIX = "call_"
#: ``mask_<array>``: True where a field's element holds no value (missing or fill), as sgkit's
#: ``call_genotype_mask``. Written by our converter only for fields where some real value
#: equals a sentinel (Integer -1 or -2, an empty string in a String list): there the mask,
#: not the value, says which elements are missing. Not ``<array>_mask``: vcztools writes
#: every ``variant_*``/``call_*`` array into the VCF body (and fails on a bool FORMAT).
MASK_PREFIX = "mask_"

#: Arrays with a ``variants`` dimension that are not INFO fields.
FIXED_VARIANT_ARRAYS = (
    VARIANT_CONTIG,
    VARIANT_POSITION,
    VARIANT_ID,
    VARIANT_ALLELE,
    VARIANT_QUALITY,
    VARIANT_FILTER,
    VARIANT_LENGTH,
)

# Region index columns, in the spec's order.
RI_CHUNK, RI_CONTIG, RI_START, RI_END, RI_MAX_END, RI_COUNT = range(6)
REGION_INDEX_FIELDS = 6

# Group attributes.
ATTR_VERSION = "vcf_zarr_version"
ATTR_HEADER = "vcf_header"
ATTR_SOURCE = "source"
#: ## lines htslib added to the header while reading records (undeclared contigs and fields)
ATTR_HEADER_ADDED = "vcfzarr_sql_header_added_lines"
ATTR_META_INFORMATION = "vcf_meta_information"  # 0.4+
ARRAY_DIMENSIONS = "_ARRAY_DIMENSIONS"

#: Defaults a user expects (and bio2zarr uses).
DEFAULT_VARIANTS_CHUNK_SIZE = 1000
DEFAULT_SAMPLES_CHUNK_SIZE = 10_000
