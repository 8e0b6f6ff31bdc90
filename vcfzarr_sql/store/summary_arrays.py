"""The ``summary_*`` arrays as the writer lays them out (their names, dimensions and meaning:
:mod:`vcfzarr_sql.format.summaries`), for ``convert`` and ``index`` alike."""

from __future__ import annotations

from numcodecs.blosc import Blosc

from vcfzarr_sql.format import spec
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.store.writer import NewArray

#: Every array the converter writes but genotypes and bools
#: (:func:`vcfzarr_sql.converter.arrays.default_compressor`) and the summaries: Blosc zstd 7,
#: byte-shuffled.
COMPRESSOR = Blosc(cname="zstd", clevel=7, shuffle=Blosc.SHUFFLE).get_config()
#: The summary arrays': zstd 3, byte-shuffled. Their few MB of counts and float32 p-values took
#: ~0.3 CPU-s at level 7 in a conversion of 2,000 x 50,000 calls (the p-values compress at
#: ~5 MB/s there), 0.04 s at level 3, for 7 % more of their bytes (+0.07 MB on a 20 MB store;
#: decompression the same): docs/benchmarks.md, "stop 38". ``add`` writes a batch's
#: summaries and the cohort's sites store (whose arrays every add writes again) with it too
#: (a one-sample batch of 100,000 records: 0.066 -> 0.016 CPU-s, 42 -> 55 kB).
SUMMARY_COMPRESSOR = {**COMPRESSOR, "clevel": 3}
#: The arrays with one row per record (the sample class counts have one per variant chunk).
PER_RECORD = (sc.ALLELE_COUNTS, sc.CALL_COUNTS, sc.HWE)


def summary_arrays(
    num_variants: int, alleles: int, num_samples: int, variants_chunk_size: int,
    samples_chunk_size: int,
) -> dict[str, NewArray]:
    """The summary arrays of a store of that shape, by name.

    >>> arrays = summary_arrays(2500, 3, 10, 1000, 4)
    >>> arrays[sc.HWE].chunks, arrays[sc.SAMPLE_CLASS_COUNTS].shape
    ((16000, 3, 2), (3, 6, 10))
    """
    records = variants_chunk_size * sc.variant_chunks_per_chunk(variants_chunk_size)
    chunks = -(-num_variants // max(variants_chunk_size, 1))
    classes = len(sc.CLASSES)
    layouts = {  # name: (shape, dtype, chunks, dims)
        sc.ALLELE_COUNTS: ((num_variants, alleles, 3), "<i4", (records, alleles, 3),
                           (sc.DIM_RECORDS, spec.DIM_ALLELES, sc.DIM_ALLELE_COUNTS)),
        sc.CALL_COUNTS: ((num_variants, 3), "<i4", (records, 3),
                         (sc.DIM_RECORDS, sc.DIM_CALL_COUNTS)),
        sc.HWE: ((num_variants, alleles, 2), "<f4", (records, alleles, 2),
                 (sc.DIM_RECORDS, spec.DIM_ALLELES, sc.DIM_HWE_TESTS)),
        sc.SAMPLE_CLASS_COUNTS: (
            (chunks, classes, num_samples), sc.sample_class_dtype(variants_chunk_size).str,
            (1, classes, max(samples_chunk_size, 1)),
            (sc.DIM_VARIANT_CHUNKS, sc.DIM_SAMPLE_CLASSES, spec.DIM_SAMPLES)),
    }
    return {
        name: NewArray(name, dtype, dims, shape, chunks, SUMMARY_COMPRESSOR, sc.DESCRIPTIONS[name])
        for name, (shape, dtype, chunks, dims) in layouts.items()
    }


def call_stats_arrays(num_variants: int, num_samples: int, variants_chunk_size: int,
                      samples_chunk_size: int) -> dict[str, NewArray]:
    """The per-chunk counts of ``bcftools stats -s -`` (:data:`~vcfzarr_sql.format.summaries.CALL_STATS`)
    of a store of that shape, by name: one chunk per variant chunk (and sample chunk).

    >>> arrays = call_stats_arrays(2500, 10, 1000, 4)
    >>> arrays[sc.SAMPLE_CALL_STATS].chunks, arrays[sc.HWE_GENOTYPE_COUNTS].shape
    ((1, 10, 4), (3, 1000, 3))
    """
    chunks = -(-num_variants // max(variants_chunk_size, 1))
    kinds = len(sc.SAMPLE_STATS)
    records = max(variants_chunk_size, 1)
    layouts = {  # name: (shape, dtype, chunks, dims)
        sc.SAMPLE_CALL_STATS: ((chunks, kinds, num_samples), "<i8", (1, kinds, max(samples_chunk_size, 1)),
                               (sc.DIM_VARIANT_CHUNKS, sc.DIM_SAMPLE_STATS, spec.DIM_SAMPLES)),
        sc.CALL_DEPTH_COUNTS: ((chunks, sc.DP_BINS), "<i8", (1, sc.DP_BINS),
                               (sc.DIM_VARIANT_CHUNKS, sc.DIM_DEPTH_BINS)),
        sc.INDEL_VAF: ((chunks, 2, sc.INDEL_VAF_BINS), "<f8", (1, 2, sc.INDEL_VAF_BINS),
                       (sc.DIM_VARIANT_CHUNKS, sc.DIM_VAF_KINDS, sc.DIM_VAF_BINS)),
        sc.HWE_GENOTYPE_COUNTS: ((chunks, records, 3), "<i4", (1, records, 3),
                                 (sc.DIM_VARIANT_CHUNKS, sc.DIM_CHUNK_RECORDS, sc.DIM_HWE_GENOTYPES)),
    }
    return {
        name: NewArray(name, dtype, dims, shape, chunks, SUMMARY_COMPRESSOR, sc.CALL_STATS_DESCRIPTIONS[name])
        for name, (shape, dtype, chunks, dims) in layouts.items()
    }
