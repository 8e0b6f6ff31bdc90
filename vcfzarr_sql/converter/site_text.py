"""The eight site columns of plain record lines read with numpy, without htslib.

For the fast path of :mod:`.reader`: a block of GT-only lines whose genotypes
:mod:`.genotype_text` parsed needs htslib only for CHROM to INFO. Where those are plain, a
line holds nothing htslib would read otherwise than as its text: CHROM a contig the header
declares, POS a number without sign or leading zero, ID without blanks, REF bases
(``ACGTN``), ALT ``.`` or bases and ``*`` separated by commas, QUAL ``.`` or a short decimal,
FILTER ``.``, ``PASS`` or one filter the header declares, and INFO ``.``. The columns are then
those :func:`vcfzarr_sql.converter.columns.fixed_columns` takes from htslib's records: the
record's length is its REF's (no INFO/END, no symbolic allele), a QUAL of at most 15 digits is
the correctly rounded double htslib's parser gives, made float32. A block with any other line
returns None and htslib parses it.

A one-sample file (a sample ``add`` adds to a cohort) has short lines: parsing its sites with
htslib took most of the time of reading it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import numpy as np

from vcfzarr_sql.converter import columns as col
from vcfzarr_sql.format import spec

_QUALITY = re.compile(rb"[0-9]{1,7}(?:\.[0-9]{1,7})?")
#: The bytes of plain alleles (REF: no ``*`` or ``,``, checked apart).
_BASES = b"ACGTN"


class Valueless:
    """A record without INFO or FORMAT values other than GT, as :mod:`.columns` reads a record
    (what a block's fields are for lines whose sites :func:`site_columns` read)."""

    INFO: dict[str, object] = {}
    FORMAT = ("GT",)

    def format(self, name: str, kind: object = None) -> None:
        return None


VALUELESS = Valueless()


def site_columns(heads: Sequence[bytes], contigs: Collection[str],
                 filters: Collection[str]) -> dict[str, np.ndarray] | None:
    """The fixed columns (:func:`~vcfzarr_sql.converter.columns.fixed_columns`) of the lines
    whose first eight columns are ``heads``, when every line is plain (the module docstring)
    with a contig of ``contigs`` and a filter of ``filters`` (the header's); else None.

    >>> c = site_columns([b"1\\t5\\trs1\\tA\\tC,T\\t9.5\\tPASS\\t.", b"1\\t7\\t.\\tAT\\t.\\t.\\t.\\t."], ["1"], ["PASS"])
    >>> c["position"].tolist(), c["id"].tolist(), c["alleles"].tolist(), c["length"].tolist()
    ([5, 7], ['rs1', '.'], [['A', 'C', 'T'], ['AT', '', '']], [1, 2])
    >>> c["quality"].tolist()[0], c["filters"].tolist()
    (9.5, ['PASS', ''])
    >>> site_columns([b"1\\t5\\t.\\tA\\t<DEL>\\t.\\t.\\t."], ["1"], ["PASS"]) is None
    True
    """
    n = len(heads)
    parts = b"\t".join(heads).split(b"\t")
    if len(parts) != 8 * n or b"" in parts:
        return None
    chrom, pos, ids, ref, alt, qual, filt, info = (parts[k::8] for k in range(8))
    positions = b"\t".join(pos)
    if info.count(b".") != n or positions.translate(None, b"0123456789\t") or positions.startswith(b"0") \
            or b"\t0" in positions or max(map(len, pos), default=0) > 9:
        return None
    names = set(chrom)
    if not {c.decode() for c in names} <= set(contigs):
        return None
    refs, alts = b"\t".join(ref), b"\t%b\t" % b"\t".join(alt)
    alts = alts.replace(b"\t.\t", b"\t\t").replace(b"\t.\t", b"\t\t")  # (twice: "\t.\t.\t")
    if refs.translate(None, _BASES + b"\t") or alts.translate(None, _BASES + b"*,\t") or b",," in alts \
            or b"\t," in alts or b",\t" in alts:
        return None
    text_ids = b"\t".join(ids)
    if b" " in text_ids:
        return None
    shown = set(filt) - {b"."}
    if not {f.decode() for f in shown} <= set(filters) or any(b";" in f for f in shown):
        return None
    missing_quality = qual.count(b".")
    if missing_quality != n and not all(_QUALITY.fullmatch(q) for q in qual if q != b"."):
        return None
    contig = np.empty(n, dtype=object)
    if len(names) == 1:
        contig[:] = chrom[0].decode()
    else:
        lookup = {name: name.decode() for name in names}
        contig[:] = [lookup[c] for c in chrom]
    quality = np.full(n, col.FLOAT32_MISSING, dtype=np.float32)
    if missing_quality != n:
        given = np.flatnonzero(np.array(qual, dtype=object) != b".")
        quality[given] = np.array([float(qual[i]) for i in given.tolist()], dtype=np.float64)
    return {
        col.CONTIG: contig,
        col.POSITION: _numbers(positions),
        col.ID: _texts(ids, spec.STR_MISSING),
        col.ALLELES: _alleles(ref, alt),
        col.QUALITY: quality,
        col.FILTERS: _texts(filt, ""),
        col.LENGTH: np.fromiter(map(len, ref), dtype=np.int64, count=n),
    }


def _strings(values: list[str]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _texts(values: list[bytes], missing: str) -> np.ndarray:
    """``values`` (ASCII, no tab) decoded, each ``.`` as ``missing``: at once (a decode per
    record took a third of the time of this module), one shared string where all are equal.

    >>> _texts([b"PASS", b".", b".", b"q10"], "").tolist(), _texts([b".", b"."], "").tolist()
    (['PASS', '', '', 'q10'], ['', ''])
    """
    kinds = set(values)
    if len(kinds) == 1:
        only = kinds.pop()
        return np.full(len(values), missing if only == b"." else only.decode(), dtype=object)
    dot = b"\t%b\t" % missing.encode()
    joined = (b"\t%b\t" % b"\t".join(values)).replace(b"\t.\t", dot).replace(b"\t.\t", dot)  # ("\t.\t.\t")
    return _strings(joined[1:-1].decode().split("\t"))


def _numbers(joined: bytes) -> np.ndarray:
    """The numbers of ``joined``, tab-separated decimals of 1 to 9 digits, as int64:
    each digit times its place value, added up per number (``int`` of each took 2 ms a block).

    >>> _numbers(b"5\\t1000\\t987654321").tolist()
    [5, 1000, 987654321]
    """
    text = np.frombuffer(joined + b"\t", dtype=np.uint8)
    ends = np.flatnonzero(text == ord("\t"))
    starts = np.r_[0, ends[:-1] + 1]
    place = np.repeat(ends, ends - starts + 1) - np.arange(len(text)) - 1  # (-1 at the tabs)
    digits = (text.astype(np.int64) - ord("0")) * np.power(10, np.maximum(place, 0))
    digits[place < 0] = 0
    return np.add.reduceat(digits, starts)


def _alleles(ref: list[bytes], alt: list[bytes]) -> np.ndarray:
    """``(records, alleles)`` REF and ALTs, padded with fill (``.``: no ALT)."""
    n = len(ref)
    refs = b"\t".join(ref).decode().split("\t") if n else []
    alts = b"\t".join(alt)
    if b"," in alts:
        split = [() if a == b"." else a.decode().split(",") for a in alt]
        out = np.full((n, 1 + max(map(len, split))), spec.STR_FILL, dtype=object)
        out[:, 0] = refs
        for i, alleles in enumerate(split):
            out[i, 1 : 1 + len(alleles)] = alleles
        return out
    out = np.full((n, 1 if alt.count(b".") == n else 2), spec.STR_FILL, dtype=object)  # (one ALT at most)
    out[:, 0] = refs
    if out.shape[1] == 2:
        out[:, 1] = _texts(alt, spec.STR_FILL)
    return out
