"""Regenerate the bundled demo data (deterministic): ``demo.vcf.gz`` (+ ``.tbi``) and ``genes.bed``.

A coalescent simulation (msprime) of 50 diploid samples on two contigs, ``1`` and ``2``, with
the INFO and FORMAT fields a real call set carries: AC/AN/AF (from the genotypes), DP, MQ, a DB
flag, FILTER (PASS or LowQual), QUAL, FORMAT/DP, and ~1% missing genotypes.

Run from anywhere: ``python examples/data/make_demo_data.py`` (needs msprime and pysam).
"""

from __future__ import annotations

from pathlib import Path

import msprime
import numpy as np
import pysam

HERE = Path(__file__).parent
#: the demo VCF is package data (``vcfzarr-sql demo`` needs it in a regular install);
#: examples/data/demo.vcf.gz is a link to it
PACKAGE_DATA = HERE.parents[1] / "vcfzarr_sql" / "data"
SEED = 20260101
NUM_SAMPLES = 50
#: contig -> length
CONTIGS = {"1": 900_000, "2": 700_000}
MUTATION_RATE = 1.5e-8
GENES = [  # made-up genes: contig, 0-based start, end, name
    ("1", 100_000, 180_000, "ALPHA1"),
    ("1", 450_000, 470_000, "BETA2"),
    ("1", 700_000, 790_000, "GAMMA3"),
    ("2", 50_000, 90_000, "DELTA4"),
    ("2", 300_000, 305_000, "EPSILON5"),
    ("2", 600_000, 690_000, "ZETA6"),
]


def _header(samples: list[str]) -> str:
    lines = [
        "##fileformat=VCFv4.3",
        "##source=vcfzarr-sql examples/data/make_demo_data.py (msprime)",
        *(f"##contig=<ID={c},length={n}>" for c, n in CONTIGS.items()),
        '##FILTER=<ID=PASS,Description="All filters passed">',
        '##FILTER=<ID=LowQual,Description="QUAL below 20">',
        '##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count in genotypes, for each ALT allele">',
        '##INFO=<ID=AN,Number=1,Type=Integer,Description="Total number of alleles in called genotypes">',
        '##INFO=<ID=AF,Number=A,Type=Float,Description="Allele frequency, for each ALT allele">',
        '##INFO=<ID=DP,Number=1,Type=Integer,Description="Combined depth across samples">',
        '##INFO=<ID=MQ,Number=1,Type=Float,Description="RMS mapping quality">',
        '##INFO=<ID=DB,Number=0,Type=Flag,Description="dbSNP membership">',
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
        '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Read depth">',
        "#" + "\t".join(["CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *samples]),
    ]
    return "\n".join(lines) + "\n"


def _records(contig: str, length: int, seed: int, rng: np.random.Generator) -> list[str]:
    ts = msprime.sim_ancestry(
        NUM_SAMPLES, sequence_length=length, recombination_rate=1e-8,
        population_size=10_000, random_seed=seed,
    )
    ts = msprime.sim_mutations(ts, rate=MUTATION_RATE, random_seed=seed)
    lines = []
    for variant in ts.variants():
        alleles = [a for a in variant.alleles if a is not None]
        genotypes = variant.genotypes.reshape(NUM_SAMPLES, 2).copy()
        missing = rng.random(NUM_SAMPLES) < 0.01
        called = genotypes[~missing]
        an = called.size
        ac = [int((called == k).sum()) for k in range(1, len(alleles))]
        if an == 0 or not any(ac):
            continue
        depth = rng.poisson(12, NUM_SAMPLES)
        qual = round(float(rng.gamma(4.0, 15.0)), 1)
        info = [
            f"AC={','.join(map(str, ac))}",
            f"AN={an}",
            f"AF={','.join(f'{c / an:.4g}' for c in ac)}",
            f"DP={int(depth.sum())}",
            f"MQ={rng.normal(58, 2):.1f}",
        ]
        if rng.random() < 0.3:
            info.append("DB")
        calls = [
            f".|.:{d}" if m else f"{g[0]}|{g[1]}:{d}"
            for g, m, d in zip(genotypes, missing, depth)
        ]
        pos = int(variant.site.position) + 1
        vid = f"rs{rng.integers(1, 10**8)}" if rng.random() < 0.4 else "."
        lines.append(
            "\t".join([
                contig, str(pos), vid, alleles[0], ",".join(alleles[1:]), str(qual),
                "PASS" if qual >= 20 else "LowQual", ";".join(info), "GT:DP", *calls,
            ])
        )
    return lines


def main() -> None:
    rng = np.random.default_rng(SEED)
    samples = [f"NA{18900 + k:05d}" for k in range(NUM_SAMPLES)]
    body = [
        line
        for k, (contig, length) in enumerate(CONTIGS.items())
        for line in _records(contig, length, SEED + k, rng)
    ]
    plain = PACKAGE_DATA / "demo.vcf"
    plain.write_text(_header(samples) + "\n".join(body) + "\n")
    pysam.tabix_index(str(plain), preset="vcf", force=True)  # bgzips to demo.vcf.gz (+ .tbi)
    (HERE / "genes.bed").write_text(
        "".join(f"{c}\t{start}\t{end}\t{name}\n" for c, start, end, name in GENES)
    )
    print(f"{len(body)} records, {NUM_SAMPLES} samples -> {PACKAGE_DATA / 'demo.vcf.gz'}")


if __name__ == "__main__":
    main()
