"""Growing a cohort: :func:`add` the samples of VCF/BCF files to a store.

``add`` converts each input into a new batch (a plain VCF Zarr store, :func:`convert`) inside
the cohort's hidden directory, then writes the cohort's new sites store (the union of the
records, each batch's row of each record, :mod:`vcfzarr_sql.format.cohort`) and commits both
by renaming a new manifest into place. Nothing written before is rewritten: a kill at any
moment leaves the manifest naming what it named, and the next ``add`` removes what it does not
name. ``add`` holds the lock ``convert`` takes on the store's path, so two cannot interleave.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vcfzarr_sql import __version__
from vcfzarr_sql.converter import convert
from vcfzarr_sql.converter.cohort_counts import Since, stored_totals, write_added_counts
from vcfzarr_sql.converter.output import output_lock
from vcfzarr_sql.errors import OutputError, VcfZarrError
from vcfzarr_sql.format import cohort as layout
from vcfzarr_sql.format import gvcf, spec
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.format.region_index import region_index
from vcfzarr_sql.store.cohort_commit import commit_manifest, sync_written
from vcfzarr_sql.store.fasta import Fasta
from vcfzarr_sql.store.kvstore import open_kv
from vcfzarr_sql.store.opening import open_store, read_manifest
from vcfzarr_sql.store.summary_arrays import SUMMARY_COMPRESSOR
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.store.vcz import open_store as open_plain
from vcfzarr_sql.store.writer import NewArray, write_group, write_whole

__all__ = ["AddSummary", "DuplicateSampleError", "add"]

#: A batch's variant chunks hold at most this many times the cohort's records (the converter
#: parses a chunk's records at once: this bounds its memory).
MAX_BATCH_CHUNK_RECORDS = 16

#: Records a chunk of the sites store's allele keys (read and written whole by add).
KEY_CHUNK_RECORDS = 1 << 20

_STRUCTURED = re.compile(r"##(INFO|FORMAT|FILTER|contig)=<ID=([^,>]+)")


class DuplicateSampleError(VcfZarrError):
    """An input names a sample the cohort (or another input) already has."""


@dataclass(frozen=True)
class AddSummary:
    batches: int
    samples_added: int
    num_samples: int
    num_variants: int

    def __str__(self) -> str:
        return (f"added {self.samples_added} samples in {self.batches} batch(es): "
                f"{self.num_samples} samples, {self.num_variants} records")


@dataclass
class _Sites:
    """The cohort's records and metadata as the next sites store holds them."""

    contig: np.ndarray
    position: np.ndarray
    length: np.ndarray
    batch_rows: np.ndarray  # (records, batches)
    ploidy: np.ndarray
    contigs: list[str]
    contig_lengths: list[int]
    filters: list[str]
    filter_descriptions: list[str]
    samples: list[str]
    header: str
    header_added: list[str]
    #: gVCF cohorts (:mod:`vcfzarr_sql.format.gvcf`), per record: its alleles where they are
    #: not its first batch's (else ``()``), whether it is a segment, and INFO/END.
    merged_alleles: list[tuple[str, ...]] | None = None
    segment: np.ndarray | None = None
    end: np.ndarray | None = None
    #: Per record, its row in the cohort before this add (-1: a record new to it); None where
    #: not followed (gVCF cohorts: their counts are added up from every batch).
    origin: np.ndarray | None = None
    #: Per record, its alleles as one number (:func:`vcfzarr_sql.format.cohort.allele_keys`;
    #: KEY_UNKNOWN where not computed yet); None in gVCF cohorts (their union reads the text).
    allele_keys: np.ndarray | None = None


def _input_samples(path: str) -> list[str]:
    import cyvcf2

    try:
        vcf = cyvcf2.VCF(path)
    except (OSError, ValueError) as err:
        raise VcfZarrError(f"{path}: cannot read it as VCF/BCF ({err})") from None
    try:
        return list(vcf.samples)
    finally:
        vcf.close()


def _check_new_samples(cohort: VczStore, inputs: Sequence[str]) -> list[int]:
    """How many samples each input has; DuplicateSampleError (nothing written yet) if an input
    repeats a sample name."""
    seen = {name: cohort.path for name in cohort.samples}
    counts = []
    for path in inputs:
        names = _input_samples(path)
        for name in names:
            if name in seen:
                raise DuplicateSampleError(f"{path}: sample {name!r} is already in "
                                           f"{seen[name]}; nothing was added")
            seen[name] = path
        counts.append(len(names))
    return counts


