"""Simulated gVCF batches of a cohort, and what ``bcftools merge --gvcf REF.fa -m none`` (Debian
bcftools 1.16) makes of them.

:func:`write_reference` writes a small random FASTA (two contigs) with its ``.fai``;
:func:`write_gvcf` a gVCF of some samples over it: reference blocks (``<*>`` or ``<NON_REF>``
with END, FORMAT GT:DP:GQ:MIN_DP:PL; some gaps with no record) cut where the batch has one of
the records of :data:`SITES` (with the symbolic allele added to their ALTs, INFO/MLEAC per ALT); :func:`write_vcf`
a plain VCF with records of :data:`SITES` and others inside the gVCFs' blocks.

The records at one position are alike in every batch (the same REF and ALTs, but for the
symbolic allele): bcftools merges gVCF records that share any allele, the symbolic one too,
which a cohort does not (docs/guide.md).
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pysam
from fill_tags import bcftools

CONTIGS = {"1": 400, "2": 250}
HEADER = """##fileformat=VCFv4.2
{contigs}##INFO=<ID=END,Number=1,Type=Integer,Description="End of the block">
##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">
##INFO=<ID=MLEAC,Number=A,Type=Integer,Description="Allele counts, per ALT">
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">
##FORMAT=<ID=GQ,Number=1,Type=Integer,Description="Genotype quality">
##FORMAT=<ID=MIN_DP,Number=1,Type=Integer,Description="Minimum depth in the block">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Allelic depths">
##FORMAT=<ID=PL,Number=G,Type=Integer,Description="Genotype likelihoods">
"""
#: Records (contig, POS, ALTs: SNPs, an insertion, a multi-allelic one) the batches pick from.
SITES = [("1", 12, 1), ("1", 40, 1), ("1", 41, 1), ("1", 90, 2), ("1", 150, 1), ("1", 151, 1),
         ("1", 222, 1), ("1", 300, 1), ("2", 7, 1), ("2", 60, 2), ("2", 61, 1), ("2", 200, 1)]
#: Records only plain VCF batches have, at positions inside the gVCFs' blocks.
EXTRA = [("1", 20, 1), ("1", 95, 1), ("1", 180, 1), ("2", 30, 1), ("2", 120, 1)]


def write_reference(path: Path, seed: int = 7) -> dict[str, str]:
    """A random FASTA of :data:`CONTIGS` at ``path`` (60 bases a line, indexed); its sequences."""
    rng = random.Random(seed)
    sequences = {c: "".join(rng.choice("ACGT") for _ in range(n)) for c, n in CONTIGS.items()}
    with open(path, "w") as out:
        for name, sequence in sequences.items():
            out.write(f">{name}\n")
            out.writelines(sequence[i : i + 60] + "\n" for i in range(0, len(sequence), 60))
    pysam.faidx(str(path))
    return sequences


def _alts(sequence: str, pos: int, count: int) -> tuple[str, list[str]]:
    """REF and ``count`` ALTs at ``pos``: SNPs, or for a multi-allelic site a SNP and an
    insertion."""
    ref = sequence[pos - 1]
    snps = [b for b in "ACGT" if b != ref]
    return ref, snps[:1] if count == 1 else [snps[1], ref + "T"]


def _pl(rng: random.Random, alleles: int) -> str:
    return ",".join(str(rng.randrange(0, 200)) for _ in range(alleles * (alleles + 1) // 2))


def _call(rng: random.Random, alleles: int, block: bool) -> str:
    if block:
        dp = rng.randrange(1, 40)
        pl = f"0,{rng.randrange(1, 99)},{rng.randrange(100, 999)}"
        return f"0/0:{dp}:{rng.randrange(0, 99)}:{max(dp - rng.randrange(5), 0)}:.:{pl}"
    gt = rng.choice(["0/1", "1/1", "0/0", "./."]) if alleles == 2 else rng.choice(["0/1", "1/2", "0/2"])
    ad = ",".join(str(rng.randrange(20)) for _ in range(alleles))
    return f"{gt}:{rng.randrange(1, 40)}:{rng.randrange(0, 99)}:.:{ad}:{_pl(rng, alleles)}"


def _text(path: Path, samples: Sequence[str], lines: list[str]) -> Path:
    contigs = "".join(f"##contig=<ID={c},length={n}>\n" for c, n in CONTIGS.items())
    columns = "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t" + "\t".join(samples)
    path.write_text(HEADER.format(contigs=contigs) + columns + "\n" + "".join(lines))
    return Path(pysam.tabix_index(str(path), preset="vcf", force=True))


def write_gvcf(path: Path, samples: Sequence[str], sequences: dict[str, str], *, seed: int,
               sites: Sequence[tuple[str, int, int]], symbolic: str = "<*>",
               starts: dict[str, int] | None = None) -> Path:
    """A gVCF of ``samples``: from ``starts[contig]`` (default 1) to the contig's end, the
    records ``sites`` and reference blocks of 2 to 40 positions between them (now and then a
    gap); bgzipped and indexed, its path."""
    rng = random.Random(seed)
    lines = []
    for contig, sequence in sequences.items():
        at = {pos: count for c, pos, count in sites if c == contig}
        pos = (starts or {}).get(contig, 1)
        while pos <= len(sequence):
            if pos in at:
                ref, alts = _alts(sequence, pos, at[pos])
                info = f"DP={rng.randrange(1, 90)}" if rng.random() < 0.7 else "."
                if rng.random() < 0.7:  # (a value for the symbolic allele too)
                    mleac = "MLEAC=" + ",".join(str(rng.randrange(1, 9)) for _ in [*alts, symbolic])
                    info = mleac if info == "." else f"{info};{mleac}"
                cells = [_call(rng, 2 + len(alts), False) for _ in samples]
                lines.append(f"{contig}\t{pos}\t.\t{ref}\t{','.join([*alts, symbolic])}\t"
                             f"{rng.randrange(10, 90)}\t.\t{info}\tGT:DP:GQ:MIN_DP:AD:PL\t" + "\t".join(cells) + "\n")
                pos += 1
                continue
            following = min([p for p in at if p > pos] + [len(sequence) + 1])
            end = min(pos + rng.randrange(1, 40), following - 1)
            if end > pos and rng.random() > 0.1:
                cells = [_call(rng, 2, True) for _ in samples]
                lines.append(f"{contig}\t{pos}\t.\t{sequence[pos - 1]}\t{symbolic}\t.\t.\tEND={end}\t"
                             "GT:DP:GQ:MIN_DP:AD:PL\t" + "\t".join(cells) + "\n")
            pos = end + 1
    return _text(path, samples, lines)


def write_vcf(path: Path, samples: Sequence[str], sequences: dict[str, str], *, seed: int,
              sites: Sequence[tuple[str, int, int]]) -> Path:
    """A plain VCF of ``samples`` at ``sites`` (GT:DP:AD; bgzipped and indexed), its path."""
    rng = random.Random(seed)
    lines = []
    for contig, pos, count in sorted(sites, key=lambda s: (list(CONTIGS).index(s[0]), s[1])):
        ref, alts = _alts(sequences[contig], pos, count)
        cells = [f"{rng.choice(['0/1', '1/1', '0|1', '.'])}:{rng.randrange(1, 40)}:"
                 + ",".join(str(rng.randrange(20)) for _ in range(1 + count)) for _ in samples]
        mleac = ",".join(str(rng.randrange(1, 9)) for _ in alts)
        lines.append(f"{contig}\t{pos}\t.\t{ref}\t{','.join(alts)}\t{rng.randrange(10, 90)}\t.\t"
                     f"DP={rng.randrange(1, 90)};MLEAC={mleac}\tGT:DP:AD\t" + "\t".join(cells) + "\n")
    return _text(path, samples, lines)


def merged_gvcf(paths: Sequence[Path], reference: Path, output: Path) -> Path:
    """``bcftools merge --gvcf REF.fa -m none`` of ``paths`` in that order (Debian bcftools),
    as VCF at ``output``."""
    subprocess.run(bcftools("merge", "--gvcf", str(reference), "-m", "none", "-O", "v", "-o",
                            str(output), *map(str, paths)), check=True, capture_output=True)
    return output
