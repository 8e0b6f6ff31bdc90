"""The stored genotype counts of an existing store, read from its genotypes and written beside
them (``vcfzarr-sql index``; ``convert`` computes them from the genotypes in memory instead,
in :mod:`.encode`)."""

from __future__ import annotations

import os

from vcfzarr_sql.query.summarise import summarise_chunk
from vcfzarr_sql.store.indexing import write_genotype_counts as _write


def write_genotype_counts(path: str | os.PathLike) -> bool:
    """Write the stored genotype counts (:mod:`vcfzarr_sql.format.summaries`, replacing any)
    into the local directory store at ``path``; False (nothing written) when it has no genotypes."""
    return _write(path, summarise_chunk)
