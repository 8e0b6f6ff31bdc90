"""Check a store against the VCF Zarr specification of the version it declares (0.2 to 0.5).

:func:`validate` lists every :class:`Problem` it finds: group attributes, the mandatory arrays
(path, dimension names, dtype kind), consistent dimension sizes, equal chunking along
``variants``, the dimensions of every INFO/FORMAT array (against the header's Number and Type
when the store carries a ``vcf_header``), and the ``region_index`` content, recomputed from
``variant_contig``, ``variant_position`` and ``variant_length``, and the stored genotype counts
(``summary_gt_*``, :mod:`vcfzarr_sql.query.stored_counts`) and packed genotypes
(``summary_gt_packed*``, :mod:`vcfzarr_sql.format.packed_genotypes`), recomputed from the genotypes.

Metadata is read with zarr-python (Zarr v2 or v3; a directory, a ``.zip`` file or an fsspec URL);
array contents with vcfzarr-sql's own checked reader, and none through a refused codec
(:mod:`vcfzarr_sql.store.bounds`). ``validate(path, deep=True)`` decodes every chunk.

>>> validate("/no/such/store")
Traceback (most recent call last):
...
vcfzarr_sql.errors.StoreError: /no/such/store: not a Zarr group (no such file or directory)
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr
import zarr.storage

from vcfzarr_sql.errors import StoreError, VcfZarrError
from vcfzarr_sql.format import arrays as arrays_rules
from vcfzarr_sql.format import cohort as cohort_layout
from vcfzarr_sql.format import packed_genotypes, spec, summaries
from vcfzarr_sql.format.arrays import (
    BOOL,
    CHAR,
    FLOAT,
    HEADER_VERSIONS,
    INT,
    MANDATORY_ARRAYS,
    OPTIONAL_ARRAYS,
    STR,
    ArrayRule,
    S,
    V,
    kind_matches,
)
from vcfzarr_sql.format.region_index import region_index
from vcfzarr_sql.store.blocks import BatchBlocks
from vcfzarr_sql.store.codecs import RefusedCodec
from vcfzarr_sql.store.counting import CountingSource
from vcfzarr_sql.store.header import HeaderDefinitions, HeaderField, parse_header
from vcfzarr_sql.store.kvstore import is_url, open_kv
from vcfzarr_sql.store.opening import open_store as open_cohort
from vcfzarr_sql.store.opening import read_manifest
from vcfzarr_sql.store.vcz import VczStore, open_store

VCF_TYPE_KIND = {"Integer": INT, "Float": FLOAT, "Flag": BOOL, "Character": CHAR, "String": STR}
#: Versions that have ``filter_description`` (added in 0.3).
FILTER_DESCRIPTION_VERSIONS = ("0.3", "0.4", "0.5")
#: Trailing dimensions an INFO/FORMAT array may take from the reserved names.
FIELD_RESERVED_DIMENSIONS = frozenset(spec.NUMBER_DIMENSION.values())


@dataclass(frozen=True)
class Problem:
    """One way a store breaks the spec: ``where`` is an array name or ``attrs``."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


MASK_SUFFIXES = ("_mask", "_fill")


def open_group(path: str | os.PathLike) -> zarr.Group:
    """The Zarr group at ``path`` (read-only); :class:`StoreError` naming the path otherwise."""
    text = os.fspath(path)
    try:
        if text.endswith(".zip"):
            return zarr.open_group(zarr.storage.ZipStore(text, mode="r"), mode="r")
        return zarr.open_group(text, mode="r")
    except FileNotFoundError as err:
        missing = not os.path.exists(text) and not is_url(text)
        reason = "no such file or directory" if missing else "no Zarr group metadata"
        raise StoreError(f"{text}: not a Zarr group ({reason})") from err
    except (ValueError, OSError, KeyError) as err:
        raise StoreError(f"{text}: not a Zarr group ({type(err).__name__}: {err})") from err


