"""One variant chunk of a store -> VCF record lines, as ``bcftools view`` prints them.

Values come from the stored arrays (not the SQL tables), so what htslib would print is still
known: a missing value (``.``) differs from padding, and a vector of missing values keeps its
length. INFO keys are written in header order (the store does not keep each record's own
order), FILTER names in header order once each (``variant_filter`` is a boolean per header
filter); a FORMAT key is written when any sample of the record has a value for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.query.selection import recounts
from vcfzarr_sql.query.selection.rows import ValueReader
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.fields import FieldInfo
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view import values as vt
from vcfzarr_sql.view.trim import Trim

#: INFO/AC and INFO/AN of each row (:func:`_counts`): a text matrix and whether the row has it
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


def _alt_text(alleles: np.ndarray) -> list[str]:
    out = []
    for row in alleles[:, 1:]:
        alts = [a for a in row if a != spec.STR_FILL]
        out.append(",".join(alts) if alts else vt.MISSING)
    return out


def _filter_text(filters: np.ndarray, names: list[str]) -> list[str]:
    return [";".join(n for n, on in zip(names, row) if on) or vt.MISSING for row in filters]


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
        calls = blocks.read(spec.CALL_GENOTYPE)[rows]
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
    return (vt.cell_matrix(ac, "Integer"), num_alts > 0), (vt.cell_matrix(an, "Integer"), np.ones(len(rows), bool))


def _named(name: str, text: np.ndarray | None, rows: int, first: bool) -> np.ndarray:
    """``;NAME=`` (the ``first`` field: a NUL lead) and each row's text (a Flag, ``text``
    None: ``;NAME``), as (rows, 1, width): a :func:`_joined` text."""
    lead = "\0" if first else ";"
    key = np.frombuffer((lead + (name if text is None else f"{name}=")).encode(), np.uint8)
    keys = np.broadcast_to(key, (rows, len(key)))
    return (keys if text is None else np.concatenate([keys, text], axis=1))[:, None, :]


def _text_matrix(texts: list[str]) -> np.ndarray:
    return vt.as_matrix(np.array([t.encode() for t in texts]))


def _info_column(store: VczStore, blocks: BatchBlocks, rows: np.ndarray, counts: Counts | None,
                 trim: Trim | None = None) -> np.ndarray:
    """The INFO column of each row: a uint8 matrix, NUL-padded (:func:`_joined`)."""
    texts: list[np.ndarray] = []
    shown: list[np.ndarray] = []
    fields: dict[str, FieldInfo] = store.info_fields
    recounted = {} if counts is None else {"AC": counts[0], "AN": counts[1]}
    for name, field in fields.items():
        if name in recounted:
            texts.append(_named(name, recounted[name][0], len(rows), not texts))
            shown.append(recounted[name][1])
            continue
        values = blocks.read(field.array)[rows]
        no_value = None if field.mask is None else blocks.read(field.mask)[rows]
        if trim is not None:
            values, no_value = trim.values(values, field.number, no_value, f"{store.path}: INFO/{name}")
        if field.vcf_type == "Flag":
            texts.append(_named(name, None, len(rows), not texts))
            shown.append(values.reshape(len(rows), -1).any(axis=1))
            continue
        present = vt.present(values, field.vcf_type, no_value)
        if present.any():
            texts.append(_named(name, vt.cell_matrix(values, field.vcf_type, no_value), len(rows), not texts))
            shown.append(present)
    for name, (text, has) in recounted.items():  # AC/AN not declared in the store: bcftools appends them
        if name not in fields:
            texts.append(_named(name, text, len(rows), not texts))
            shown.append(has)
    if not texts:
        return np.full((len(rows), 1), ord(vt.MISSING), np.uint8)
    return _joined(texts, np.array(shown).reshape(len(texts), len(rows)))


def _joined(texts: list[np.ndarray], showing: np.ndarray) -> np.ndarray:
    """Each row's fields (``texts[j]``: (rows, cells, width) uint8, NUL-padded) where
    ``showing[j]`` says the row has field j, as (rows, cells x width) uint8, NUL-padded.

    Each text begins with a one-byte lead: the separator before the field, except in
    ``texts[0]``, where it is the byte a row's first field begins with (NUL: none). A row whose
    first field is ``j > 0`` takes that byte as ``j``'s lead; a row with none is the byte and
    ``.``. With every field shown (the common case) the texts are joined as they are.
    """
    start = texts[0][:1, :1, 0]
    first = showing.argmax(axis=0)  # the first field each row shows
    parts = []
    for j, text in enumerate(texts):
        if not showing[j].all():
            text = text * showing[j][:, None, None]
        if j == 0 and not showing[0].all():
            none = ~showing.any(axis=0)
            text[none, :, 0] = start
            text[none, :, 1] = ord(vt.MISSING)
        elif j > 0 and (leading := first == j).any():
            text = text.copy() if text is texts[j] else text
            text[leading, :, 0] = start
        parts.append(text)
    joined = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=2)
    return joined.reshape(len(joined), -1)


def _without_padding(blocks: list[np.ndarray]) -> bytes:
    """The lines of NUL-padded uint8 matrices of the same rows (line k: row k of each block in
    turn, a newline), without the NULs: a block with no NUL is taken as it is, the rows of
    others each through ``bytes.translate`` (C, one pass over the bytes)."""
    pieces = []
    for block in blocks:
        rows = [row.tobytes() for row in block]
        pieces.append(rows if block.all() else [row.translate(None, b"\0") for row in rows])
    return b"".join(piece for line in zip(*pieces) for piece in (*line, b"\n"))


def _format_columns(store: VczStore, blocks: BatchBlocks, everyone: BatchBlocks, rows: np.ndarray,
                    order: np.ndarray | None, trim: Trim | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the FORMAT column (its tab, the keys; a NUL-padded uint8 matrix), and the
    sample columns (each sample's tab and cell; :func:`_joined`)."""
    names: list[str] = []
    cells: list[np.ndarray] = []
    shown: list[np.ndarray] = []
    fields: dict[str, FieldInfo] = store.format_fields
    for name in sorted(fields, key=lambda n: n != "GT"):
        field = fields[name]
        values = blocks.read(field.array)[rows]
        no_value = None if field.mask is None else blocks.read(field.mask)[rows]
        if trim is not None:
            every = None if everyone is blocks or field.number != "G" else (
                everyone.read(field.array)[rows], None if field.mask is None else everyone.read(field.mask)[rows])
            values, no_value = trim.values(values, field.number, no_value, f"{store.path}: FORMAT/{name}", every)
            values = trim.genotypes(values) if name == "GT" else values
        if order is not None:
            values = values[:, order]
            no_value = None if no_value is None else no_value[:, order]
        if name == "GT":
            phased = None
            if store.has_array(spec.CALL_GENOTYPE_PHASED):
                phased = blocks.read(spec.CALL_GENOTYPE_PHASED)[rows]
                phased = phased if order is None else phased[:, order]
            text = vt.genotype_cells(values, phased, lead="\t" if not cells else ":")
        else:
            if values.ndim == 2:
                values = values[..., None]
                no_value = None if no_value is None else no_value[..., None]
            text = vt.cell_matrix(values, field.vcf_type, no_value, lead="\t" if not cells else ":")
        names.append(name)
        cells.append(text)
        # The store cannot tell a key absent from a record from one whose values are all
        # missing: GT is written always (as nearly every record has it), others when set.
        shown.append(
            np.ones(len(rows), bool) if name == "GT"
            else vt.present(everyone.read(field.array)[rows], field.vcf_type,
                            None if field.mask is None else everyone.read(field.mask)[rows])
            & (trim is None or field.number != "A" or trim.num_alleles > 1)  # no ALT left: no A key
        )
    showing = np.array(shown).reshape(len(names), len(rows))
    keys = [":".join(n for n, on in zip(names, column) if on) or vt.MISSING for column in showing.T.tolist()]
    return _text_matrix([f"\t{key}" for key in keys]), _joined(cells, showing)


