"""numcodecs' codecs taken from their own modules, so that a process can decode chunks without
the start-up of the ``numcodecs`` package.

Importing ``numcodecs`` imports and registers every codec it has and scans the installed
packages' entry points (``importlib.metadata``, ``logging``, ``crc32c``...): 0.05 CPU-s, a
quarter of the start-up of ``vcfzarr-sql stats``, which decodes Blosc and vlen-utf8 chunks.
:func:`get_codec` builds the codecs VCF Zarr writers use from their modules
(``numcodecs.blosc``...): the classes numcodecs registers under those ids, so the same codecs
as ``numcodecs.get_codec`` gives; any other codec through ``numcodecs.get_codec``.

A submodule is imported after its package, so this alone saves nothing: a ``vcfzarr-sql``
process whose command decodes chunks only through this module defers the package's
``__init__`` (:func:`vcfzarr_sql.cli.process.defer_numcodecs_init`). Code of this package
never names a codec class through the package (``numcodecs.Blosc``), which would run it.

>>> get_codec({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0})
Blosc(cname='lz4', clevel=5, shuffle=NOSHUFFLE, blocksize=0)
>>> get_codec({"id": "delta", "dtype": "<i4"})
Delta(dtype='<i4')
"""

from __future__ import annotations

import importlib
from typing import Any

#: numcodecs id -> (module, class) of the codecs VCF Zarr stores use most (each module imports
#: only what its codec needs).
_CLASSES = {
    "blosc": ("numcodecs.blosc", "Blosc"),
    "zstd": ("numcodecs.zstd", "Zstd"),
    "lz4": ("numcodecs.lz4", "LZ4"),
    "zlib": ("numcodecs.zlib", "Zlib"),
    "gzip": ("numcodecs.gzip", "GZip"),
    "vlen-utf8": ("numcodecs.vlen", "VLenUTF8"),
    "vlen-bytes": ("numcodecs.vlen", "VLenBytes"),
}


def get_codec(config: dict) -> Any:
    """The numcodecs codec of ``config`` (``id`` and its parameters), as
    ``numcodecs.get_codec`` builds it."""
    found = _CLASSES.get(config.get("id"))  # type: ignore[arg-type]
    if found is None:
        import numcodecs

        return numcodecs.get_codec(config)
    module, name = found
    parameters = {k: v for k, v in config.items() if k != "id"}
    return getattr(importlib.import_module(module), name).from_config(parameters)