def dimension_names(array: zarr.Array) -> tuple[str, ...] | None:
    """``_ARRAY_DIMENSIONS`` (Zarr v2) or ``dimension_names`` (Zarr v3); ``None`` if absent."""
    names: Any = (array.metadata.dimension_names if array.metadata.zarr_format == 3
                  else array.attrs.get(spec.ARRAY_DIMENSIONS))
    return None if names is None else tuple(names)


def dtype_kind(array: zarr.Array, version: str) -> str | None:
    """The spec's dtype shorthand of ``array`` in ``version`` (:func:`.format.arrays.dtype_kind`),
    ``None`` if it has none. Variable-length strings in Zarr v2 need the ``vlen-utf8`` filter."""
    vlen = True
    if array.metadata.zarr_format == 2:
        filters = array.metadata.filters or ()
        vlen = any(getattr(f, "codec_id", None) == "vlen-utf8" for f in filters)
    return arrays_rules.dtype_kind(array.dtype, version, vlen=vlen)


def validate(path: str | os.PathLike, *, deep: bool = False) -> list[Problem]:
    """Every way the store at ``path`` breaks the spec of its declared version ([] if none).

    Array contents are read with vcfzarr-sql's own checked reader (allowed codecs only, every
    chunk's size and dtype against its array, no missing chunk where fill cannot be), never
    through an array whose codec is refused. ``deep``: read every chunk of every array too.
    Raises :class:`StoreError` when ``path`` is not a Zarr group at all.
    """
    refused = _refused_codecs(path)
    if refused:  # nothing more is read: zarr-python would build those codecs
        return [Problem(name, why) for name, why in refused.items()]
    group = open_group(path)
    version = group.attrs.get(spec.ATTR_VERSION)
    if version not in spec.READ_VERSIONS:
        return [Problem("attrs", f"{spec.ATTR_VERSION} is {version!r}, expected one of "
                                 f"{', '.join(spec.READ_VERSIONS)}")]
    arrays = dict(sorted(group.arrays()))
    header = group.attrs.get(spec.ATTR_HEADER)
    problems = list(_check_attrs(group.attrs, version))
    problems += _check_arrays(arrays, version)
    problems += _check_fields(arrays, version, header if isinstance(header, str) else None)
    problems += _check_dimension_sizes(arrays)
    problems += _check_chunking(arrays)
    try:
        store = open_store(path)
    except VcfZarrError as err:
        return problems or [Problem("store", str(err))]
    with store:
        problems += _problems_reading(spec.VARIANT_CONTIG, _check_contents, store)
        problems += _problems_reading(spec.REGION_INDEX, _check_region_index, store)
        problems += _problems_reading(summaries.ALLELE_COUNTS, _check_genotype_counts, store)
        unreadable = list(_check_every_chunk(store)) if deep else []
        # (the counts of FORMAT/DP and AD: with --deep, when every chunk could be read)
        depths = deep and not unreadable
        problems += _problems_reading(summaries.SAMPLE_CALL_STATS,
                                      lambda opened: _check_call_stats(opened, depths), store)
        problems += unreadable
        problems += _problems_reading(packed_genotypes.PACKED, _check_packed_genotypes, store)
    return problems + _cohort_problems(os.fspath(path), deep)


def _cohort_problems(location: str, deep: bool) -> list[Problem]:
    """A cohort's (:mod:`vcfzarr_sql.format.cohort`) batches after the first (the store at
    ``location`` itself), each a VCF Zarr store of its own checked as one (its problems named
    with its directory), and the cohort opened whole (manifest against batches)."""
    kv = open_kv(location)
    try:
        manifest = read_manifest(location, kv)
    except VcfZarrError as err:
        return [Problem(cohort_layout.MANIFEST, str(err))]
    finally:
        kv.close()
    if manifest is None or len(manifest.batches) == 1:
        return []
    problems = []
    for relative in manifest.batches[1:]:
        problems += [Problem(f"{relative}/{p.where}", p.message)
                     for p in validate(location.rstrip("/") + "/" + relative, deep=deep)]
    try:
        open_cohort(location).close()
    except VcfZarrError as err:
        problems.append(Problem(cohort_layout.MANIFEST, str(err)))
    return problems


