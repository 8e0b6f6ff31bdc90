"""bcftools ``-r`` region strings: parsing, and the row filter they stand for.

The grammar is htslib's (``bcf_sr_set_regions`` for a region string): a comma-separated
list of ``chr``, ``chr:pos``, ``chr:beg-end`` or ``chr:beg-``; a contig name runs up to the
first ``:`` or ``,`` unless it is written in braces (``{HLA-A*01:01}:100-200``), which is how
names holding ``:`` are given. Coordinates are 1-based and inclusive, and may carry htslib's
``k``/``M``/``G`` suffixes. Empty items are ignored, as bcftools does.

A record matches a region when its reference span overlaps it (bcftools ``-r``, i.e.
``--regions-overlap 1``): ``contig == chr and pos <= end_of_region and end >= beg``, where
``end = POS + rlen - 1``. Records at POS 0 (the telomere convention) are in no region, as
bcftools ``-r`` leaves them out of every region, whole contigs included (``-t`` keeps them).

>>> parse_regions("chr1:100-200,{HLA-A*01:01}:5,chrX")  # doctest: +NORMALIZE_WHITESPACE
(Region(contig='chr1', start=100, end=200), Region(contig='HLA-A*01:01', start=5, end=5),
 Region(contig='chrX', start=1, end=None))
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vcfzarr_sql.errors import QueryError

if TYPE_CHECKING:  # (imported where an expression is made: parsing regions needs no Arrow)
    import pyarrow.compute as pc

    from vcfzarr_sql.query.region_set import RegionSet


@dataclass(frozen=True)
class Region:
    """A 1-based inclusive interval of a contig; ``end`` None: to the end of the contig."""

    contig: str
    start: int
    end: int | None

    def expression(self, targets: bool = False) -> pc.Expression:
        """The row filter of this region as comparisons (bcftools ``-r`` overlap; ``targets``:
        ``-t``, POS within): what one region of :func:`regions_expression` stands for."""
        import pyarrow.compute as pc

        matches = pc.field("contig") == self.contig
        if targets:
            matches = matches & (pc.field("pos") >= self.start)
            return matches if self.end is None else matches & (pc.field("pos") <= self.end)
        if self.end is not None:
            matches = matches & (pc.field("pos") <= self.end)
        if self.start > 1:
            matches = matches & (pc.field("end") >= self.start)
        return matches & (pc.field("pos") >= 1)


# One item: a contig (in braces, or up to ':' / ','), then optionally ':beg', '-' and 'end'.
_NUMBER = r"[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+|[kKmMgG])?"
_ITEM = re.compile(
    rf"(?:\{{(?P<braced>[^}}]*)\}}|(?P<plain>[^,:{{]*))"
    rf"(?::(?P<start>{_NUMBER})(?P<dash>-(?P<end>{_NUMBER})?)?)?(?=,|$)"
)
_IS_NUMBER = re.compile(_NUMBER).fullmatch
_SUFFIX = {"k": 3, "m": 6, "g": 9}
#: htslib's largest position (``HTS_POS_MAX``); bcftools cannot seek beyond it either.
POSITION_MAX = (2**31 - 1) << 32 | (2**31 - 1)


def _coordinate(text: str, region: str, argument: str, lowest: int = 1) -> int:
    """An htslib decimal (``1,000`` is not one: ',' separates regions), fractions truncated."""
    value = int(text) if text.isascii() and text.isdigit() else _decimal(text)
    if value < lowest:
        base = "1-based" if lowest == 1 else "0-based"
        raise QueryError(f"{argument}: {region!r}: positions are {base}, got {text!r}")
    if value > POSITION_MAX:
        raise QueryError(
            f"{argument}: {region!r}: position {text!r} is beyond htslib's largest, {POSITION_MAX}"
        )
    return value


def _decimal(text: str) -> int:
    """The value of an htslib decimal with a sign, fraction, exponent or ``k``/``M``/``G``."""
    mantissa, exponent = text.lower(), 0
    if mantissa[-1] in _SUFFIX:
        mantissa, exponent = mantissa[:-1], _SUFFIX[mantissa[-1]]
    elif "e" in mantissa:
        mantissa, power = mantissa.split("e")
        exponent = int(power)
    whole, _, fraction = mantissa.partition(".")
    digits = int(whole + fraction) if (whole + fraction).lstrip("+-") else 0
    exponent -= len(fraction)
    return digits * 10**exponent if exponent >= 0 else int(digits / 10**-exponent)


def parse_regions(text: str, argument: str = "region") -> tuple[Region, ...]:
    """The regions of a bcftools ``-r`` string; QueryError (naming ``argument``) when malformed."""
    if not isinstance(text, str):
        raise QueryError(f"{argument}: expected a region string like 'chr1:100-200', got {text!r}")
    regions, position = [], 0
    while position <= len(text):
        match = _ITEM.match(text, position)
        if match is None:
            raise QueryError(
                f"{argument}: cannot parse {text!r} at character {position + 1}: expected "
                "chr, chr:pos, chr:beg-end or chr:beg- (braces around names holding ':')"
            )
        position = match.end() + 1
        contig = match["braced"] if match["braced"] is not None else match["plain"]
        if match["start"] is None:
            if contig:
                regions.append(Region(contig, 1, None))
            continue
        item = match.group(0)
        start = _coordinate(match["start"], item, argument)
        if not match["dash"]:
            end = start
        elif match["end"] is None:
            end = None
        else:
            end = _coordinate(match["end"], item, argument)
        if end is not None and end < start:
            raise QueryError(f"{argument}: {item!r} ends before it starts")
        regions.append(Region(contig, start, end))
    if not regions:
        raise QueryError(f"{argument}: {text!r} names no region")
    return tuple(regions)


def _loose(name: str) -> str:
    return name.lower().removeprefix("chr")


@functools.lru_cache(maxsize=16)
def _known(contigs: tuple[str, ...]) -> frozenset[str]:
    """The set of a store's contig names, made once: every plan asks whether the contigs it
    names are in it (3,300 contigs, as GRCh38 with its alternate loci: 0.75 ms a plan)."""
    return frozenset(contigs)


def contig_hint(names: Iterable[str], contigs: Sequence[str], shown: int = 10) -> str | None:
    """When one of ``names`` (contigs a query asks for) is not one of the store's ``contigs`` but
    differs from one only by a ``chr`` prefix or case (the usual mistake: a query or region
    finds nothing, silently), a one-line hint naming the store's contigs; else None.

    >>> contig_hint(["chr20"], ["19", "20", "X"])
    "contig 'chr20' is not in the store, which has 19, 20, X: did you mean '20'?"
    >>> contig_hint(["20", "chrY", "x"], ["19", "20", "X"])
    "contig 'x' is not in the store, which has 19, 20, X: did you mean 'X'?"
    >>> contig_hint(["chrY"], ["19", "20", "X"]) is None
    True
    """
    known = _known(tuple(contigs))
    missing = [name for name in names if name not in known]
    if not missing:  # (the usual query: its loose names are made only for a miss)
        return None
    loose: dict[str, str] = {}
    for contig in contigs:
        loose.setdefault(_loose(contig), contig)
    for name in missing:
        if _loose(name) in loose:
            listed = ", ".join(contigs[:shown]) + (f" (and {len(contigs) - shown} more)"
                                                   if len(contigs) > shown else "")
            return (f"contig {name!r} is not in the store, which has {listed}: "
                    f"did you mean {loose[_loose(name)]!r}?")
    return None


def regions_expression(regions: tuple[Region, ...], targets: bool = False) -> pc.Expression:
    """The row filter of a list of regions: a record matching any of them (``targets``: its
    POS within one, bcftools ``-t``), as one region set call (:mod:`.region_set`), which
    stands for the OR of each region's :meth:`Region.expression` (``targets``: ``contig ==
    chr and start <= pos <= end``).

    >>> import pyarrow as pa
    >>> rows = pa.table({"contig": ["1", "1", "2"], "pos": [3, 8, 8], "end": [5, 8, 8]})
    >>> rows.filter(regions_expression(parse_regions("1:5-9")))["pos"].to_pylist()
    [3, 8]
    >>> rows.filter(regions_expression(parse_regions("1:5-9"), targets=True))["pos"].to_pylist()
    [8]
    """
    return region_set(regions, targets).expression()


def region_set(regions: tuple[Region, ...], targets: bool = False) -> RegionSet:
    """The :class:`~.region_set.RegionSet` of a list of regions (its row filter:
    :func:`regions_expression`)."""
    from vcfzarr_sql.query.region_set import RegionSet

    return RegionSet.of([(r.contig, r.start, r.end) for r in regions], targets)


def format_regions(regions: tuple[Region, ...]) -> str:
    """The bcftools ``-r`` string of ``regions`` (:func:`parse_regions` reads it back).

    >>> format_regions((Region("chr1", 100, 200), Region("HLA-A*01:01", 5, None), Region("X", 1, None)))
    'chr1:100-200,{HLA-A*01:01}:5-,X'
    """
    items = []
    for region in regions:
        contig = region.contig
        if set(contig) & set(":,{}"):
            if "}" in contig:
                raise QueryError(f"region: the contig name {contig!r} cannot be written in a region string")
            contig = "{" + contig + "}"
        if region.start == 1 and region.end is None:
            items.append(contig)
        else:
            items.append(f"{contig}:{region.start}-{'' if region.end is None else region.end}")
    return ",".join(items)


def is_bed(name: str) -> bool:
    """Whether bcftools reads the regions file ``name`` as BED (by its name, as htslib does).

    >>> is_bed("targets.BED"), is_bed("x.bed.gz"), is_bed("x.tsv")
    (True, True, False)
    """
    return name.lower().endswith((".bed", ".bed.gz"))


def parse_regions_file(lines: Iterable[str], name: str, argument: str = "regions_file") -> tuple[Region, ...]:
    """The regions of the lines of a bcftools ``-R`` file named ``name``.

    As htslib reads one (``bcf_sr_regions_init``): tab-separated; lines starting with ``#``
    are comments; a BED file (:func:`is_bed`) has CHROM, 0-based START and END (half-open);
    any other file has CHROM, POS and optionally END, 1-based and inclusive, and its first
    line decides whether END is read. Further columns are ignored. Records match by overlap,
    as with :func:`parse_regions`. Unlike htslib, a blank line is skipped (htslib stops
    reading there) and a BED line without END is an error (htslib matches nothing for it).

    >>> parse_regions_file(["#c", "1\\t99\\t200"], "t.bed")
    (Region(contig='1', start=100, end=200),)
    >>> parse_regions_file(["1\\t100", "2\\t5\\t9"], "t.tsv")  # END not read: line 1 has none
    (Region(contig='1', start=100, end=100), Region(contig='2', start=5, end=5))
    """
    bed = is_bed(name)
    with_end: bool | None = True if bed else None
    regions = []
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        where = f"{name} line {number}"
        if with_end is None:
            with_end = len(fields) >= 3 and _IS_NUMBER(fields[2]) is not None
        if len(fields) < (3 if with_end else 2) or not all(
            _IS_NUMBER(f) for f in fields[1:3 if with_end else 2]
        ):
            wanted = "CHROM, START and END" if bed else "CHROM, POS and END" if with_end else "CHROM and POS"
            raise QueryError(f"{argument}: {where}: expected tab-separated {wanted}, got {line!r}")
        start = _coordinate(fields[1], line, f"{argument}: {where}", lowest=0 if bed else 1) + bed
        end = _coordinate(fields[2], line, f"{argument}: {where}") if with_end else start
        if end < start:
            raise QueryError(f"{argument}: {where}: {line!r} ends before it starts")
        regions.append(Region(fields[0], start, end))
    if not regions:
        raise QueryError(f"{argument}: {name} names no region")
    return tuple(regions)
