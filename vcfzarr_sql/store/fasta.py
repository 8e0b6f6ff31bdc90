"""Reference bases from a FASTA file: what ``bcftools merge --gvcf REF.fa`` reads for the REF
of a reference block that starts where no input's block does.

With the ``.fai`` index beside the file (``samtools faidx``), a base is one seek; without it,
the file is read once (fine for the small references of tests).
"""

from __future__ import annotations

import os
from pathlib import Path

from vcfzarr_sql.errors import VcfZarrError


class FastaError(VcfZarrError):
    """The reference FASTA cannot be read."""


class Fasta:
    """Bases of the FASTA at ``path`` (plain text, not compressed)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._index: dict[str, tuple[int, int, int, int]] = {}
        self._sequences: dict[str, str] = {}
        fai = self.path.with_name(self.path.name + ".fai")
        try:
            if fai.exists():
                for line in fai.read_text().splitlines():
                    name, length, offset, bases, width = line.split("\t")[:5]
                    self._index[name] = (int(length), int(offset), int(bases), int(width))
            else:
                self._read_all()
        except (OSError, ValueError) as err:
            raise FastaError(f"{self.path}: cannot read it as a FASTA reference ({err})") from None

    def _read_all(self) -> None:
        name: str | None = None
        parts: list[str] = []
        with open(self.path) as handle:
            for line in handle:
                if line.startswith(">"):
                    if name is not None:
                        self._sequences[name] = "".join(parts)
                    name, parts = line[1:].split()[0], []
                elif name is not None:
                    parts.append(line.strip())
        if name is not None:
            self._sequences[name] = "".join(parts)

    def base(self, contig: str, position: int) -> str:
        """The base at 1-based ``position`` of ``contig`` as the file has it (bcftools does
        not change its case), ``N`` where the reference has none (bcftools keeps ``N`` then)."""
        if contig in self._sequences:
            sequence = self._sequences[contig]
            return sequence[position - 1] if 0 < position <= len(sequence) else "N"
        found = self._index.get(contig)
        if found is None or not 0 < position <= found[0]:
            return "N"
        _, offset, bases, width = found
        where = offset + (position - 1) // bases * width + (position - 1) % bases
        try:
            with open(self.path, "rb") as handle:
                handle.seek(where)
                return handle.read(1).decode("ascii") or "N"
        except (OSError, UnicodeDecodeError) as err:
            raise FastaError(f"{self.path}: cannot read {contig}:{position} ({err})") from None