def _refused_codecs(path: str | os.PathLike) -> dict[str, str]:
    """Why each array whose codecs are not allowed (e.g. ``pickle``) is refused, as our own
    reader sees the store's metadata (nothing when it cannot open the store)."""
    try:
        with open_store(path) as store:
            infos = [store.array_info(name) for name in store.array_names]
    except VcfZarrError:
        return {}
    return {info.name: info.codec.reason for info in infos if isinstance(info.codec, RefusedCodec)}


def _problems_reading(where: str, check: Callable[[VczStore], Iterable[Problem]],
                      store: VczStore) -> list[Problem]:
    """The problems ``check(store)`` finds, or the error reading the store gave."""
    try:
        return list(check(store))
    except VcfZarrError as err:
        return [Problem(where, str(err))]
    except MemoryError:
        return [Problem(where, "too large to check in memory")]


def _check_every_chunk(store: VczStore) -> Iterator[Problem]:
    """Decode every chunk of every array (one at a time): the first bad chunk of each array,
    and how many more there are."""
    for name in store.array_names:
        info = store.array_info(name)
        errors = []
        for chunk in itertools.product(*(range(max(n, 1)) for n in info.grid)):
            try:
                store.read_chunk(name, chunk)
            except VcfZarrError as err:
                errors.append(str(err))
        if errors:
            more = f" (and {len(errors) - 1} more bad chunks)" if len(errors) > 1 else ""
            yield Problem(name, errors[0] + more)


def notes(path: str | os.PathLike) -> list[str]:
    """What a reader of the store at ``path`` should know that is not a problem: the fields
    kept with a mask array because some real values equal the spec's sentinels."""
    arrays = dict(sorted(open_group(path).arrays()))
    return [
        f"{name}: {base} has real values equal to the spec's missing/fill sentinels (Integer "
        f"-1/-2, empty strings in lists); {name} marks the elements that hold no value, and "
        "readers that ignore it see those values as missing or fill"
        for name in arrays
        if name.startswith(spec.MASK_PREFIX)
        and (base := name[len(spec.MASK_PREFIX) :]) in {field for field, _, _ in _field_arrays(arrays)}
    ]


def _check_attrs(attrs: Mapping[str, Any], version: str) -> Iterator[Problem]:
    header = attrs.get(spec.ATTR_HEADER)
    if version in HEADER_VERSIONS and header is None:
        yield Problem("attrs", f"missing {spec.ATTR_HEADER} (mandatory in VCF Zarr {version})")
    if header is not None:
        if not isinstance(header, str):
            yield Problem("attrs", f"{spec.ATTR_HEADER} is not a string")
        elif not header.startswith("##fileformat") or "\n#CHROM" not in header:
            yield Problem("attrs", f"{spec.ATTR_HEADER} does not run from ##fileformat to #CHROM")
    meta = attrs.get(spec.ATTR_META_INFORMATION)
    if meta is not None and not (
        isinstance(meta, list) and all(isinstance(m, list) and len(m) == 2 for m in meta)
    ):
        yield Problem("attrs", f"{spec.ATTR_META_INFORMATION} is not a list of [key, value] pairs")
    source = attrs.get(spec.ATTR_SOURCE)
    if source is not None and not isinstance(source, str):
        yield Problem("attrs", f"{spec.ATTR_SOURCE} is not a string")


def _dimension_problem(
    name: str, array: zarr.Array, dims: tuple[str, ...] | None
) -> Problem | None:
    if dims is None:
        return Problem(name, "no dimension names")
    if len(dims) != array.ndim:
        return Problem(name, f"{len(dims)} dimension names for {array.ndim} dimensions")
    return None


