"""A store compared with bcftools (the oracle), read with zarr-python directly.

Independent of our reader on purpose: sentinels are decoded here from the spec (int -1/-2,
float NaN bit patterns, ``.``/empty strings), so a test compares the *stored* data with bcftools.

Conventions follow :mod:`oracle`: a missing scalar is ``None``; a vector loses its trailing fill
and is ``None`` when nothing is left or every element is missing.
"""

from __future__ import annotations

import numpy as np
import oracle
import zarr
from store_support import zarr_array, zarr_values

from vcfzarr_sql.format import spec
from vcfzarr_sql.validation import validate

#: Marks a fill (padding) element before it is trimmed away.
FILL = object()


def python_values(array: np.ndarray, no_value: np.ndarray | None = None) -> np.ndarray:
    """Object array of the same shape: Python values, ``None`` for missing, :data:`FILL` for fill.

    ``no_value``: the field's ``mask_<array>`` (True where an element holds no value), when the
    store has one: elsewhere a sentinel is a real value (``SVLEN=-1``, ``L=a,,b``)."""
    keep = np.ones(array.shape, dtype=bool) if no_value is None else no_value
    kind = array.dtype.kind
    if kind == "f":
        bits = array.view(np.uint32 if array.dtype.itemsize == 4 else np.uint64)
        missing_bits, fill_bits = (
            (spec.FLOAT32_MISSING_BITS, spec.FLOAT32_FILL_BITS)
            if array.dtype.itemsize == 4
            else (spec.FLOAT64_MISSING_BITS, spec.FLOAT64_FILL_BITS)
        )
        with np.errstate(invalid="ignore"):  # casting the signalling NaNs
            out = array.astype(np.float64).astype(object)
        out[bits == missing_bits] = None
        out[bits == fill_bits] = FILL
        return out
    if kind in "iu":
        out = array.astype(np.int64).astype(object)
        out[(array == spec.INT_MISSING) & keep] = None
        out[(array == spec.INT_FILL) & keep] = FILL
        return out
    if kind == "b":
        return array.astype(object)
    if kind == "S":
        array = np.char.decode(array, "utf-8")
    out = array.astype(object)
    missing, fill = (out == spec.STR_MISSING) & keep, (out == spec.STR_FILL) & keep
    out[missing] = None
    out[fill] = FILL
    return out


def vector(values) -> list | None:
    """One stored vector -> the oracle's list (trailing fill dropped), ``None`` for ``.`` or
    absent (one missing element, then fill); ``.,.`` is ``[None, None]``, as bcftools prints it."""
    items = list(values)
    while items and items[-1] is FILL:
        items.pop()
    if not items or items == [None]:
        return None
    return items


# ---------------------------------------------------------------------------------------------
# Store vs oracle, one aspect at a time: each check returns a list of mismatches (empty = equal).

MAX_REPORTED = 12
MAX_CHARS = 400


class Mismatches(list):
    """Mismatch descriptions, capped at :data:`MAX_REPORTED` (``total`` counts them all)."""

    total = 0

    def add(self, text: str) -> None:
        self.total += 1
        if len(self) < MAX_REPORTED:
            self.append(text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "...")


class Stored:
    """A store opened with zarr-python; whole arrays read once, on demand."""

    def __init__(self, path):
        self.path = str(path)
        self.group = zarr.open_group(str(path), mode="r")
        self._cache: dict[str, np.ndarray] = {}

    def has(self, name: str) -> bool:
        return name in self.group

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._cache:
            self._cache[name] = zarr_values(zarr_array(self.group, name))
        return self._cache[name]

    def field(self, name: str) -> list:
        """Python values of field array ``name`` (see :func:`python_values`), as lists."""
        mask = spec.MASK_PREFIX + name
        return python_values(self[name], self[mask] if self.has(mask) else None).tolist()

    def strings(self, name: str) -> list[str]:
        return [str(s) for s in self[name].tolist()]


def _where(rec) -> str:
    return f"{rec.chrom}:{rec.pos}"


