"""Reading VCF Zarr stores: open one, read its metadata, fetch and decode chunks.

:func:`open_store` takes a local directory, a ``.zip`` file or an fsspec URL holding a Zarr v2
or v3 store of VCF Zarr 0.2 to 0.5. The chunk path (:meth:`VczStore.read_chunk`) reads the
stored bytes of a chunk and decodes them with numcodecs, without zarr-python.
:func:`write_region_index` adds a ``region_index`` (and ``variant_length``) to a local store,
with the store's one writer (:mod:`.writer`); it is imported on first use.
"""

from __future__ import annotations

from typing import Any

from vcfzarr_sql.store import reopen as _reopen  # noqa: F401 (registers how a VczStore pickles)
from vcfzarr_sql.store.fields import FieldInfo
from vcfzarr_sql.store.metadata import ArrayInfo
from vcfzarr_sql.store.opening import open_store
from vcfzarr_sql.store.vcz import VczStore

__all__ = ["ArrayInfo", "FieldInfo", "VczStore", "open_store", "write_region_index"]


def __getattr__(name: str) -> Any:
    if name == "write_region_index":
        from vcfzarr_sql.store import indexing

        return getattr(indexing, name)
    raise AttributeError(f"module 'vcfzarr_sql.store' has no attribute {name!r}")
