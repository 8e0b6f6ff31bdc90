"""A VCF Zarr store opened for reading: metadata, fields, and raw chunk access.

>>> store = open_store("sample.vcz")                                        # doctest: +SKIP
>>> store.samples, store.contigs, list(store.info_fields)                   # doctest: +SKIP
>>> store.read_chunk("variant_position", (0,))                              # doctest: +SKIP
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from vcfzarr_sql.errors import StoreError, VcfZarrError
from vcfzarr_sql.format import cohort, spec
from vcfzarr_sql.store import derived
from vcfzarr_sql.store.bounds import MAX_CHUNK_BYTES_VARIABLE, max_chunk_bytes
from vcfzarr_sql.store.codecs import decode_rows, finished, trimmed_strings
from vcfzarr_sql.store.fields import FORMAT, INFO, FieldInfo, describe_fields
from vcfzarr_sql.store.header import HeaderDefinitions, parse_header
from vcfzarr_sql.store.kvstore import FsspecStore, KeyValueStore, is_url, open_kv
from vcfzarr_sql.store.metadata import ArrayInfo, fixed_array_problem, parse_v2, parse_v3

if TYPE_CHECKING:  # (imported where Arrow is used: commands that read no strings never load it)
    import pyarrow as pa

_REQUIRED_ARRAYS = (spec.VARIANT_CONTIG, spec.VARIANT_POSITION, spec.CONTIG_ID)
#: Arrays none of whose chunks can be all fill (so no writer leaves one out): every variant
#: has a position and an ID (``.`` when missing), every contig and sample a name, every
#: region index row a record count. A missing chunk of these is an error, not fill.
_NEVER_ALL_FILL = (spec.VARIANT_POSITION, spec.VARIANT_ID, spec.CONTIG_ID, spec.SAMPLE_ID,
                   spec.REGION_INDEX)
#: ``source`` attribute of stores written by our converter, which writes every chunk.
_OUR_SOURCE = "vcfzarr-sql"
#: What :meth:`VczStore.load` reads: the small arrays and the fields they describe.
_SMALL = ("samples", "contigs", "contig_lengths", "filters", "filter_descriptions", "info_fields",
          "format_fields")


def open_store(path: str | os.PathLike, *, storage_options: dict | None = None,
               kv: KeyValueStore | None = None, lazy: bool = False) -> VczStore:
    """Open the VCF Zarr store at ``path``: a local directory, a ``.zip`` file or an fsspec URL.

    Zarr v2 or v3; VCF Zarr 0.2 to 0.5. Raises StoreError (one line naming ``path``) when the
    path is missing or is not a VCF Zarr store. ``kv``: read the store's bytes through this
    key/value store instead of the one ``path`` names (the server's confined reader).
    ``lazy``: open one batch of a cohort: the small arrays are read at their first use
    (:class:`VczStore`), and no fingerprint is taken (the cohort's tells its version).
    """
    location = os.fspath(path)
    # (before reading: a change while opening shows)
    fingerprint = None if lazy else metadata_fingerprint(location)
    kv = kv or open_kv(location, storage_options)
    try:
        return VczStore(location, kv, fingerprint=fingerprint, storage_options=storage_options,
                        lazy=lazy)
    except BaseException:
        kv.close()
        raise


#: Documents at the root of a Zarr store: what opening it reads first.
ROOT_DOCUMENTS = (".zgroup", ".zattrs", ".zmetadata", ".zarray", "zarr.json")
#: Root metadata files: rewriting or re-converting a store changes at least one of them.
_ROOT_METADATA = (".zmetadata", ".zgroup", ".zattrs", "zarr.json")
#: Metadata files of each array (Zarr v2, v3), read when the store has no ``.zmetadata``.
_ARRAY_METADATA = {2: (".zarray", ".zattrs"), 3: ("zarr.json",)}


def file_state(path: str) -> tuple[int, int, int, int] | None:
    """(inode, size, mtime, ctime in ns) of the file at ``path`` (None: nothing there)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _entries(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def metadata_fingerprint(path: str | os.PathLike) -> tuple | None:
    """A cheap fingerprint of what opening the local store at ``path`` reads: the inode, size
    and times of its root, root metadata files, each array's metadata files when they are not
    consolidated, and the region index's chunks (a directory); of the archive (a zip file).

    A rewritten, re-converted or re-indexed store, or a cohort that gained a batch (its
    manifest), has another fingerprint. None when nothing
    cheap tells (a URL, or nothing at ``path``).
    """
    location = os.fspath(path)
    if is_url(location):
        return None
    root = file_state(location)
    if root is None or not os.path.isdir(location):
        return root
    names = [*_ROOT_METADATA, cohort.MANIFEST]
    if not os.path.isfile(os.path.join(location, ".zmetadata")):
        docs = _ARRAY_METADATA[2 if os.path.isfile(os.path.join(location, ".zgroup")) else 3]
        names += [f"{c}/{doc}" for c in _entries(location) for doc in docs]
    index = os.path.join(location, spec.REGION_INDEX)
    names += [f"{spec.REGION_INDEX}/{chunk}" for chunk in _entries(index)]
    return root, tuple((name, file_state(os.path.join(location, name))) for name in names)


def _json(location: str, key: str, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise StoreError(f"{location}: {key} is not valid JSON") from None


def digest(documents: dict[str, bytes]) -> str:
    """A digest of the root metadata documents (their keys and bytes)."""
    import hashlib  # (a URL store's: a local one is known by its fingerprint)

    h = hashlib.sha256()
    for key in sorted(documents):
        h.update(b"%d:%s:%d:" % (len(key), key.encode(), len(documents[key])) + documents[key])
    return h.hexdigest()


class _Decoding:
    """A context turning whatever a codec raised (``zlib.error`` for a ``zlib`` compressor
    declared over Blosc bytes...) into a one-line StoreError naming the store ``path``, the
    array ``name`` and the ``chunk``; our own errors and MemoryError pass as they are. (A class,
    not a generator context: it is entered for every chunk decoded.)"""

    __slots__ = ("path", "name", "chunk")

    def __init__(self, path: str, name: str, chunk: tuple[int, ...]):
        self.path, self.name, self.chunk = path, name, chunk

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, trace: object) -> None:
        if err is None or not isinstance(err, Exception) or isinstance(err, (VcfZarrError, MemoryError)):
            return
        detail = " ".join(str(err).split()) or type(err).__name__
        raise StoreError(f"{self.path}: cannot decode chunk {self.chunk} of {self.name} ({detail})") from None


class VczStore:
    """A VCF Zarr store: its metadata, and thread-safe raw chunk reads decoded with numcodecs.

    Use :func:`open_store` to make one; ``with open_store(p) as store:`` closes it after use.
    A store pickles as (path, storage options, :attr:`version_token`): unpickling opens it
    again in the receiving process (once per process: :mod:`vcfzarr_sql.store.reopen`, which
    registers how it pickles) and raises
    StoreError if it is no longer the store that was pickled.

    ``lazy``: read the small arrays (samples, contigs, filters) and describe the fields at their
    first use rather than now (:meth:`load`): what a cohort does with its batches, most queries
    needing none of them.
    """

    def __init__(
        self,
        path: str,
        kv: KeyValueStore,
        *,
        fingerprint: tuple | None = None,
        storage_options: dict | None = None,
        lazy: bool = False,
    ):
        self.path = path
        self._kv = kv
        #: The fsspec options the store was opened with (credentials, endpoint...).
        self.storage_options = dict(storage_options or {})
        #: :func:`metadata_fingerprint` of the store as it was opened (None: not checkable).
        self.fingerprint = fingerprint
        self._lock = threading.Lock()
        self._region_index: np.ndarray | None = None
        root_documents = self._kv.get_many(ROOT_DOCUMENTS)
        #: The root documents present (what opening read; revalidating asks for these only)
        self._root_keys = tuple(root_documents)
        self._root_digest = digest(root_documents) if fingerprint is None else ""  # (not asked for then)
        self.zarr_format, self.attrs, self.consolidated = self._read_root(root_documents)
        self.version = self._version()
        self._arrays = self._read_arrays()
        for name in _REQUIRED_ARRAYS:
            if name not in self._arrays:
                raise StoreError(f"{path}: not a VCF Zarr store (no {name} array)")
        for info in self._arrays.values():
            problem = fixed_array_problem(info, self.version)
            if problem is not None:
                raise StoreError(f"{path}: {problem}")
        #: Whether every chunk is written (our converter's stores): then none may be missing.
        self.complete_chunks = str(self.attrs.get(spec.ATTR_SOURCE, "")).startswith(_OUR_SOURCE)
        self.vcf_header: str | None = self.attrs.get(spec.ATTR_HEADER)
        self._check_chunk_sizes()
        position = self._arrays[spec.VARIANT_POSITION]
        self.num_variants: int = position.shape[0]
        self.variants_chunk_size: int = position.chunks[0]
        self.num_variant_chunks: int = position.grid[0]
        self.num_samples: int = (self._arrays[spec.SAMPLE_ID].shape[0]
                                 if self.has_array(spec.SAMPLE_ID) else 0)
        self.samples_chunk_size: int = self._samples_chunk_size()
        self.num_sample_chunks: int = math.ceil(self.num_samples / self.samples_chunk_size)
        if not lazy:
            self.load()

    def load(self) -> None:
        """Read the small arrays and fields now (opening does, unless ``lazy``): a damaged one
        is a StoreError naming the store here, not at its first use."""
        for name in _SMALL:
            getattr(self, name)

    # -- the small arrays, read at their first use (a cohort's batch: only if a query needs them)

    @functools.cached_property
    def samples(self) -> np.ndarray:
        """Sample names (``sample_id``)."""
        return self._strings(spec.SAMPLE_ID)

    @functools.cached_property
    def contigs(self) -> list[str]:
        return list(self._strings(spec.CONTIG_ID))

    @functools.cached_property
    def contig_lengths(self) -> np.ndarray | None:
        if not self.has_array(spec.CONTIG_LENGTH):
            return None
        return self.read_array(spec.CONTIG_LENGTH).astype(np.int64)

    @functools.cached_property
    def filters(self) -> list[str]:
        return list(self._strings(spec.FILTER_ID))

    @functools.cached_property
    def filter_descriptions(self) -> list[str]:
        if self.has_array(spec.FILTER_DESCRIPTION):
            return list(self._strings(spec.FILTER_DESCRIPTION))
        known = self._header.filters if self._header else {}
        return [known.get(f, "") for f in self.filters]

    @functools.cached_property
    def info_fields(self) -> dict[str, FieldInfo]:
        return self._fields(INFO)

    @functools.cached_property
    def format_fields(self) -> dict[str, FieldInfo]:
        return self._fields(FORMAT)

    @functools.cached_property
    def _header(self) -> HeaderDefinitions | None:
        return parse_header(self.vcf_header) if self.vcf_header else None

    def _fields(self, kind: str) -> dict[str, FieldInfo]:
        try:
            return describe_fields(kind, self._arrays, self._header)
        except StoreError as err:
            raise StoreError(f"{self.path}: {err}") from None

    # -- opening ---------------------------------------------------------------------------

    def _read_root(self, docs: dict[str, bytes]) -> tuple[int, dict, dict[str, Any] | None]:
        """(zarr_format, group attributes, consolidated metadata or None) of the root group,
        from its metadata documents ``docs``."""
        where = self.path
        if ".zgroup" in docs:
            consolidated = None
            if ".zmetadata" in docs:
                consolidated = _json(where, ".zmetadata", docs[".zmetadata"]).get("metadata")
            attrs = _json(where, ".zattrs", docs[".zattrs"]) if ".zattrs" in docs else {}
            return 2, attrs, consolidated
        if "zarr.json" in docs:
            root = _json(where, "zarr.json", docs["zarr.json"])
            if root.get("node_type") != "group":
                raise StoreError(f"{where}: a Zarr array, not a VCF Zarr store (a Zarr group)")
            consolidated = (root.get("consolidated_metadata") or {}).get("metadata")
            return 3, root.get("attributes") or {}, consolidated
        if ".zarray" in docs:
            raise StoreError(f"{where}: a Zarr array, not a VCF Zarr store (a Zarr group)")
        raise StoreError(f"{where}: not a Zarr store (no .zgroup or zarr.json)")

    def _version(self) -> str:
        if spec.ATTR_VERSION not in self.attrs:
            raise StoreError(
                f"{self.path}: a Zarr group without {spec.ATTR_VERSION}: not a VCF Zarr store"
            )
        version = str(self.attrs[spec.ATTR_VERSION])
        if version not in spec.READ_VERSIONS:
            raise StoreError(
                f"{self.path}: VCF Zarr version {version} is not supported "
                f"(supported: {', '.join(spec.READ_VERSIONS)})"
            )
        return version

    def _read_arrays(self) -> dict[str, ArrayInfo]:
        """Metadata of every array at the root of the store, parsed once."""
        try:
            if self.zarr_format == 2:
                docs = self._v2_documents()
                names = sorted(k[: -len("/.zarray")] for k in docs if k.endswith("/.zarray"))
                return {
                    n: parse_v2(n, docs[f"{n}/.zarray"], docs.get(f"{n}/.zattrs", {}))
                    for n in names
                }
            docs = self._v3_documents()
            return {
                n: parse_v3(n, doc)
                for n, doc in sorted(docs.items())
                if doc.get("node_type") == "array"
            }
        except VcfZarrError as err:
            raise type(err)(f"{self.path}: {err}") from None
        except (KeyError, TypeError, ValueError) as err:
            raise StoreError(f"{self.path}: bad array metadata ({err!r})") from None

    def _v2_documents(self) -> dict[str, dict]:
        """``<array>/.zarray`` and ``<array>/.zattrs`` documents of the root's children."""
        if self.consolidated is not None:
            return {key: doc for key, doc in self.consolidated.items() if key.count("/") == 1}
        keys = (f"{c}/{doc}" for c in self._kv.children() for doc in (".zarray", ".zattrs"))
        return {key: _json(self.path, key, raw) for key, raw in self._kv.get_many(keys).items()}

    def _v3_documents(self) -> dict[str, dict]:
        """``zarr.json`` documents of the root's children, by child name."""
        if self.consolidated is not None:
            return {name: doc for name, doc in self.consolidated.items() if "/" not in name}
        found = self._kv.get_many(f"{c}/zarr.json" for c in self._kv.children())
        return {
            key[: -len("/zarr.json")]: _json(self.path, key, raw) for key, raw in found.items()
        }

    def _strings(self, name: str) -> np.ndarray:
        if not self.has_array(name):
            return np.empty(0, dtype=object)
        return self.read_array(name)

    def _check_chunk_sizes(self) -> None:
        """All arrays with a ``variants`` (``samples``) dimension share its chunk size."""
        for axis, dim in enumerate((spec.DIM_VARIANTS, spec.DIM_SAMPLES)):
            sizes = {
                info.chunks[axis]
                for info in self._arrays.values()
                if info.dims[axis : axis + 1] == (dim,)
            }
            if len(sizes) > 1:
                raise StoreError(
                    f"{self.path}: arrays with a {dim} dimension are chunked differently "
                    f"along it ({sorted(sizes)})"
                )

    def _samples_chunk_size(self) -> int:
        for info in self._arrays.values():
            if info.dims[:2] == (spec.DIM_VARIANTS, spec.DIM_SAMPLES):
                return info.chunks[1]
        if self.has_array(spec.SAMPLE_ID):
            return self._arrays[spec.SAMPLE_ID].chunks[0]
        return spec.DEFAULT_SAMPLES_CHUNK_SIZE

    @property
    def spells_missing_vectors(self) -> bool:
        """Whether a vector written ``.,.`` (every element missing: missing values) is stored
        apart from one written ``.`` or absent (one missing value, then fill): so our
        converter stores them; bio2zarr writes an INFO vector ``.``, ``.,.`` or absent, and an
        absent FORMAT vector, all as missing values."""
        return str(self.attrs.get(spec.ATTR_SOURCE, "")).startswith(_OUR_SOURCE)

    # -- as a chunk source (:class:`vcfzarr_sql.store.source.ChunkSource`) ------------------

    @property
    def store(self) -> VczStore:
        """The store itself: a store is the plain chunk source over itself."""
        return self

    #: Nothing fetches chunks ahead for the plain store (:func:`.fetch.fetching` wraps a remote
    #: one for a scan).
    fetcher: None = None

    # -- arrays and chunks -----------------------------------------------------------------

    @property
    def array_names(self) -> list[str]:
        """Names of every array in the store."""
        return list(self._arrays)

    def has_array(self, name: str) -> bool:
        return name in self._arrays

    def array_info(self, name: str) -> ArrayInfo:
        try:
            return self._arrays[name]
        except KeyError:
            raise StoreError(f"{self.path}: no array {name!r}") from None

    def read_chunk_bytes(self, name: str, chunk: tuple[int, ...]) -> bytes | None:
        """The stored (encoded) bytes of one chunk, or None when the chunk is not stored.

        Along a dimension of length 0, chunk index 0 is valid (it decodes to an empty chunk).
        """
        info = self.array_info(name)
        grid = info.grid
        if len(chunk) != len(grid) or not all(0 <= i < max(n, 1) for i, n in zip(chunk, grid)):
            raise StoreError(f"{self.path}: array {name} has no chunk {tuple(chunk)} (grid {grid})")
        return self._kv.get(info.chunk_key(chunk))

    def read_chunks_bytes(
        self, keys: list[tuple[str, tuple[int, ...]]]
    ) -> dict[tuple[str, tuple[int, ...]], bytes | None]:
        """:meth:`read_chunk_bytes` of many (array, chunk) pairs at once: one ``get_many``
        (concurrent requests for a URL store). Chunks outside an array's grid are left out."""
        where = {}
        for name, chunk in keys:
            info = self.array_info(name)
            if len(chunk) == len(info.grid) and all(0 <= i < max(n, 1) for i, n in zip(chunk, info.grid)):
                where[info.chunk_key(chunk)] = (name, chunk)
        found = self._kv.get_many(where)
        return {pair: found.get(key) for key, pair in where.items()}

    def decode_chunk(self, name: str, raw: bytes | None, chunk: tuple[int, ...]) -> np.ndarray:
        """Decode the bytes of one chunk (None: a chunk of fill_value), trimmed to the array.

        Numeric chunks come in native byte order and may be read-only; strings come as object
        arrays of ``str``.
        """
        info = self.array_info(name)
        bounds = info.chunk_bounds(chunk)
        if raw is None:
            self._check_may_be_fill(info, chunk)
            shape = tuple(s.stop for s in bounds)
            return np.full(shape, info.fill_value, dtype=info.decoded_dtype)
        with self._decoding(name, chunk):
            arr = info.codec.decode(raw)
        if arr.shape != tuple(s.stop for s in bounds):
            arr = arr[bounds]
        return finished(arr)

    def decode_chunk_rows(self, name: str, raw: bytes | None, chunk: tuple[int, ...], rows: slice) -> np.ndarray:
        """``decode_chunk(name, raw, chunk)[rows]`` (``rows``: a slice of the chunk's records,
        step 1), decompressed from only the Blosc blocks that hold them when the codec allows
        (:func:`~vcfzarr_sql.store.codecs.decode_rows`)."""
        info = self.array_info(name)
        bounds = info.chunk_bounds(chunk)
        start, stop, _ = rows.indices(bounds[0].stop)
        if raw is None or (start, stop) == (0, bounds[0].stop):
            return self.decode_chunk(name, raw, chunk)[start:stop]
        with self._decoding(name, chunk):
            part = decode_rows(info.codec, raw, start, stop)
        if part is None:
            return self.decode_chunk(name, raw, chunk)[start:stop]
        return finished(part[(slice(None), *bounds[1:])])

    def decode_chunk_strings(
        self, name: str, raw: bytes | None, chunk: tuple[int, ...]
    ) -> pa.Array:
        """:meth:`decode_chunk` for a string array whose codec decodes straight to Arrow
        (``array_info(name).codec.arrow_strings``): the chunk's strings in C order, as one flat
        Arrow string array, without a Python ``str`` per value."""
        import pyarrow as pa

        info = self.array_info(name)
        bounds = info.chunk_bounds(chunk)
        if raw is None:
            self._check_may_be_fill(info, chunk)
            size = math.prod(s.stop for s in bounds)
            return pa.repeat(pa.scalar(info.fill_value, pa.string()), size)
        with self._decoding(name, chunk):
            strings = info.codec.decode_strings(raw)
        return trimmed_strings(strings, info.chunks, bounds)

    def _check_may_be_fill(self, info: ArrayInfo, chunk: tuple[int, ...]) -> None:
        """StoreError when chunk ``chunk`` of ``info`` is missing but cannot be all fill (Zarr
        reads a missing chunk as fill): in our converter's stores, which write every chunk;
        in :data:`_NEVER_ALL_FILL` arrays; in the REF column of ``variant_allele``."""
        size = math.prod(s.stop for s in info.chunk_bounds(chunk))
        if size * info.decoded_dtype.itemsize > max_chunk_bytes():
            raise StoreError(f"{self.path}: chunk {tuple(chunk)} of {info.name} would take more "
                             f"than {max_chunk_bytes()} bytes (${MAX_CHUNK_BYTES_VARIABLE})")
        if size == 0:
            return
        ref_column = info.name == spec.VARIANT_ALLELE and chunk[1:2] == (0,)
        if self.complete_chunks or info.name in _NEVER_ALL_FILL or ref_column:
            raise StoreError(f"{self.path}: chunk {tuple(chunk)} of {info.name} is missing "
                             f"(no {info.chunk_key(chunk)}): the store is incomplete")

    def _decoding(self, name: str, chunk: tuple[int, ...]) -> _Decoding:
        """Codec errors while decoding chunk ``chunk`` of ``name`` as a one-line StoreError
        naming the store, the array and the chunk (:class:`_Decoding`)."""
        return _Decoding(self.path, name, chunk)

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        """One chunk, decoded and trimmed (:meth:`read_chunk_bytes` then :meth:`decode_chunk`)."""
        return self.decode_chunk(name, self.read_chunk_bytes(name, chunk), chunk)

    def read_chunk_rows(self, name: str, chunk: tuple[int, ...], rows: slice) -> np.ndarray:
        """Records ``rows`` of one chunk (:meth:`read_chunk_bytes` then :meth:`decode_chunk_rows`)."""
        return self.decode_chunk_rows(name, self.read_chunk_bytes(name, chunk), chunk, rows)

    def read_chunk_strings(self, name: str, chunk: tuple[int, ...]) -> pa.Array:
        """One chunk of a string array as Arrow (:meth:`decode_chunk_strings`)."""
        return self.decode_chunk_strings(name, self.read_chunk_bytes(name, chunk), chunk)

    def read_array(self, name: str) -> np.ndarray:
        """A whole array in memory (meant for small ones: samples, contigs, filters...; one
        without a ``variants`` dimension may take at most ``max_chunk_bytes()``)."""
        info = self.array_info(name)
        nbytes = math.prod(info.shape) * info.decoded_dtype.itemsize
        if spec.DIM_VARIANTS not in info.dims and nbytes > max_chunk_bytes():  # a table
            raise StoreError(f"{self.path}: array {name} of shape {info.shape} would take more "
                             f"than {max_chunk_bytes()} bytes (${MAX_CHUNK_BYTES_VARIABLE})")
        out = np.empty(info.shape, dtype=info.decoded_dtype)
        chunks = list(itertools.product(*(range(n) for n in info.grid)))
        raw = self._kv.get_many(info.chunk_key(c) for c in chunks)
        for chunk in chunks:
            where = tuple(
                slice(i * c, (i + 1) * c) for i, c in zip(chunk, info.chunks)
            )
            out[where] = self.decode_chunk(name, raw.get(info.chunk_key(chunk)), chunk)
        return out

    # -- derived arrays --------------------------------------------------------------------

    def variant_length(self, chunk_index: int) -> np.ndarray:
        """``rlen`` of each record of a variant chunk (int64): ``variant_length`` if stored,
        else ``INFO/END - POS + 1`` where END is set, else ``len(REF)`` (as htslib)."""
        return derived.variant_length(self.read_chunk, self.has_array, chunk_index)

    @property
    def region_index(self) -> np.ndarray:
        """The region index (int64, shape (n, 6)): stored, or built in memory once if absent."""
        with self._lock:
            if self._region_index is None:
                self._region_index = self._load_region_index()
            return self._region_index

    def _load_region_index(self) -> np.ndarray:
        if not self.has_array(spec.REGION_INDEX):
            return derived.build_region_index(self)
        return self.stored_region_index(self)

    def stored_region_index(self, store: VczStore) -> np.ndarray:
        """The region index this store holds, checked against ``store``: this store, or the
        cohort whose sites store it is (whose variant chunks it names)."""
        info = self.array_info(spec.REGION_INDEX)  # checked before any chunk is read
        shape_ok = len(info.shape) == 2 and info.shape[1] == spec.REGION_INDEX_FIELDS
        if not shape_ok or info.dtype.kind not in "iu":
            raise StoreError(
                f"{self.path}: region_index has shape {info.shape} and dtype {info.dtype}, "
                f"expected integers of shape (n, {spec.REGION_INDEX_FIELDS})"
            )
        index = self.read_array(spec.REGION_INDEX).astype(np.int64)
        store._check_region_index(index)
        return index

    def _check_region_index(self, index: np.ndarray) -> None:
        """StoreError unless every row of the stored ``index`` names a chunk and a contig of the
        store and its record counts add up to the store's records (a stale or damaged index
        would prune chunks, and give contigs, wrongly; ``validate`` checks it row by row)."""
        chunks, contigs = index[:, spec.RI_CHUNK], index[:, spec.RI_CONTIG]
        counts = index[:, spec.RI_COUNT]
        problem = None
        if len(index) and not (0 <= chunks.min() and chunks.max() < max(self.num_variant_chunks, 1)):
            problem = "a chunk the store does not have"
        elif len(index) and not (0 <= contigs.min() and contigs.max() < len(self.contigs)):
            problem = "a contig the store does not have"
        elif (len(index) and counts.min() < 0) or int(counts.sum()) != self.num_variants:
            problem = f"{int(counts.sum())} records, not the store's {self.num_variants}"
        if problem is not None:
            raise StoreError(f"{self.path}: region_index names {problem}: it does not match the "
                             "store (rebuild it with `vcfzarr-sql index STORE`)")

    @property
    def is_remote(self) -> bool:
        """Whether chunks are read through fsspec (a URL): each read may cost a round trip,
        so scans keep several chunk reads in flight."""
        return isinstance(self._kv, FsspecStore)

    @property
    def version_token(self) -> tuple:
        """What identifies this version of the store: its :func:`metadata_fingerprint` when
        local, else a digest of its root metadata documents (a URL). Equal tokens: the same
        store as far as opening it can tell."""
        if self.fingerprint is not None:
            return ("fingerprint", self.fingerprint)
        return ("digest", self._root_digest)

    def is_unchanged(self) -> bool:
        """Whether the store is still the one this object read: by its fingerprint (local),
        or by one request for the root metadata documents it read (a URL store: a batch of
        concurrent requests, none for documents that were absent; a zip archive at a URL
        cannot be checked cheaply and counts as changed)."""
        if self.fingerprint is not None:
            return metadata_fingerprint(self.path) == self.fingerprint
        if not self._kv.revalidates:
            return False
        return digest(self._kv.get_many(self._root_keys)) == self._root_digest

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Release open files (zip archives, remote handles)."""
        self._kv.close()

    def __enter__(self) -> VczStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"VczStore({self.path!r}, vcf_zarr_version={self.version!r}, "
            f"zarr_format={self.zarr_format}, variants={self.num_variants}, "
            f"samples={self.num_samples})"
        )
