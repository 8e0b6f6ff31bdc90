"""What ``convert`` reads: one file, standard input (``-``), or several files in a row.

Several inputs (per-chromosome VCFs, say) are converted as their concatenation, as
``bcftools concat`` would give it: their headers must declare the same samples, INFO, FORMAT,
FILTER and contig lines. Standard input and several inputs are first copied into one file
in the conversion's work directory (an uncompressed BCF written by htslib for several
inputs), since the parse pass may read the input more than once.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vcfzarr_sql.errors import VcfParseError, VcfZarrError

if TYPE_CHECKING:
    from cyvcf2 import VCF

STDIN = "-"
#: the header lines that must agree between inputs
_DEFINITIONS = ("##INFO=", "##FORMAT=", "##FILTER=", "##contig=")


class HeaderMismatchError(VcfZarrError):
    """Inputs converted into one store declare different samples or fields."""


def _definitions(vcf: VCF) -> list[str]:
    return [line for line in vcf.raw_header.splitlines() if line.startswith(_DEFINITIONS)]


def check_headers_agree(paths: Sequence[str]) -> None:
    """HeaderMismatchError naming the first input and line that differ from the first input."""
    import cyvcf2

    first = cyvcf2.VCF(paths[0])
    samples, lines = list(first.samples), _definitions(first)
    first.close()
    for path in paths[1:]:
        other = cyvcf2.VCF(path)
        try:
            if list(other.samples) != samples:
                raise HeaderMismatchError(
                    f"{path}: its samples differ from those of {paths[0]} "
                    f"({len(other.samples)} vs {len(samples)}; all inputs need the same samples in the same order)"
                )
            theirs = _definitions(other)
            for line in [*(x for x in theirs if x not in lines), *(x for x in lines if x not in theirs)]:
                raise HeaderMismatchError(f"{path}: header differs from {paths[0]}'s: {line}")
        finally:
            other.close()


def _concatenate(paths: Sequence[str], target: Path) -> None:
    import cyvcf2

    check_headers_agree(paths)
    template = cyvcf2.VCF(paths[0])
    writer = cyvcf2.Writer(str(target), template, mode="wbu")
    writer.write_header()
    try:
        for path in paths:
            reader = template if path == paths[0] else cyvcf2.VCF(path)
            try:
                for record in reader:
                    writer.write_record(record)
            except Exception as err:  # cyvcf2 raises bare Exceptions for htslib read errors
                raise VcfParseError(path, str(err).strip().splitlines()[-1]) from None
            finally:
                reader.close()
    finally:
        writer.close()


def check_inputs(inputs: Sequence[str]) -> None:
    """VcfParseError for a missing input; ``-`` (standard input) only alone."""
    if not inputs:
        raise VcfZarrError("no input to convert")
    if STDIN in inputs and len(inputs) > 1:
        raise VcfZarrError("'-' (standard input) cannot be combined with other inputs")
    for path in inputs:
        if path != STDIN and not Path(path).is_file():
            raise VcfParseError(path, "no such file")


def single_input(inputs: Sequence[str], work: Path) -> str:
    """The one file the conversion reads: the input itself, or a copy in ``work``."""
    if inputs == [STDIN]:
        target = work / "stdin"
        with open(target, "wb") as f:
            shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
        return str(target)
    if len(inputs) == 1:
        return inputs[0]
    target = work / "inputs.bcf"
    _concatenate(inputs, target)
    return str(target)
