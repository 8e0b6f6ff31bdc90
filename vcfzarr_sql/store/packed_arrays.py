"""The packed genotype arrays as the writer lays them out (their names, codes and meaning:
:mod:`vcfzarr_sql.format.packed_genotypes`), for ``convert`` and ``index`` alike, and whether a
store has them laid out so."""

from __future__ import annotations

import weakref

from numcodecs.blosc import Blosc

from vcfzarr_sql.format import packed_genotypes as pg
from vcfzarr_sql.store.vcz import VczStore
from vcfzarr_sql.store.writer import NewArray

#: Blosc LZ4 without shuffle: decompresses twice as fast as zstd (the cost of a subset query),
#: compresses 6x cheaper (the cost of convert), at 1.5x the bytes of zstd.
COMPRESSOR = Blosc(cname="lz4", clevel=5, shuffle=Blosc.NOSHUFFLE).get_config()
#: A ``summary_gt_packed`` chunk LZ4 does not make this many times smaller is stored as it is
#: (a Blosc frame of its bytes, read without decompressing: :mod:`vcfzarr_sql.store.codecs`).
#: LZ4 decodes these rows at ~3 ns per stored byte (1-2 GB/s below this ratio), 10-20x what
#: counting them costs, so a subset query of common variants spent most of its CPU in it;
#: the chunks of rare variants, which LZ4 makes 10-40x smaller, stay compressed
#: (docs/reference.md, "Packed genotypes").
MIN_RATIO = 4


def packed_arrays(
    num_variants: int, num_samples: int, variants_chunk_size: int, samples_chunk_size: int
) -> dict[str, NewArray]:
    """The packed genotype arrays of a store of that shape, by name.

    >>> arrays = packed_arrays(2500, 2500, 1000, 1000)
    >>> arrays[pg.PACKED].shape, arrays[pg.PACKED].chunks, arrays[pg.PACKED_EXACT].chunks
    ((2500, 640), (1000, 256), (1000,))
    """
    row = pg.packed_bytes(num_samples, samples_chunk_size)
    chunk_bytes = pg.slots_per_chunk(samples_chunk_size) // 4
    return {
        pg.PACKED: NewArray(pg.PACKED, "|u1", (pg.DIM_PACKED_RECORDS, pg.DIM_PACKED_BYTES),
                            (num_variants, row), (variants_chunk_size, chunk_bytes), COMPRESSOR,
                            pg.DESCRIPTIONS[pg.PACKED], min_ratio=MIN_RATIO),
        pg.PACKED_EXACT: NewArray(pg.PACKED_EXACT, "|u1", (pg.DIM_PACKED_RECORDS,), (num_variants,),
                                  (variants_chunk_size,), COMPRESSOR, pg.DESCRIPTIONS[pg.PACKED_EXACT]),
    }


#: :func:`packed_stored` of each open store (its arrays are fixed once it is open: one changed
#: since is opened again, a new object), asked by every genotype matrix and subset count
_STORED: weakref.WeakKeyDictionary[VczStore, bool] = weakref.WeakKeyDictionary()


def packed_stored(store: VczStore) -> bool:
    """Whether ``store`` has both packed arrays laid out as they are written (other layouts,
    such as a store rechunked by another tool, are not read: the genotypes are decoded);
    answered once per open store (~20 us a call otherwise)."""
    stored = _STORED.get(store)
    if stored is None:
        stored = _STORED[store] = _laid_out(store)
    return stored


def _laid_out(store: VczStore) -> bool:
    if not (store.has_array(pg.PACKED) and store.has_array(pg.PACKED_EXACT)):
        return False
    expected = packed_arrays(store.num_variants, store.num_samples, store.variants_chunk_size,
                             store.samples_chunk_size)
    for name, array in expected.items():
        info = store.array_info(name)
        if info.shape != array.shape or info.chunks != array.chunks or info.dtype.str != array.dtype:
            return False
    return True
