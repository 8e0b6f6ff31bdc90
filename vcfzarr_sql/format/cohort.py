"""A cohort of batches: its names, its manifest's layout, and the union of sites, with no I/O.

A cohort is a directory holding a plain VCF Zarr store (the first batch, what ``convert``
made) and, once samples were added, a hidden directory :data:`COHORT_DIR` beside its arrays:

* ``batches/<n>/``: each added batch, a plain VCF Zarr store written by ``convert``;
* ``sites/<g>/``: generation ``g`` of the cohort's sites: a small VCF Zarr store of the union
  of the batches' records (``variant_contig``, ``variant_position``, ``variant_length``,
  ``region_index`` over the cohort's own variant chunks), :data:`BATCH_ROWS` (for each
  cohort record, its row in each batch, -1 where the batch lacks it) and :data:`PLOIDY` (the
  ploidy of a missing call at that record, as ``bcftools merge`` writes it), the merged VCF
  header as its ``vcf_header``, and in a cohort holding gVCF reference blocks
  :data:`ALLELES`, :data:`SEGMENT` and :data:`END`, and in other cohorts :data:`ALLELE_KEYS`
  (each record's alleles as one number, :func:`allele_keys`, which the union compares instead
  of the alleles' text); its arrays along ``variants`` are chunked in several of the cohort's
  variant chunks (:func:`sites_chunk_records`, :data:`ATTR_VARIANTS_CHUNK`);
* ``manifest.json``: the committed batches and the sites generation (:func:`parse_manifest`).
  Written last, by an atomic rename: what it names is the cohort; anything else is debris.

Records are merged as ``bcftools merge -m none`` merges them (:func:`union_of_sites`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.errors import StoreError

#: The cohort's own directory, inside the first batch's store directory.
COHORT_DIR = ".vcfzarr-cohort"
MANIFEST = f"{COHORT_DIR}/manifest.json"
LOCK = f"{COHORT_DIR}/lock"
BATCHES = f"{COHORT_DIR}/batches"
SITES = f"{COHORT_DIR}/sites"
#: The value of the manifest's ``format`` key, and the version this code writes and reads.
MANIFEST_FORMAT = "vcfzarr-sql cohort"
MANIFEST_VERSION = 1
#: Arrays of the sites store beyond the VCF Zarr ones.
BATCH_ROWS = "cohort_batch_rows"
PLOIDY = "cohort_missing_ploidy"
#: Per record of a cohort without gVCF blocks: its alleles (REF and ALTs joined by ``,``) as
#: :func:`allele_keys` packs them, :data:`KEY_UNPACKED` where they do not pack, or
#: :data:`KEY_UNKNOWN` where not yet computed (the union reads the alleles of those only where
#: another batch has a record at the same position). Absent in a sites store written before
#: it: every record's key is then unknown.
ALLELE_KEYS = "cohort_allele_key"
#: Its dimension (records, chunked otherwise than ``variants``).
DIM_KEYS = "cohort_records"
KEY_UNKNOWN = -1
KEY_UNPACKED = 0
#: The sites store's attribute holding the cohort's variant chunk size: its arrays along
#: ``variants`` are chunked in :func:`sites_chunk_records` records, a multiple of it (its
#: ``region_index`` names the cohort's chunks). Absent in sites stores written before
#: 2026-11-27, whose arrays are chunked as the cohort.
ATTR_VARIANTS_CHUNK = "cohort_variants_chunk_size"
#: About as many records a chunk of the sites store's arrays along ``variants`` holds.
SITES_CHUNK_RECORDS = 1 << 16
#: Arrays of the sites store of a cohort holding gVCF reference blocks
#: (:mod:`vcfzarr_sql.format.gvcf`), per record: its alleles where they may not be those of
#: every batch holding it (a segment's; a record whose batches' gVCF symbolic alleles differ;
#: blank for others), whether it is a segment, and INFO/END (missing but for segments longer
#: than one position).
ALLELES = "cohort_allele"
SEGMENT = "cohort_segment"
END = "variant_END"
#: INFO fields ``bcftools merge`` adds up over the batches of a record (its default
#: ``--info-rules DP:sum,DP4:sum``), and those it computes from the merged genotypes.
SUMMED_INFO = ("DP", "DP4")
COUNTED_INFO = ("AC", "AN")

_BATCH_PATH = re.compile(rf"{re.escape(BATCHES)}/[0-9]+")
_SITES_PATH = re.compile(rf"{re.escape(SITES)}/[0-9]+")


def sites_chunk_records(variants_chunk: int) -> int:
    """Records a chunk of the sites store's arrays along ``variants`` holds in a cohort of
    variant chunks of ``variants_chunk`` records: a multiple of it, about
    :data:`SITES_CHUNK_RECORDS` (an add rewrites the sites store: in the cohort's own chunks
    it was 5 files per 1,000 records; a read of one cohort chunk decodes one of these).

    >>> sites_chunk_records(1000), sites_chunk_records(100000)
    (65000, 100000)
    """
    return variants_chunk * max(SITES_CHUNK_RECORDS // max(variants_chunk, 1), 1)


@dataclass(frozen=True)
class Manifest:
    """What a committed cohort is: its batches' directories (``""``: the first batch, the
    cohort's own directory) with their sample counts, in the order they were added, and its
    sites store."""

    batches: tuple[str, ...]
    num_samples: tuple[int, ...]
    sites: str
    generation: int

    def as_json(self) -> dict:
        return {
            "format": MANIFEST_FORMAT,
            "version": MANIFEST_VERSION,
            "generation": self.generation,
            "batches": [{"path": p, "samples": n} for p, n in zip(self.batches, self.num_samples)],
            "sites": self.sites,
        }


def parse_manifest(where: str, document: object) -> Manifest:
    """The manifest in ``document`` (parsed JSON); StoreError naming ``where`` if it is not one
    (paths other than this layout's are refused: a manifest names nothing outside the cohort).

    >>> parse_manifest("c", {"format": MANIFEST_FORMAT, "version": 1, "generation": 2,
    ...     "batches": [{"path": "", "samples": 3}, {"path": BATCHES + "/1", "samples": 1}],
    ...     "sites": SITES + "/2"}).batches
    ('', '.vcfzarr-cohort/batches/1')
    >>> parse_manifest("c", {"format": MANIFEST_FORMAT, "version": 1, "generation": 2,
    ...     "batches": [{"path": "../x", "samples": 1}], "sites": SITES + "/2"})
    Traceback (most recent call last):
    ...
    vcfzarr_sql.errors.StoreError: c: manifest.json is not a cohort manifest (batch path '../x')
    """
    def bad(detail: str) -> StoreError:
        return StoreError(f"{where}: manifest.json is not a cohort manifest ({detail})")

    if not isinstance(document, dict) or document.get("format") != MANIFEST_FORMAT:
        raise bad("no format key")
    if document.get("version") != MANIFEST_VERSION:
        raise bad(f"version {document.get('version')!r}, this reader reads {MANIFEST_VERSION}")
    batches = document.get("batches")
    if not isinstance(batches, list) or not batches:
        raise bad("no batches")
    paths, counts = [], []
    for i, batch in enumerate(batches):
        path = batch.get("path") if isinstance(batch, dict) else None
        samples = batch.get("samples") if isinstance(batch, dict) else None
        if not isinstance(path, str) or (path != "" if i == 0 else not _BATCH_PATH.fullmatch(path)):
            raise bad(f"batch path {path!r}")
        if not isinstance(samples, int) or samples < 0:
            raise bad(f"batch {path!r} sample count {samples!r}")
        paths.append(path)
        counts.append(samples)
    sites, generation = document.get("sites"), document.get("generation")
    if not isinstance(sites, str) or not _SITES_PATH.fullmatch(sites):
        raise bad(f"sites path {sites!r}")
    if not isinstance(generation, int):
        raise bad(f"generation {generation!r}")
    return Manifest(tuple(paths), tuple(counts), sites, generation)


@dataclass(frozen=True)
class Union:
    """Records of the union of two record lists: for each, its row in the first list and in
    the second (-1 where that list lacks it)."""

    first: np.ndarray
    second: np.ndarray


def union_of_sites(
    contig_a: np.ndarray, pos_a: np.ndarray, alleles_a: list[str] | np.ndarray,
    contig_b: np.ndarray, pos_b: np.ndarray, alleles_b: list[str] | np.ndarray,
) -> Union:
    """The union of records ``a`` (the cohort's, in its order) and ``b`` (a new batch's), as
    ``bcftools merge -m none`` orders it: by contig (ids in the cohort's contig order) and
    POS; at one contig and POS, ``a``'s records in their order, then those of ``b`` that
    ``a`` lacks in theirs. Records with the same contig, POS and alleles (REF and ALT, in
    order) are one record; ``alleles_*`` holds them joined by ``,`` (or any values equal
    exactly where the alleles are: :func:`allele_keys`, the text where those do not pack), and
    only those at a (contig, POS) both lists have are read. The k-th record of a key in ``a``
    pairs with the k-th in ``b``.

    >>> u = union_of_sites(np.array([0, 0, 1]), np.array([10, 20, 5]), ["A,C", "G,T", "C,G"],
    ...                    np.array([0, 0, 2]), np.array([20, 20, 7]), ["G,C", "G,T", "C,A"])
    >>> u.first.tolist(), u.second.tolist()
    ([0, 1, -1, 2, -1], [-1, 1, 0, -1, 2])
    """
    key_a = _position_keys(contig_a, pos_a)
    key_b = _position_keys(contig_b, pos_b)
    if len(key_a) > 1 and (np.diff(key_a) < 0).any():
        raise StoreError("the cohort's records are not sorted by contig (in the order of its "
                         "contigs) and position, as bcftools merge needs them")
    shared = shared_values(key_a, key_b)
    match_b = np.full(len(key_b), -1, dtype=np.int64)
    in_a = np.flatnonzero(np.isin(key_a, shared))
    in_b = np.flatnonzero(np.isin(key_b, shared))
    strings_a, strings_b = (a if isinstance(a, np.ndarray) else np.asarray(a, dtype=object)  # (keys: int64)
                            for a in (alleles_a, alleles_b))
    rest_b = _single_matches(key_a, strings_a, in_a, key_b, strings_b, in_b, match_b)
    waiting: dict[tuple[int, str], list[int]] = {}
    for i in in_a[np.isin(key_a[in_a], key_b[rest_b])].tolist():  # (positions held twice)
        waiting.setdefault((int(key_a[i]), alleles_a[i]), []).append(i)
    for j in rest_b.tolist():
        rows = waiting.get((int(key_b[j]), alleles_b[j]))
        if rows:
            match_b[j] = rows.pop(0)
    only_b = np.flatnonzero(match_b < 0)
    # Sort: by position key, then the cohort's records before the batch's, then in order.
    keys = np.concatenate([key_a, key_b[only_b]])
    side = np.r_[np.zeros(len(key_a), np.int8), np.ones(len(only_b), np.int8)]
    seq = np.r_[np.arange(len(key_a)), only_b]
    order = np.lexsort((seq, side, keys))
    first = np.where(side[order] == 0, seq[order], -1)
    second = np.full(len(order), -1, dtype=np.int64)
    row_of_a = np.full(len(key_a), -1, dtype=np.int64)
    row_of_a[first[first >= 0]] = np.flatnonzero(first >= 0)
    matched = np.flatnonzero(match_b >= 0)
    second[row_of_a[match_b[matched]]] = matched
    second[np.flatnonzero(side[order] == 1)] = seq[order][side[order] == 1]
    return Union(first.astype(np.int64), second)


def joined_alleles(alleles: np.ndarray) -> np.ndarray:
    """Each row of ``alleles`` (records, alleles; ``""`` past the last) joined by ``,``, as
    :func:`union_of_sites` reads them.

    >>> joined_alleles(np.array([["A", "C", ""], ["G", "T", "C"]], dtype=object)).tolist()
    ['A,C', 'G,T,C']
    """
    out = np.asarray(alleles[:, 0], dtype=object).copy() if alleles.shape[1] else \
        np.full(len(alleles), "", dtype=object)
    for k in range(1, alleles.shape[1]):
        column = np.asarray(alleles[:, k], dtype=object)
        held = column != ""
        out[held] = out[held] + "," + column[held]
    return out


#: The characters :func:`allele_keys` packs (3 bits each, 0 is none), and how many.
_KEY_ALPHABET = "ACGTN*,"
_KEY_CHARS = 21
_KEY_CODES = np.zeros(256, dtype=np.uint8)
_KEY_CODES[[ord(c) for c in _KEY_ALPHABET]] = np.arange(1, len(_KEY_ALPHABET) + 1)


def allele_keys(joined: np.ndarray | list[str]) -> np.ndarray:
    """Each record's alleles (REF and ALTs joined by ``,``) as one positive int64, equal exactly
    where the texts are equal: 3 bits a character, for texts of 1 to 21 characters of
    ``ACGTN*,`` (SNPs and short indels: what a union of records mostly compares);
    :data:`KEY_UNPACKED` for any other text (compare the text itself). No hash: two records'
    keys are equal only if their alleles are (``A,C``: 1 + 7 << 3 + 2 << 6).

    >>> allele_keys(["A,C", "A,C", "C,A", "AT,A", "a,c", "A,<DEL>", "A" * 22, "\u00c5,C"]).tolist()
    [185, 185, 122, 993, 0, 0, 0, 0]
    """
    return allele_keys_of(np.asarray(joined, dtype=object).reshape(-1, 1))


def allele_keys_of(alleles: np.ndarray) -> np.ndarray:
    """:func:`allele_keys` of :func:`joined_alleles` of ``alleles`` (records, alleles; ``""``
    past the last), packed column by column: no joined string is made (for 100,000 records,
    making them took as long as packing them).

    >>> alleles = np.array([["A", "C", ""], ["AT", "", "A"], ["A", "<DEL>", ""], ["", "", ""]], dtype=object)
    >>> allele_keys_of(alleles).tolist() == allele_keys(joined_alleles(alleles)).tolist()
    True
    """
    records = len(alleles)
    keys = np.zeros(records, dtype=np.int64)
    packs = np.ones(records, dtype=bool)
    offset = np.zeros(records, dtype=np.int64)  # (characters packed so far)
    for k in range(alleles.shape[1]):
        column = np.asarray(alleles[:, k], dtype=object)
        lengths = np.fromiter(map(len, column), dtype=np.int64, count=records)
        if k:  # (an ALT is joined after a ",", where it is not blank)
            comma = lengths > 0
            keys[comma] |= _KEY_CODES[ord(",")].astype(np.int64) << (3 * np.minimum(offset[comma], _KEY_CHARS))
            offset += comma
        packs &= (offset + lengths <= _KEY_CHARS)
        held = np.flatnonzero(packs & (lengths > 0))
        if len(held) == 0:
            continue
        texts = column[held]
        try:
            chars = texts.astype(f"S{int(lengths[held].max())}")
        except UnicodeEncodeError:  # (a non-ASCII text, which does not pack)
            ascii_text = np.fromiter((t.isascii() for t in texts), dtype=bool, count=len(held))
            packs[held[~ascii_text]] = False
            held, texts = held[ascii_text], texts[ascii_text]
            chars = texts.astype(f"S{max(int(lengths[held].max(initial=0)), 1)}")
        codes = _KEY_CODES[chars.view(np.uint8).reshape(len(held), -1)].astype(np.int64)
        packs[held[np.count_nonzero(codes, axis=1) != lengths[held]]] = False  # (0: not of the alphabet)
        for i in range(codes.shape[1]):
            keys[held] |= codes[:, i] << (3 * (offset[held] + i))
        offset += lengths
    keys[~packs | (offset == 0)] = KEY_UNPACKED
    return keys


def _single_matches(key_a: np.ndarray, alleles_a: np.ndarray, in_a: np.ndarray,
                    key_b: np.ndarray, alleles_b: np.ndarray, in_b: np.ndarray,
                    match_b: np.ndarray) -> np.ndarray:
    """Match the records at positions ``a`` and ``b`` each hold once (rows ``in_a``, ``in_b``
    at shared positions; ``key_a`` sorted): same alleles, same record. Returns the rows of
    ``b`` at the other shared positions (for the general matching)."""
    held_a, _, count_a = distinct(key_a[in_a])
    held_b, _, count_b = distinct(key_b[in_b])
    single = np.intersect1d(held_a[count_a == 1], held_b[count_b == 1], assume_unique=True)
    rows_a = in_a[np.isin(key_a[in_a], single)]
    on_b = np.isin(key_b[in_b], single)
    rows_b = in_b[on_b]
    rows_b = rows_b[np.argsort(key_b[rows_b], kind="stable")]
    same = alleles_a[rows_a] == alleles_b[rows_b]
    match_b[rows_b[same]] = rows_a[same]
    return in_b[~on_b]


def distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True, return_counts=True)`` of integers, by a stable
    sort (numpy 2's unique hashes them: 7 times as long for 100,000 position keys, which are
    sorted, as a cohort's are, where a sort is quickest).

    >>> [a.tolist() for a in distinct(np.array([7, 3, 7, 7, 1]))]
    [[1, 3, 7], [4, 1, 0], [1, 1, 3]]
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else order
    return ordered[starts], order[starts], np.diff(np.r_[starts, len(ordered)])


def shared_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.intersect1d(a, b)`` of integers (:func:`distinct`).

    >>> shared_values(np.array([5, 1, 5, 3]), np.array([3, 5, 9])).tolist()
    [3, 5]
    """
    return np.intersect1d(distinct(a)[0], distinct(b)[0], assume_unique=True)


def _position_keys(contig: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """One sortable int64 per record: contig id, then POS."""
    return (np.asarray(contig, dtype=np.int64) << 33) + np.asarray(pos, dtype=np.int64)
