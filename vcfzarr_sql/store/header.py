"""The parts of a stored VCF header text a reader needs: INFO, FORMAT and FILTER definitions.

VCF Zarr 0.2/0.3 stores the header as the ``vcf_header`` group attribute; 0.4+ may not (then
definitions come from the arrays themselves, see :mod:`vcfzarr_sql.store.fields`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HeaderField:
    """One ``##INFO``/``##FORMAT`` line."""

    name: str
    number: str
    vcf_type: str
    description: str


@dataclass(frozen=True)
class HeaderDefinitions:
    """INFO and FORMAT definitions in header order, and FILTER descriptions by ID."""

    info: dict[str, HeaderField] = field(default_factory=dict)
    format: dict[str, HeaderField] = field(default_factory=dict)
    filters: dict[str, str] = field(default_factory=dict)


def structured_fields(text: str) -> dict[str, str]:
    """The key=value pairs inside ``<...>`` of a structured meta line; quotes removed.

    >>> structured_fields('ID=AF,Number=A,Type=Float,Description="Allele \\\\"freq\\\\", ALT"')
    {'ID': 'AF', 'Number': 'A', 'Type': 'Float', 'Description': 'Allele "freq", ALT'}
    """
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        eq = text.find("=", i)
        if eq < 0:
            break
        key = text[i:eq].strip()
        i = eq + 1
        if i < n and text[i] == '"':
            chars = []
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                chars.append(text[i])
                i += 1
            value, i = "".join(chars), i + 1
        else:
            end = text.find(",", i)
            end = n if end < 0 else end
            value, i = text[i:end], end
        out[key] = value
        i += 1 if i < n and text[i] == "," else 0
    return out


def parse_header(text: str) -> HeaderDefinitions:
    """INFO/FORMAT/FILTER definitions of a VCF header (first definition of an ID wins).

    >>> h = parse_header('##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">\\n'
    ...                  '##FILTER=<ID=q10,Description="Quality below 10">\\n#CHROM\\tPOS')
    >>> h.info["DP"]
    HeaderField(name='DP', number='1', vcf_type='Integer', description='Depth')
    >>> h.filters
    {'q10': 'Quality below 10'}
    """
    defs = HeaderDefinitions()
    for line in text.splitlines():
        kind, sep, rest = line.removeprefix("##").partition("=<")
        if not (line.startswith("##") and sep and kind in ("INFO", "FORMAT", "FILTER")):
            continue
        attrs = structured_fields(rest.rstrip().removesuffix(">"))
        name = attrs.get("ID")
        if name is None:
            continue
        description = attrs.get("Description", "")
        if kind == "FILTER":
            defs.filters.setdefault(name, description)
        else:
            number, vcf_type = attrs.get("Number", "."), attrs.get("Type", "String")
            target = defs.info if kind == "INFO" else defs.format
            target.setdefault(name, HeaderField(name, number, vcf_type, description))
    return defs
