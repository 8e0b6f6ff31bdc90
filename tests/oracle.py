"""bcftools' view of a VCF/BCF file, parsed into typed Python values: the tests' only source of truth.

Everything comes from pysam's bundled bcftools (never a system binary). Records are read with
``bcftools query -f '%END\\t%LINE'``: ``%LINE`` is the record exactly as htslib formats it (after
its own normalisation, e.g. dropped duplicate FORMAT tags), and ``%END`` is ``POS + rlen - 1``.
The VCF text is then parsed with the header's Number and Type of each field, the way htslib
splits it (tab, ``;``, ``=``, ``:`` and ``,``), so header-undeclared fields and contigs work too:
htslib declares them on the fly (INFO/FORMAT as ``Number=1,Type=String``, contigs without a
length), and so does :func:`header`, except for an undeclared INFO key that no record gives a
value: bcftools shows it as a flag (``view`` writes the bare key, ``query -f '%INFO/K'`` prints
``1`` where it is and ``.`` where not), so :func:`header` declares it ``Number=0,Type=Flag``.

Value conventions (shared by :class:`Record` INFO values and :func:`calls`):

- Number=1 fields are scalars (``None`` when missing); a Number=1 String is one string, commas
  included.
- Other Numbers give a list, or ``None`` when the whole value is missing (``.`` or absent: BCF
  cannot tell these apart); missing elements are ``None`` (``1,.`` is ``[1, None]``, and ``.,.``
  is ``[None, None]``, as bcftools prints it, from VCF or BCF).
- Flag is ``True``/``False``.
- GT is a :class:`Genotype`, or ``None`` when the whole GT is ``.`` or absent.

>>> r = records(CORPUS_SAMPLE)[4]
>>> (r.chrom, r.pos, r.id, r.ref, r.alt, r.qual, r.filters, r.info["AF"], r.info["DB"])
('20', 1110696, 'rs6040355', 'A', ['G', 'T'], 67.0, ['PASS'], [0.333, 0.667], True)
"""

from __future__ import annotations

import atexit
import functools
import math
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pysam
import pysam.bcftools as bcftools
from pysam.utils import SamtoolsError as BcftoolsError  # raised when bcftools rejects a file

__all__ = ["BcftoolsError", "FieldDef", "Genotype", "Header", "Record", "Value", "calls",
           "float_equal", "genotype_arrays", "header", "parse_calls", "parse_genotype",
           "parse_record", "parse_value", "records"]

#: A parsed INFO or FORMAT value, by the conventions above: int, float, str, bool, a list of
#: them (elements may be None), a :class:`Genotype`, or None. Which one depends on the field's
#: header line, so tests narrow it themselves.
Value: TypeAlias = Any

CORPUS_SAMPLE = str(
    Path(__file__).parent / "data/corpus/sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"
)

#: How htslib declares a field that the body uses but the header does not.
UNDECLARED_NUMBER = "1"
UNDECLARED_TYPE = "String"
UNDECLARED_DESCRIPTION = "Dummy"


@dataclass(frozen=True)
class FieldDef:
    name: str
    number: str
    vcf_type: str
    description: str


@dataclass(frozen=True)
class Header:
    samples: list[str]
    contigs: list[tuple[str, int | None]]  # header order, then body-only contigs in body order
    filters: list[tuple[str, str]]  # (ID, Description): PASS first, then header order
    info: dict[str, FieldDef]
    format: dict[str, FieldDef]


@dataclass(frozen=True)
class Record:
    chrom: str
    pos: int
    id: str | None
    ref: str
    alt: list[str]
    qual: float | None
    filters: list[str] | None  # None when FILTER is '.'
    end: int  # bcftools %END: POS + rlen - 1
    info: dict[str, Value]  # every INFO field of header(): see the module's value conventions


@dataclass(frozen=True)
class Genotype:
    alleles: tuple[int | None, ...]
    phased: bool


# ---------------------------------------------------------------------------------------------
# bcftools calls (cached: one call per file and arguments)


@functools.cache
def _header_text(path: str) -> str:
    text = bcftools.view("-h", path)
    assert isinstance(text, str)
    return text


@functools.lru_cache(maxsize=64)
def _body_lines(path: str, region: str | None, targets: str | None) -> tuple[tuple[int, str], ...]:
    """(END, VCF line without newline) of every record bcftools reports."""
    args = ["-f", "%END\t%LINE"]
    if region is not None:
        args += ["-r", region]
        path = _indexed(path)
    if targets is not None:
        args += ["-t", targets]
    out = bcftools.query(*args, path)
    assert isinstance(out, str)
    lines = []
    for line in out.splitlines():
        if line:
            end, _, text = line.partition("\t")
            lines.append((int(end), text))
    return tuple(lines)