def chunk_text(source: ChunkSource, chunk: int, rows: np.ndarray, options: RecordOptions) -> bytes:
    """The VCF lines of rows ``rows`` (indexes) of variant chunk ``chunk`` of
    ``source.store`` as one text (UTF-8), its chunks read through ``source`` (the store, or a
    wrapper that counts).

    Each column is formatted for the whole chunk at once: the fixed columns, INFO and FORMAT
    are one byte matrix (a row a record), the sample columns another, each NUL-padded; the
    padding is dropped in one pass over each (none over the samples when every cell fills
    its width).
    """
    if not len(rows):
        return b""
    store = source.store
    blocks, order = _sorted_blocks(source, chunk, options.samples)
    everyone = BatchBlocks(source, chunk, None) if options.subsets else blocks
    contigs = np.asarray(store.contigs, dtype=object)[blocks.read(spec.VARIANT_CONTIG)[rows]]
    positions = blocks.read(spec.VARIANT_POSITION)[rows]
    ids = blocks.read(spec.VARIANT_ID)[rows] if store.has_array(spec.VARIANT_ID) else None
    alleles = blocks.read(spec.VARIANT_ALLELE)[rows]
    num_alts = (alleles[:, 1:] != spec.STR_FILL).sum(axis=1)
    trim = None
    if options.trim and "GT" in store.format_fields:  # (without GT bcftools trims nothing)
        trim = Trim.of(blocks.read(spec.CALL_GENOTYPE)[rows], (alleles != spec.STR_FILL).sum(axis=1),
                       np.char.add(np.char.add(contigs.astype(str), ":"), positions.astype(str)))
        alleles = trim.alleles(alleles)
    quality = blocks.read(spec.VARIANT_QUALITY)[rows] if store.has_array(spec.VARIANT_QUALITY) else None
    quals = [vt.MISSING] * len(rows) if quality is None else vt.cells(quality, "Float").tolist()
    filters = (
        _filter_text(blocks.read(spec.VARIANT_FILTER)[rows], list(store.filters))
        if store.has_array(spec.VARIANT_FILTER) else [vt.MISSING] * len(rows)
    )
    counts = None
    if options.writes_counts("GT" in store.format_fields):
        counts = _counts(source, blocks, rows, order, num_alts, trim)
    info = _info_column(store, blocks, rows, counts, trim)
    alts = _alt_text(alleles)
    fixed = _text_matrix([
        "\t".join([contigs[k], str(positions[k]), vt.MISSING if ids is None else ids[k],
                   alleles[k, 0], alts[k], quals[k], filters[k], ""])
        for k in range(len(rows))
    ])
    columns = [fixed, info]
    written = len(store.samples) if options.samples is None else len(options.samples)
    if not (store.format_fields and options.genotypes and written):
        return _without_padding([np.concatenate(columns, axis=1)])
    keys, samples = _format_columns(store, blocks, everyone, rows, order, trim)
    return _without_padding([np.concatenate([*columns, keys], axis=1), samples])
