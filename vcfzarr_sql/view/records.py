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
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.fields import FieldInfo
from vcfzarr_sql.store.source import ChunkSource
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.view import values as vt

#: INFO/AC and INFO/AN texts of each row (:func:`_counts`)
Counts = tuple[list[str], list[str]]


@dataclass(frozen=True)
class RecordOptions:
    """What to write: ``samples`` (store indexes in output order; None: all), whether to
    recompute INFO/AC and INFO/AN over them (bcftools does unless ``--no-update``), and
    whether to write the FORMAT and sample columns (not with ``-G``)."""

    samples: np.ndarray | None = None
    update_counts: bool = True
    genotypes: bool = True

    @property
    def subsets(self) -> bool:
        return self.samples is not None


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


def _counts(genotypes: np.ndarray, num_alleles: np.ndarray) -> Counts:
    """INFO/AC and INFO/AN texts over the given calls (bcftools ``bcf_calc_ac``)."""
    an = (genotypes >= 0).reshape(len(genotypes), -1).sum(axis=1)
    ac_texts = []
    for row, n in zip(genotypes.reshape(len(genotypes), -1), num_alleles):
        counts = np.bincount(row[row > 0], minlength=n)[1:n]
        ac_texts.append(",".join(map(str, counts)) if len(counts) else "")
    return ac_texts, [str(v) for v in an]


def _info_column(store: VczStore, blocks: BatchBlocks, rows: np.ndarray, counts: Counts | None) -> list[str]:
    parts: list[list[str]] = [[] for _ in range(len(rows))]
    fields: dict[str, FieldInfo] = store.info_fields
    for name, field in fields.items():
        if counts is not None and name in ("AC", "AN"):
            texts = counts[0] if name == "AC" else counts[1]
            for k, text in enumerate(texts):
                if text:
                    parts[k].append(f"{name}={text}")
            continue
        values = blocks.read(field.array)[rows]
        no_value = None if field.mask is None else blocks.read(field.mask)[rows]
        if field.vcf_type == "Flag":
            for flagged in np.flatnonzero(values.reshape(len(rows), -1).any(axis=1)):
                parts[flagged].append(name)
            continue
        shown = vt.present(values, field.vcf_type, no_value)
        if not shown.any():
            continue
        cells = vt.cells(values[shown], field.vcf_type, None if no_value is None else no_value[shown])
        for row, text in zip(np.flatnonzero(shown), cells):
            parts[row].append(f"{name}={text}")
    if counts is not None:  # AC/AN not declared in the store: bcftools appends them
        for name, texts in (("AC", counts[0]), ("AN", counts[1])):
            if name not in fields:
                for k, text in enumerate(texts):
                    if text:
                        parts[k].append(f"{name}={text}")
    return [";".join(p) if p else vt.MISSING for p in parts]


