"""Collection for the whole repository: the optional engines' adapters and tests are collected
only where their extra is installed (.ci/run installs ``[test-engines]`` in a venv of its own
and runs them there); elsewhere their modules cannot be imported, doctests included."""

from __future__ import annotations

import importlib.util

_ENGINE_FILES = {
    "daft": ("vcfzarr_sql/daft.py", "vcfzarr_sql/adapters/daft.py", "tests/adapters/test_daft.py"),
    "pyspark": ("vcfzarr_sql/spark.py", "vcfzarr_sql/adapters/spark.py", "tests/adapters/test_spark.py"),
}

collect_ignore = [
    path
    for module, paths in _ENGINE_FILES.items()
    if importlib.util.find_spec(module) is None
    for path in paths
]
