"""The header ``view`` writes: the store's VCF header (or one built from its metadata), with the
selected samples."""

from __future__ import annotations

from collections.abc import Sequence

from vcfzarr_sql.format import spec
from vcfzarr_sql.store.cohort import CohortStore
from vcfzarr_sql.store.fields import FieldInfo
from vcfzarr_sql.store.vcz import VczStore

#: The lines bcftools adds when it recomputes INFO/AC and INFO/AN for a sample subset.
COUNT_LINES = {
    "AC": '##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count in genotypes">',
    "AN": '##INFO=<ID=AN,Number=1,Type=Integer,Description="Total number of alleles in called genotypes">',
}
FIXED_COLUMNS = ["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO"]


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _field_line(field: FieldInfo) -> str:
    return (f"##{field.category}=<ID={field.name},Number={field.number},Type={field.vcf_type},"
            f"Description={_quoted(field.description)}>")


def built_meta_lines(store: VczStore) -> list[str]:
    """The ## lines of a store that keeps no ``vcf_header`` (bio2zarr 0.2+ stores), from its
    metadata, as vcztools builds them: ``##fileformat`` and the other lines of
    ``vcf_meta_information`` in their order, then FILTER (``filter_id``, ``filter_description``),
    INFO and FORMAT (Number, Type and Description as :mod:`vcfzarr_sql.store.fields` reads them
    from the arrays: a fixed Number above 1 reads as ``.``), and contig lines (with
    ``contig_length`` when the store has it)."""
    pairs = [(str(k), str(v)) for k, v in store.attrs.get(spec.ATTR_META_INFORMATION) or ()]
    fileformat = next((v for k, v in pairs if k == "fileformat"), "VCFv4.3")
    lines = [f"##fileformat={fileformat}", *(f"##{k}={v}" for k, v in pairs if k != "fileformat")]
    lines += [f"##FILTER=<ID={name},Description={_quoted(description)}>"
              for name, description in zip(store.filters, store.filter_descriptions)]
    lines += [_field_line(f) for f in store.info_fields.values()]
    if store.num_samples:
        lines += [_field_line(f) for f in store.format_fields.values()]
    lengths = [-1] * len(store.contigs) if store.contig_lengths is None else store.contig_lengths.tolist()
    lines += [f"##contig=<ID={contig},length={length}>" if length >= 0 else f"##contig=<ID={contig}>"
              for contig, length in zip(store.contigs, lengths)]
    return lines


def _definition(line: str) -> str:
    """What a meta line defines: ``##INFO=<ID=DP`` for a structured line, else the line."""
    return line.split(",", 1)[0] if line.startswith(("##INFO=", "##FORMAT=", "##FILTER=", "##contig=")) else line


def header_text(store: VczStore, samples: Sequence[str], *, add_counts: bool = False,
                genotypes: bool = True) -> str:
    """The header of the store (``vcf_header``) with ``samples`` as the sample columns,
    without the lines htslib added while the converter read the records; for a store without
    ``vcf_header``, :func:`built_meta_lines`.

    For a cohort (:class:`~vcfzarr_sql.store.cohort.CohortStore`) whose ``samples`` all came
    from one input, that input's own header comes first (its meta lines as they were), then the
    definitions of the other batches it lacks.

    ``add_counts``: declare INFO/AC and INFO/AN if the store does not (bcftools does so when
    it recomputes them for a subset of samples). ``genotypes=False`` (``-G``): no
    ``##FORMAT`` lines and no FORMAT and sample columns, as bcftools writes it.
    """
    text = store.vcf_header
    if text:
        added = set(store.attrs.get(spec.ATTR_HEADER_ADDED, ()))  # bcftools writes the header first
        meta = [line for line in text.splitlines() if line.startswith("##") and line not in added]
    else:
        meta = built_meta_lines(store)
    original = store.original_header(list(samples)) if isinstance(store, CohortStore) else None
    if original is not None:  # the samples' own input's header, then what other batches declare
        own = [line for line in original[0].splitlines()
               if line.startswith("##") and line not in set(original[1])]
        meta = own + [line for line in meta if _definition(line) not in {_definition(x) for x in own}]
    if not genotypes:
        meta = [line for line in meta if not line.startswith("##FORMAT=")]
    if add_counts:
        meta += [COUNT_LINES[n] for n in ("AC", "AN") if n not in store.info_fields]
    columns = FIXED_COLUMNS + (["FORMAT", *samples] if samples and genotypes else [])
    return "\n".join([*meta, "\t".join(columns)]) + "\n"
