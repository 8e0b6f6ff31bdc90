"""A small random call set for ``bcftools stats`` comparisons: SNPs, MNPs, insertions and
deletions (some longer than 60 bases), symbolic, ``*`` and no-ALT records, REF ``N``,
multiallelic sites, QUAL missing or large, INFO/DP, FORMAT DP and AD (missing values too),
haploid, diploid and triploid calls, missing and half-missing calls."""

from __future__ import annotations

import random
from pathlib import Path

BASES = "ACGT"


def _alt(rng: random.Random, ref: str) -> str:
    kind = rng.random()
    if kind < 0.45:
        return rng.choice([b for b in BASES if b != ref[0]]) + ref[1:] if len(ref) == 1 else \
            ref[0] + rng.choice([b for b in BASES if b != ref[1]]) + ref[2:]
    if kind < 0.6:
        return ref[0] + "".join(rng.choice(BASES) for _ in range(rng.choice([1, 2, 3, 7, 65])))
    if kind < 0.75:
        return ref[0] if len(ref) > 1 else ref + "T"
    if kind < 0.82:
        return "".join(rng.choice(BASES) for _ in range(len(ref))) if len(ref) > 1 else "<DEL>"
    if kind < 0.88:
        return "*"
    if kind < 0.94:
        return "".join(rng.choice(BASES) for _ in range(len(ref) + 2))
    return "<INS>"


def _call(rng: random.Random, alleles: int, ploidies: tuple[int, ...]) -> str:
    ploidy = rng.choice(ploidies)
    if rng.random() < 0.08:
        return "/".join("." * ploidy)
    values = []
    for _ in range(ploidy):
        if rng.random() < 0.05:
            values.append(".")
        else:
            values.append(str(rng.choice([0, 0, 0, 0] + list(range(1, alleles)))))
    return ("|" if rng.random() < 0.3 else "/").join(values)


def qc_vcf(path: Path, *, seed: int, records: int = 150, samples: int = 12,
           ploidies: tuple[int, ...] = (1, 2, 2, 2, 2, 3)) -> Path:
    """Write the call set (uncompressed VCF) to ``path``: each call of a ploidy among
    ``ploidies``."""
    rng = random.Random(seed)
    names = [f"s{i}" for i in range(samples)]
    lines = [
        "##fileformat=VCFv4.2",
        "##contig=<ID=1,length=100000>",
        "##contig=<ID=2,length=100000>",
        '##ALT=<ID=DEL,Description="Deletion">',
        '##ALT=<ID=INS,Description="Insertion">',
        '##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">',
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
        '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">',
        '##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Allele depths">',
        "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *names]),
    ]
    for i in range(records):
        chrom = "1" if i < records // 2 else "2"
        ref = rng.choice(BASES) if rng.random() < 0.6 else "".join(rng.choice(BASES) for _ in range(rng.choice([2, 3, 70])))
        if rng.random() < 0.03:
            ref = "N"
        alts = list(dict.fromkeys(a for a in (_alt(rng, ref) for _ in range(rng.choice([0, 1, 1, 1, 2, 3]))) if a != ref))
        n = len(alts) + 1
        quality = rng.choice([".", f"{rng.uniform(0, 200):.1f}", f"{rng.uniform(0, 60):.2f}", "12345.6", "0"])
        info = f"DP={rng.randint(0, 700)}" if rng.random() < 0.8 else "."
        calls = []
        for _ in names:
            dp = str(rng.randint(0, 600)) if rng.random() < 0.85 else "."
            ad = ",".join(str(rng.randint(0, 30)) for _ in range(n)) if rng.random() < 0.8 else "."
            calls.append(f"{_call(rng, n, ploidies)}:{dp}:{ad}")
        lines.append("\t".join([chrom, str(10 * i + 1), ".", ref, ",".join(alts) or ".", quality, ".",
                                info, "GT:DP:AD", *calls]))
    path.write_text("\n".join(lines) + "\n")
    return path
