"""What code above ``store/`` reads chunks through: a :class:`ChunkSource`.

A source splits a store's two jobs. Its :attr:`~ChunkSource.store` is the opened
:class:`~vcfzarr_sql.store.vcz.VczStore`: metadata (fields, samples, contigs, chunk sizes,
``array_info``, ``has_array``, the region index) and codecs (``decode_chunk``). Its read methods
fetch and decode chunks; a wrapper changes how, and holds the source it wraps:

* a :class:`~vcfzarr_sql.store.vcz.VczStore` is the plain source (its ``store`` is itself);
* :class:`~vcfzarr_sql.store.fetch.FetchingSource` serves the chunk bytes of a remote store
  from batches fetched ahead (it is the :attr:`~ChunkSource.fetcher` of the sources over it);
* :class:`~vcfzarr_sql.store.counting.CountingSource` counts what is read through it.

Reads are per chunk, so the one attribute hop to the store's metadata costs nothing that shows.

>>> import vcfzarr_sql
>>> source: ChunkSource = vcfzarr_sql.open_store("sample.zarr")            # doctest: +SKIP
>>> source.store.num_samples, source.read_chunk("variant_position", (0,))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:  # (fetch.py and vcz.py import nothing of this module; Arrow only where used)
    import pyarrow as pa

    from vcfzarr_sql.store.fetch import FetchingSource
    from vcfzarr_sql.store.vcz import VczStore


class ChunkSource(Protocol):
    """Chunk reads of one store, thread-safe; its metadata and codecs are :attr:`store`'s."""

    @property
    def store(self) -> VczStore:
        """The store read: its metadata and codecs."""
        ...

    @property
    def fetcher(self) -> FetchingSource | None:
        """The source under this one that fetches chunk bytes ahead in batches (a remote
        store's scan), else None."""
        ...

    def read_chunk_bytes(self, name: str, chunk: tuple[int, ...]) -> bytes | None:
        """The stored bytes of chunk ``chunk`` of array ``name`` (None: not stored, all fill)."""
        ...

    def read_chunk(self, name: str, chunk: tuple[int, ...]) -> np.ndarray:
        """Chunk ``chunk`` of array ``name``, decoded and trimmed to the array."""
        ...

    def read_chunk_rows(self, name: str, chunk: tuple[int, ...], rows: slice) -> np.ndarray:
        """``read_chunk(name, chunk)[rows]`` (``rows``: a slice of the chunk's records, step
        1), decoded from only the compressed blocks holding them where the codec allows
        (:meth:`~vcfzarr_sql.store.vcz.VczStore.decode_chunk_rows`)."""
        ...

    def read_chunk_strings(self, name: str, chunk: tuple[int, ...]) -> pa.Array:
        """Chunk ``chunk`` of a string array whose codec decodes straight to Arrow, as one
        flat Arrow string array in C order."""
        ...

    def variant_length(self, chunk_index: int) -> np.ndarray:
        """``rlen`` of each record of variant chunk ``chunk_index`` (int64), read through this
        source."""
        ...
