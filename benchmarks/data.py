"""Deterministic benchmark data: an msprime simulation written as VCF, BCF and Parquet.

One ``Size`` gives the same records in every format the tools read:

- ``sim.vcf.gz``: bgzipped VCF (tabix and CSI indexed). Genotypes come from ``msprime``
  (diploid ``sim_ancestry`` then ``sim_mutations``, seeded), with missing calls injected
  from a seeded generator (per-sample rates up to 5 %, and 1 % of sites with 30 % missing),
  then INFO AC, AN, AF, MAF, HWE, F_MISSING filled by ``bcftools +fill-tags``.
- ``sim.bcf``: the same records as BCF (CSI indexed).
- ``variants.parquet`` (one row per record, INFO as columns) and ``calls.parquet`` (one row per
  record and sample: contig, pos, sample_id, gt0, gt1; NULL alleles for missing calls), the
  layout someone would give DuckDB.

Run ``python -m benchmarks.data --size quick`` (or ``full``); files are cached under
``benchmarks/data/<size>/`` and only rebuilt with ``--force``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import msprime
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from benchmarks.sizes import SIZES, Contig, Files, Size

if TYPE_CHECKING:
    import tskit

#: Effective population size and per-base recombination rate of every simulation.
POPULATION_SIZE = 10_000
RECOMBINATION_RATE = 1e-8
#: Sites formatted per block (bounds memory: block x samples x 4 bytes of VCF text).
BLOCK_SITES = 5_000
INFO_TAGS = "AC,AN,AF,MAF,HWE,F_MISSING"
THREADS = "2"


def sample_names(num_samples: int) -> list[str]:
    return [f"S{i:05d}" for i in range(num_samples)]


def vcf_header(size: Size) -> bytes:
    lines = [
        "##fileformat=VCFv4.2",
        "##source=vcfzarr-sql benchmarks/data.py (msprime)",
        *(f"##contig=<ID={c.name},length={c.length}>" for c in size.contigs),
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
        "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT"])
        + "\t"
        + "\t".join(sample_names(size.num_samples)),
    ]
    return ("\n".join(lines) + "\n").encode()


def simulate(contig: Contig, num_samples: int, seed: int) -> tskit.TreeSequence:
    """The tree sequence of one contig (diploid individuals, mutations added)."""
    ancestry = msprime.sim_ancestry(
        samples=num_samples,
        ploidy=2,
        population_size=POPULATION_SIZE,
        sequence_length=contig.length,
        recombination_rate=RECOMBINATION_RATE,
        random_seed=seed,
    )
    return msprime.sim_mutations(ancestry, rate=contig.mutation_rate, random_seed=seed)


def site_blocks(ts: tskit.TreeSequence, block_sites: int) -> Iterator[tuple[np.ndarray, list[tuple[str, ...]], np.ndarray]]:
    """(positions 1-based, alleles per site, genotypes int8 (sites, samples, 2)) per block."""
    positions, alleles, genotypes = [], [], []
    for variant in ts.variants():
        positions.append(int(variant.site.position) + 1)
        alleles.append(variant.alleles)
        genotypes.append(variant.genotypes.astype(np.int8))
        if len(positions) == block_sites:
            yield np.array(positions), alleles, np.stack(genotypes).reshape(len(positions), -1, 2)
            positions, alleles, genotypes = [], [], []
    if positions:
        yield np.array(positions), alleles, np.stack(genotypes).reshape(len(positions), -1, 2)


def missing_mask(rng: np.random.Generator, sample_rates: np.ndarray, num_sites: int) -> np.ndarray:
    """Which calls are missing: per-sample rates, plus 1 % of sites with 30 % missing."""
    rates = np.broadcast_to(sample_rates, (num_sites, sample_rates.size)).copy()
    rates[rng.random(num_sites) < 0.01] = 0.3
    return rng.random(rates.shape) < rates


def vcf_lines(contig: str, positions: np.ndarray, alleles: list[tuple[str, ...]], genotypes: np.ndarray,
              missing: np.ndarray) -> bytes:
    """VCF text of one block (GT only; phased, ``./.`` for missing)."""
    sites, samples, _ = genotypes.shape
    text = np.empty((sites, samples, 4), dtype=np.uint8)
    text[:, :, 0] = genotypes[:, :, 0] + ord("0")
    text[:, :, 1] = ord("|")
    text[:, :, 2] = genotypes[:, :, 1] + ord("0")
    text[:, :, 3] = ord("\t")
    text[missing] = np.frombuffer(b"./.\t", dtype=np.uint8)
    text[:, -1, 3] = ord("\n")
    out = []
    for i in range(sites):
        ref, *alt = alleles[i]
        out.append(f"{contig}\t{positions[i]}\t.\t{ref}\t{','.join(alt) or '.'}\t.\tPASS\t.\tGT\t".encode())
        out.append(text[i].tobytes())
    return b"".join(out)


def calls_table(contig: str, positions: np.ndarray, genotypes: np.ndarray, missing: np.ndarray, samples: pa.Array) -> pa.Table:
    """The long (record x sample) table of one block."""
    sites, num_samples, _ = genotypes.shape
    mask = missing.ravel()
    return pa.table(
        {
            "contig": pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(sites * num_samples, dtype=np.int32)), pa.array([contig])
            ),
            "pos": pa.array(np.repeat(np.asarray(positions, dtype=np.int64), num_samples)),
            "sample_id": pa.DictionaryArray.from_arrays(
                pa.array(np.tile(np.arange(num_samples, dtype=np.int32), sites)), samples
            ),
            "gt0": pa.array(genotypes[:, :, 0].ravel(), mask=mask),
            "gt1": pa.array(genotypes[:, :, 1].ravel(), mask=mask),
        }
    )


def write_vcf_and_calls(size: Size, files: Files) -> None:
    """Simulate every contig; stream VCF text through ``bcftools +fill-tags``; write calls.parquet."""
    rng = np.random.default_rng(size.seed)
    sample_rates = rng.uniform(0.0, 0.05, size.num_samples)
    samples = pa.array(sample_names(size.num_samples))
    fill_tags = subprocess.Popen(
        ["bcftools", "+fill-tags", "-", "-Oz", "-o", str(files.vcf), "--threads", THREADS, "--", "-t", INFO_TAGS],
        stdin=subprocess.PIPE,
    )
    assert fill_tags.stdin is not None
    writer = None
    try:
        fill_tags.stdin.write(vcf_header(size))
        for index, contig in enumerate(size.contigs):
            ts = simulate(contig, size.num_samples, size.seed + index)
            print(f"  contig {contig.name}: {ts.num_sites} sites", file=sys.stderr)
            for positions, alleles, genotypes in site_blocks(ts, BLOCK_SITES):
                missing = missing_mask(rng, sample_rates, len(positions))
                fill_tags.stdin.write(vcf_lines(contig.name, positions, alleles, genotypes, missing))
                table = calls_table(contig.name, positions, genotypes, missing, samples)
                if writer is None:
                    writer = pq.ParquetWriter(files.calls_parquet, table.schema, compression="zstd")
                writer.write_table(table, row_group_size=1 << 20)
    finally:
        fill_tags.stdin.close()
        if writer is not None:
            writer.close()
    if fill_tags.wait() != 0:
        raise RuntimeError("bcftools +fill-tags failed")


QUERY_FORMAT = "%CHROM\t%POS\t%ID\t%REF\t%ALT\t%QUAL\t%FILTER\t%INFO/AC\t%INFO/AN\t%INFO/AF\t%INFO/MAF\t%INFO/HWE\t%INFO/F_MISSING\n"
QUERY_COLUMNS = ["contig", "pos", "id", "ref", "alt", "qual", "filters", "info_AC", "info_AN", "info_AF", "info_MAF", "info_HWE", "info_F_MISSING"]


def write_variants_parquet(files: Files) -> None:
    """One row per record, from ``bcftools query`` of the final VCF (so INFO is bcftools')."""
    query = subprocess.run(["bcftools", "query", "-f", QUERY_FORMAT, str(files.vcf)], check=True, capture_output=True)
    text = pa_csv.read_csv(
        pa.BufferReader(query.stdout),
        read_options=pa_csv.ReadOptions(column_names=QUERY_COLUMNS),
        parse_options=pa_csv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pa_csv.ConvertOptions(column_types={c: pa.string() for c in QUERY_COLUMNS}),
    )

    def scalar(name: str, type_: pa.DataType) -> pa.Array:
        column = text[name]
        return pc.if_else(pc.equal(column, "."), None, column).cast(type_)

    def listed(name: str, type_: pa.DataType) -> pa.Array:
        return pc.split_pattern(text[name], ",").cast(pa.list_(type_))

    table = pa.table(
        {
            "contig": text["contig"].dictionary_encode(),
            "pos": text["pos"].cast(pa.int64()),
            "id": scalar("id", pa.string()),
            "ref": text["ref"],
            "alt": listed("alt", pa.string()),
            "qual": scalar("qual", pa.float32()),
            "filters": listed("filters", pa.string()),
            "info_AC": listed("info_AC", pa.int32()),
            "info_AN": scalar("info_AN", pa.int32()),
            "info_AF": listed("info_AF", pa.float32()),
            "info_MAF": scalar("info_MAF", pa.float32()),
            "info_HWE": listed("info_HWE", pa.float32()),
            "info_F_MISSING": scalar("info_F_MISSING", pa.float32()),
        }
    )
    pq.write_table(table, files.variants_parquet, compression="zstd")


def generate(size: Size, force: bool = False) -> Files:
    """Build (or reuse) every file of ``size``; returns where they are."""
    files = Files(size.directory)
    if files.done.exists() and not force:
        return files
    shutil.rmtree(files.directory, ignore_errors=True)
    files.directory.mkdir(parents=True)
    start = time.perf_counter()
    print(f"generating {size.name} data in {files.directory}", file=sys.stderr)
    write_vcf_and_calls(size, files)
    subprocess.run(["bcftools", "index", "--tbi", str(files.vcf)], check=True)
    subprocess.run(["bcftools", "index", "--csi", str(files.vcf)], check=True)
    subprocess.run(["bcftools", "view", "-Ob", "-o", str(files.bcf), "--threads", THREADS, str(files.vcf)], check=True)
    subprocess.run(["bcftools", "index", "--csi", str(files.bcf)], check=True)
    write_variants_parquet(files)
    files.done.write_text(f"{time.perf_counter() - start:.1f} s\n")
    print(f"  done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return files


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="quick")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    args = parser.parse_args(argv)
    generate(SIZES[args.size], force=args.force)


if __name__ == "__main__":
    main()