_TEMP_DIRS: list[str] = []


@atexit.register
def _remove_temp_dirs() -> None:
    for d in _TEMP_DIRS:
        shutil.rmtree(d, ignore_errors=True)


def _has_index(path: str) -> bool:
    return any(os.path.exists(path + ext) for ext in (".tbi", ".csi"))


@functools.cache
def _indexed(path: str) -> str:
    """``path`` if it has an index, else a bgzipped and indexed copy of it (in a temp dir)."""
    if _has_index(path):
        return path
    tmp = tempfile.mkdtemp(prefix="oracle-")
    _TEMP_DIRS.append(tmp)
    copy = os.path.join(tmp, "copy.vcf.gz")
    bcftools.view("-Oz", "-o", copy, path, catch_stdout=False)
    pysam.tabix_index(copy, preset="vcf", force=True, csi=True)
    return copy


# ---------------------------------------------------------------------------------------------
# Header


def _split_structured(text: str) -> dict[str, str]:
    """``ID=x,Number=1,Description="a, \\"b\\""`` -> dict (quotes removed, escapes resolved)."""
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        eq = text.index("=", i)
        key = text[i:eq].strip()
        i = eq + 1
        if i < n and text[i] == '"':
            i += 1
            chars = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                chars.append(text[i])
                i += 1
            value = "".join(chars)
            i += 1  # closing quote
        else:
            comma = text.find(",", i)
            comma = n if comma < 0 else comma
            value = text[i:comma]
            i = comma
        out[key] = value
        if i < n and text[i] == ",":
            i += 1
    return out


def _field_def(attrs: dict[str, str]) -> FieldDef:
    return FieldDef(attrs["ID"], attrs.get("Number", "."), attrs.get("Type", "String"),
                    attrs.get("Description", ""))


@functools.cache
def _declared_header(path: str) -> Header:
    samples: list[str] = []
    contigs: list[tuple[str, int | None]] = []
    filters: dict[str, str] = {}
    info: dict[str, FieldDef] = {}
    fmt: dict[str, FieldDef] = {}
    for line in _header_text(path).splitlines():
        if line.startswith("#CHROM"):
            samples = line.split("\t")[9:]
            continue
        for kind in ("contig", "FILTER", "INFO", "FORMAT"):
            prefix = f"##{kind}=<"
            if line.startswith(prefix) and line.endswith(">"):
                attrs = _split_structured(line[len(prefix) : -1])
                if kind == "contig":
                    length = attrs.get("length")
                    contigs.append((attrs["ID"], int(length) if length else None))
                elif kind == "FILTER":
                    filters.setdefault(attrs["ID"], attrs.get("Description", ""))
                elif kind == "INFO":
                    info.setdefault(attrs["ID"], _field_def(attrs))
                else:
                    fmt.setdefault(attrs["ID"], _field_def(attrs))
    ordered_filters = [("PASS", filters.pop("PASS", "All filters passed"))]
    ordered_filters += list(filters.items())
    return Header(samples, contigs, ordered_filters, info, fmt)


def _undeclared(name: str) -> FieldDef:
    return FieldDef(name, UNDECLARED_NUMBER, UNDECLARED_TYPE, UNDECLARED_DESCRIPTION)


@functools.cache
def _header(path: str) -> Header:
    declared = _declared_header(path)
    contigs = list(declared.contigs)
    known_contigs = {name for name, _ in contigs}
    filters = list(declared.filters)
    known_filters = {name for name, _ in filters}
    info = dict(declared.info)
    fmt = dict(declared.format)
    valued: set[str] = set()
    for _, line in _body_lines(path, None, None):
        cols = line.split("\t", 9)
        if cols[0] not in known_contigs:
            known_contigs.add(cols[0])
            contigs.append((cols[0], None))
        if cols[6] != ".":
            for name in cols[6].split(";"):
                if name not in known_filters:
                    known_filters.add(name)
                    filters.append((name, UNDECLARED_DESCRIPTION))
        if cols[7] != ".":
            for item in cols[7].split(";"):
                key, eq, _ = item.partition("=")
                if key not in info:
                    info[key] = _undeclared(key)
                if eq:
                    valued.add(key)
        if len(cols) > 8 and cols[8] != ".":
            for key in cols[8].split(":"):
                if key not in fmt:
                    fmt[key] = _undeclared(key)
    for key in set(info) - set(declared.info) - valued:  # bare everywhere: bcftools' flag
        info[key] = FieldDef(key, "0", "Flag", UNDECLARED_DESCRIPTION)
    return Header(declared.samples, contigs, filters, info, fmt)


