"""Drive Apache Superset through its REST API against a running ``vcfzarr-sql serve``, as a user
would set up a dashboard; run with the Python of a venv holding ``apache-superset`` and
``psycopg2-binary`` (tests/serve/test_superset.py does, and compares the answers with DuckDB's).

Usage: python superset_driver.py WORKDIR URI STORE. Superset's metadata is a SQLite file in
WORKDIR; URI is the SQLAlchemy URI of the served database, as docs/guide.md gives it; STORE a
store path the server accepts. Prints one JSON object: what each step answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _configure(workdir: Path) -> None:
    config = workdir / "superset_config.py"
    config.write_text(
        f"SECRET_KEY = {os.urandom(24).hex()!r}\n"
        f"SQLALCHEMY_DATABASE_URI = {'sqlite:///' + str(workdir / 'superset.db')!r}\n"
        "WTF_CSRF_ENABLED = False\n"
        "TALISMAN_ENABLED = False\n"
        "PREVENT_UNSAFE_DB_CONNECTIONS = False\n"
        "FEATURE_FLAGS = {}\n")
    os.environ["SUPERSET_CONFIG_PATH"] = str(config)
    superset = str(Path(sys.executable).parent / "superset")
    env = {**os.environ, "FLASK_APP": "superset"}
    for args in (["db", "upgrade"],
                 ["fab", "create-admin", "--username", "admin", "--password", "admin",
                  "--firstname", "a", "--lastname", "b", "--email", "admin@example.org"],
                 ["init"]):
        subprocess.run([superset, *args], env=env, check=True, capture_output=True, timeout=900)


def main(workdir: str, uri: str, store: str) -> None:
    _configure(Path(workdir))
    from superset.app import create_app

    app = create_app()
    client = app.test_client()
    token = client.post("/api/v1/security/login", json={
        "username": "admin", "password": "admin", "provider": "db", "refresh": False}).get_json()
    headers = {"Authorization": f"Bearer {token['access_token']}"}

    def call(method: str, url: str, **kwargs: object) -> dict:
        response = getattr(client, method)(url, headers=headers, **kwargs)
        answer = response.get_json()
        if response.status_code >= 400:
            raise SystemExit(f"{method.upper()} {url}: {response.status_code} {answer}")
        return answer

    out: dict[str, object] = {}
    database = call("post", "/api/v1/database/", json={
        "database_name": "vcf", "sqlalchemy_uri": uri, "expose_in_sqllab": True})["id"]
    out["schemas"] = call("get", f"/api/v1/database/{database}/schemas/")["result"]
    tables = call("get", f"/api/v1/database/{database}/tables/?q=(schema_name:main)")["result"]
    out["tables"] = sorted((t["value"], t["type"]) for t in tables)
    metadata = call("get", f"/api/v1/database/{database}/table_metadata/?name=sites&schema=main")
    out["columns"] = [(c["name"], c["type"]) for c in metadata["columns"]]
    table_dataset = call("post", "/api/v1/dataset/", json={
        "database": database, "schema": "main", "table_name": "sites"})["id"]
    sql_dataset = call("post", "/api/v1/dataset/", json={
        "database": database, "schema": "main", "table_name": "contig_counts",
        "sql": f"SELECT contig, count(*) AS records FROM vcf_zarr('{store}') GROUP BY contig"})["id"]
    lab = call("post", "/api/v1/sqllab/execute/", json={
        "database_id": database, "schema": "main", "runAsync": False,
        "sql": f"SELECT count(*) FROM vcf_zarr('{store}', region := '20')"})
    out["sqllab"] = [list(row.values()) for row in lab["data"]]
    out["sqllab_columns"] = [c["column_name"] for c in lab["columns"]]
    for name, dataset, query in (
            ("table_chart", table_dataset, {"columns": ["contig"], "metrics": ["count"],
                                            "orderby": [["count", False]]}),
            ("sql_chart", sql_dataset, {"columns": ["contig"], "metrics": [
                {"expressionType": "SQL", "sqlExpression": "SUM(records)", "label": "records"}]})):
        data = call("post", "/api/v1/chart/data", json={
            "datasource": {"id": dataset, "type": "table"}, "force": True,
            "queries": [{**query, "row_limit": 100}], "result_format": "json", "result_type": "full"})
        out[name] = sorted([[key, value] for key, value in sorted(row.items())]
                           for row in data["result"][0]["data"])
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:4])
