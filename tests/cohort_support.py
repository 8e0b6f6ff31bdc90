"""Simulated batches of a cohort, and what ``bcftools merge -m none`` makes of them.

:func:`write_batch` writes a small bgzipped, indexed VCF: the given samples (diploid or
haploid), a subset of a pool of sites (several records at one POS with different alleles,
three contigs), random values for every kind of field. :func:`merged` is bcftools' merge of
batch files, in order (pysam's bcftools).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pysam
import pysam.bcftools as bcftools

HEADER = """##fileformat=VCFv4.2
##FILTER=<ID=PASS,Description="All filters passed">
##FILTER=<ID=q10,Description="Quality below 10">
##FILTER=<ID=q20,Description="Quality below 20">
{contigs}##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">
##INFO=<ID=AF,Number=A,Type=Float,Description="Frequency">
##INFO=<ID=XS,Number=1,Type=String,Description="A word">
##INFO=<ID=FL,Number=0,Type=Flag,Description="A flag">
##INFO=<ID=AN,Number=1,Type=Integer,Description="Alleles called">
##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele counts">
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Allelic depths">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">
##FORMAT=<ID=GQ,Number=1,Type=Float,Description="Quality">
##FORMAT=<ID=FT,Number=1,Type=String,Description="Filter">
"""
CONTIGS = {"1": 1000, "2": 800, "3": 600}

#: (contig, pos, REF, ALTs): two records at 1:100 and 1:300 (multi-allelic and biallelic), an
#: indel and a SNP at 1:150. Records at one POS share no ALT: bcftools merge -m none merges
#: records that share one into one record with their alleles' union, which a cohort does not
#: (its records are identical in CHROM, POS, REF and ALT; docs/guide.md).
POOL = [
    ("1", 20, "A", ("C",)), ("1", 100, "G", ("A",)), ("1", 100, "G", ("T", "C")),
    ("1", 150, "T", ("C",)), ("1", 150, "T", ("TA",)), ("1", 300, "C", ("G", "T")),
    ("1", 300, "C", ("A",)), ("1", 420, "AT", ("A",)), ("1", 700, "G", ("A",)),
    ("2", 5, "C", ("G",)), ("2", 90, "A", ("T",)), ("2", 400, "T", ("C", "G", "A")),
    ("3", 7, "C", ("A",)), ("3", 50, "G", ("C",)),
]


def _gt(rng: random.Random, alleles: int, ploidy: int) -> str:
    if rng.random() < 0.1:
        return "/".join(["."] * ploidy)
    calls = [str(rng.randrange(alleles)) if rng.random() > 0.05 else "." for _ in range(ploidy)]
    return ("|" if rng.random() < 0.3 else "/").join(calls)


def _value(rng: random.Random, text: str) -> str:
    return "." if rng.random() < 0.15 else text


def _record(rng: random.Random, site: tuple, samples: int, ploidy: int) -> str:
    contig, pos, ref, alts = site
    alleles = 1 + len(alts)
    ident = rng.choice([".", ".", f"rs{pos}", f"id{rng.randrange(3)}"])
    qual = rng.choice([".", str(rng.randrange(1, 60))])
    filt = rng.choice(["PASS", "PASS", "q10", "q20", "q10;q20", "."])
    info = []
    if rng.random() < 0.8:
        info.append(f"DP={rng.randrange(1, 120)}")  # (sums outgrow int8)
    if rng.random() < 0.6:
        info.append("AF=" + ",".join(f"{rng.randrange(1, 10) / 10:.1f}" for _ in alts))
    if rng.random() < 0.5:
        info.append(f"XS={rng.choice(['up', 'down', 'left'])}")
    if rng.random() < 0.4:
        info.append("FL")
    cells = []
    for _ in range(samples):
        ad = ",".join(_value(rng, str(rng.randrange(20))) for _ in range(alleles))
        values = [_gt(rng, alleles, ploidy), ad, _value(rng, str(rng.randrange(40))),
                  _value(rng, f"{rng.randrange(100) / 4:.2f}"), _value(rng, rng.choice(["ok", "lowq"]))]
        cells.append(":".join(values))
    return "\t".join([contig, str(pos), ident, ref, ",".join(alts), qual, filt,
                      ";".join(info) or ".", "GT:AD:DP:GQ:FT", *cells])


def write_batch(path: Path, samples: Sequence[str], sites: Sequence[tuple], *, seed: int,
                ploidy: int = 2, contig_order: Sequence[str] = ("1", "2", "3")) -> Path:
    """A bgzipped, tabix-indexed VCF of ``samples`` at ``sites`` (POOL entries, any order: written
    sorted by ``contig_order`` then POS, keeping their order at one POS); returns its path."""
    rng = random.Random(seed)
    rank = {c: i for i, c in enumerate(contig_order)}
    ordered = sorted(sites, key=lambda s: (rank[s[0]], s[1]))
    contigs = "".join(f"##contig=<ID={c},length={CONTIGS[c]}>\n" for c in contig_order)
    columns = "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t" + "\t".join(samples)
    lines = [HEADER.format(contigs=contigs) + columns]
    lines += [_record(rng, site, len(samples), ploidy) for site in ordered]
    path.write_text("\n".join(lines) + "\n")
    return Path(pysam.tabix_index(str(path), preset="vcf", force=True))


def merged(paths: Sequence[Path], output: Path, *extra: str) -> Path:
    """``bcftools merge -m none`` of ``paths`` (indexed), in that order, as VCF at ``output``."""
    bcftools.merge("-m", "none", *extra, "-o", str(output), "-O", "v",
                         *map(str, paths), catch_stdout=False)
    return output


def sorted_rows(con, query: str, store: Path) -> list[dict]:
    """The rows of ``query`` (``{s}``: the store) over ``store``, sorted: a cohort's and a
    merged VCF's stores may give rows of one record in another order."""
    table = con.sql(query.format(s=store)).to_arrow_table()
    return sorted(table.to_pylist(), key=repr)