def check_header(stored: Stored, vcf) -> Mismatches:
    """sample_id, contig_id/contig_length, filter_id/filter_description against the header."""
    h = oracle.header(vcf)
    out = Mismatches()
    pairs: list[tuple[str, list, list]] = [
        ("sample_id", h.samples, stored.strings("sample_id")),
        ("contig_id", [c for c, _ in h.contigs], stored.strings("contig_id")),
        ("filter_id", [f for f, _ in h.filters], stored.strings("filter_id")),
    ]
    if stored.has("filter_description"):
        pairs.append(("filter_description", [d for _, d in h.filters],
                      stored.strings("filter_description")))
    else:
        out.add("filter_description: missing")
    lengths = [length for _, length in h.contigs]
    if stored.has("contig_length"):
        pairs.append(("contig_length", [spec.INT_MISSING if n is None else n for n in lengths],
                      stored["contig_length"].tolist()))
    elif any(n is not None for n in lengths):
        out.add(f"contig_length: missing, header has lengths {lengths}")
    for name, expected, actual in pairs:
        if expected != actual:
            out.add(f"{name}: expected {expected}, got {actual}")
    return out


def check_fixed(stored: Stored, vcf) -> Mismatches:
    """CHROM, POS, ID, REF, ALT, QUAL, FILTER of every record."""
    recs = oracle.records(vcf)
    out = Mismatches()
    n = stored["variant_position"].shape[0]
    if n != len(recs):
        out.add(f"{n} records stored, bcftools reports {len(recs)}")
        return out
    contigs = stored.strings("contig_id")
    filters = stored.strings("filter_id")
    filter_rank = {f: i for i, f in enumerate(filters)}
    chrom = stored["variant_contig"].tolist()
    pos = stored["variant_position"].tolist()
    ids = python_values(stored["variant_id"]).tolist()
    alleles = python_values(stored["variant_allele"]).tolist()
    qual = python_values(stored["variant_quality"]).tolist()
    flt = stored["variant_filter"].tolist()
    for i, rec in enumerate(recs):
        got_alleles = alleles[i]
        while got_alleles and got_alleles[-1] is FILL:
            got_alleles.pop()
        got_filters = [f for f, on in zip(filters, flt[i]) if on] or None
        want_filters = (None if rec.filters is None
                        else sorted(rec.filters, key=lambda f: filter_rank.get(f, len(filters))))
        got = {"CHROM": contigs[chrom[i]] if 0 <= chrom[i] < len(contigs) else chrom[i],
               "POS": pos[i], "ID": ids[i], "REF+ALT": got_alleles, "FILTER": got_filters}
        want = {"CHROM": rec.chrom, "POS": rec.pos, "ID": rec.id,
                "REF+ALT": [rec.ref, *rec.alt], "FILTER": want_filters}
        for key in want:
            if got[key] != want[key]:
                out.add(f"record {i} ({_where(rec)}) {key}: expected {want[key]!r}, got {got[key]!r}")
        if not oracle.float_equal(rec.qual, qual[i]):
            out.add(f"record {i} ({_where(rec)}) QUAL: expected {rec.qual!r}, got {qual[i]!r}")
    return out


def check_length_and_index(stored: Stored, vcf) -> Mismatches:
    """variant_length = bcftools END - POS + 1; region_index = the spec's, from bcftools' values."""
    recs = oracle.records(vcf)
    out = Mismatches()
    for name in ("variant_length", "region_index"):
        if not stored.has(name):
            out.add(f"{name}: missing")
    if out:
        return out
    want_length = np.array([r.end - r.pos + 1 for r in recs], dtype=np.int64)
    got_length = stored["variant_length"].astype(np.int64)
    for i in np.flatnonzero(want_length != got_length) if len(got_length) == len(recs) else []:
        out.add(f"record {i} ({_where(recs[i])}) variant_length: expected {want_length[i]}, "
                f"got {got_length[i]}")
    contig_index = {c: i for i, c in enumerate(stored.strings("contig_id"))}
    want_index = expected_region_index(
        [(contig_index.get(r.chrom, -1), r.pos, r.end) for r in recs],
        chunk_size=zarr_array(stored.group, "variant_position").chunks[0],
    )
    got_index = stored["region_index"].astype(np.int64)
    if got_index.shape != want_index.shape or not np.array_equal(got_index, want_index):
        out.add(f"region_index: expected {want_index.tolist()[:6]}..., got {got_index.tolist()[:6]}...")
    return out


