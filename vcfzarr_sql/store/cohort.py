"""A cohort of several batches read as one store (:mod:`vcfzarr_sql.format.cohort`).

:class:`CohortStore` is a :class:`~vcfzarr_sql.store.vcz.VczStore` whose arrays are the
cohort's: records are the union of the batches' (``bcftools merge -m none``), samples are the
batches' in the order they were added. Its metadata and the small arrays (contigs, filters,
samples, ``variant_position``, ``variant_contig``, ``variant_length``, the region index) are
the sites store's; every other chunk is assembled from the chunks of the batches that hold its
records, which is why it has no bytes of its own (:meth:`CohortStore.read_chunk_bytes` is
None for those). Everything above ``store/`` (the one executor, ``view``, statistics, scan
tasks) reads a cohort as it reads a plain store.

A sample's call at a record its batch lacks is missing: GT ``./.`` (as many alleles as the
widest genotype of the record, as bcftools writes it), other FORMAT fields ``.``. Site values
of a record several batches hold follow ``bcftools merge``'s default rules: QUAL the largest,
ID the distinct IDs joined by ``;``, FILTER the union of the filters set (PASS only if no
batch set another, ``.`` if none set any), INFO/DP and INFO/DP4 added up, INFO/AC and INFO/AN
counted from the merged genotypes, INFO fields of Number=A, R and G value by value from the
last batch giving that value, any other INFO field the first batch's (in the order added) that
gives it a value.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import cohort as layout
from vcfzarr_sql.format import gvcf, spec
from vcfzarr_sql.format import summaries as sc
from vcfzarr_sql.store.fields import FORMAT, INFO, describe_fields
from vcfzarr_sql.store.header import parse_header
from vcfzarr_sql.store.kvstore import KeyValueStore
from vcfzarr_sql.store.metadata import ArrayInfo
from vcfzarr_sql.store.vcz import VczStore

if TYPE_CHECKING:  # (imported where Arrow is used: commands that read no strings never load it)
    import pyarrow as pa

#: Dimensions of INFO fields of Number=A, R and G: bcftools merges them value by value.
_PER_ALLELE = (spec.DIM_ALT_ALLELES, spec.DIM_ALLELES, spec.DIM_GENOTYPES)
#: Arrays a cohort takes from its sites store.
_FROM_SITES = (spec.VARIANT_CONTIG, spec.VARIANT_POSITION, spec.VARIANT_LENGTH, spec.CONTIG_ID,
               spec.CONTIG_LENGTH, spec.FILTER_ID, spec.FILTER_DESCRIPTION, spec.SAMPLE_ID)
#: Arrays of a batch the cohort does not show: its own index, the genotype counts that do not
#: add up over batches (HWE p-values; per-sample counts per variant chunk, whose chunks are not
#: the cohort's), and the per-record counts, which the cohort adds up (:data:`_ADDED`).
_NOT_SHOWN = (spec.REGION_INDEX, sc.ALLELE_COUNTS, sc.CALL_COUNTS, sc.HWE, sc.SAMPLE_CLASS_COUNTS)
#: Per-record genotype counts a cohort adds up over its batches (when every batch has them):
#: the ``gt_`` columns over all samples then read no genotypes (HWE is computed from them).
_ADDED = ADDED_COUNTS = (sc.ALLELE_COUNTS, sc.CALL_COUNTS)


def _promoted(infos: list[ArrayInfo]) -> np.dtype:
    if any(i.dtype.kind in "OUS" for i in infos):
        return np.dtype(object)
    return np.result_type(*(i.decoded_dtype for i in infos))


class CohortStore(VczStore):
    """The batches ``batches`` (plain stores, the first at ``path``) and the sites store
    ``sites`` of a committed cohort, read as one store. ``kv``: the cohort directory's own
    key/value store (what opening revalidates)."""

    def __init__(
        self,
        path: str,
        kv: KeyValueStore,
        batches: list[VczStore],
        sites: VczStore,
        *,
        fingerprint: tuple | None = None,
        storage_options: dict | None = None,
        root_keys: tuple[str, ...] = (),
        root_digest: str = "",
    ):
        # (no VczStore.__init__: every attribute it sets is set here, from the batches)
        base = batches[0]
        self.path = path
        self._kv = kv
        self.storage_options = dict(storage_options or {})
        self.fingerprint = fingerprint
        self._lock = threading.Lock()
        self._region_index = None
        self._kept: dict[tuple[int, str, tuple[int, ...]], np.ndarray] = {}
        self._root_keys, self._root_digest = root_keys, root_digest
        self.batches, self.sites = batches, sites
        #: a cohort holding gVCF reference blocks (format/gvcf.py): segments' alleles and END
        self._gvcf = sites.has_array(layout.ALLELES)
        self._own = _FROM_SITES + ((layout.END,) if self._gvcf else ())
        self.zarr_format, self.consolidated = base.zarr_format, None
        self.version = sites.version
        self.attrs = dict(base.attrs) | {spec.ATTR_HEADER: sites.vcf_header}
        self.complete_chunks = True
        self.vcf_header = sites.vcf_header
        self.samples = sites.samples
        self.contigs = sites.contigs
        self.contig_lengths = sites.contig_lengths
        self.filters = sites.filters
        self.filter_descriptions = sites.filter_descriptions
        self.num_variants = sites.num_variants
        self.variants_chunk_size = variants_chunk_of(sites)
        self.num_variant_chunks = -(-self.num_variants // self.variants_chunk_size)
        #: per array of the sites store chunked in several of the cohort's chunks, the last of
        #: its chunks decoded (:meth:`_sites_rows`) and its number
        self._sites_kept: dict[str, tuple[int, np.ndarray]] = {}
        self.num_samples = len(self.samples)
        if self.num_samples != sum(b.num_samples for b in batches):
            raise StoreError(f"{path}: the cohort's batches hold {sum(b.num_samples for b in batches)} "
                             f"samples, its sites store names {self.num_samples}")
        self.samples_chunk_size = base.samples_chunk_size
        self.num_sample_chunks = -(-self.num_samples // self.samples_chunk_size)
        self._offsets = np.cumsum([0, *(b.num_samples for b in batches)]).tolist()
        self._arrays = self._cohort_arrays()
        header = parse_header(self.vcf_header) if self.vcf_header else None
        self.info_fields = describe_fields(INFO, self._arrays, header)
        self.format_fields = describe_fields(FORMAT, self._arrays, header)

    @functools.cached_property
    def _filter_maps(self) -> list[np.ndarray]:
        """Per batch, the cohort's column of each of its filters."""
        return [np.array([self.filters.index(f) for f in b.filters], dtype=np.int64)
                for b in self.batches]

    def _cohort_arrays(self) -> dict[str, ArrayInfo]:
        """The cohort's arrays: the sites store's small ones, and for every other array of a
        batch along ``variants``, one as long as the cohort and as wide as the widest batch's."""
        arrays = {name: self._sites_info(name) for name in self._own if self.sites.has_array(name)}
        found: dict[str, list[ArrayInfo]] = {}
        for batch in self.batches:
            for name in batch.array_names:
                info = batch.array_info(name)
                if name in arrays or name in _NOT_SHOWN or info.dims[:1] != (spec.DIM_VARIANTS,):
                    continue
                if any(c != n for c, n in zip(info.chunks[1:], info.shape[1:]) if c) and \
                        info.dims[1:2] != (spec.DIM_SAMPLES,):
                    raise StoreError(f"{batch.path}: array {name} is chunked along "
                                     f"{info.dims[1:]}; a cohort's batches are chunked only "
                                     "along variants and samples")
                found.setdefault(name, []).append(info)
        if all(self.sites.has_array(n) for n in _ADDED):  # (added up by add: :meth:`_on_sites`)
            arrays.update({name: self.sites.array_info(name) for name in _ADDED})
        elif all(b.has_array(n) for b in self.batches for n in _ADDED):
            for name in _ADDED:
                infos = [b.array_info(name) for b in self.batches]
                trailing = [max(i.shape[k] for i in infos) for k in range(1, len(infos[0].shape))]
                if self._gvcf:
                    trailing = gvcf_widths(infos[0], trailing, self.sites.array_info(layout.ALLELES).shape[1])
                arrays[name] = replace(infos[0], shape=(self.num_variants, *trailing),
                                       chunks=(self.variants_chunk_size, *trailing),
                                       dtype=np.dtype(np.int32), fill_value=0)
        for name, infos in found.items():
            first = infos[0]
            trailing = [max(i.shape[k] for i in infos) for k in range(1, len(first.shape))]
            if self._gvcf:
                trailing = gvcf_widths(first, trailing, self.sites.array_info(layout.ALLELES).shape[1])
            chunks = [self.variants_chunk_size, *trailing]
            if first.dims[1:2] == (spec.DIM_SAMPLES,):
                trailing[0], chunks[1] = self.num_samples, self.samples_chunk_size
            if name == spec.VARIANT_FILTER:
                trailing[0] = chunks[1] = len(self.filters)
            dtype = _promoted(infos)
            added = layout.SUMMED_INFO + layout.COUNTED_INFO + (tuple(gvcf.INFO_RULES) if self._gvcf else ())
            if name[len(spec.INFO_PREFIX):] in added and dtype.kind in "iu":
                dtype = np.promote_types(dtype, np.int32)  # (sums and counts outgrow a batch's type)
            arrays[name] = replace(first, shape=(self.num_variants, *trailing),
                                   chunks=tuple(max(c, 1) for c in chunks), dtype=dtype,
                                   fill_value=_fill(first))
        return arrays

    def _sites_info(self, name: str) -> ArrayInfo:
        """Array ``name`` of the sites store as the cohort shows it: along ``variants``, in the
        cohort's variant chunks."""
        info = self.sites.array_info(name)
        if info.dims[:1] != (spec.DIM_VARIANTS,):
            return info
        return replace(info, chunks=(self.variants_chunk_size, *info.chunks[1:]))

    def _rechunked(self, name: str) -> bool:
        """Whether the sites store's array ``name`` is chunked otherwise than the cohort shows
        it (in several of its chunks: :func:`~vcfzarr_sql.format.cohort.sites_chunk_records`)."""
        return self.sites.array_info(name).chunks[0] != self._sites_info(name).chunks[0]

    def _sites_rows(self, name: str, chunk_index: int) -> np.ndarray:
        """The records of the cohort's variant chunk ``chunk_index`` of the sites store's
        array ``name`` (along ``variants``), whatever its chunks. Of a sites store chunked in
        several of the cohort's chunks, the chunk last decoded is kept: reads of a cohort's
        chunks in order decode each once."""
        info = self.sites.array_info(name)
        rest = (0,) * (len(info.shape) - 1)
        size = self.variants_chunk_size
        if info.chunks[0] == size:
            return self.sites.read_chunk(name, (chunk_index, *rest))
        stored, part = divmod(chunk_index, info.chunks[0] // size)
        kept = self._sites_kept.get(name)
        if kept is None or kept[0] != stored:
            rows = self.sites.read_chunk(name, (stored, *rest))
            rows.flags.writeable = False  # (kept for the next reads: no caller may change it)
            kept = self._sites_kept[name] = (stored, rows)
        return kept[1][part * size : (part + 1) * size]

    # -- chunks ------------------------------------------------------------------------------

    def read_chunk_bytes(self, name: str, chunk: tuple[int, ...]) -> bytes | None:
        """The sites store's bytes for its arrays chunked as the cohort's; None for the
        others, which no file holds as the cohort's chunk (:meth:`decode_chunk` assembles them
        from the batches, or cuts them from the sites store's chunk)."""
        self.array_info(name)
        on_sites = self._on_sites(name) and not self._rechunked(name)
        return self.sites.read_chunk_bytes(name, chunk) if on_sites else None

    def read_chunks_bytes(
        self, keys: list[tuple[str, tuple[int, ...]]]
    ) -> dict[tuple[str, tuple[int, ...]], bytes | None]:
        return {(name, chunk): self.read_chunk_bytes(name, chunk) for name, chunk in keys}

    def decode_chunk(self, name: str, raw: bytes | None, chunk: tuple[int, ...]) -> np.ndarray:
        if self._on_sites(name):
            return self._sites_rows(name, chunk[0]) if self._rechunked(name) \
                else self.sites.decode_chunk(name, raw, chunk)
        return self._assemble(name, chunk)

    def decode_chunk_strings(self, name: str, raw: bytes | None, chunk: tuple[int, ...]) -> pa.Array:
        import pyarrow as pa

        return pa.array(self.decode_chunk(name, raw, chunk).ravel(), type=pa.string())

    def read_array(self, name: str) -> np.ndarray:
        if self._on_sites(name):
            return self.sites.read_array(name)
        info = self.array_info(name)
        parts = [self.read_chunk(name, (k, *([0] * (len(info.shape) - 1))))
                 for k in range(max(info.grid[0], 1))]
        if info.dims[1:2] == (spec.DIM_SAMPLES,):
            parts = [np.concatenate([self.read_chunk(name, (k, s, *([0] * (len(info.shape) - 2))))
                                     for s in range(max(info.grid[1], 1))], axis=1)
                     for k in range(max(info.grid[0], 1))]
        return np.concatenate(parts)[: info.shape[0]]

    def _load_region_index(self) -> np.ndarray:
        return self.sites.stored_region_index(self)  # (over the cohort's chunks)

    def original_header(self, samples: list[str]) -> tuple[str, list[str]] | None:
        """The VCF header text of the input that brought ``samples`` (and the lines htslib added
        to it while converting), when they all came from one batch; else None."""
        for batch in self.batches:
            if samples and set(samples) <= set(batch.samples.tolist()) and batch.vcf_header:
                return batch.vcf_header, list(batch.attrs.get(spec.ATTR_HEADER_ADDED, ()))
        return None

    def close(self) -> None:
        for store in (*self.batches, self.sites):
            store.close()
        self._kv.close()

    def __repr__(self) -> str:
        return (f"CohortStore({self.path!r}, batches={len(self.batches)}, "
                f"variants={self.num_variants}, samples={self.num_samples})")

    def _on_sites(self, name: str) -> bool:
        """Whether array ``name`` is the sites store's: its own arrays, and the genotype counts
        over all samples that ``add`` added up and stored there (:data:`_ADDED`; a sites store
        without them has them added up from the batches at each read)."""
        return name in self._own or (name in _ADDED and self.sites.has_array(name))

    # -- the batches' own records and samples (to add up what each batch stores) ----------------

    @property
    def sample_offsets(self) -> list[int]:
        """Where each batch's samples start in the cohort's, and (last) the cohort's count."""
        return list(self._offsets)

    def lacking_is_missing(self, batch: int) -> bool:
        """Whether the samples of batch ``batch`` have missing calls at every record it lacks
        (what counts stored per batch need to be added up with the cohort's missing calls),
        and the batch's calls at the records it has are its own, once each: not in a cohort
        holding gVCF blocks, where a block's calls are those of each merged block cut from it
        (format/gvcf.py)."""
        return not self._gvcf

    def batch_rows_of(self, chunk_index: int, chunk_count: int = 1) -> tuple[int, list[np.ndarray]]:
        """(records, per batch its rows holding them, sorted) of variant chunks ``chunk_index``
        to ``chunk_index + chunk_count - 1``."""
        size = self.variants_chunk_size
        records = min((chunk_index + chunk_count) * size, self.num_variants) - chunk_index * size
        rows = np.concatenate([self._batch_rows(k) for k in range(chunk_index, chunk_index + chunk_count)])
        rows = rows[:records]
        return records, [np.sort(rows[:, b][rows[:, b] >= 0]) for b in range(len(self.batches))]

    # -- assembling a chunk from the batches ----------------------------------------------------

    def _batch_rows(self, chunk_index: int) -> np.ndarray:
        """(records of the chunk, batches): each record's row in each batch, -1 if it has none."""
        return self._sites_rows(layout.BATCH_ROWS, chunk_index).astype(np.int64)

    def _assemble(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        info = self.array_info(name)
        bounds = info.chunk_bounds(chunk)
        rows = self._batch_rows(chunk[0])[: bounds[0].stop]
        if name in _ADDED:
            counts = self._added_counts(name, info, rows)
            return self._merged_counts(name, chunk[0], rows, counts) if self._gvcf else counts
        if info.dims[1:2] == (spec.DIM_SAMPLES,):
            lo = chunk[1] * info.chunks[1]
            return self._calls(name, info, rows, chunk[0], lo, lo + bounds[1].stop)
        return self._sites_values(name, info, rows, chunk[0])

    def _from_batch(self, b: int, name: str, rows: np.ndarray, samples: range | None,
                    info: ArrayInfo, fill: object | None = None) -> np.ndarray:
        """Array ``name`` of batch ``b`` at its ``rows``, for its samples ``samples``
        (local indexes; None: no samples axis), widened to the cohort's ``info`` with fill."""
        batch = self.batches[b]
        own = batch.array_info(name)
        size = own.chunks[0]
        first = int(rows.min()) // size
        parts = []
        for k in range(first, int(rows.max()) // size + 1):
            if samples is None:
                parts.append(self._batch_chunk(b, name, (k, *([0] * (len(own.shape) - 1)))))
                continue
            width = own.chunks[1]
            grid = range(samples.start // width, (samples.stop - 1) // width + 1)
            rest = [0] * (len(own.shape) - 2)
            joined = np.concatenate([batch.read_chunk(name, (k, s, *rest)) for s in grid], axis=1)
            start = samples.start - grid.start * width
            parts.append(joined[:, start : start + len(samples)])
        values = np.concatenate(parts) if len(parts) > 1 else parts[0]
        values = values[rows - first * size]
        wide = info.shape[1:] if samples is None else info.shape[2:]
        have = values.shape[1:] if samples is None else values.shape[2:]
        if tuple(wide) == tuple(have) and values.dtype == info.decoded_dtype:
            return values
        out = np.full((*values.shape[: values.ndim - len(have)], *wide),
                      _fill(info) if fill is None else fill, dtype=info.decoded_dtype)
        where: tuple[slice, ...] = tuple(slice(0, n) for n in values.shape)
        out[where] = values
        return out

    def _added_counts(self, name: str, info: ArrayInfo, rows: np.ndarray) -> np.ndarray:
        """The stored per-record genotype counts of the batches added up (:func:`added_up`)."""
        parts = []
        for b, batch in enumerate(self.batches):
            have = rows[:, b] >= 0
            values = self._from_batch(b, name, rows[have, b], None, info, fill=0) if have.any() else None
            parts.append((have, values, batch.num_samples))
        return added_up(name, (len(rows), *info.shape[1:]), parts)

    def _batch_chunk(self, b: int, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        """Chunk ``chunk`` of a batch's array without a samples axis; those chunked in more
        records than a variant chunk (the stored counts: each cohort chunk would decode them
        again) are kept, the last few read."""
        batch = self.batches[b]
        if batch.array_info(name).chunks[0] == batch.variants_chunk_size:
            return batch.read_chunk(name, chunk)
        key = (b, name, chunk)
        with self._lock:
            found = self._kept.get(key)
        if found is None:
            found = batch.read_chunk(name, chunk)
            with self._lock:
                self._kept[key] = found
                while len(self._kept) > 4 * len(self.batches):
                    del self._kept[next(iter(self._kept))]
        return found

    def _calls(self, name: str, info: ArrayInfo, rows: np.ndarray, chunk_index: int,
               lo: int, hi: int) -> np.ndarray:
        """Samples ``lo`` to ``hi`` of array ``name`` (with a samples axis) at the records whose
        batch rows are ``rows``: each batch's calls where it has the record, else missing."""
        out = np.empty((len(rows), hi - lo, *info.shape[2:]), dtype=info.decoded_dtype)
        out[...] = _missing_call(info)
        if name == spec.CALL_GENOTYPE:
            ploidy = self._sites_rows(layout.PLOIDY, chunk_index)[: len(rows)]
            out[...] = np.where(np.arange(info.shape[2]) < ploidy[:, None, None],
                                spec.INT_MISSING, spec.INT_FILL)
        for b, batch in enumerate(self.batches):
            start, stop = max(lo, self._offsets[b]), min(hi, self._offsets[b + 1])
            have = rows[:, b] >= 0
            if start >= stop or not have.any() or not batch.has_array(name):
                continue
            local = range(start - self._offsets[b], stop - self._offsets[b])
            values = self._from_batch(b, name, rows[have, b], local, info)
            if self._gvcf:
                values = self._merged_calls(b, name, info, chunk_index, rows, have, values)
            out[np.flatnonzero(have)[:, None], np.arange(start - lo, stop - lo)] = values
        return out

    def _sites_values(self, name: str, info: ArrayInfo, rows: np.ndarray, chunk_index: int) -> np.ndarray:
        """Array ``name`` (without a samples axis) at the records whose batch rows are ``rows``,
        merged over the batches that hold each record by ``bcftools merge``'s rules."""
        fill = _fill(info)
        given: list[tuple[np.ndarray, np.ndarray]] = []  # (where, values) per batch with the array
        for b, batch in enumerate(self.batches):
            have = rows[:, b] >= 0
            if not have.any() or not batch.has_array(name):
                continue
            values = self._from_batch(b, name, rows[have, b], None, info)
            if self._gvcf and name.startswith(spec.INFO_PREFIX) and info.dims[1:2] \
                    and info.dims[1] in _PER_ALLELE:
                values = self._merged_calls(b, name, info, chunk_index, rows, have, values)
            if name == spec.VARIANT_FILTER:
                values = _filter_columns(values, self._filter_maps[b], len(self.filters))
            given.append((np.flatnonzero(have), values))
        out = np.full((len(rows), *info.shape[1:]), fill, dtype=info.decoded_dtype)
        if name == spec.VARIANT_FILTER:
            return _merged_filters(given, out, self.filters)
        if name == spec.VARIANT_ID:
            return _merged_ids(given, out)
        if name == spec.VARIANT_ALLELE and self._gvcf:
            return self._merged_alleles(chunk_index, _first_given(given, out))
        field = name[len(spec.INFO_PREFIX):]
        if field in layout.COUNTED_INFO and spec.CALL_GENOTYPE in self._arrays:
            return self._counted(field, info, chunk_index, len(rows))
        combine = _first_given
        if info.dims[1:2] and info.dims[1] in _PER_ALLELE:
            combine = _last_per_element
        if name == spec.VARIANT_QUALITY:
            combine = _largest
        elif field in layout.SUMMED_INFO and info.decoded_dtype.kind in "iu":
            combine = _summed
        elif self._gvcf and field in gvcf.INFO_RULES:
            return _by_rule(gvcf.INFO_RULES[field], given, out)
        return combine(given, out)

    def _counted(self, field: str, info: ArrayInfo, chunk_index: int, records: int) -> np.ndarray:
        """INFO/AC or INFO/AN of the chunk's records, counted over all the cohort's genotypes
        (what ``bcftools merge`` writes when the merged header declares them)."""
        gt_info = self.array_info(spec.CALL_GENOTYPE)
        gt = np.concatenate([self.read_chunk(spec.CALL_GENOTYPE, (chunk_index, s, 0))
                             for s in range(max(gt_info.grid[1], 1))], axis=1)[:records]
        if field == "AN":
            return (gt >= 0).sum(axis=(1, 2)).astype(info.decoded_dtype).reshape(records, *info.shape[1:])
        alleles = self.read_chunk(spec.VARIANT_ALLELE, (chunk_index, 0))[:records]
        alts = (alleles[:, 1:] != spec.STR_FILL).sum(axis=1)
        out = np.full((records, *info.shape[1:]), spec.INT_FILL, dtype=info.decoded_dtype)
        for k in range(out.shape[1]):
            counts = (gt == k + 1).sum(axis=(1, 2))
            out[:, k] = np.where(k < alts, counts, spec.INT_FILL)
        return out

    # -- gVCF reference blocks (format/gvcf.py) ---------------------------------------------------

    def _merged(self, chunk_index: int, records: int) -> np.ndarray:
        """The merged alleles of the chunk's records (blank where they are their first batch's:
        format/cohort.py ALLELES)."""
        return self._sites_rows(layout.ALLELES, chunk_index)[:records]

    def _merged_alleles(self, chunk_index: int, out: np.ndarray) -> np.ndarray:
        """variant_allele of the chunk's records, the sites store's where it has them."""
        segments = self._merged(chunk_index, len(out))
        where = segments[:, 0] != spec.STR_FILL
        out[where] = spec.STR_FILL
        out[where, : segments.shape[1]] = segments[where]
        return out

    def _merged_calls(self, b: int, name: str, info: ArrayInfo, chunk_index: int,
                       rows: np.ndarray, have: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Batch ``b``'s ``values`` of field ``name`` (FORMAT, or INFO: bcftools merge moves
        both) at the chunk's records it has (``have``), its alleles mapped to the merged
        alleles of those records where they differ (gvcf.widen)."""
        segments = self._merged(chunk_index, len(rows))[have]
        sizes = (segments != spec.STR_FILL).sum(axis=1)
        allele_info = self.batches[b].array_info(spec.VARIANT_ALLELE)
        own = self._from_batch(b, spec.VARIANT_ALLELE, rows[have, b], None, allele_info)
        own_sizes = (own != spec.STR_FILL).sum(axis=1)
        axis = 2 if info.dims[1:2] == (spec.DIM_SAMPLES,) else 1
        dim = None if name == spec.CALL_GENOTYPE else info.dims[axis] if len(info.dims) > axis else None
        if dim is None and name != spec.CALL_GENOTYPE or dim not in (None, *_PER_ALLELE):
            return values
        missing = _missing_call(info).ravel()[0] if values.dtype.kind != "b" else False
        alike: dict[tuple[tuple[str, ...], tuple[str, ...]], list[int]] = {}  # (by their ALTs)
        for i in np.flatnonzero((sizes > 0) & _moved(own, own_sizes, segments, sizes)).tolist():
            alike.setdefault((tuple(own[i, 1:]), tuple(segments[i, 1:])), []).append(i)
        for (own_alts, alts), where in alike.items():
            union = ("", *(a for a in alts if a))
            mapping = gvcf.allele_map(("", *(a for a in own_alts if a)), union)
            block = values[where]
            wide = gvcf.widen(block.reshape(-1, block.shape[-1]), mapping, len(union), dim,
                              missing=missing, fill=_fill(info))
            values[where] = wide[:, : block.shape[-1]].reshape(block.shape)
        return values

    def _merged_counts(self, name: str, chunk_index: int, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The added-up stored counts of the chunk's records, with a record's merged alleles
        (it has as many as those); a record where a batch called an ALT allele and its ALTs are
        not the first of the merged ones (their counts would be in other columns) is not
        counted."""
        if name != sc.CALL_COUNTS:
            return counts
        merged = self._merged(chunk_index, len(rows))
        sizes = (merged != spec.STR_FILL).sum(axis=1)
        if counts.shape[1] > sc.ALLELES:
            counts[sizes > 0, sc.ALLELES] = sizes[sizes > 0]
        for b, batch in enumerate(self.batches):
            have = (rows[:, b] >= 0) & (sizes > 0)
            if not have.any():
                continue
            own = self._from_batch(b, spec.VARIANT_ALLELE, rows[have, b], None,
                                   batch.array_info(spec.VARIANT_ALLELE))
            moved = _moved(own, (own != spec.STR_FILL).sum(axis=1), merged[have], sizes[have], prefix=True)
            if moved.any():  # (only where the batch called an allele that moved: blocks are 0/0)
                stored = self._from_batch(b, sc.ALLELE_COUNTS, rows[have, b][moved], None,
                                          self.array_info(sc.ALLELE_COUNTS), fill=0)
                called = np.asarray((stored > 0).any(axis=2), dtype=bool)
                k = min(own.shape[1], merged.shape[1], called.shape[1])
                shifted = np.asarray(own[moved, :k] != merged[have][moved, :k], dtype=bool)
                shifted[:, 0] = False  # (REF stays allele 0; a segment's may be another base)
                moved[moved] = (called[:, :k] & shifted).any(axis=1) | (own[moved, k:] != spec.STR_FILL).any(axis=1)
            counts[np.flatnonzero(have)[moved], sc.CALLED] = sc.NOT_COUNTED
        return counts


def variants_chunk_of(sites: VczStore) -> int:
    """The variant chunk size of the cohort whose sites store is ``sites``: its attribute
    :data:`~vcfzarr_sql.format.cohort.ATTR_VARIANTS_CHUNK` (a sites store written before it is
    chunked as the cohort). StoreError unless its chunks are a whole number of the cohort's."""
    size = sites.attrs.get(layout.ATTR_VARIANTS_CHUNK, sites.variants_chunk_size)
    if type(size) is not int or size < 1 or sites.variants_chunk_size % size:
        raise StoreError(f"{sites.path}: {layout.ATTR_VARIANTS_CHUNK} is {size!r}: its chunks of "
                         f"{sites.variants_chunk_size} records are not a whole number of chunks of it")
    return size


def added_up(name: str, shape: tuple[int, ...],
             parts: list[tuple[np.ndarray, np.ndarray | None, int]]) -> np.ndarray:
    """The per-record genotype counts ``name`` (:data:`_ADDED`) of ``shape`` over the samples of
    several ``parts``, each ``(have, values, samples)``: the records it holds, its counts at
    those (None if none; as wide as ``shape`` or narrower), its sample count. A part lacking a
    record adds its samples as missing calls; a record some part did not count
    (``NOT_COUNTED``) is not counted; a record's allele count is the last part's holding it.

    >>> calls = np.array([[2, 0, 2], [sc.NOT_COUNTED, 1, 3]])
    >>> added_up(sc.CALL_COUNTS, (2, 3), [(np.array([True, True]), calls, 2),
    ...                                   (np.array([True, False]), np.array([[1, 0, 3]]), 1)]).tolist()
    [[3, 0, 3], [-1, 2, 3]]
    """
    out = np.zeros(shape, dtype=np.int64)
    uncounted = np.zeros(shape[0], dtype=bool)
    for have, given, samples in parts:
        if name == sc.CALL_COUNTS:
            out[~have, sc.MISSING] += samples
        if given is None:
            continue
        values = np.zeros((len(given), *shape[1:]), dtype=np.int64)
        values[tuple(slice(0, n) for n in given.shape)] = given
        rows = slice(None) if len(given) == shape[0] else have  # (every record: no fancy indexing)
        if name == sc.CALL_COUNTS:
            uncounted[rows] |= values[:, sc.CALLED] == sc.NOT_COUNTED
            if shape[1] > sc.ALLELES:
                out[rows, sc.ALLELES] = values[:, sc.ALLELES]
                values[:, sc.ALLELES] = 0
        out[rows] += values
    if name == sc.CALL_COUNTS:
        out[uncounted, sc.CALLED] = sc.NOT_COUNTED
    return out.astype(np.int32)


def _moved(own: np.ndarray, own_sizes: np.ndarray, merged: np.ndarray, sizes: np.ndarray, *,
           prefix: bool = False) -> np.ndarray:
    """Per record: whether a batch's ALT alleles ``own`` are not those of its merged alleles
    (``prefix``: not the first of them); REF may differ (a segment's is the base where it
    starts)."""
    k = min(own.shape[1], merged.shape[1])
    within = np.arange(1, k)[None, :] < own_sizes[:, None]
    differ = ((own[:, 1:k] != merged[:, 1:k]) & within).any(axis=1) | (own_sizes > sizes)
    return np.asarray(differ if prefix else differ | (own_sizes != sizes), dtype=bool)


def gvcf_widths(info: ArrayInfo, trailing: list[int], alleles: int) -> list[int]:
    """The trailing shape of a cohort array with segments of up to ``alleles`` alleles: values
    per allele, alt allele or genotype as many as those have."""
    per = {spec.DIM_ALLELES: alleles, spec.DIM_ALT_ALLELES: alleles - 1,
           spec.DIM_GENOTYPES: alleles * (alleles + 1) // 2}
    return [max(n, per.get(dim, 0)) for n, dim in zip(trailing, info.dims[1:])]


# -- values: what fills, what is missing, what merges ------------------------------------------


def _fill(info: ArrayInfo) -> object:
    kind = info.decoded_dtype.kind
    if kind == "O":
        return spec.STR_FILL
    if kind == "b":
        return False
    if kind == "f":
        return spec.FLOAT32_FILL
    return spec.INT_FILL


def _missing_call(info: ArrayInfo) -> np.ndarray:
    """The value of a call at a record its batch lacks: missing, then fill (a mask: True)."""
    kind = info.decoded_dtype.kind
    shape = info.shape[2:]
    if kind == "b":
        masked = info.name.startswith(spec.MASK_PREFIX) or info.name.endswith("_mask")
        return np.full(shape, masked, dtype=bool)
    missing = {"O": spec.STR_MISSING, "f": spec.FLOAT32_MISSING}.get(kind, spec.INT_MISSING)
    out = np.full(shape, _fill(info), dtype=info.decoded_dtype)
    out[(0,) * len(shape)] = missing
    return out


def _missing_elements(values: np.ndarray) -> np.ndarray:
    """Which elements hold no value: missing or fill (a Flag: not set)."""
    kind = values.dtype.kind
    if kind == "b":
        return ~values
    if kind == "O":
        return (values == spec.STR_MISSING) | (values == spec.STR_FILL)
    if kind == "f":
        bits = values.astype(np.float32).view(np.uint32)
        return (bits == spec.FLOAT32_MISSING_BITS) | (bits == spec.FLOAT32_FILL_BITS)
    return (values == spec.INT_MISSING) | (values == spec.INT_FILL)


def _has_value(values: np.ndarray) -> np.ndarray:
    """Per record: whether any element holds a value (not missing, not fill; a Flag: set)."""
    held = ~_missing_elements(values.reshape(len(values), -1))
    return np.asarray(held.any(axis=1), dtype=bool)


Merge = Callable[[list[tuple[np.ndarray, np.ndarray]], np.ndarray], np.ndarray]


def _first_given(given: list[tuple[np.ndarray, np.ndarray]], out: np.ndarray) -> np.ndarray:
    """Each record's value from the first batch that gives it one, else from the first batch
    that has the record (its missing value)."""
    done = np.zeros(len(out), dtype=bool)
    for where, values in reversed(given):  # (the first batch with the record, last)
        out[where] = values
    for where, values in given:
        take = _has_value(values) & ~done[where]
        out[where[take]] = values[take]
        done[where[take]] = True
    return out


def _last_per_element(given: list[tuple[np.ndarray, np.ndarray]], out: np.ndarray) -> np.ndarray:
    """INFO of Number=A, R or G: each value from the last batch that gives that value (bcftools
    merge writes each batch's values over the last's, skipping missing ones)."""
    _first_given(given, out)
    for where, values in given:
        held = ~_missing_elements(values)
        target = out[where]
        target[held] = values[held]
        out[where] = target
    return out


def _largest(given: list[tuple[np.ndarray, np.ndarray]], out: np.ndarray) -> np.ndarray:
    """QUAL: the largest given, else missing."""
    best = np.full(len(out), -np.inf)
    for where, values in given:
        held = _has_value(values)
        best[where[held]] = np.maximum(best[where[held]], values[held].astype(np.float64))
    out[:] = spec.FLOAT32_MISSING
    found = best > -np.inf
    out[found] = best[found]
    return out


def _summed(given: list[tuple[np.ndarray, np.ndarray]], out: np.ndarray) -> np.ndarray:
    """INFO/DP, INFO/DP4: the sum of the values given, element by element (missing where none
    gives one)."""
    total = np.zeros(out.shape, dtype=np.int64)
    held_any = np.zeros(out.shape, dtype=bool)
    for where, values in given:
        held = (values != spec.INT_MISSING) & (values != spec.INT_FILL)
        total[where] += np.where(held, values, 0)
        held_any[where] |= held
    _first_given(given, out)
    out[held_any] = total[held_any]
    return out


def _by_rule(rule: str, given: list[tuple[np.ndarray, np.ndarray]], out: np.ndarray) -> np.ndarray:
    """An INFO field bcftools merge --gvcf merges by ``rule`` (``sum``, ``min`` or ``max``),
    element by element over the values given (missing where none gives one; a missing element
    of a sum is 0, as bcftools counts it)."""
    kind = out.dtype.kind
    start = {"sum": 0, "min": np.inf if kind == "f" else np.iinfo(np.int64).max,
             "max": -np.inf if kind == "f" else np.iinfo(np.int64).min}[rule]
    total = np.full(out.shape, start, dtype=out.dtype if kind == "f" else np.int64)
    held_any = np.zeros(out.shape, dtype=bool)
    for where, values in given:
        held = ~_missing_elements(values)
        held_any[where] |= held
        current = total[where]
        if rule == "sum":
            current += np.where(held, values, 0).astype(total.dtype)
        else:
            pick = np.minimum if rule == "min" else np.maximum
            current = np.where(held, pick(current, values.astype(total.dtype)), current)
        total[where] = current
    _first_given(given, out)
    out[held_any] = total[held_any]
    return out


def _merged_ids(given: list[tuple[np.ndarray, np.ndarray]], out: np.ndarray) -> np.ndarray:
    """ID: the distinct IDs the batches give, in order, joined by ``;`` (``.`` if none)."""
    ids: list[list[str]] = [[] for _ in range(len(out))]
    for where, values in given:
        for i, value in zip(where.tolist(), values.tolist()):
            for one in str(value).split(";"):
                if one not in (spec.STR_MISSING, spec.STR_FILL) and one not in ids[i]:
                    ids[i].append(one)
    out[:] = [";".join(i) if i else spec.STR_MISSING for i in ids]
    return out


def _filter_columns(values: np.ndarray, columns: np.ndarray, width: int) -> np.ndarray:
    """A batch's FILTER flags with the cohort's filter columns."""
    out = np.zeros((len(values), width), dtype=bool)
    out[:, columns] = values[:, : len(columns)]
    return out


def _merged_filters(given: list[tuple[np.ndarray, np.ndarray]], out: np.ndarray,
                    filters: list[str]) -> np.ndarray:
    """FILTER: the union of the filters set; PASS where no batch set another but one passed."""
    out[:] = False
    for where, values in given:
        out[where] |= values
    if "PASS" in filters:
        passed = filters.index("PASS")
        others = np.delete(out, passed, axis=1).any(axis=1)
        out[others, passed] = False
    return out
