"""The dataset sizes the benchmarks run at, and where each one's files live."""

from __future__ import annotations

import dataclasses
from pathlib import Path

#: Cached generated data (gitignored) and committed results.
DATA_DIR = Path(__file__).parent / "data"
RESULTS_DIR = Path(__file__).parent / "results"


@dataclasses.dataclass(frozen=True)
class Contig:
    """One simulated chromosome: its VCF name, length and mutation rate."""

    name: str
    length: int
    mutation_rate: float


@dataclasses.dataclass(frozen=True)
class Size:
    """A benchmark size: how many diploid samples, which contigs, how many timing repeats."""

    name: str
    num_samples: int
    contigs: tuple[Contig, ...]
    repeats: int
    seed: int = 42

    @property
    def directory(self) -> Path:
        return DATA_DIR / self.name


@dataclasses.dataclass(frozen=True)
class Files:
    """Every file generated for one size (same records in each)."""

    directory: Path

    @property
    def vcf(self) -> Path:  # bgzipped, tabix (.tbi) and CSI (.csi) indexed
        return self.directory / "sim.vcf.gz"

    @property
    def bcf(self) -> Path:  # CSI indexed
        return self.directory / "sim.bcf"

    @property
    def variants_parquet(self) -> Path:
        return self.directory / "variants.parquet"

    @property
    def calls_parquet(self) -> Path:
        return self.directory / "calls.parquet"

    @property
    def done(self) -> Path:
        return self.directory / "DONE"

    def store(self, tool: str) -> Path:
        """The VCF Zarr store written by ``tool`` ("vcfzarr-sql" or "vcf2zarr")."""
        return self.directory / f"{tool}.vcz"


#: ~200 samples x ~20k variants: a check that everything runs, in a couple of minutes.
QUICK = Size(
    "quick",
    num_samples=200,
    contigs=(Contig("1", 14_000_000, 4e-9), Contig("2", 6_000_000, 4e-9)),
    repeats=3,
)
#: >= 2000 samples x >= 500k variants.
FULL = Size(
    "full",
    num_samples=2000,
    contigs=(Contig("1", 100_000_000, 1e-8), Contig("2", 50_000_000, 1e-8)),
    repeats=3,
)
SIZES = {size.name: size for size in (QUICK, FULL)}