def expected_region_index(records: list[tuple[int, int, int]], chunk_size: int) -> np.ndarray:
    """The spec's region index of (contig index, POS, END) records, written out in plain Python:
    one row per distinct contig of each chunk (contig order), with first POS, last POS, max END
    and count, however the records of the chunk are ordered."""
    rows = []
    for chunk in range(0, len(records), chunk_size):
        by_contig: dict[int, list[tuple[int, int]]] = {}
        for contig, pos, end in records[chunk : chunk + chunk_size]:
            by_contig.setdefault(contig, []).append((pos, end))
        for contig in sorted(by_contig):
            spans = by_contig[contig]
            positions = [pos for pos, _ in spans]
            rows.append([chunk // chunk_size, contig, min(positions), max(positions),
                         max(end for _, end in spans), len(spans)])
    return np.array(rows, dtype=np.int64).reshape(-1, 6)


def _field_value(values, field) -> object:
    """One stored INFO value or FORMAT call -> the oracle's typed value."""
    if field.vcf_type == "Flag":
        return bool(values)
    if isinstance(values, list):
        if field.number == "1" and len([v for v in values if v is not FILL]) <= 1:
            return values[0] if values and values[0] is not FILL else None
        return vector(values)
    return None if values is FILL else values


def _equal(want, got, field) -> bool:
    if field.vcf_type == "Float":
        if isinstance(want, list) and isinstance(got, list):
            return len(want) == len(got) and all(map(oracle.float_equal, want, got))
        if isinstance(want, list) or isinstance(got, list):
            return False
        return oracle.float_equal(want, got)
    return want == got



def check_info(stored: Stored, vcf) -> Mismatches:
    """Every INFO field of the header (undeclared ones included) in every record."""
    h = oracle.header(vcf)
    recs = oracle.records(vcf)
    out = Mismatches()
    for name, field in h.info.items():
        array = spec.INFO_PREFIX + name
        if not stored.has(array):
            out.add(f"INFO/{name}: no array {array}")
            continue
        values = stored.field(array)
        for i, rec in enumerate(recs[: len(values)]):
            want, got = rec.info[name], _field_value(values[i], field)
            if not _equal(want, got, field):
                out.add(f"record {i} ({_where(rec)}) INFO/{name}: expected {want!r}, got {got!r}")
    return out


def check_format(stored: Stored, vcf) -> Mismatches:
    """Every FORMAT field but GT of the header, for every call."""
    h = oracle.header(vcf)
    recs = oracle.records(vcf)
    out = Mismatches()
    names = [n for n in h.format if n != "GT"]
    if not h.samples or not names:
        return out
    calls = oracle.calls(vcf, names)
    for name in names:
        field = h.format[name]
        array = spec.FORMAT_PREFIX + name
        if not stored.has(array):
            out.add(f"FORMAT/{name}: no array {array}")
            continue
        values = stored.field(array)
        for i, rec in enumerate(recs[: len(values)]):
            for s, sample in enumerate(h.samples):
                want, got = calls[i][s][name], _field_value(values[i][s], field)
                if not _equal(want, got, field):
                    out.add(f"record {i} ({_where(rec)}) sample {sample} FORMAT/{name}: "
                            f"expected {want!r}, got {got!r}")
    return out


