"""Apache Superset (pip, its own venv: it pins SQLAlchemy 1.4) set up as its users do, through
its REST API (tests/superset_driver.py), against a served read-only database file: the database
added with the URI docs/guide.md gives, schemas, tables and a table's columns listed, a dataset
from a table and one from SQL over ``vcf_zarr(...)``, a SQL Lab query, chart data. Every answer
is checked against DuckDB's through the Python API.

Runs when ``$VCFZARR_SQL_SUPERSET_PYTHON`` names the Python of a venv holding
``apache-superset`` and ``psycopg2-binary`` (.ci/run makes one); skipped otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import oracle
import pytest

import vcfzarr_sql
from vcfzarr_sql.serve.pg import make_server

SUPERSET_PYTHON = os.environ.get("VCFZARR_SQL_SUPERSET_PYTHON")
DRIVER = Path(__file__).parents[1] / "superset_driver.py"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not SUPERSET_PYTHON, reason="no Superset venv ($VCFZARR_SQL_SUPERSET_PYTHON)")]


def test_superset_against_a_served_database_file(convert_once, tmp_path) -> None:
    store = str(convert_once(oracle.CORPUS_SAMPLE, variants_chunk_size=3))
    database = str(tmp_path / "dashboards.duckdb")
    with vcfzarr_sql.connect(database) as con:
        con.sql(f"CREATE TABLE sites AS SELECT contig, pos, qual FROM vcf_zarr('{store}')")
        con.sql("CREATE VIEW good_sites AS SELECT * FROM sites WHERE qual > 30")
    with vcfzarr_sql.connect() as con:
        per_contig = dict(con.sql(f"SELECT contig, count(*) FROM vcf_zarr('{store}') GROUP BY contig").fetchall())
        [(region_20,)] = con.sql(f"SELECT count(*) FROM vcf_zarr('{store}', region := '20')").fetchall()
    server = make_server("127.0.0.1", 0, data_dirs=[Path(store).parent], database=database)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        uri = f"postgresql://superset@127.0.0.1:{server.port}/vcf"  # psycopg2, as the guide says
        work = tmp_path / "superset"
        work.mkdir()
        run = subprocess.run([str(SUPERSET_PYTHON), str(DRIVER), str(work), uri, store],
                             capture_output=True, text=True, timeout=1800)
        assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-2000:]
        answers = json.loads(run.stdout.strip().splitlines()[-1])
    finally:
        server.shutdown()
        server.server_close()
    assert "main" in answers["schemas"] and "vcfzarr_sql" not in answers["schemas"]
    assert answers["tables"] == [["good_sites", "view"], ["sites", "table"]]
    assert [name for name, _ in answers["columns"]] == ["contig", "pos", "qual"]
    assert answers["sqllab"] == [[region_20]] and answers["sqllab_columns"] == ["count"]
    assert answers["table_chart"] == _rows({"contig": c, "count": n} for c, n in per_contig.items())
    assert answers["sql_chart"] == _rows({"contig": c, "records": n} for c, n in per_contig.items())


def _rows(rows) -> list[list[list]]:
    """Rows as the driver prints them: each a sorted list of [column, value]."""
    return sorted([[key, value] for key, value in sorted(row.items())] for row in rows)
