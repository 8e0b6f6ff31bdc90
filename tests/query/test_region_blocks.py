"""A region's edge chunk decodes only the Blosc blocks holding its records
(``BatchBlocks.read`` with ``rows``, ``blosc_range.decompress_range``): the same rows as the
whole decode, and as bcftools.

The store's genotype chunks are re-encoded as the converter writes them (zstd, bit-shuffle)
but in blocks of 128 bytes, so that a chunk of 40 records is several blocks; the original store
(each chunk one block: decoded whole) answers the same regions. Calls are haploid, diploid,
missing, half-missing, phased and unphased."""

from __future__ import annotations

import json
import struct

import numpy as np
import oracle
import pytest
from fill_tags import simulated_vcf
from numcodecs import Blosc
from store_support import copy_store

import vcfzarr_sql

COLUMNS = ["pos", "fmt_GT", "fmt_GT_1", "fmt_GT_2", "fmt_GT_phased"]
BLOCK = 128


@pytest.fixture(scope="module")
def both(tmp_path_factory, convert_once):
    """(the VCF, the store as written, the store with genotype chunks in blocks of BLOCK bytes)."""
    vcf = simulated_vcf(tmp_path_factory.mktemp("blocks") / "blocks.vcf", seed=11, records=200, samples=30)
    whole = convert_once(vcf, variants_chunk_size=40, samples_chunk_size=12)  # (sample chunks 12, 12, 6)
    blocks = copy_store(whole, tmp_path_factory.mktemp("blocks") / "blocks.vcz")
    codec = Blosc("zstd", 4, Blosc.BITSHUFFLE, blocksize=BLOCK)
    for name in ("call_genotype", "call_genotype_phased"):
        meta = json.loads((blocks / name / ".zarray").read_text())
        meta["compressor"] = codec.get_config()
        (blocks / name / ".zarray").write_text(json.dumps(meta))
        for chunk in (blocks / name).glob("[0-9]*"):
            values = np.frombuffer(Blosc().decode(chunk.read_bytes()), np.uint8)
            raw = codec.encode(values)
            assert struct.unpack_from("<i", raw, 8)[0] == BLOCK < len(values)  # (several blocks)
            chunk.write_bytes(raw)
    return vcf, vcfzarr_sql.open_store(whole), vcfzarr_sql.open_store(blocks)


def _regions() -> list[str]:
    """Regions starting and ending inside chunks (records every 10 bp, 40 a chunk), on a chunk
    edge, within one chunk, and over whole chunks."""
    return ["1:5-95", "1:101-391", "1:395-405", "1:231-1000", "2:1001-1399", "2:1395-1991", "2:1601-2000",
            "1:1-10000", "2:1991-1991"]


@pytest.mark.parametrize("region", _regions())
def test_rows_from_blocks_equal_the_whole_decode_and_bcftools(both, region):
    vcf, whole, blocks = both
    got = vcfzarr_sql.dataset(blocks, region=region).scanner(columns=COLUMNS).to_table()
    assert got.equals(vcfzarr_sql.dataset(whole, region=region).scanner(columns=COLUMNS).to_table())
    samples = ["sample29", "sample3", "sample14"]  # (from two sample chunks, reordered)
    subset = vcfzarr_sql.dataset(blocks, region=region, samples=samples).scanner(columns=COLUMNS).to_table()
    assert subset.equals(vcfzarr_sql.dataset(whole, region=region, samples=samples).scanner(columns=COLUMNS).to_table())
    assert subset["fmt_GT"].to_pylist() == [[calls[29], calls[3], calls[14]] for calls in got["fmt_GT"].to_pylist()]
    expected = oracle.calls(vcf, ("GT",), region=region)
    assert got["pos"].to_pylist() == [r.pos for r in oracle.records(vcf, region=region)]
    assert got["fmt_GT"].to_pylist() == [
        [None if call["GT"] is None else list(call["GT"].alleles) for call in record] for record in expected
    ]
