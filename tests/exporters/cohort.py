"""A small simulated cohort for the export tests: every kind of call the formats must carry.

Random genotypes (seeded) over two contigs: biallelic and multi-allelic records (up to three
ALTs), records without ALT, missing (``./.``) and half-missing (``0/.``) calls, phased and
unphased calls, and, optionally, haploid calls (a whole record, or some samples: mixed ploidy)
or polyploid ones (triploid and tetraploid samples beside haploid and diploid ones).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pysam import bcftools

BASES = "ACGT"


def _call(rng: np.random.Generator, alts: int, ploidy: int, phased_record: bool) -> str:
    alleles = [str(a) for a in rng.choice(alts + 1, size=max(2, ploidy), p=_weights(alts))][:ploidy]
    roll = rng.random()
    if ploidy == 1:
        return "." if roll < 0.05 else alleles[0]
    if roll < 0.05:
        return "/".join("." * ploidy)
    if roll < 0.08:
        return "/".join([*alleles[:-1], "."])
    sep = "|" if phased_record or rng.random() < 0.2 else "/"
    return sep.join(alleles)


def _weights(alts: int) -> np.ndarray:
    w = np.array([6.0] + [2.0 / k for k in range(1, alts + 1)])
    return w / w.sum()


def cohort_vcf(directory: Path, *, samples: int = 40, records: int = 240, haploid: bool = False,
               polyploid: bool = False, seed: int = 1) -> Path:
    """A bgzipped, indexed VCF of ``records`` records (half on contig ``1``, half on ``2``)
    and ``samples`` samples; ``haploid``: some records haploid, some samples of others
    haploid (mixed ploidy); ``polyploid``: besides, some samples of some records of ploidy
    3 or 4."""
    rng = np.random.default_rng(seed)
    names = [f"S{k:03d}" for k in range(samples)]
    lines = ["##fileformat=VCFv4.2", "##contig=<ID=1,length=100000>", "##contig=<ID=2,length=100000>",
             '##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">',
             '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
             "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *names])]
    half = records // 2
    for r in range(records):
        contig, pos = ("1", 100 + 37 * r) if r < half else ("2", 50 + 41 * (r - half))
        ref = BASES[r % 4]
        kind = rng.random()
        alts = 0 if kind < 0.05 else 1 if kind < 0.75 else int(rng.integers(2, 4))
        alt_bases = [b for b in BASES if b != ref][:alts]
        whole_haploid = haploid and rng.random() < 0.15
        mixed = haploid and not whole_haploid and rng.random() < 0.15
        phased_record = rng.random() < 0.3
        many = polyploid and rng.random() < 0.3
        calls = [_call(rng, alts, 1 if whole_haploid or (mixed and s % 5 == 0)
                       else 3 + s % 2 if many and s % 3 == 0 else 2, phased_record)
                 for s in range(samples)]
        vid = f"rs{r}" if rng.random() < 0.7 else "."
        lines.append("\t".join([contig, str(pos), vid, ref, ",".join(alt_bases) or ".", "50", "PASS",
                                f"DP={int(rng.integers(1, 60))}", "GT", *calls]))
    text = directory / f"cohort-{seed}{'-hap' if haploid else ''}{'-poly' if polyploid else ''}.vcf"
    text.write_text("\n".join(lines) + "\n")
    out = text.with_suffix(".vcf.gz")
    bcftools.view(str(text), "-Oz", "-o", str(out), "--write-index=tbi", catch_stdout=False)
    return out
