"""One variant chunk of a store -> VCF record lines, as ``bcftools view`` prints them.

Values come from the stored arrays (not the SQL tables), so what htslib would print is still
known: a missing value (``.``) differs from padding, and a vector of missing values keeps its
length. INFO keys are written in header order (the store does not keep each record's own
order), FILTER names in header order once each (``variant_filter`` is a boolean per header
filter); a FORMAT key is written when any sample of the record has a value for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.query.selection import recounts
from vcfzarr_sql.query.selection.rows import ValueReader
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.fields import FieldInfo
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view import values as vt

if TYPE_CHECKING:
    from vcfzarr_sql.view.trim import Trim  # (imported for -a only)

#: INFO/AC and INFO/AN of each row (:func:`_counts`): the values and whether the row has them
Counts = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class RecordOptions:
    """What to write: ``samples`` (store indexes in output order; None: all), whether to
    recompute INFO/AC and INFO/AN over them (bcftools does unless ``--no-update``), whether
    to write the FORMAT and sample columns (not with ``-G``), and whether an option counted
    alleles (``-c/-C/-q/-Q/-u/-U/-x/-X/-a``: bcftools then writes INFO/AC and INFO/AN into
    every record, counted from the selected samples' GT, else as ``bcf_calc_ac``)."""

    samples: np.ndarray | None = None
    update_counts: bool = True
    genotypes: bool = True
    counts_alleles: bool = False
    #: ``-a``: remove the ALT alleles no selected sample calls (:mod:`.trim`)
    trim: bool = False

    @property
    def subsets(self) -> bool:
        return self.samples is not None

    def writes_counts(self, has_gt: bool) -> bool:
        """Whether INFO/AC and INFO/AN are written (recounted): a subset of a store with GT
        (bcftools recounts a record with GT only), or an option that counted alleles."""
        return recounts(self.update_counts, self.subsets, has_gt, self.counts_alleles)


def _sorted_blocks(source: ChunkSource, chunk: int,
                   samples: np.ndarray | None) -> tuple[BatchBlocks, np.ndarray | None]:
    """Blocks over the sorted selected samples, and the permutation back to output order."""
    if samples is None:
        return BatchBlocks(source, chunk, None), None
    order = np.unique(samples)
    return BatchBlocks(source, chunk, order), np.searchsorted(order, samples)


def _run(rows: np.ndarray) -> np.ndarray | slice:
    """``rows`` (sorted indexes) as a slice when they are a run (every row, most often): a
    block read through it is a view, not a copy."""
    if len(rows) and rows[-1] - rows[0] + 1 == len(rows):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def _strings(values: np.ndarray) -> np.ndarray:
    """``str`` values (an object array) as a NUL-padded uint8 matrix of their UTF-8, a row each
    (ASCII, the usual text, cast by numpy: ~60 ns a value)."""
    try:
        texts = values.astype("S")
    except UnicodeEncodeError:
        texts = np.array([value.encode() for value in values.tolist()])
    return vt.as_matrix(texts)


def _missing_where(matrix: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """``matrix`` with the rows where ``missing`` holds written ``.``."""
    if missing.any():
        matrix = matrix.copy()
        matrix[missing] = 0
        matrix[missing, 0] = ord(vt.MISSING)
    return matrix


def _alt_matrix(alleles: np.ndarray) -> np.ndarray:
    """The ALT column of each row (its alleles that are not fill, comma-joined; none: ``.``)."""
    alts = alleles[:, 1:]
    if not alts.shape[1]:
        return np.full((len(alleles), 1), ord(vt.MISSING), np.uint8)
    shown = alts != spec.STR_FILL
    parts = [_missing_where(_strings(alts[:, 0]), ~shown.any(axis=1))]
    after = np.logical_or.accumulate(shown, axis=1)  # (a comma after the first allele shown)
    for j in range(1, alts.shape[1]):
        parts += [np.where(shown[:, j] & after[:, j - 1], ord(","), 0).astype(np.uint8)[:, None], _strings(alts[:, j])]
    return np.concatenate(parts, axis=1)


def _names_matrix(flags: np.ndarray, names: list[str], separator: str, lead: str = "") -> np.ndarray:
    """Per row of ``flags`` (a boolean per name): ``lead`` and the names it sets, in order,
    joined by ``separator`` (none: ``.``), as a NUL-padded uint8 matrix; each distinct row's
    text made once (FILTER, the FORMAT keys)."""
    first, inverse = vt.distinct_rows(flags)
    texts = [lead + (separator.join(n for n, on in zip(names, row) if on) or vt.MISSING)
             for row in flags[first].tolist()]
    return _text_matrix(texts)[inverse]


def _counts(source: ChunkSource, blocks: BatchBlocks, rows: np.ndarray, order: np.ndarray | None,
            num_alts: np.ndarray, trim: Trim | None) -> Counts | None:
    """INFO/AC and INFO/AN of each row, as bcftools writes them: over the GT of the samples
    of ``blocks`` in output ``order`` when it selects some (None without GT: bcftools writes
    none), else as ``bcf_calc_ac`` (INFO/AC and AN where the record has them, else GT;
    neither: AC=0 and AN=0); ``num_alts``: before ``trim``."""
    store = source.store
    has_gt = "GT" in store.format_fields
    width = max(int(num_alts.max(initial=0)), 1)
    if blocks.samples is not None:
        if not has_gt:
            return None
        pick = _run(rows)
        calls = blocks.read(spec.CALL_GENOTYPE)[pick]
        calls = (calls if order is None else calls[:, order]).reshape(len(rows), -1)
        counted = (calls > 0) & (calls <= width)
        slots = (np.arange(len(rows))[:, None] * width + calls - 1)[counted]
        ac = np.bincount(slots, minlength=len(rows) * width).reshape(len(rows), width)
        an = (calls >= 0).sum(axis=1)
    elif has_gt or ("AC" in store.info_fields and "AN" in store.info_fields):
        ac, an = ValueReader(source, blocks.chunk_index).allele_counts(None)
        ac, an = ac[rows], an[rows]
    else:
        ac, an = np.zeros((len(rows), width), np.int64), np.zeros(len(rows), np.int64)
    if trim is not None and ("AC" not in store.info_fields or store.info_fields["AC"].number == "A"):
        # bcftools writes AC before trimming, then trims it as a Number=A field
        ac, _ = trim.values(ac, "A", None)
        num_alts = trim.num_alleles - 1
    ac = np.where(np.arange(ac.shape[1])[None, :] < num_alts[:, None], ac, spec.INT_FILL)
    return (ac, num_alts > 0), (an, np.ones(len(rows), bool))


def _named(name: str, values: np.ndarray | None, vcf_type: str, rows: int, first: bool,
           no_value: np.ndarray | None = None) -> vt.Cells:
    """``;NAME=`` (the ``first`` field: a NUL lead) and each row's text of ``values`` (a
    Flag, ``values`` None: ``;NAME``): a :func:`_joined` field."""
    lead = "\0" if first else ";"
    if values is None:
        return vt.Cells(_text_matrix([lead + name]), np.zeros((rows, 1), np.intp))
    return vt.cell_codes(values, vcf_type, no_value, f"{lead}{name}=")


def _text_matrix(texts: list[str]) -> np.ndarray:
    return _strings(np.array(texts, dtype=object))


def _info_column(store: VczStore, blocks: BatchBlocks, rows: np.ndarray, counts: Counts | None,
                 trim: Trim | None = None) -> tuple[list[vt.CellText], np.ndarray]:
    """The INFO fields of each row and which each row shows (:func:`_joined`; no field: the
    column is ``.``)."""
    texts: list[vt.CellText] = []
    shown: list[np.ndarray] = []
    fields: dict[str, FieldInfo] = store.info_fields
    recounted = {} if counts is None else {"AC": counts[0], "AN": counts[1]}
    pick = _run(rows)
    for name, field in fields.items():
        if name in recounted:
            texts.append(_named(name, recounted[name][0], "Integer", len(rows), not texts))
            shown.append(recounted[name][1])
            continue
        values = blocks.read(field.array)[pick]
        no_value = None if field.mask is None else blocks.read(field.mask)[pick]
        if trim is not None:
            values, no_value = trim.values(values, field.number, no_value, f"{store.path}: INFO/{name}")
        if field.vcf_type == "Flag":
            texts.append(_named(name, None, "Flag", len(rows), not texts))
            shown.append(np.asarray(values.reshape(len(rows), -1).any(axis=1)))
            continue
        present = vt.present(values, field.vcf_type, no_value,
                             spelled=store.spells_missing_vectors and values.ndim == 2)
        if present.any():
            texts.append(_named(name, values, field.vcf_type, len(rows), not texts, no_value))
            shown.append(present)
    for name, (text, has) in recounted.items():  # AC/AN not declared in the store: bcftools appends them
        if name not in fields:
            texts.append(_named(name, text, "Integer", len(rows), not texts))
            shown.append(has)
    if not texts:
        texts.append(vt.Cells(_text_matrix([vt.MISSING]), np.zeros((len(rows), 1), np.intp)))
        shown.append(np.ones(len(rows), bool))
    return texts, np.array(shown).reshape(len(texts), len(rows))


def _joined(fields: list[vt.CellText], showing: np.ndarray, out: np.ndarray) -> None:
    """Write each row's fields (``fields[j]``, cells of shape (rows,) or (rows, samples)) where
    ``showing[j]`` says the row has field j into ``out`` (``(rows, width)`` or
    ``(rows, samples, width)`` uint8, width the fields' widths; a view into a chunk's text),
    one after the other, NUL-padded.

    Each field's text begins with a one-byte lead: the separator before the field, except in
    ``fields[0]``, where it is the byte a row's first field begins with (NUL: none). A row whose
    first field is ``j > 0`` takes that byte as ``j``'s lead; a row with none is the byte and
    ``.``. With every field shown (the common case) the fields are written as they are.
    """
    start = fields[0].first_byte
    first = showing.argmax(axis=0)  # the first field each row shows
    offset = 0
    for j, field in enumerate(fields):
        part = out[..., offset:offset + field.width]
        field.into(part)
        if not showing[j].all():
            part[~showing[j]] = 0
        if j == 0 and not showing[0].all():
            none = ~showing.any(axis=0)
            part[none, ..., 0] = start
            part[none, ..., 1] = ord(vt.MISSING)
        elif j > 0 and (leading := first == j).any():
            part[leading, ..., 0] = start
        offset += field.width


#: bytes of NUL-padded text :func:`_lines` writes at a time (small enough to stay in cache)
_SLICE_BYTES = 1 << 20


def _lines(fixed: np.ndarray, info: tuple[list[vt.CellText], np.ndarray],
           samples: tuple[np.ndarray, list[vt.CellText], np.ndarray] | None, count: int) -> list[bytes]:
    """The lines of a chunk's rows: the ``fixed`` columns (a NUL-padded uint8 matrix, its
    last tab included), the INFO fields, and ``samples`` (the FORMAT column's matrix, the
    fields of the ``count`` sample columns, which rows show each; a field after the first
    that no row shows is left out).

    A slice of rows at a time (about :data:`_SLICE_BYTES`) is written into one NUL-padded
    byte matrix (a row a line), whose NULs are dropped (``bytes.translate``, ~0.65 ns a byte,
    the costliest step of the lines); the slices' texts are given as they are (joined, they
    would be copied once more). The INFO column, as narrow as the fixed ones, is written for
    all the rows first (its fields' gathers once a chunk, not once a slice). Where no sample
    cell has padding (:attr:`~.values.CellText.dense`: GT only, of one-digit diploid calls),
    the columns before them are unpadded once for the chunk and each row's sample text is
    copied as it is (:func:`_dense_lines`).
    """
    rows = len(fixed)
    info_text = np.empty((rows, sum(cell.width for cell in info[0])), np.uint8)
    _joined(info[0], info[1], info_text)
    if samples is not None and not samples[2][1:].all():  # (a declared key no row of the chunk has: no bytes)
        kept = [0, *np.flatnonzero(samples[2][1:].any(axis=1)) + 1]
        samples = samples[0], [samples[1][j] for j in kept], samples[2][kept]
    widths = [fixed.shape[1], info_text.shape[1]]
    if samples is not None:
        widths += [samples[0].shape[1], count * sum(cell.width for cell in samples[1])]
    ends = np.cumsum(widths).tolist()
    if samples is not None and samples[2].all() and all(cell.dense for cell in samples[1]):
        return _dense_lines(np.concatenate([fixed, info_text, samples[0]], axis=1), samples[1], count)
    step = max(1, _SLICE_BYTES // (ends[-1] + 1))
    pieces = []
    for start in range(0, rows, step):
        part = slice(start, min(start + step, rows))
        text = np.empty((part.stop - start, ends[-1] + 1), np.uint8)
        text[:, :ends[0]] = fixed[part]
        text[:, ends[0]:ends[1]] = info_text[part]
        if samples is not None:
            keys, cells, showing = samples
            text[:, ends[1]:ends[2]] = keys[part]
            _joined([cell.rows(part) for cell in cells], showing[:, part],
                    text[:, ends[2]:ends[3]].reshape(len(text), count, -1))
        text[:, -1] = ord("\n")
        pieces.append(text.tobytes().translate(None, b"\0"))
    return pieces


def _dense_lines(heads: np.ndarray, cells: list[vt.CellText], count: int) -> list[bytes]:
    r"""The lines of a chunk whose sample cells (``cells``, shown in every row) have no padding:
    ``heads`` (the columns before the sample columns, a NUL-padded uint8 matrix) unpadded at
    once, each row's sample text (no NUL) written into a slice's matrix (:func:`_lines`) and
    given as a view of it.

    >>> calls = vt.DigitCalls(np.array([[[0, 1]], [[1, 1]]], np.int8), None, ord("\t"), ord("|"), False)
    >>> _dense_lines(np.frombuffer(b"a\0b\0cd", np.uint8).reshape(2, 3), [calls], 1)
    [b'ab\t0|1\ncd\t1|1\n']
    """
    rows, width = len(heads), count * sum(cell.width for cell in cells) + 1
    text = memoryview(heads.tobytes().translate(None, b"\0"))
    ends = [0, *np.cumsum(np.count_nonzero(heads, axis=1)).tolist()]
    step = max(1, _SLICE_BYTES // width)
    pieces = []
    for start in range(0, rows, step):
        stop = min(start + step, rows)
        matrix = np.empty((stop - start, width), np.uint8)
        _joined([cell.rows(slice(start, stop)) for cell in cells], np.ones((len(cells), stop - start), bool),
                matrix[:, :-1].reshape(len(matrix), count, -1))
        matrix[:, -1] = ord("\n")
        flat = matrix.reshape(-1).data  # (the matrix itself: the joined text is its one copy)
        pieces.append(b"".join([part for row in range(stop - start) for part in (
            text[ends[start + row]:ends[start + row + 1]], flat[row * width:(row + 1) * width])]))
    return pieces


def _format_columns(store: VczStore, blocks: BatchBlocks, everyone: BatchBlocks, rows: np.ndarray,
                    order: np.ndarray | None, trim: Trim | None = None
                    ) -> tuple[np.ndarray, list[vt.CellText], np.ndarray]:
    """Per row, the FORMAT column (its tab, the keys; a NUL-padded uint8 matrix), and the
    fields of the sample columns (each sample's tab and cell) and which rows show each
    (:func:`_joined`)."""
    names: list[str] = []
    cells: list[vt.CellText] = []
    shown: list[np.ndarray] = []
    fields: dict[str, FieldInfo] = store.format_fields
    pick = _run(rows)
    for name in sorted(fields, key=lambda n: n != "GT"):
        field = fields[name]
        values = blocks.read(field.array)[pick]
        no_value = None if field.mask is None else blocks.read(field.mask)[pick]
        if trim is not None:
            every = None if everyone is blocks or field.number != "G" else (
                everyone.read(field.array)[pick], None if field.mask is None else everyone.read(field.mask)[pick])
            values, no_value = trim.values(values, field.number, no_value, f"{store.path}: FORMAT/{name}", every)
            values = trim.genotypes(values) if name == "GT" else values
        if order is not None:
            values = values[:, order]
            no_value = None if no_value is None else no_value[:, order]
        if name == "GT":
            phased = None
            if store.has_array(spec.CALL_GENOTYPE_PHASED):
                phased = blocks.read(spec.CALL_GENOTYPE_PHASED)[pick]
                phased = phased if order is None else phased[:, order]
            text = vt.genotype_cells(values, phased, lead="\t" if not cells else ":")
        else:
            if values.ndim == 2:
                values = values[..., None]
                no_value = None if no_value is None else no_value[..., None]
            text = vt.cell_codes(values, field.vcf_type, no_value, lead="\t" if not cells else ":")
        names.append(name)
        cells.append(text)
        # The store cannot tell a key absent from a record from one whose values are all
        # missing: GT is written always (as nearly every record has it), others when set
        # (or, in a store that keeps it apart, where a sample's vector is written ``.,.``).
        shown.append(
            np.ones(len(rows), bool) if name == "GT"  # (GT of every sample is not read for it)
            else _present(store, everyone, field, pick)
            & (trim is None or field.number != "A" or trim.num_alleles > 1)  # no ALT left: no A key
        )
    showing = np.array(shown).reshape(len(names), len(rows))
    return _names_matrix(showing.T, names, ":", "\t"), cells, showing


def _present(store: VczStore, everyone: BatchBlocks, field: FieldInfo, pick: np.ndarray | slice) -> np.ndarray:
    """Per record of ``pick``: whether FORMAT ``field`` is written (some sample has a value)."""
    stored = everyone.read(field.array)[pick]
    return vt.present(stored, field.vcf_type,
                      None if field.mask is None else everyone.read(field.mask)[pick],
                      spelled=store.spells_missing_vectors and stored.ndim == 3)


def _fixed_columns(store: VczStore, blocks: BatchBlocks, rows: np.ndarray, contig_ids: np.ndarray,
                   positions: np.ndarray, alleles: np.ndarray) -> np.ndarray:
    """CHROM to FILTER of each row, each followed by its tab, as a NUL-padded uint8 matrix
    (a row a record), column by column: no Python work per record."""
    missing = np.full((len(rows), 1), ord(vt.MISSING), np.uint8)
    ids = _strings(blocks.read(spec.VARIANT_ID)[rows]) if store.has_array(spec.VARIANT_ID) else missing
    quality = (vt.cell_codes(blocks.read(spec.VARIANT_QUALITY)[rows], "Float").matrix()
               if store.has_array(spec.VARIANT_QUALITY) else missing)
    filters = (_names_matrix(blocks.read(spec.VARIANT_FILTER)[rows], list(store.filters), ";")
               if store.has_array(spec.VARIANT_FILTER) else missing)
    tab = np.full((len(rows), 1), ord("\t"), np.uint8)
    columns = [_strings(np.asarray(store.contigs, dtype=object))[contig_ids], vt.decimal_matrix(positions), ids,
               _strings(alleles[:, 0]), _alt_matrix(alleles), quality.reshape(len(rows), -1), filters]
    return np.concatenate([part for column in columns for part in (column, tab)], axis=1)


def chunk_text(source: ChunkSource, chunk: int, rows: np.ndarray, options: RecordOptions) -> list[bytes]:
    """The VCF lines of rows ``rows`` (indexes) of variant chunk ``chunk`` of
    ``source.store`` as texts of whole lines (UTF-8), its chunks read through ``source`` (the
    store, or a wrapper that counts).

    Each column is formatted for the whole chunk at once, into one NUL-padded byte matrix (a
    row a record; :func:`_lines`); the padding is dropped in one pass.
    """
    if not len(rows):
        return []
    store = source.store
    blocks, order = _sorted_blocks(source, chunk, options.samples)
    everyone = BatchBlocks(source, chunk, None) if options.subsets else blocks
    contig_ids = blocks.read(spec.VARIANT_CONTIG)[rows]
    positions = blocks.read(spec.VARIANT_POSITION)[rows]
    alleles = blocks.read(spec.VARIANT_ALLELE)[rows]
    num_alts = (alleles[:, 1:] != spec.STR_FILL).sum(axis=1)
    trim = None
    if options.trim and "GT" in store.format_fields:  # (without GT bcftools trims nothing)
        contigs = np.asarray(store.contigs, dtype=object)[contig_ids]
        from vcfzarr_sql.view.trim import Trim

        trim = Trim.of(blocks.read(spec.CALL_GENOTYPE)[rows], (alleles != spec.STR_FILL).sum(axis=1),
                       np.char.add(np.char.add(contigs.astype(str), ":"), positions.astype(str)))
        alleles = trim.alleles(alleles)
    counts = None
    if options.writes_counts("GT" in store.format_fields):
        counts = _counts(source, blocks, rows, order, num_alts, trim)
    info = _info_column(store, blocks, rows, counts, trim)
    fixed = _fixed_columns(store, blocks, rows, contig_ids, positions, alleles)
    written = len(store.samples) if options.samples is None else len(options.samples)
    if not (store.format_fields and options.genotypes and written):
        return _lines(fixed, info, None, 0)
    return _lines(fixed, info, _format_columns(store, blocks, everyone, rows, order, trim), written)