def _check_rule(name: str, array: zarr.Array, rule: ArrayRule, version: str) -> Iterator[Problem]:
    dims = dimension_names(array)
    problem = _dimension_problem(name, array, dims)
    if problem is not None:
        yield problem
    elif dims != rule.dims:
        yield Problem(name, f"dimensions {list(dims or ())}, expected {list(rule.dims)}")
    kind = dtype_kind(array, version)
    if not kind_matches(kind, rule.kind, version):
        yield Problem(name, f"dtype {array.dtype} is not {rule.kind}")


def _check_arrays(arrays: dict[str, zarr.Array], version: str) -> Iterator[Problem]:
    for name, rule in MANDATORY_ARRAYS.items():
        if name not in arrays:
            yield Problem(name, "missing (mandatory array)")
        else:
            yield from _check_rule(name, arrays[name], rule, version)
    if version in FILTER_DESCRIPTION_VERSIONS and spec.FILTER_DESCRIPTION not in arrays:
        yield Problem(spec.FILTER_DESCRIPTION, f"missing (mandatory in VCF Zarr {version})")
    for name, rule in OPTIONAL_ARRAYS.items():
        if name in arrays:
            yield from _check_rule(name, arrays[name], rule, version)
    if spec.REGION_INDEX in arrays and spec.VARIANT_LENGTH not in arrays:
        yield Problem(spec.VARIANT_LENGTH, "missing (mandatory when region_index is present)")
    for name, array in arrays.items():
        base = _mask_base(name, arrays)
        if base is None:
            continue
        if array.dtype.kind != "b":
            yield Problem(name, f"dtype {array.dtype} is not bool")
        if array.shape != arrays[base].shape:
            yield Problem(name, f"shape {array.shape} differs from {base} {arrays[base].shape}")


def _mask_base(name: str, arrays: dict[str, zarr.Array]) -> str | None:
    for suffix in MASK_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in arrays:
            return name[: -len(suffix)]
    return None


def _field_arrays(arrays: dict[str, zarr.Array]) -> Iterator[tuple[str, str, str]]:
    """(array name, category, VCF name) of every INFO and FORMAT array."""
    special = set(MANDATORY_ARRAYS) | set(OPTIONAL_ARRAYS)
    for name in arrays:
        if name in special or _mask_base(name, arrays) is not None:
            continue
        if name.startswith(spec.INFO_PREFIX):
            yield name, "INFO", name[len(spec.INFO_PREFIX) :]
        elif name.startswith(spec.FORMAT_PREFIX):
            yield name, "FORMAT", name[len(spec.FORMAT_PREFIX) :]


def _check_fields(
    arrays: dict[str, zarr.Array], version: str, header: str | None
) -> Iterator[Problem]:
    declared = parse_header(header) if header is not None else HeaderDefinitions()
    for name, category, field in _field_arrays(arrays):
        array = arrays[name]
        dims = dimension_names(array)
        lead = (V,) if category == "INFO" else (V, S)
        problem = _dimension_problem(name, array, dims)
        if problem is not None:
            yield problem
            continue
        assert dims is not None  # (missing names are a problem)
        if dims[: len(lead)] != lead or len(dims) not in (len(lead), len(lead) + 1):
            yield Problem(name, f"dimensions {list(dims)}, expected {list(lead)} + at most one")
            continue
        kind = dtype_kind(array, version)
        if kind is None:
            yield Problem(name, f"dtype {array.dtype} is none of int, float, bool, char, str")
        elif kind == BOOL and category == "FORMAT":
            yield Problem(name, "FORMAT fields cannot be bool (Flag is INFO only)")
        extra = dims[len(lead) :]
        if extra and extra[0] in spec.RESERVED_DIMENSIONS - FIELD_RESERVED_DIMENSIONS:
            yield Problem(name, f"dimension {extra[0]!r} is reserved for another use")
        definition = (declared.info if category == "INFO" else declared.format).get(field)
        if definition is not None:
            yield from _check_declared(name, array, extra, kind, definition, version)