def header(path: str | os.PathLike) -> Header:
    """The header as bcftools sees it, plus what htslib declares on the fly from the body.

    >>> h = header(CORPUS_SAMPLE)
    >>> h.samples, h.contigs, [f for f, _ in h.filters]
    (['NA00001', 'NA00002', 'NA00003'], [('19', None), ('20', None), ('X', None)], ['PASS', 's50', 'q10'])
    >>> h.format["HQ"]
    FieldDef(name='HQ', number='2', vcf_type='Integer', description='Haplotype Quality')
    """
    return _header(str(path))


# ---------------------------------------------------------------------------------------------
# Values


def _scalar(text: str, vcf_type: str) -> Value:
    if text == ".":
        return None
    if vcf_type == "Integer":
        return int(text)
    if vcf_type == "Float":
        return float(text)
    return text


def parse_value(text: str | None, field: FieldDef) -> Value:
    """One INFO or FORMAT value's VCF text (``None`` = absent) -> typed value.

    >>> parse_value("1,.", FieldDef("AD", "R", "Integer", ""))
    [1, None]
    >>> parse_value("a,b", FieldDef("S", "1", "String", ""))
    'a,b'
    >>> parse_value(".,.", FieldDef("HQ", "2", "Integer", ""))
    [None, None]
    >>> parse_value(".", FieldDef("HQ", "2", "Integer", "")) is None
    True
    """
    if field.vcf_type == "Flag":
        return text is not None
    if text is None:
        return None
    if field.number == "1":
        if "," in text and field.vcf_type in ("Integer", "Float"):
            return [_scalar(t, field.vcf_type) for t in text.split(",")]  # more than declared
        return _scalar(text, field.vcf_type)
    if text == ".":
        return None
    return [_scalar(t, field.vcf_type) for t in text.split(",")]


def parse_genotype(text: str | None) -> Genotype | None:
    """GT text -> :class:`Genotype`; phased when every separator is ``|`` (a VCF 4.4 leading
    ``|``/``/`` prefix counts as the separator of a haploid call).

    >>> parse_genotype("0|1"), parse_genotype("./1"), parse_genotype("1"), parse_genotype(".")
    (Genotype(alleles=(0, 1), phased=True), Genotype(alleles=(None, 1), phased=False), \
Genotype(alleles=(1,), phased=False), None)
    """
    if text is None or text == ".":
        return None
    seps = []
    alleles: list[str] = []
    token = ""
    for ch in text:
        if ch in "/|":
            if token or alleles:
                alleles.append(token)
                token = ""
            seps.append(ch)
        else:
            token += ch
    alleles.append(token)
    values = tuple(None if a == "." else int(a) for a in alleles)
    return Genotype(values, bool(seps) and all(s == "|" for s in seps))


def _info(text: str, fields: dict[str, FieldDef]) -> dict[str, Value]:
    present: dict[str, str | None] = {}
    if text != ".":
        for item in text.split(";"):
            key, eq, value = item.partition("=")
            present[key] = value if eq else None
    out: dict[str, Value] = {}
    for name, field in fields.items():
        if name not in present:
            out[name] = False if field.vcf_type == "Flag" else None
        elif field.vcf_type == "Flag":
            out[name] = True
        else:
            out[name] = parse_value(present[name] if present[name] is not None else ".", field)
    return out


def parse_record(line: str, hdr: Header, end: int = 0) -> Record:
    """One VCF body line (as htslib writes it) -> :class:`Record`, typed by ``hdr``."""
    cols = line.split("\t", 9)
    return Record(
        chrom=cols[0],
        pos=int(cols[1]),
        id=None if cols[2] == "." else cols[2],
        ref=cols[3],
        alt=[] if cols[4] == "." else cols[4].split(","),
        qual=None if cols[5] == "." else float(cols[5]),
        filters=None if cols[6] == "." else cols[6].split(";"),
        end=end,
        info=_info(cols[7], hdr.info),
    )


def parse_calls(
    line: str, hdr: Header, fields: Sequence[str], sample_indexes: Sequence[int] | None = None
) -> list[dict[str, Value]]:
    """One VCF body line -> per sample (all, or ``sample_indexes``): ``{field: value}``."""
    cols = line.split("\t")
    keys = cols[8].split(":") if len(cols) > 8 else []
    where = {k: i for i, k in enumerate(keys)}
    out = []
    for s in range(len(cols) - 9) if sample_indexes is None else sample_indexes:
        parts = cols[9 + s].split(":")
        call: dict[str, Value] = {}
        for name in fields:
            i = where.get(name)
            text = parts[i] if i is not None and i < len(parts) else None
            call[name] = parse_genotype(text) if name == "GT" else parse_value(text, hdr.format[name])
        out.append(call)
    return out


