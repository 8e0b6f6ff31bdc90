"""The hook into vcfzarr-sql: a warm SQL session, the CLI, and which store the query suites read.

Every entry point raises :class:`~benchmarks.harness.Unavailable` while the piece of ours it needs
is not built, so the suites print "not available" for our rows instead of failing.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa

from benchmarks.harness import OURS, Unavailable, venv_bin
from benchmarks.sizes import Files


def require(module: str, name: str) -> Any:
    """``module.name`` from our package, or Unavailable when it is not there yet."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise Unavailable(f"{module}.{name} is not built yet ({err})") from None


def connect() -> Any:
    """A fresh warm-able SQL session (``vcfzarr_sql.engine.connect``)."""
    return require("vcfzarr_sql.engine", "connect")()


def arrow_rows(result: Any) -> int:
    """Rows of a DuckDB relation (or Arrow table/reader), streamed batch by batch."""
    if hasattr(result, "arrow"):
        result = result.arrow()
    if isinstance(result, pa.Table):
        return result.num_rows
    return sum(batch.num_rows for batch in result)


def arrow_table(result: Any) -> pa.Table:
    """An Arrow table from a DuckDB relation (``.arrow()`` gives a reader in DuckDB 2.0)."""
    table = result.arrow() if hasattr(result, "arrow") else result
    return table.read_all() if isinstance(table, pa.RecordBatchReader) else table


def cli_argv(*args: str) -> list[str]:
    """argv of ``vcfzarr-sql <args>`` (Unavailable until the command exists)."""
    require(f"vcfzarr_sql.cli.{args[0]}", "command")
    return [venv_bin("vcfzarr-sql"), *args]


def query_store(files: Files) -> tuple[Path, str]:
    """The store every query suite reads, and where it came from.

    Our converter's store when ``benchmarks.convert`` wrote one, else bio2zarr's (written here
    if missing): the query layer must read both.
    """
    ours = files.store(OURS)
    if (ours / ".zmetadata").exists() or (ours / "zarr.json").exists() or (ours / ".zgroup").exists():
        return ours, "written by vcfzarr-sql convert"
    theirs = files.store("vcf2zarr")
    if not (theirs / ".zgroup").exists() and not (theirs / "zarr.json").exists():
        shutil.rmtree(theirs, ignore_errors=True)
        subprocess.run(
            [venv_bin("vcf2zarr"), "convert", "--no-progress", "-p", "2", str(files.vcf), str(theirs)], check=True
        )
    return theirs, "written by vcf2zarr (our converter's store is not there)"