def _check_declared(
    name: str, array: zarr.Array, extra: tuple[str, ...], kind: str | None,
    definition: HeaderField, version: str,
) -> Iterator[Problem]:
    number, vcf_type = definition.number, definition.vcf_type
    expected_kind = VCF_TYPE_KIND.get(vcf_type)
    if expected_kind is not None and not kind_matches(kind, expected_kind, version):
        yield Problem(name, f"dtype {array.dtype} is not {expected_kind} (Type={vcf_type})")
    if number in spec.NUMBER_DIMENSION:
        if list(extra) != [spec.NUMBER_DIMENSION[number]]:
            yield Problem(name, f"Number={number} needs last dimension "
                                f"{spec.NUMBER_DIMENSION[number]!r}, got {list(extra)}")
    elif number in ("0", "1"):
        if extra and array.shape[-1] != 1:
            yield Problem(name, f"Number={number} field has an extra dimension {list(extra)}")
    elif not extra:
        yield Problem(name, f"Number={number} field has no dimension for its values")
    elif extra and extra[0] in spec.RESERVED_DIMENSIONS:
        yield Problem(name, f"Number={number} field uses reserved dimension {extra[0]!r}")


def _all_dims(arrays: dict[str, zarr.Array]) -> Iterator[tuple[str, tuple[str, ...], zarr.Array]]:
    for name, array in arrays.items():
        dims = dimension_names(array)
        if dims is not None and len(dims) == array.ndim:
            yield name, dims, array


def _check_dimension_sizes(arrays: dict[str, zarr.Array]) -> Iterator[Problem]:
    """A dimension name has one size across the store; ``variants`` etc. match their arrays."""
    sizes: dict[str, tuple[int, str]] = {}
    owners = {V: spec.VARIANT_POSITION, S: spec.SAMPLE_ID, spec.DIM_CONTIGS: spec.CONTIG_ID,
              spec.DIM_FILTERS: spec.FILTER_ID}
    for dim, owner in owners.items():
        if owner in arrays and arrays[owner].ndim >= 1:
            sizes[dim] = (arrays[owner].shape[0], owner)
    for name, dims, array in _all_dims(arrays):
        for dim, size in zip(dims, array.shape):
            first = sizes.setdefault(dim, (size, name))
            if first[0] != size:
                yield Problem(name, f"dimension {dim!r} has size {size}, "
                                    f"but {first[0]} in {first[1]}")
    ri = arrays.get(spec.REGION_INDEX)
    if ri is not None and (ri.ndim != 2 or ri.shape[1] != spec.REGION_INDEX_FIELDS):
        yield Problem(spec.REGION_INDEX,
                      f"shape {ri.shape}, expected (n, {spec.REGION_INDEX_FIELDS})")


def _check_chunking(arrays: dict[str, zarr.Array]) -> Iterator[Problem]:
    """Every array's chunk size along ``variants`` is variant_position's."""
    position = arrays.get(spec.VARIANT_POSITION)
    reference = None if position is None else (position.chunks[0], spec.VARIANT_POSITION)
    for name, dims, array in _all_dims(arrays):
        if V not in dims:
            continue
        chunk = array.chunks[dims.index(V)]
        if reference is None:
            reference = (chunk, name)
        elif chunk != reference[0]:
            yield Problem(name, f"chunk size {chunk} along 'variants', but {reference[0]} in "
                                f"{reference[1]}")


def _check_contents(store: VczStore) -> Iterator[Problem]:
    """Small cross-array facts: contig offsets in range, PASS first."""
    if store.has_array(spec.VARIANT_CONTIG):
        contig = store.read_array(spec.VARIANT_CONTIG)
        n = len(store.contigs)
        if contig.size and (contig.min() < 0 or contig.max() >= n):
            yield Problem(spec.VARIANT_CONTIG, f"values outside [0, {n}) (contig_id has {n})")
    if store.filters and store.filters[0] != "PASS":
        yield Problem(spec.FILTER_ID, f"first filter is {store.filters[0]!r}, expected 'PASS'")


