"""The writer's encoded chunks (vcfzarr_sql.store.writer.encode_chunk): the bytes of a bool chunk
all False or all True, compressed once per codec, shape and value, are the codec's own bytes
of that chunk."""

from __future__ import annotations

import numpy as np
import pytest
from numcodecs import Blosc

from vcfzarr_sql.store.codec_classes import get_codec
from vcfzarr_sql.store.writer import NewArray, blosc_single_threaded, encode_chunk

_CODECS = [
    Blosc(cname="zstd", clevel=4, shuffle=Blosc.BITSHUFFLE, blocksize=1 << 20).get_config(),
    Blosc(cname="zstd", clevel=7, shuffle=Blosc.SHUFFLE).get_config(),
    Blosc(cname="lz4", clevel=5, shuffle=Blosc.NOSHUFFLE).get_config(),
]


@pytest.mark.parametrize("compressor", _CODECS, ids=lambda c: f"{c['cname']}{c['clevel']}s{c['shuffle']}")
@pytest.mark.parametrize("value", [False, True])
def test_constant_chunks_are_the_codecs_own_bytes(compressor, value):
    with blosc_single_threaded():  # (as a converter worker compresses)
        for chunks in ((1000, 2000), (7, 3), (5,)):
            array = NewArray("call_genotype_phased", "|b1", ("a", "b")[: len(chunks)],
                             tuple(3 * c for c in chunks), chunks, compressor, padding=value)
            codec = get_codec(compressor)
            whole = np.full(chunks, value)
            expected = bytes(codec.encode(whole))
            edge = whole[tuple(slice(0, max(1, c - 2)) for c in chunks)]  # (padded with the value)
            for values in (whole, whole.copy(), edge):
                assert encode_chunk(array, values) == expected
            one = whole.copy()
            one.flat[len(one.flat) // 2] = not value
            assert encode_chunk(array, one) == bytes(codec.encode(one)) != expected
            assert np.array_equal(np.frombuffer(codec.decode(encode_chunk(array, edge)), dtype=bool),
                                  whole.ravel())