@functools.lru_cache(maxsize=64)
def _records(path: str, region: str | None, targets: str | None) -> tuple[Record, ...]:
    hdr = _header(path)
    return tuple(parse_record(line, hdr, end) for end, line in _body_lines(path, region, targets))


def records(
    path: str | os.PathLike, *, region: str | None = None, targets: str | None = None
) -> list[Record]:
    """Every record bcftools reports (``region``: ``bcftools query -r``, ``targets``: ``-t``)."""
    return list(_records(str(path), region, targets))


def _sample_indexes(path: str, samples: Sequence[str] | None) -> list[int]:
    names = _header(path).samples
    if samples is None:
        return list(range(len(names)))
    position = {name: i for i, name in enumerate(names)}
    return [position[s] for s in samples]


@functools.lru_cache(maxsize=32)
def _calls(path, fields, region, targets, samples):
    hdr = _header(path)
    keep = _sample_indexes(path, samples)
    return [parse_calls(line, hdr, fields, keep) for _, line in _body_lines(path, region, targets)]


def calls(
    path: str | os.PathLike,
    fields: Sequence[str] = ("GT",),
    *,
    region: str | None = None,
    targets: str | None = None,
    samples: Sequence[str] | None = None,
) -> list[list[dict[str, Value]]]:
    """Per record, per sample: ``{field: value}`` for each of ``fields`` (FORMAT names); cached,
    so treat the dicts as read-only.

    >>> calls(CORPUS_SAMPLE, ("GT", "HQ"))[2][2]  # HQ .,. (bcftools query prints .,.)
    {'GT': Genotype(alleles=(1, 1), phased=False), 'HQ': [None, None]}
    """
    result = _calls(str(path), tuple(fields), region, targets,
                    None if samples is None else tuple(samples))
    return [list(r) for r in result]


@functools.lru_cache(maxsize=8)
def _genotype_arrays(path: str, region: str | None, targets: str | None):
    lines = _body_lines(path, region, targets)
    n, m = len(lines), len(_header(path).samples)
    ids = np.zeros((n, m), dtype=np.int64)  # per call: index of its GT text in `texts`
    texts: dict[str | None, int] = {}
    for v, (_, line) in enumerate(lines):
        cols = line.split("\t")
        keys = cols[8] if len(cols) > 8 else ""
        gts: Sequence[str | None]
        if keys == "GT":
            gts = cols[9 : 9 + m]
        elif keys.startswith("GT:"):
            gts = [t.split(":", 1)[0] for t in cols[9 : 9 + m]]
        else:
            gts = [None] * m
        ids[v] = [texts.setdefault(t, len(texts)) for t in gts]
    genotypes = [parse_genotype(t) for t in texts]
    ploidy = max([len(g.alleles) for g in genotypes if g is not None], default=1)
    table = np.full((len(genotypes), ploidy), -2, dtype=np.int32)
    phased_table = np.zeros(len(genotypes), dtype=bool)
    for k, gt in enumerate(genotypes):
        if gt is None:
            table[k, 0] = -1
        else:
            table[k, : len(gt.alleles)] = [-1 if a is None else a for a in gt.alleles]
            phased_table[k] = gt.phased
    alleles, phased = table[ids], phased_table[ids]
    alleles.flags.writeable = False
    phased.flags.writeable = False
    return alleles, phased


def genotype_arrays(
    path: str | os.PathLike, *, region: str | None = None, targets: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """GT of every call as arrays, for files too big for :func:`calls`: ``alleles`` int32
    (variants, samples, max ploidy) with -1 for a missing allele (a GT of ``.`` is ``[-1, -2...]``)
    and -2 padding shorter calls, and ``phased`` bool (variants, samples). Read-only.

    >>> a, p = genotype_arrays(CORPUS_SAMPLE)
    >>> a[8].tolist(), p[8].tolist()
    ([[0, -2], [0, 1], [0, 2]], [False, False, True])
    """
    return _genotype_arrays(str(path), region, targets)


def float_equal(expected: float | None, actual: float | None) -> bool:
    """Equal at what bcftools prints (6 significant digits of a float32); ``None`` only equals
    ``None``; NaN equals NaN.

    >>> float_equal(0.333, float(np.float32(0.333))), float_equal(9.6, 9.61), float_equal(None, 0.0)
    (True, False, False)
    """
    if expected is None or actual is None:
        return expected is None and actual is None
    e, a = float(np.float32(expected)), float(np.float32(actual))
    if math.isnan(e) or math.isnan(a):
        return math.isnan(e) and math.isnan(a)
    if math.isinf(e) or math.isinf(a):
        return e == a
    return math.isclose(e, a, rel_tol=1e-5, abs_tol=1e-37)
