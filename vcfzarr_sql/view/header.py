"""The header ``view`` writes: the store's VCF header, with the selected samples."""

from __future__ import annotations

from collections.abc import Sequence

from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.format import spec
from vcfzarr_sql.store.vcz import VczStore

#: The lines bcftools adds when it recomputes INFO/AC and INFO/AN for a sample subset.
COUNT_LINES = {
    "AC": '##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count in genotypes">',
    "AN": '##INFO=<ID=AN,Number=1,Type=Integer,Description="Total number of alleles in called genotypes">',
}
FIXED_COLUMNS = ["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO"]


def header_text(store: VczStore, samples: Sequence[str], *, add_counts: bool = False,
                genotypes: bool = True) -> str:
    """The header of the store (``vcf_header``) with ``samples`` as the sample columns,
    without the lines htslib added while the converter read the records.

    ``add_counts``: declare INFO/AC and INFO/AN if the store does not (bcftools does so when
    it recomputes them for a subset of samples). ``genotypes=False`` (``-G``): no
    ``##FORMAT`` lines and no FORMAT and sample columns, as bcftools writes it.
    """
    text = store.vcf_header
    if not text:
        raise NotSupportedError(f"{store.path}: the store has no vcf_header to write VCF with")
    added = set(store.attrs.get(spec.ATTR_HEADER_ADDED, ()))  # bcftools writes the header first
    meta = [line for line in text.splitlines() if line.startswith("##") and line not in added]
    if not genotypes:
        meta = [line for line in meta if not line.startswith("##FORMAT=")]
    if add_counts:
        meta += [COUNT_LINES[n] for n in ("AC", "AN") if n not in store.info_fields]
    columns = FIXED_COLUMNS + (["FORMAT", *samples] if samples and genotypes else [])
    return "\n".join([*meta, "\t".join(columns)]) + "\n"
