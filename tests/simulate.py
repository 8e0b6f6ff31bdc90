"""Simulated call sets for the differential tests: a small msprime coalescent simulation."""

from __future__ import annotations

from pathlib import Path

import msprime
from pysam import bcftools


def simulated_vcf(directory: Path) -> Path:
    """Two contigs of a small msprime simulation (10 diploid samples), bgzipped and indexed."""
    parts = []
    for seed, contig in enumerate(["1", "2"], start=1):
        ts = msprime.sim_ancestry(
            samples=10, sequence_length=20_000, recombination_rate=1e-8,
            population_size=10_000, random_seed=seed,
        )
        ts = msprime.sim_mutations(ts, rate=2e-8, random_seed=seed)
        text = directory / f"sim{contig}.vcf"
        with open(text, "w") as f:
            ts.write_vcf(f, contig_id=contig)
        part = directory / f"sim{contig}.vcf.gz"
        bcftools.view(str(text), "-Oz", "-o", str(part), "--write-index=tbi", catch_stdout=False)
        parts.append(str(part))
    out = directory / "sim.vcf.gz"
    bcftools.concat(*parts, "-Oz", "-o", str(out), "--write-index=tbi", catch_stdout=False)
    return out