def _check_region_index(store: VczStore) -> Iterator[Problem]:
    needed = (spec.REGION_INDEX, spec.VARIANT_CONTIG, spec.VARIANT_POSITION, spec.VARIANT_LENGTH)
    if not all(store.has_array(name) for name in needed):
        return
    stored = store.array_info(spec.REGION_INDEX)
    position = store.array_info(spec.VARIANT_POSITION)
    if stored.dtype != position.dtype:
        yield Problem(spec.REGION_INDEX,
                      f"dtype {stored.dtype} differs from variant_position's {position.dtype}")
    if len(stored.shape) != 2 or stored.shape[1] != spec.REGION_INDEX_FIELDS:
        return
    if len(position.shape) != 1:
        return
    expected = region_index(
        store.read_array(spec.VARIANT_CONTIG),
        store.read_array(spec.VARIANT_POSITION),
        store.read_array(spec.VARIANT_LENGTH),
        chunk_size=position.chunks[0],
    )
    actual = store.read_array(spec.REGION_INDEX).astype(np.int64)
    if actual.shape != expected.shape:
        yield Problem(spec.REGION_INDEX, f"{actual.shape[0]} rows, expected {expected.shape[0]} "
                                         "(one per chunk and contig)")
    elif not np.array_equal(actual, expected):
        row = int(np.flatnonzero((actual != expected).any(axis=1))[0])
        yield Problem(spec.REGION_INDEX, f"row {row} is {actual[row].tolist()}, expected "
                                         f"{expected[row].tolist()}")


def _check_genotype_counts(store: VczStore) -> Iterator[Problem]:
    """The stored genotype counts (:mod:`vcfzarr_sql.query.stored_counts`) against the counts
    of the genotypes, one variant chunk at a time (a plan of every chunk, run by the
    executor): the first block that disagrees."""
    from vcfzarr_sql.query.execute import every_chunk  # (imports the scan)
    from vcfzarr_sql.query.summarise import ChunkSummary, summarise_chunk

    names = (summaries.ALLELE_COUNTS, summaries.CALL_COUNTS, summaries.HWE,
             summaries.SAMPLE_CLASS_COUNTS)
    present = [name for name in names if store.has_array(name)]
    gt = store.format_fields.get("GT")
    if not present:
        return
    if gt is None or len(present) < len(names):
        yield Problem(present[0], "stored genotype counts need call_genotype and all of "
                                  f"{', '.join(names)}")
        return
    def summarised(source: CountingSource, chunk: int) -> tuple[ChunkSummary, dict[str, np.ndarray]]:
        expected = summarise_chunk(source, gt.array, chunk)
        return expected, {name: BatchBlocks(source, chunk, None).read(name) for name in names}

    for chunk, (expected, stored) in every_chunk(store, summarised):
        for name in names if chunk == 0 else ():
            info = store.array_info(name)
            if info.shape[1:] != expected.block(name).shape[1:]:
                yield Problem(name, f"shape {info.shape}, expected {expected.block(name).shape[1:]} "
                                    "after the first axis")
                return
        for name in names:
            wanted, actual = expected.block(name), stored[name]
            nan = wanted.dtype.kind == "f"
            if actual.shape != wanted.shape or not np.array_equal(actual, wanted, equal_nan=nan):
                yield Problem(name, _disagreement(name, chunk, store.variants_chunk_size,
                                                  actual, wanted))
                return


