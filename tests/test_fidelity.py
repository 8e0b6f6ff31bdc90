"""Values where a naive reader loses fidelity, against bcftools (issue 15).

``tests/data/corpus/vcfzarr-sql/fidelity.vcf`` holds POS 0 records, real Integer values -1
and -2 (the spec's missing and fill sentinels), empty strings inside String lists and fields
whose IDs differ only in case. It is also in the corpus (MANIFEST.tsv), so test_sql_corpus
compares every column of it with bcftools; the tests here are the pointed ones.
"""

from __future__ import annotations

import pytest

import oracle
import vcfzarr_sql
from corpus import CORPUS

FIDELITY = CORPUS / "vcfzarr-sql" / "fidelity.vcf"


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(FIDELITY, variants_chunk_size=3, samples_chunk_size=2))


@pytest.fixture(scope="module")
def con():
    connection = vcfzarr_sql.connect()
    yield connection
    connection.close()


@pytest.mark.parametrize("region", ["1", "1:1", "1:1-", "1:1-2", "1:2", "1:2-3", "2", "2:1-3", "1,2"])
def test_pos_0_records_are_in_no_region_as_in_bcftools(con, store, region) -> None:
    got = con.sql(
        f"SELECT contig, pos, ref FROM vcf_zarr('{store}', region := '{region}') ORDER BY contig, pos"
    ).fetchall()
    expected = [(r.chrom, r.pos, r.ref) for r in oracle.records(FIDELITY, region=region)]
    assert got == expected
