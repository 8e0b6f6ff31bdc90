"""Start-up cost of the CLI: what ``--help`` and a query without table functions import.

Wall times are measured by benchmarks/startup.py; here the cause is checked: ``--help`` imports
no command (so no DuckDB), and ``SELECT 1`` needs neither sqlglot nor the scan (whose
pyarrow.dataset imports pandas).
"""

from __future__ import annotations

import subprocess
import sys

from vcfzarr_sql.cli import COMMANDS


def imported_modules(*args: str) -> set[str]:
    process = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "vcfzarr_sql", *args],
        capture_output=True, text=True, check=True,
    )
    return {line.rsplit("|", 1)[1].strip() for line in process.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_help_lists_the_commands_without_importing_them():
    modules = imported_modules("--help")
    assert "duckdb" not in modules
    assert not {f"vcfzarr_sql.cli.{name}" for name in COMMANDS} & modules


def test_a_query_without_table_functions_skips_sqlglot_and_the_scan():
    modules = imported_modules("query", "SELECT 1")
    assert "duckdb" in modules
    assert not {"sqlglot", "pyarrow.dataset", "pandas", "zarr"} & modules