def _format_columns(store: VczStore, blocks: BatchBlocks, everyone: BatchBlocks, rows: np.ndarray,
                    order: np.ndarray | None) -> tuple[list[str], np.ndarray]:
    """Per row, the FORMAT key text, and the sample columns: a uint8 matrix (one row per
    record) of each sample's tab and cell, NUL bytes padding them (dropped when joined)."""
    names, cells, shown = [], [], []
    fields: dict[str, FieldInfo] = store.format_fields
    for name in sorted(fields, key=lambda n: n != "GT"):
        field = fields[name]
        values = blocks.read(field.array)[rows]
        no_value = None if field.mask is None else blocks.read(field.mask)[rows]
        if order is not None:
            values = values[:, order]
            no_value = None if no_value is None else no_value[:, order]
        if name == "GT":
            phased = None
            if store.has_array(spec.CALL_GENOTYPE_PHASED):
                phased = blocks.read(spec.CALL_GENOTYPE_PHASED)[rows]
                phased = phased if order is None else phased[:, order]
            text = vt.genotype_cells(values, phased)
        else:
            if values.ndim == 2:
                values = values[..., None]
                no_value = None if no_value is None else no_value[..., None]
            text = vt.cell_matrix(values, field.vcf_type, no_value)
        names.append(name)
        cells.append(text)
        # The store cannot tell a key absent from a record from one whose values are all
        # missing: GT is written always (as nearly every record has it), others when set.
        shown.append(
            np.ones(len(rows), bool) if name == "GT"
            else vt.present(everyone.read(field.array)[rows], field.vcf_type,
                            None if field.mask is None else everyone.read(field.mask)[rows])
        )
    showing = np.array(shown).reshape(len(names), len(rows))
    lead = showing.argmax(axis=0)  # the first key of each row: no ':' before it
    none = ~showing.any(axis=0)
    rows_samples = cells[0].shape[:2]
    parts = [np.full((*rows_samples, 1), ord("\t"), np.uint8)]
    for j, text in enumerate(cells):
        if not showing[j].all():
            text = text * showing[j][:, None, None]
        if j == 0 and none.any():
            text = text.copy()
            text[none] = 0
            text[none, :, 0] = ord(vt.MISSING)
        if j > 0:
            colon = np.where(showing[j] & (lead != j), ord(":"), 0).astype(np.uint8)
            parts.append(np.broadcast_to(colon[:, None, None], (*rows_samples, 1)))
        parts.append(text)
    keys = [":".join(n for n, on in zip(names, column) if on) or vt.MISSING for column in showing.T.tolist()]
    return keys, np.concatenate(parts, axis=2).reshape(len(rows), -1)


def chunk_text(source: ChunkSource, chunk: int, rows: np.ndarray, options: RecordOptions) -> bytes:
    """The VCF lines of rows ``rows`` (indexes) of variant chunk ``chunk`` of
    ``source.store`` as one text (UTF-8), its chunks read through ``source`` (the store, or a
    wrapper that counts).

    Each column is formatted for the whole chunk at once; the sample columns of every record
    are one byte matrix, its padding dropped in one pass (none when every cell fills its
    width), then each record's fixed columns and samples are joined.
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
    quality = blocks.read(spec.VARIANT_QUALITY)[rows] if store.has_array(spec.VARIANT_QUALITY) else None
    quals = [vt.MISSING] * len(rows) if quality is None else vt.cells(quality, "Float").tolist()
    filters = (
        _filter_text(blocks.read(spec.VARIANT_FILTER)[rows], list(store.filters))
        if store.has_array(spec.VARIANT_FILTER) else [vt.MISSING] * len(rows)
    )
    counts = None
    if options.subsets and options.update_counts and "GT" in store.format_fields:
        genotypes = blocks.read(spec.CALL_GENOTYPE)[rows]
        genotypes = genotypes if order is None else genotypes[:, order]
        counts = _counts(genotypes, (alleles != spec.STR_FILL).sum(axis=1))
    info = _info_column(store, blocks, rows, counts)
    alts = _alt_text(alleles)
    fixed = [
        "\t".join([contigs[k], str(positions[k]), vt.MISSING if ids is None else ids[k],
                   alleles[k, 0], alts[k], quals[k], filters[k], info[k]])
        for k in range(len(rows))
    ]
    written = len(store.samples) if options.samples is None else len(options.samples)
    if not (store.format_fields and options.genotypes and written):
        return ("\n".join(fixed) + "\n").encode()
    keys, samples = _format_columns(store, blocks, everyone, rows, order)
    if samples.all():  # every cell as wide as its padding (GT only, say): nothing to drop
        data, ends = samples.tobytes(), np.arange(1, len(rows) + 1) * samples.shape[1]
    else:
        kept = samples != 0
        data, ends = samples[kept].tobytes(), np.cumsum(np.count_nonzero(kept, axis=1))
    parts = []
    for line, key, start, end in zip(fixed, keys, [0, *ends[:-1].tolist()], ends.tolist()):
        parts += [f"{line}\t{key}".encode(), data[start:end], b"\n"]
    return b"".join(parts)
