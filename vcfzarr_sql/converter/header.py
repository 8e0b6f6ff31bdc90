"""What a VCF header declares: samples, contigs, filters and INFO/FORMAT fields.

Read from htslib's view of the header (through cyvcf2), so fields, contigs and filters that
htslib adds while it reads records (undeclared in the file's header) can be found by reading
the header again after the records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vcfzarr_sql.format import spec

if TYPE_CHECKING:
    from cyvcf2 import VCF


@dataclass(frozen=True)
class FieldDef:
    """One INFO or FORMAT field, as the header declares it."""

    category: str  # "INFO" or "FORMAT"
    name: str
    number: str  # "0", "1", "2", ..., "A", "R", "G", "."
    vcf_type: str  # "Integer", "Float", "Flag", "Character", "String"
    description: str

    @property
    def array(self) -> str:
        """The VCF Zarr array holding this field."""
        if self.category == "FORMAT":
            return spec.CALL_GENOTYPE if self.name == "GT" else spec.FORMAT_PREFIX + self.name
        return spec.INFO_PREFIX + self.name

    @property
    def key(self) -> tuple[str, str]:
        return (self.category, self.name)


@dataclass(frozen=True)
class HeaderInfo:
    """The parts of a VCF header the converter needs (picklable: crosses process boundaries)."""

    text: str  # from ##fileformat to #CHROM inclusive
    samples: tuple[str, ...]
    contigs: tuple[tuple[str, int | None], ...]  # (ID, length)
    filters: tuple[tuple[str, str], ...]  # (ID, description), PASS first
    fields: tuple[FieldDef, ...]  # header order, INFO and FORMAT interleaved as declared
    meta_lines: tuple[str, ...]  # every ## line of `text`, for appending htslib's additions


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


_CONTIG_ID = re.compile(r"^##contig=<(?:.*,)?ID=([^,>]+)")
_CONTIG_LENGTH = re.compile(r"[<,]length=(\d+)[,>]")


def contig_lengths(text: str) -> dict[str, int]:
    """Contig ID -> length, from the ``##contig`` lines of header text (cyvcf2 omits lengths).

    >>> contig_lengths("##contig=<ID=1,length=249250621>\\n##contig=<ID=X>")
    {'1': 249250621}
    """
    out: dict[str, int] = {}
    for line in text.split("\n"):
        name, length = _CONTIG_ID.match(line), _CONTIG_LENGTH.search(line)
        if name and length:
            out.setdefault(name.group(1), int(length.group(1)))
    return out


def read_header(reader: VCF) -> HeaderInfo:
    """The header of an open ``cyvcf2.VCF`` reader, as it stands now (htslib's view)."""
    text = reader.raw_header.rstrip("\n")
    contigs: list[tuple[str, int | None]] = []
    filters: list[tuple[str, str]] = []
    fields: list[FieldDef] = []
    lengths = contig_lengths(text)
    for record in reader.header_iter():
        info = record.info()
        kind = record.type
        if kind == "CONTIG":
            contigs.append((info["ID"], lengths.get(info["ID"])))
        elif kind == "FILTER":
            filters.append((info["ID"], _unquote(info.get("Description", ""))))
        elif kind in ("INFO", "FORMAT"):
            fields.append(
                FieldDef(
                    category=kind,
                    name=info["ID"],
                    number=info.get("Number", "."),
                    vcf_type=info.get("Type", "String"),
                    description=_unquote(info.get("Description", "")),
                )
            )
    filters.sort(key=lambda f: f[0] != "PASS")  # stable: PASS first, then header order
    lines = text.split("\n")
    return HeaderInfo(
        text=text,
        samples=tuple(reader.samples),
        contigs=tuple(contigs),
        filters=tuple(filters),
        fields=tuple(fields),
        meta_lines=tuple(line for line in lines if line.startswith("##")),
    )


def declaration(field: FieldDef) -> str:
    """The ``##INFO``/``##FORMAT`` line declaring ``field``.

    >>> declaration(FieldDef("INFO", "K", "0", "Flag", 'a "flag"'))
    '##INFO=<ID=K,Number=0,Type=Flag,Description="a \\\\"flag\\\\"">'
    """
    description = field.description.replace("\\", "\\\\").replace('"', '\\"')
    return (f"##{field.category}=<ID={field.name},Number={field.number},Type={field.vcf_type},"
            f'Description="{description}">')


def merged_header_text(original: HeaderInfo, later: list[HeaderInfo],
                       retyped: Sequence[FieldDef] = ()) -> str:
    """``original``'s text with the ## lines htslib added while reading (``later`` views) inserted
    before ``#CHROM``, in order of first appearance; an added line declaring a field of
    ``retyped`` declares it as that field says."""
    known = set(original.meta_lines)
    replaced = {f"##{f.category}=<ID={f.name},": declaration(f) for f in retyped}
    added: list[str] = []
    for header in later:
        for line in header.meta_lines:
            if line not in known:
                known.add(line)
                start = line[: line.find(",") + 1]
                added.append(replaced.get(start, line))
    lines = original.text.split("\n")
    return "\n".join(lines[:-1] + added + lines[-1:])