def _check_call_stats(store: VczStore, deep: bool) -> Iterator[Problem]:
    """The stored counts of ``stats -s -`` (:mod:`vcfzarr_sql.query.call_stats`) against those
    of the genotypes (and with ``deep``, of FORMAT/DP and AD too: without, their counts are not
    checked), one variant chunk at a time: the first array whose layout or block disagrees."""
    from vcfzarr_sql.query import call_stats
    from vcfzarr_sql.query.execute import every_chunk

    names = summaries.CALL_STATS
    present = [name for name in names if store.has_array(name)]
    if not present:
        return
    gt = store.format_fields.get("GT")
    if gt is None or len(present) < len(names) or not call_stats.summarised_store(store):
        yield Problem(present[0], "stored stats counts need call_genotype (FORMAT/DP one value "
                                  f"per call, AD per call) and all of {', '.join(names)}")
        return
    if not call_stats.call_stats_stored(store):
        yield Problem(present[0], "stored stats counts are not laid out one row per variant "
                                  "chunk over every sample")
        return
    def counted(source: CountingSource, chunk: int) -> tuple[call_stats.CallStats, call_stats.CallStats]:
        return (call_stats.summarise_call_stats_chunk(source, gt.array, chunk, deep),
                call_stats.stored_call_stats(source, chunk))

    genotype_rows = [k for k, kind in enumerate(summaries.SAMPLE_STATS) if kind not in call_stats.DEPTH_STATS]
    for chunk, (expected, stored) in every_chunk(store, counted):
        for name in names if deep else (summaries.SAMPLE_CALL_STATS, summaries.HWE_GENOTYPE_COUNTS):
            wanted, actual = expected.block(name), stored.block(name)
            if not deep and name == summaries.SAMPLE_CALL_STATS:
                wanted, actual = wanted[:, genotype_rows], actual[:, genotype_rows]
            if not np.array_equal(actual, wanted):
                at = np.argwhere(actual != wanted)[0].tolist()
                yield Problem(name, f"variant chunk {chunk}: at {at[1:]} it has "
                                    f"{actual[tuple(at)]}, the genotypes give {wanted[tuple(at)]}")
                return


def _check_packed_genotypes(store: VczStore) -> Iterator[Problem]:
    """The packed genotypes (:mod:`vcfzarr_sql.format.packed_genotypes`) against the genotypes
    packed again, one variant chunk at a time: their layout, then the first record that differs."""
    from vcfzarr_sql.query.execute import every_chunk  # (imports the scan)
    from vcfzarr_sql.query.packed_counts import pack_chunk
    from vcfzarr_sql.store.packed_arrays import packed_stored

    names = (packed_genotypes.PACKED, packed_genotypes.PACKED_EXACT)
    present = [name for name in names if store.has_array(name)]
    gt = store.format_fields.get("GT")
    if not present:
        return
    if gt is None or not packed_stored(store):
        yield Problem(present[0], "packed genotypes need call_genotype and both of "
                                  f"{', '.join(names)}, laid out as written (shape, chunks, uint8)")
        return
    def packed(source: CountingSource, chunk: int) -> tuple[tuple[np.ndarray, np.ndarray], list[np.ndarray]]:
        stored = [BatchBlocks(source, chunk, None).read(name) for name in names]
        return pack_chunk(source, gt.array, chunk), stored

    for chunk, (expected, stored) in every_chunk(store, packed):
        for name, wanted, actual in zip(names, expected, stored):
            if not np.array_equal(actual, wanted):
                row = int(np.flatnonzero((actual != wanted).reshape(len(wanted), -1).any(axis=1))[0])
                yield Problem(name, f"record {chunk * store.variants_chunk_size + row} differs "
                                    "from its genotypes packed again")
                return


def _disagreement(name: str, chunk: int, size: int, actual: np.ndarray, wanted: np.ndarray) -> str:
    if actual.shape != wanted.shape:
        return f"variant chunk {chunk} has shape {actual.shape}, expected {wanted.shape}"
    if name == summaries.SAMPLE_CLASS_COUNTS:
        sample = int(np.flatnonzero((actual != wanted).any(axis=(0, 1)))[0])
        return (f"variant chunk {chunk}, sample {sample} has {actual[0, :, sample].tolist()}, "
                f"the genotypes give {wanted[0, :, sample].tolist()}")
    differs = actual != wanted
    if wanted.dtype.kind == "f":
        differs &= ~(np.isnan(actual) & np.isnan(wanted))
    row = int(np.flatnonzero(differs.reshape(len(wanted), -1).any(axis=1))[0])
    return (f"record {chunk * size + row} has {actual[row].tolist()}, the genotypes give "
            f"{wanted[row].tolist()}")
