"""A served session never reads a local file named by an argument (``regions_file :=``,
``samples_file :=``): its clients may read only stores under the data directories."""

from __future__ import annotations

import pytest
from corpus import CORPUS

from vcfzarr_sql.errors import QueryError

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(SAMPLE))


def test_a_served_session_refuses_argument_files(store, tmp_path):
    from vcfzarr_sql.serve.pg.lockdown import LockedDatabase, SessionPolicy
    from vcfzarr_sql.store.confined import DataDirs

    (tmp_path / "r.bed").write_text("20\t0\t10\n")
    con = LockedDatabase(SessionPolicy(DataDirs.of([tmp_path]))).connect()
    try:
        with pytest.raises(QueryError, match="samples_file is not available"):
            con.sql(f"SELECT * FROM vcf_zarr('{store}', samples_file := '{tmp_path / 'r.bed'}')")
    finally:
        con.close()