def check_genotypes(stored: Stored, vcf) -> Mismatches:
    """call_genotype and call_genotype_phased of every call against bcftools' GT."""
    h = oracle.header(vcf)
    out = Mismatches()
    if not h.samples or "GT" not in h.format:
        if stored.has(spec.CALL_GENOTYPE):
            out.add("call_genotype stored for a file without GT")
        return out
    want, want_phased = oracle.genotype_arrays(vcf)
    if not stored.has(spec.CALL_GENOTYPE):
        out.add("call_genotype: missing")
        return out
    got = stored[spec.CALL_GENOTYPE].astype(np.int32)
    if got.shape != want.shape:
        out.add(f"call_genotype: shape {got.shape}, expected {want.shape}")
        return out
    got_phased = (stored[spec.CALL_GENOTYPE_PHASED] if stored.has(spec.CALL_GENOTYPE_PHASED)
                  else np.zeros(want_phased.shape, dtype=bool))
    recs = oracle.records(vcf)
    for v, s in zip(*np.nonzero((got != want).any(axis=2) | (got_phased != want_phased))):
        out.add(f"record {v} ({_where(recs[v])}) sample {h.samples[s]} GT: expected "
                f"{want[v, s].tolist()} phased={bool(want_phased[v, s])}, got {got[v, s].tolist()} "
                f"phased={bool(got_phased[v, s])}")
    return out


def unrepresentable(vcf) -> dict[str, str]:
    """``{array: message start}`` of the fields whose bcftools values VCF Zarr cannot hold as
    the spec says, so a lossless store must break the spec there (and the validator say so):

    - Type=Character values longer than one character (the spec's ``char`` is ``|S1``): kept
      whole as ``str``;
    - Number=1 fields with several values in a record: they need a dimension of their own;
    - Number=A/R vectors longer than any record's ALT/allele count: they do not fit the
      ``alt_alleles``/``alleles`` dimension, so they get their own.
    """
    h = oracle.header(vcf)
    recs = oracle.records(vcf)
    max_alts = max((len(r.alt) for r in recs), default=0)
    values: dict[tuple[str, oracle.FieldDef], list] = {}  # (array, field) -> every value
    for name, field in h.info.items():
        values[(spec.INFO_PREFIX + name, field)] = [r.info[name] for r in recs]
    names = [n for n in h.format if n != "GT"]
    if h.samples and names:
        calls = oracle.calls(vcf, names)
        for name in names:
            values[(spec.FORMAT_PREFIX + name, h.format[name])] = [
                call[name] for row in calls for call in row
            ]
    out: dict[str, str] = {}
    for (array, field), found in values.items():
        lists = [_as_list(v) for v in found]
        width = max(map(len, lists), default=0)
        if field.vcf_type == "Character" and any(v and len(v) > 1 for vs in lists for v in vs):
            out[array] = "dtype "
        elif field.number == "1" and width > 1:
            out[array] = "Number=1 field has an extra dimension"
        elif field.number in ("A", "R") and width > max_alts + (field.number == "R"):
            out[array] = f"Number={field.number} needs last dimension"
    return out


def _as_list(value) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def check_valid(stored: Stored, vcf) -> Mismatches:
    """:func:`vcfzarr_sql.validation.validate` finds exactly the :func:`unrepresentable` arrays."""
    out = Mismatches()
    expected = unrepresentable(vcf)
    problems = validate(stored.path)
    for problem in problems:
        if not problem.message.startswith(expected.get(problem.where, "\0")):
            out.add(f"validate: {problem}")
    for array, start in expected.items():
        if not any(p.where == array and p.message.startswith(start) for p in problems):
            out.add(f"validate: no problem '{start}...' reported for {array}, whose values "
                    "break the spec")
    return out


CHECKS = {
    "header": check_header,
    "fixed": check_fixed,
    "length_and_index": check_length_and_index,
    "info": check_info,
    "format": check_format,
    "genotypes": check_genotypes,
    "valid": check_valid,
}


def report(mismatches: Mismatches) -> str:
    more = mismatches.total - len(mismatches)
    return "\n".join(mismatches) + (f"\n... and {more} more" if more > 0 else "")
