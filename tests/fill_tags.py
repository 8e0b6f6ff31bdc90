"""``bcftools +fill-tags`` (Debian bcftools, which has the plugins) as the oracle of the ``gt_``
columns, and simulated VCFs with the genotypes that make those counts tricky.

:func:`fill_tags` strips the file's INFO (so a file's own AC/AN definitions cannot clash),
keeps ``samples`` (``bcftools view -s``), runs ``+fill-tags`` and returns each record's tags
as bcftools prints them, parsed: ``None`` for ``.`` (a list of only ``.`` is ``None`` too).
"""

from __future__ import annotations

import math
import random
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

BCFTOOLS = shutil.which("bcftools")


def bcftools(*args: str) -> list[str]:
    """The command ``bcftools *args`` (Debian bcftools; its tests are skipped without it)."""
    assert BCFTOOLS is not None, "needs Debian bcftools"
    return [BCFTOOLS, *args]


#: gt_ column -> the +fill-tags tag.
TAGS = {
    "gt_AN": "AN", "gt_AC": "AC", "gt_AF": "AF", "gt_AC_Het": "AC_Het", "gt_AC_Hom": "AC_Hom",
    "gt_AC_Hemi": "AC_Hemi", "gt_NS": "NS", "gt_MAF": "MAF", "gt_F_MISSING": "F_MISSING",
    "gt_HWE": "HWE", "gt_ExcHet": "ExcHet",
}
FLOAT_TAGS = {"AF", "MAF", "F_MISSING", "HWE", "ExcHet"}
LIST_TAGS = {"AC", "AF", "AC_Het", "AC_Hom", "AC_Hemi", "HWE", "ExcHet"}


def _run(args: list[str], stdin: bytes | None = None) -> bytes:
    done = subprocess.run(args, input=stdin, capture_output=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(args[:3])}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _without_info(vcf: bytes) -> bytes:
    """``vcf`` without INFO definitions and values, and with every contig declared
    (``bcftools annotate -x INFO`` and ``+fill-tags`` stop on contigs the header lacks)."""
    header, body = [], []
    for line in vcf.split(b"\n"):
        if line.startswith(b"#"):
            if not line.startswith(b"##INFO="):
                header.append(line)
        elif line:
            fields = line.split(b"\t")
            fields[7] = b"."
            body.append(b"\t".join(fields))
    declared = {line.split(b",")[0][len(b"##contig=<ID=") :].rstrip(b">") for line in header
                if line.startswith(b"##contig=<ID=")}
    used = dict.fromkeys(line.split(b"\t", 1)[0] for line in body)
    header[-1:-1] = [b"##contig=<ID=" + c + b">" for c in used if c not in declared]
    return b"\n".join(header + body) + b"\n"


def _value(text: str, tag: str):
    convert = float if tag in FLOAT_TAGS else int
    if tag not in LIST_TAGS:
        return None if text == "." else convert(text)
    values = [None if v == "." else convert(v) for v in text.split(",")]
    return None if all(v is None for v in values) else values


def fill_tags(
    vcf: str | Path,
    tags: Sequence[str],
    samples: Sequence[str] | None = None,
    populations: str | Path | None = None,
    suffix: str = "",
) -> list[dict]:
    """Per record: ``chrom``, ``pos`` and each of ``tags`` (+fill-tags names) as bcftools
    computes them; with ``populations`` (a ``-S`` file), the tags of population ``suffix``."""
    view = bcftools("view", "-Ov") + ([] if samples is None else ["-s", ",".join(samples)])
    stripped = _without_info(_run([*view, str(vcf)]))
    options = ["-t", ",".join(tags)] + ([] if populations is None else ["-S", str(populations)])
    filled = _run(bcftools("+fill-tags", "-Ov", "-", "--", *options), stripped)
    names = [t + (f"_{suffix}" if suffix and t != "F_MISSING" else "") for t in tags]
    query = "%CHROM\t%POS\t" + "\t".join(f"%INFO/{n}" for n in names) + "\n"
    rows = []
    for line in _run(bcftools("query", "-f", query, "-"), filled).decode().splitlines():
        chrom, pos, *values = line.split("\t")
        row = {"chrom": chrom, "pos": int(pos)}
        row.update({t: _value(v, t) for t, v in zip(tags, values)})
        rows.append(row)
    return rows


def same(expected, actual) -> bool:
    """bcftools' printed value (6 significant digits for floats) equals ours."""
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, list):
        return len(expected) == len(actual) and all(map(same, expected, actual))
    if isinstance(expected, float):
        if actual is None or math.isnan(actual):
            return False
        return expected == float(f"{actual:.6g}")
    return expected == actual


def _call(rng: random.Random, alleles: int, ploidy: int, missing: float) -> str:
    if rng.random() < missing / 2:
        return "."
    values = [
        "." if rng.random() < missing else str(rng.choice([0, 0, 0] + list(range(1, alleles))))
        for _ in range(ploidy)
    ]
    return ("|" if rng.random() < 0.5 else "/").join(values)


def simulated_vcf(
    path: Path, *, seed: int, records: int = 120, samples: int = 24, ploidies=(1, 2, 2, 2),
    max_alts: int = 3, missing: float = 0.15,
) -> Path:
    """A VCF of random calls: haploid and diploid (``ploidies``: the choices per call),
    multiallelic (up to ``max_alts``), missing, half-missing, phased and unphased."""
    rng = random.Random(seed)
    names = [f"sample{i}" for i in range(samples)]
    lines = [
        "##fileformat=VCFv4.2",
        "##contig=<ID=1,length=100000>",
        "##contig=<ID=2,length=100000>",
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
        "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *names]),
    ]
    bases = "ACGT"
    for i in range(records):
        chrom = "1" if i < records // 2 else "2"
        ref = rng.choice(bases)
        alts = rng.sample([b for b in bases if b != ref], rng.randint(0, max_alts))
        calls = [_call(rng, len(alts) + 1, rng.choice(ploidies), missing) for _ in names]
        lines.append("\t".join(
            [chrom, str(10 * i + 1), ".", ref, ",".join(alts) or ".", ".", ".", ".", "GT", *calls]
        ))
    path.write_text("\n".join(lines) + "\n")
    return path
