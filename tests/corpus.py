"""The bundled corpus of real VCF/BCF files (``tests/data/corpus``) and what bcftools makes of them.

``MANIFEST.tsv`` lists the well-formed files, ``malformed/MALFORMED.tsv`` the broken or hostile
ones; both record whether bcftools and cyvcf2 parse each file.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"
MALFORMED = CORPUS / "malformed"


@dataclass(frozen=True)
class CorpusFile:
    path: Path
    records: int | None
    samples: int | None
    parses_bcftools: str
    parses_cyvcf2: str
    features: str

    @property
    def id(self) -> str:
        return str(self.path.relative_to(CORPUS))

    @property
    def bcftools_reads(self) -> bool:
        """bcftools reads it (``ok``; ``ok_vcf_out_only`` means it cannot write BCF of it)."""
        return self.parses_bcftools.startswith("ok")


def _int(text: str) -> int | None:
    return int(text) if text.strip().lstrip("-").isdigit() else None


def corpus_files() -> list[CorpusFile]:
    """Every file of MANIFEST.tsv."""
    with open(CORPUS / "MANIFEST.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [
        CorpusFile(
            path=CORPUS / row["path"],
            records=_int(row["records"]),
            samples=_int(row["samples"]),
            parses_bcftools=row["parses_bcftools"],
            parses_cyvcf2=row["parses_cyvcf2"],
            features=row["features"],
        )
        for row in rows
    ]


def malformed_files() -> list[CorpusFile]:
    """Every file of malformed/MALFORMED.tsv."""
    with open(MALFORMED / "MALFORMED.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [
        CorpusFile(
            path=MALFORMED / row["path_under_all"],
            records=None,
            samples=None,
            parses_bcftools=row["parses_bcftools"],
            parses_cyvcf2=row["parses_cyvcf2"],
            features=row.get("suite_label", ""),
        )
        for row in rows
    ]


def readable_corpus() -> list[CorpusFile]:
    """The corpus files bcftools reads: each must convert and match bcftools."""
    return [f for f in corpus_files() if f.bcftools_reads]
