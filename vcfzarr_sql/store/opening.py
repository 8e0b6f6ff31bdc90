"""Opening a store: a plain VCF Zarr store, or a cohort of several batches.

:func:`open_store` is what every reader opens a path with: a directory holding a committed
cohort manifest (:mod:`vcfzarr_sql.format.cohort`) of more than one batch opens as a
:class:`~vcfzarr_sql.store.cohort.CohortStore`, anything else as a plain
:class:`~vcfzarr_sql.store.vcz.VczStore` (a cohort of one batch is the plain store ``convert``
made).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.format import cohort as layout
from vcfzarr_sql.store import vcz
from vcfzarr_sql.store.cohort import CohortStore
from vcfzarr_sql.store.kvstore import KeyValueStore, is_url, open_kv

#: Opens the key/value store of a batch or sites store, from its path inside the cohort.
SubStores = Callable[[str], KeyValueStore]


def read_manifest(location: str, kv: KeyValueStore) -> layout.Manifest | None:
    """The committed manifest of the cohort at ``location`` (None: a plain store)."""
    raw = kv.get(layout.MANIFEST)
    if raw is None:
        return None
    try:
        document = json.loads(raw)
    except ValueError:
        raise StoreError(f"{location}: {layout.MANIFEST} is not valid JSON") from None
    return layout.parse_manifest(location, document)


def open_store(path: str | os.PathLike, *, storage_options: dict | None = None,
               kv: KeyValueStore | None = None, sub_stores: SubStores | None = None) -> vcz.VczStore:
    """The store at ``path`` (:func:`vcfzarr_sql.store.vcz.open_store`), or the cohort there.

    ``kv`` and ``sub_stores``: read the cohort's directory, and each of its batch and sites
    stores (by their path inside it), through these (the server's confined reader); by
    default the key/value stores their paths name.
    """
    location = os.fspath(path)
    fingerprint = vcz.metadata_fingerprint(location)
    kv = kv or open_kv(location, storage_options)
    try:
        manifest = read_manifest(location, kv)
    except BaseException:
        kv.close()
        raise
    if manifest is None or len(manifest.batches) == 1:
        return vcz.open_store(location, storage_options=storage_options, kv=kv)
    opened: list[vcz.VczStore] = []

    def sub(relative: str, lazy: bool) -> vcz.VczStore:
        where = location.rstrip("/") + "/" + relative if relative else location
        child = sub_stores(relative) if sub_stores is not None else open_kv(where, storage_options)
        store = vcz.open_store(where, storage_options=storage_options, kv=child, lazy=lazy)
        opened.append(store)
        return store

    try:
        batches = [sub(p, lazy=True) for p in manifest.batches]  # (read what a query needs)
        sites = sub(manifest.sites, lazy=False)
        for store, count in zip(batches, manifest.num_samples):
            if store.num_samples != count:
                raise StoreError(f"{store.path}: {store.num_samples} samples, the cohort's "
                                 f"manifest says {count}")
        keys = (*vcz.ROOT_DOCUMENTS, layout.MANIFEST)
        documents = kv.get_many(keys) if is_url(location) else {}
        return CohortStore(location, kv, batches, sites, fingerprint=fingerprint,
                           storage_options=storage_options, root_keys=tuple(documents),
                           root_digest=vcz.digest(documents))
    except BaseException:
        for store in opened:
            store.close()
        kv.close()
        raise