def batch_chunk_size(variants_chunk: int, samples_chunk: int, samples: int) -> int:
    """Records per variant chunk of a batch of ``samples`` samples added to a cohort chunked
    in ``variants_chunk`` records and ``samples_chunk`` samples: as many calls per chunk as the
    cohort's (:data:`MAX_BATCH_CHUNK_RECORDS` times its records at most), so that a batch of
    few samples is a few files, not as many as the cohort has variant chunks (a cohort reads
    a batch's rows whatever its chunks).

    >>> batch_chunk_size(1000, 2000, 1), batch_chunk_size(1000, 2000, 500), batch_chunk_size(1000, 2000, 3000)
    (16000, 4000, 1000)
    """
    return variants_chunk * min(max(samples_chunk // max(samples, 1), 1), MAX_BATCH_CHUNK_RECORDS)


def _remove_debris(root: Path, manifest: layout.Manifest | None) -> None:
    """Remove batch and sites directories the manifest does not name (an interrupted add's),
    keeping the sites store it replaced (a reader may still have that one open)."""
    keep = set() if manifest is None else {*manifest.batches, manifest.sites,
                                           f"{layout.SITES}/{manifest.generation - 1}"}
    for folder in (layout.BATCHES, layout.SITES):
        for entry in sorted((root / folder).glob("*")):
            if f"{folder}/{entry.name}" not in keep:
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink()
    for leftover in (root / layout.COHORT_DIR).glob("*.tmp"):
        leftover.unlink()


def _gt_width(store: VczStore) -> np.ndarray:
    """Per record of a plain store: the alleles of its widest genotype (BCF's GT vector
    length), which a missing call of a record the other batches lack takes. In a diploid store
    with stored genotype counts, a record with a het or hom call is 2 wide; the genotypes of the
    chunks holding any other record are read."""
    if not store.has_array(spec.CALL_GENOTYPE):
        return np.zeros(store.num_variants, dtype=np.int8)
    info = store.array_info(spec.CALL_GENOTYPE)
    width = np.full(store.num_variants, -1, dtype=np.int8)
    if info.shape[2] == 2 and store.has_array(sc.ALLELE_COUNTS):
        counts = store.read_array(sc.ALLELE_COUNTS)
        width[(counts[:, :, 0] + counts[:, :, 1]).sum(axis=1) > 0] = 2
    size = store.variants_chunk_size
    for k in layout.distinct(np.flatnonzero(width < 0) // size)[0].tolist():
        widths = [(store.read_chunk(spec.CALL_GENOTYPE, (k, s, 0)) != spec.INT_FILL).sum(axis=2).max(axis=1, initial=0)
                  for s in range(max(info.grid[1], 1))]
        width[k * size : k * size + len(widths[0])] = np.max(widths, axis=0)
    return width


def _lengths(store: VczStore) -> np.ndarray:
    """variant_length of every record of ``store``."""
    parts = [store.variant_length(k) for k in range(store.num_variant_chunks)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _allele_rows(store: VczStore, rows: np.ndarray) -> np.ndarray:
    """``variant_allele`` of records ``rows`` of ``store`` (reading their chunks)."""
    out = np.empty((len(rows), store.array_info(spec.VARIANT_ALLELE).shape[1]), dtype=object)
    chunk_of = rows // store.variants_chunk_size
    order = np.argsort(chunk_of, kind="stable")
    chunks, _, counts = layout.distinct(chunk_of)
    for k, group in zip(chunks.tolist(), np.split(order, np.cumsum(counts)[:-1])):
        out[group] = store.read_chunk(spec.VARIANT_ALLELE, (k, 0))[rows[group] - k * store.variants_chunk_size]
    return out


def _alleles_at(store: VczStore, rows: np.ndarray) -> list[str]:
    """REF and ALTs joined by ``,`` of records ``rows`` of ``store`` (reading their chunks)."""
    return layout.joined_alleles(_allele_rows(store, rows)).tolist()


def _keys(store: VczStore, rows: np.ndarray) -> list[str]:
    """Alleles of ``rows`` as :func:`~vcfzarr_sql.format.cohort.union_of_sites` reads them
    (blank for rows it does not read: any record not at a shared position)."""
    keys = [""] * store.num_variants
    for i, key in zip(rows.tolist(), _alleles_at(store, rows)):
        keys[i] = key
    return keys


def _definitions(text: str) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for line in text.splitlines():
        match = _STRUCTURED.match(line)
        if match:
            found.setdefault((match[1], match[2]), line)
    return found


def _merged_header(header: str, batch: VczStore) -> str:
    """``header`` with the INFO/FORMAT/FILTER/contig lines of ``batch`` it lacks, and the batch's
    samples on its ``#CHROM`` line, as ``bcftools merge`` merges headers."""
    lines = header.rstrip("\n").split("\n")
    known = _definitions(header)
    new = [line for key, line in _definitions(batch.vcf_header or "").items() if key not in known]
    columns = lines[-1].split("\t")
    if len(columns) == 8 and batch.num_samples:
        columns.append("FORMAT")
    return "\n".join([*lines[:-1], *new, "\t".join([*columns, *batch.samples])]) + "\n"


def _current_sites(cohort: VczStore) -> _Sites:
    """The sites of the cohort as it is: its sites store's, or a plain store's own."""
    sites = getattr(cohort, "sites", None)
    if sites is not None:
        batch_rows = sites.read_array(layout.BATCH_ROWS).astype(np.int64)
        ploidy = sites.read_array(layout.PLOIDY)
        added = list(sites.attrs.get(spec.ATTR_HEADER_ADDED, ()))
    else:
        batch_rows = np.arange(cohort.num_variants, dtype=np.int64)[:, None]
        ploidy = _gt_width(cohort)
        added = list(cohort.attrs.get(spec.ATTR_HEADER_ADDED, ()))
    lengths = [-1] * len(cohort.contigs) if cohort.contig_lengths is None else cohort.contig_lengths.tolist()
    current = _Sites(
        contig=cohort.read_array(spec.VARIANT_CONTIG).astype(np.int64),
        position=cohort.read_array(spec.VARIANT_POSITION).astype(np.int64),
        length=_lengths(cohort), batch_rows=batch_rows, ploidy=ploidy.astype(np.int8),
        contigs=list(cohort.contigs), contig_lengths=lengths, filters=list(cohort.filters),
        filter_descriptions=list(cohort.filter_descriptions), samples=list(cohort.samples),
        header=cohort.vcf_header or "", header_added=added,
        origin=np.arange(len(batch_rows), dtype=np.int64),
    )
    if sites is not None and sites.has_array(layout.ALLELES):
        current.merged_alleles = [tuple(a for a in row if a)
                                   for row in sites.read_array(layout.ALLELES).tolist()]
        current.segment = sites.read_array(layout.SEGMENT).astype(bool)
        current.end = sites.read_array(layout.END).astype(np.int64)
    elif sites is None and _might_hold_blocks(cohort):
        alleles = cohort.read_array(spec.VARIANT_ALLELE)
        blocks = gvcf.block_mask(alleles, current.length)
        if blocks.any():
            current.merged_alleles = [tuple(a for a in row if a) if block else ()
                                       for row, block in zip(alleles.tolist(), blocks.tolist())]
            current.segment = blocks
            current.end = np.where(blocks, current.position + current.length - 1, spec.INT_MISSING)
    if current.merged_alleles is None:
        current.allele_keys = sites.read_array(layout.ALLELE_KEYS).astype(np.int64) \
            if sites is not None and sites.has_array(layout.ALLELE_KEYS) \
            else np.full(len(batch_rows), layout.KEY_UNKNOWN, dtype=np.int64)  # (a store before them)
    return current


def _might_hold_blocks(store: VczStore) -> bool:
    """Whether ``store`` may hold gVCF reference blocks (they have INFO/END)."""
    return store.has_array(spec.INFO_PREFIX + "END") and store.num_variants > 0


def _allele_rows_of(sites: _Sites, batches: Sequence[VczStore], rows: np.ndarray) -> np.ndarray:
    """``variant_allele`` of the cohort's records ``rows`` (padded with ``""``), read from the
    first batch holding each."""
    holder = np.argmax(sites.batch_rows[rows] >= 0, axis=1)
    parts = []
    for b in layout.distinct(holder)[0].tolist():
        where = np.flatnonzero(holder == b)
        parts.append((where, _allele_rows(batches[b], sites.batch_rows[rows[where], b])))
    out = np.full((len(rows), max((p.shape[1] for _, p in parts), default=1)), "", dtype=object)
    for where, part in parts:
        out[where, : part.shape[1]] = part
    return out


def _alleles_of(sites: _Sites, batches: Sequence[VczStore], rows: np.ndarray) -> list[str]:
    """Alleles of the cohort's records ``rows`` joined by ``,``, read from the first batch
    holding each."""
    return layout.joined_alleles(_allele_rows_of(sites, batches, rows)).tolist()


def _merge(sites: _Sites, batches: Sequence[VczStore], batch: VczStore,
           subset: np.ndarray | None = None, *, gvcf_records: bool = False) -> _Sites:
    """``sites`` (of the stores ``batches``) with the records of ``batch`` merged in (only its
    rows ``subset``, when given). ``gvcf_records``: records (not blocks) of a gVCF cohort,
    which are one record where they differ only in gVCF symbolic alleles, with the union of
    the alleles (:func:`vcfzarr_sql.format.gvcf.record_key`)."""
    contigs, contig_lengths, b_contig = _contigs(sites, batch)
    b_position = batch.read_array(spec.VARIANT_POSITION).astype(np.int64)
    rows_of_b = np.arange(len(b_position)) if subset is None else subset
    key_a = (sites.contig << 33) + sites.position
    key_b = (b_contig[rows_of_b] << 33) + b_position[rows_of_b]
    shared = layout.shared_values(key_a, key_b)
    rows_a = np.flatnonzero(np.isin(key_a, shared))
    rows_b = np.flatnonzero(np.isin(key_b, shared))
    allele_keys = None
    if sites.allele_keys is None or gvcf_records:
        alleles_a = [""] * len(key_a)
        for i, key in zip(rows_a.tolist(), _alleles_of(sites, batches, rows_a)):
            alleles_a[i] = ",".join(sites.merged_alleles[i]) if sites.merged_alleles and sites.merged_alleles[i] \
                else key
        keys_b = _keys(batch, rows_of_b[rows_b])
        match = gvcf.record_key if gvcf_records else str
        union = layout.union_of_sites(sites.contig, sites.position, [match(a) for a in alleles_a],
                                      b_contig[rows_of_b], b_position[rows_of_b],
                                      [match(keys_b[i]) for i in rows_of_b.tolist()])
    else:
        keys_a, compared_a = _cohort_keys(sites, batches, rows_a)
        b_keys, compared_b = _batch_keys(batch, rows_of_b, rows_b)
        union = layout.union_of_sites(sites.contig, sites.position, compared_a,
                                      b_contig[rows_of_b], b_position[rows_of_b], compared_b)
        allele_keys = np.where(union.first >= 0, np.r_[keys_a, 0][union.first], np.r_[b_keys, 0][union.second])
    first = union.first
    second = np.r_[rows_of_b, -1][union.second]  # (-1: none)
    old = first >= 0
    batch_rows = np.full((len(first), sites.batch_rows.shape[1] + 1), -1, dtype=np.int64)
    batch_rows[old, :-1] = sites.batch_rows[first[old]]
    batch_rows[:, -1] = second
    new = second >= 0
    b_length = _lengths(batch)
    b_width = _gt_width(batch)
    length = np.zeros(len(first), dtype=np.int64)
    ploidy = np.zeros(len(first), dtype=np.int8)
    length[old], ploidy[old] = sites.length[first[old]], sites.ploidy[first[old]]
    length[new] = np.maximum(length[new], b_length[second[new]])
    ploidy[new] = np.maximum(ploidy[new], b_width[second[new]])
    contig = np.where(old, np.r_[sites.contig, 0][first], np.r_[b_contig, 0][second])  # ([-1]: 0)
    position = np.where(old, np.r_[sites.position, 0][first], np.r_[b_position, 0][second])
    filters, descriptions = list(sites.filters), list(sites.filter_descriptions)
    for name, description in zip(batch.filters, batch.filter_descriptions):
        if name not in filters:
            filters.append(name)
            descriptions.append(description)
    added = sites.header_added + [line for line in batch.attrs.get(spec.ATTR_HEADER_ADDED, ())
                                 if line not in sites.header_added]
    out = _Sites(contig, position, length, batch_rows, ploidy, contigs, contig_lengths, filters,
                 descriptions, sites.samples + list(batch.samples),
                 _merged_header(sites.header, batch), added,
                 origin=None if sites.origin is None else np.r_[sites.origin, -1][first],
                 allele_keys=allele_keys)
    if gvcf_records:
        out.merged_alleles = _record_alleles(sites, first, second, alleles_a, keys_b)
    return out


def _compared(keys: np.ndarray, texts: np.ndarray) -> np.ndarray:
    """What the union compares of records whose allele keys are ``keys``, and texts ``texts``
    (REF and ALTs joined by ``,``): the key, or the text where the alleles do not pack (the
    keys themselves where all pack: integers compare at once, objects one by one)."""
    unpacked = keys == layout.KEY_UNPACKED
    if not unpacked.any():
        return keys
    out = keys.astype(object)
    out[unpacked] = texts[unpacked]
    return out


def _cohort_keys(sites: _Sites, batches: Sequence[VczStore], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The allele keys of the cohort's records, those of records ``rows`` computed where not
    yet known, and what the union compares of them (read only at ``rows``): the alleles of a
    record are read only where its key is unknown or its alleles do not pack."""
    assert sites.allele_keys is not None
    keys = sites.allele_keys.copy()
    texts = np.full(len(keys), "", dtype=object)
    need = rows[keys[rows] <= layout.KEY_UNPACKED]
    alleles = _allele_rows_of(sites, batches, need)
    keys[need] = layout.allele_keys_of(alleles)  # (packed from the alleles: no text is joined)
    unpacked = keys[need] == layout.KEY_UNPACKED
    texts[need[unpacked]] = layout.joined_alleles(alleles[unpacked])
    return keys, _compared(keys, texts)


def _batch_keys(batch: VczStore, rows: np.ndarray, shared: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The allele keys of records ``rows`` of ``batch`` (known at ``shared``, positions in
    ``rows``; KEY_UNKNOWN elsewhere: their alleles are not read), and what the union compares."""
    keys = np.full(len(rows), layout.KEY_UNKNOWN, dtype=np.int64)
    texts = np.full(len(rows), "", dtype=object)
    alleles = _allele_rows(batch, rows[shared])
    keys[shared] = layout.allele_keys_of(alleles)
    unpacked = keys[shared] == layout.KEY_UNPACKED  # (the union compares their text)
    texts[shared[unpacked]] = layout.joined_alleles(alleles[unpacked])
    return keys, _compared(keys, texts)


def _record_alleles(sites: _Sites, first: np.ndarray, second: np.ndarray, alleles_a: list[str],
                    keys_b: list[str]) -> list[tuple[str, ...]]:
    """Per merged record: its alleles where those of its batches differ (else ``()``): the
    union of the alleles of a cohort record (``alleles_a``) and a batch record (``keys_b``)
    that differ only in gVCF symbolic alleles."""
    out: list[tuple[str, ...]] = []
    for i, j in zip(first.tolist(), second.tolist()):
        before = sites.merged_alleles[i] if i >= 0 and sites.merged_alleles else ()
        if i >= 0 and j >= 0 and alleles_a[i] != keys_b[j]:
            a, b = alleles_a[i].split(","), keys_b[j].split(",")
            before = gvcf.union_alleles(a[0], tuple(a[1:]), tuple(b[1:]))
        out.append(before)
    return out


def _contigs(sites: _Sites, batch: VczStore) -> tuple[list[str], list[int], np.ndarray]:
    """The cohort's contigs and their lengths with those of ``batch`` it lacks appended, and
    the cohort's contig id of each record of ``batch``."""
    lengths = [-1] * len(batch.contigs) if batch.contig_lengths is None else batch.contig_lengths.tolist()
    contigs, contig_lengths = list(sites.contigs), list(sites.contig_lengths)
    for name, length in zip(batch.contigs, lengths):
        if name not in contigs:
            contigs.append(name)
            contig_lengths.append(length)
    contig_map = np.array([contigs.index(c) for c in batch.contigs], dtype=np.int64)
    b_contig = contig_map[batch.read_array(spec.VARIANT_CONTIG).astype(np.int64)] if batch.num_variants \
        else np.zeros(0, dtype=np.int64)
    return contigs, contig_lengths, b_contig


def _values_at(store: VczStore, rows: np.ndarray, name: str | None = None) -> np.ndarray:
    """Array ``name`` (one value per record; None: variant_length) of ``store`` at ``rows``."""
    out = np.zeros(len(rows), dtype=np.int64)
    size = store.variants_chunk_size
    for k in layout.distinct(rows // size)[0].tolist():
        where = np.flatnonzero(rows // size == k)
        chunk = store.variant_length(k) if name is None else store.read_chunk(name, (k,))
        out[where] = chunk[rows[where] - k * size]
    return out


def _end_early(batches: Sequence[VczStore], batch_rows: np.ndarray, pieces: gvcf.Pieces,
               new_first: np.ndarray, new_last: np.ndarray) -> np.ndarray:
    """Drop from one-position ``pieces`` covered by the cohort's blocks and the new batch's
    (whose first and last keys are ``new_first``, ``new_last``) the blocks that end there while
    another batch's block starts there: bcftools ends a block one position early where another
    input has a line at its last position (vcfmerge.c ``clean_buffer``). Which pieces changed."""
    changed = np.zeros(len(pieces.start), dtype=bool)
    both = np.flatnonzero((pieces.old >= 0) & (pieces.new >= 0) & (pieces.start == pieces.end))
    if len(both) == 0:
        return changed
    at, contig = pieces.start[both], pieces.start[both] >> 33
    new_first, new_last = new_first[both], new_last[both]
    old_starts_here = np.zeros(len(both), dtype=bool)
    for b, store in enumerate(batches):
        rows = batch_rows[both, b]
        have = np.flatnonzero(rows >= 0)
        if len(have) == 0:
            continue
        first = gvcf.keys(contig[have], _values_at(store, rows[have], spec.VARIANT_POSITION))
        last = first + _values_at(store, rows[have]) - 1
        ends_here = (last == at[have]) & (first < at[have]) & (new_first[have] == at[have])
        batch_rows[both[have[ends_here]], b] = -1
        changed[both[have[ends_here]]] = True
        old_starts_here[have] |= first == at[have]
    new_ends = old_starts_here & (new_last == at) & (new_first < at)
    batch_rows[both[new_ends], -1] = -1
    changed[both[new_ends]] = True
    return changed


def _rows(sites: _Sites, rows: np.ndarray) -> _Sites:
    """``sites`` with only its records ``rows`` (in that order)."""
    return replace(sites, contig=sites.contig[rows], position=sites.position[rows],
                   length=sites.length[rows], batch_rows=sites.batch_rows[rows],
                   ploidy=sites.ploidy[rows],
                   merged_alleles=None if sites.merged_alleles is None
                   else [sites.merged_alleles[i] for i in rows.tolist()],
                   segment=None if sites.segment is None else sites.segment[rows],
                   end=None if sites.end is None else sites.end[rows], origin=None,
                   allele_keys=None)


def _merge_gvcf(sites: _Sites, batches: Sequence[VczStore], batch: VczStore,
                reference: Fasta | None) -> _Sites:
    """:func:`_merge` for a cohort or batch holding gVCF reference blocks: the batch's other
    records merged with the cohort's other records, then the segments of the cohort and the
    blocks of the batch cut and joined (:func:`vcfzarr_sql.format.gvcf.refine`)."""
    b_alleles = batch.read_array(spec.VARIANT_ALLELE)
    b_length = _lengths(batch)
    blocks = gvcf.block_mask(b_alleles, b_length)
    if sites.merged_alleles is None and not blocks.any():
        return _merge(sites, batches, batch)
    segment = np.zeros(len(sites.position), dtype=bool) if sites.segment is None else sites.segment
    merged = _merge(_rows(sites, np.flatnonzero(~segment)), batches, batch, np.flatnonzero(~blocks),
                    gvcf_records=True)
    _, _, b_contig = _contigs(sites, batch)
    b_position = batch.read_array(spec.VARIANT_POSITION).astype(np.int64)
    old_rows, new_rows = np.flatnonzero(segment), np.flatnonzero(blocks)
    old_start = gvcf.keys(sites.contig[old_rows], sites.position[old_rows])
    new_start = gvcf.keys(b_contig[new_rows], b_position[new_rows])
    pieces = gvcf.refine(old_start, old_start + sites.length[old_rows] - 1,
                         new_start, new_start + b_length[new_rows] - 1,
                         gvcf.keys(merged.contig, merged.position))
    has_old, has_new = pieces.old >= 0, pieces.new >= 0
    old = np.r_[old_rows, -1][pieces.old]  # (-1: none)
    new = np.r_[new_rows, -1][pieces.new]
    batch_rows = np.full((len(pieces.start), merged.batch_rows.shape[1]), -1, dtype=np.int64)
    batch_rows[has_old, :-1] = sites.batch_rows[old[has_old]]
    batch_rows[has_new, -1] = new[has_new]
    contig = (pieces.start >> 33).astype(np.int64)
    first_of_new = np.r_[new_start, 0][pieces.new]  # ([-1]: none)
    changed = _end_early(batches, batch_rows, pieces, first_of_new, first_of_new + np.r_[b_length, 1][new] - 1)
    width = _gt_width(batch)
    ploidy = np.maximum(np.where(has_old, sites.ploidy[old], 0), np.where(has_new, width[new], 0))
    position = (pieces.start & ((1 << 33) - 1)).astype(np.int64)
    length = pieces.end - pieces.start + 1
    old_alleles = sites.merged_alleles or []
    alleles = []
    for i in range(len(pieces.start)):
        before = old_alleles[old[i]] if has_old[i] else ()
        own = tuple(a for a in b_alleles[new[i]] if a) if has_new[i] else ()
        if before and old_start[pieces.old[i]] == pieces.start[i] and before[0] != "N":
            base = before[0]
        elif own and new_start[pieces.new[i]] == pieces.start[i]:
            base = own[0][0]
        elif reference is not None:
            base = reference.base(merged.contigs[contig[i]], int(position[i]))
        else:
            base = "N"
        if changed[i]:  # (the union of the blocks still there)
            holders = [(b, int(r)) for b, r in enumerate(batch_rows[i]) if r >= 0]
            alts = [tuple(_alleles_at([*batches, batch][b], np.array([r]))[0].split(",")[1:]) for b, r in holders]
            alleles.append(gvcf.union_alleles(base, *alts))
        else:
            alleles.append(gvcf.union_alleles(base, before[1:], own[1:]))
    kept = (batch_rows >= 0).any(axis=1)
    # the records and the segments, in order of position (no segment is at a record's)
    pieces = gvcf.Pieces(pieces.start[kept], pieces.end[kept], pieces.old[kept], pieces.new[kept])
    contig, position, length, batch_rows, ploidy = (contig[kept], position[kept], length[kept],
                                                    batch_rows[kept], ploidy[kept])
    alleles = [alleles[i] for i in np.flatnonzero(kept).tolist()]
    order = np.argsort(np.r_[gvcf.keys(merged.contig, merged.position), pieces.start], kind="stable")
    records = len(merged.position)
    every = list(merged.merged_alleles or [()] * records) + alleles
    return replace(
        merged, origin=None,
        contig=np.r_[merged.contig, contig][order], position=np.r_[merged.position, position][order],
        length=np.r_[merged.length, length][order],
        batch_rows=np.concatenate([merged.batch_rows, batch_rows])[order],
        ploidy=np.r_[merged.ploidy, ploidy].astype(np.int8)[order],
        merged_alleles=[every[i] for i in order.tolist()],
        segment=np.r_[np.zeros(records, dtype=bool), np.ones(len(alleles), dtype=bool)][order],
        end=np.r_[np.full(records, spec.INT_MISSING), np.where(length > 1, pieces.end & ((1 << 33) - 1),
                                                               spec.INT_MISSING)][order],
    )


def _write_sites(directory: Path, sites: _Sites, chunk_size: int) -> None:
    """The sites store of ``sites`` at ``directory`` (a small VCF Zarr store) of a cohort of
    variant chunks of ``chunk_size`` records: its arrays along ``variants`` in chunks of
    several (:func:`~vcfzarr_sql.format.cohort.sites_chunk_records`)."""
    def array(name: str, values: np.ndarray, dims: tuple[str, ...], dtype: str,
              chunks: tuple[int, ...] | None = None) -> tuple[NewArray, np.ndarray]:
        shape = values.shape
        return NewArray(name, dtype, dims, shape, chunks or tuple(max(n, 1) for n in shape),
                        SUMMARY_COMPRESSOR, padding="" if dtype == "|O" else 0), values

    def strings(values: list[str]) -> np.ndarray:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    records = len(sites.position)
    index = region_index(sites.contig, sites.position, sites.length, chunk_size)  # (the cohort's chunks)
    batches = sites.batch_rows.shape[1]
    per_record = layout.sites_chunk_records(chunk_size)
    arrays = [
        array(spec.VARIANT_CONTIG, sites.contig.astype(np.int32), (spec.DIM_VARIANTS,), "<i4", (per_record,)),
        array(spec.VARIANT_POSITION, sites.position.astype(np.int32), (spec.DIM_VARIANTS,), "<i4", (per_record,)),
        array(spec.VARIANT_LENGTH, sites.length.astype(np.int32), (spec.DIM_VARIANTS,), "<i4", (per_record,)),
        array(layout.PLOIDY, sites.ploidy.astype(np.int8), (spec.DIM_VARIANTS,), "|i1", (per_record,)),
        array(layout.BATCH_ROWS, sites.batch_rows.astype(np.int32), (spec.DIM_VARIANTS, "cohort_batches"),
              "<i4", (per_record, batches)),
        array(spec.REGION_INDEX, index.astype(np.int64),
              (spec.DIM_REGION_INDEX_VALUES, spec.DIM_REGION_INDEX_FIELDS), "<i8"),
        array(spec.CONTIG_ID, strings(sites.contigs), (spec.DIM_CONTIGS,), "|O"),
        array(spec.CONTIG_LENGTH, np.array(sites.contig_lengths, dtype=np.int64), (spec.DIM_CONTIGS,), "<i8"),
        array(spec.FILTER_ID, strings(sites.filters), (spec.DIM_FILTERS,), "|O"),
        array(spec.FILTER_DESCRIPTION, strings(sites.filter_descriptions), (spec.DIM_FILTERS,), "|O"),
        array(spec.SAMPLE_ID, strings(sites.samples), (spec.DIM_SAMPLES,), "|O"),
    ]
    if sites.merged_alleles is not None and sites.segment is not None and sites.end is not None:
        width = max((len(a) for a in sites.merged_alleles), default=1)
        alleles = np.full((records, width), "", dtype=object)
        for i, row in enumerate(sites.merged_alleles):
            alleles[i, : len(row)] = row
        arrays += [
            array(layout.ALLELES, alleles, (spec.DIM_VARIANTS, spec.DIM_ALLELES), "|O",
                  (per_record, width)),
            array(layout.SEGMENT, sites.segment.astype(bool), (spec.DIM_VARIANTS,), "|b1", (per_record,)),
            array(layout.END, sites.end.astype(np.int32), (spec.DIM_VARIANTS,), "<i4", (per_record,)),
        ]
    if sites.allele_keys is not None:  # (read whole, by add only: chunks of a million records,
        # along a dimension of its own)
        arrays.append(array(layout.ALLELE_KEYS, sites.allele_keys.astype(np.int64), (layout.DIM_KEYS,),
                            "<i8", (min(max(records, 1), KEY_CHUNK_RECORDS),)))
    attrs = {spec.ATTR_VERSION: spec.WRITE_VERSION, spec.ATTR_SOURCE: f"vcfzarr-sql-{__version__} cohort",
             spec.ATTR_HEADER: sites.header, spec.ATTR_HEADER_ADDED: sites.header_added,
             "cohort_records": records, layout.ATTR_VARIANTS_CHUNK: chunk_size}
    write_group(directory, attrs, [a for a, _ in arrays])
    for new, values in arrays:
        write_whole(directory, new, values)


def add(cohort: str | os.PathLike, inputs: Sequence[str | os.PathLike], *, workers: int = 1,
        show_progress: bool | None = None, reference: str | os.PathLike | None = None) -> AddSummary:
    """Add the samples of each VCF/BCF file of ``inputs`` (one batch each, in order) to the
    store or cohort at ``cohort`` (a local directory ``convert`` made).

    gVCF reference blocks (of any batch) are merged as ``bcftools merge --gvcf REF.fa -m none``
    merges them (:mod:`vcfzarr_sql.format.gvcf`); ``reference``, a FASTA file, gives the REF
    base of a merged block that starts where no input's block does (``N`` without it, as
    ``--gvcf -``).

    Raises DuplicateSampleError if an input names a sample the cohort or an earlier input
    has, before anything is written; OutputError if another ``add`` (or ``convert``) to the
    cohort is running. Atomic: until the new manifest is renamed into place, readers see the
    cohort as it was; an interrupted add leaves debris that the next one removes.

    >>> add("cohort.vcz", ["new_samples.vcf.gz"])  # doctest: +SKIP
    """
    root = Path(cohort)
    paths = [os.fspath(p) for p in inputs]
    if not paths:
        raise VcfZarrError("add: no input files")
    if not root.is_dir():
        raise OutputError(f"{root}: not a directory store (add grows a store convert made)")
    base = open_plain(root)  # (checks it is a VCF Zarr store)
    base.close()
    fasta = Fasta(reference) if reference is not None else None
    with output_lock(root):
        manifest = read_manifest(str(root), open_kv(str(root)))
        (root / layout.BATCHES).mkdir(parents=True, exist_ok=True)
        (root / layout.SITES).mkdir(parents=True, exist_ok=True)
        _remove_debris(root, manifest)
        with open_store(root) as current:
            sample_counts = _check_new_samples(current, paths)
            sites = _current_sites(current)
            chunks = (current.variants_chunk_size, current.samples_chunk_size)
            totals = stored_totals(current)
        if manifest is None:
            manifest = layout.Manifest(("",), (len(sites.samples),), f"{layout.SITES}/0", 0)
        numbers = [int(p.rsplit("/", 1)[1]) for p in manifest.batches[1:]]
        next_number = max(numbers, default=0) + 1
        # (the batches' records and counts are read; their samples, filters... are the sites')
        stores = [open_plain(root / p if p else root, lazy=True) for p in manifest.batches]
        try:
            batch_paths = list(manifest.batches)
            for number, (path, samples) in enumerate(zip(paths, sample_counts), start=next_number):
                relative = f"{layout.BATCHES}/{number}"
                convert(path, root / relative, variants_chunk_size=batch_chunk_size(*chunks, samples),
                        samples_chunk_size=chunks[1], workers=workers, show_progress=show_progress,
                        batch=True)
                batch = open_plain(root / relative)
                if sites.merged_alleles is not None or _might_hold_blocks(batch):
                    sites = _merge_gvcf(sites, stores, batch, fasta)
                else:
                    sites = _merge(sites, stores, batch)
                stores.append(batch)
                batch_paths.append(relative)
            generation = manifest.generation + 1
            sites_path = f"{layout.SITES}/{generation}"
            _write_sites(root / sites_path, sites, chunks[0])
            since = None if totals is None or sites.origin is None else \
                Since(totals, sites.origin, sites.batch_rows, len(manifest.batches))
            write_added_counts(root, root / sites_path, stores, SUMMARY_COMPRESSOR, since)
            sync_written(root)  # (the new batches and sites store, before the manifest names them)
            counts = tuple(s.num_samples for s in stores)
            commit_manifest(root, layout.Manifest(tuple(batch_paths), counts, sites_path, generation))
        finally:
            for store in stores:
                store.close()
    return AddSummary(len(paths), len(sites.samples) - sum(manifest.num_samples),
                      len(sites.samples), len(sites.position))

