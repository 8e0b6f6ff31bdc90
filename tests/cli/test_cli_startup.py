"""Start-up cost of the CLI: what ``--help`` and a query import.

Times are measured by benchmarks/startup.py (CPU beside wall, against the floors); here the
cause is checked, which a loaded machine cannot make flaky: ``--help`` imports no command (so
no DuckDB, pyarrow or numpy), ``SELECT 1`` needs neither sqlglot nor the scan (whose
pyarrow.dataset imports pandas), and a query over a store imports neither pandas (0.45 CPU-s,
which pyarrow imports when it can) nor zarr, nor sqlglot when its calls take one plain string
(0.09 CPU-s), nor ``numpy.ma`` (``pa.array`` of a numpy array imports it), nor ``pydoc`` (pyarrow's
docstring parser imports it: the process does not parse them), nor the modules of commands and
features it does not use; ``stats`` from stored counts imports neither pyarrow nor DuckDB, nor
numcodecs' package (its registry scans the entry points of every installed package: the codecs
come from their own modules), nor ``numpy.ma`` (``np.unique`` imports it), nor
``importlib.resources`` (``importlib.abc`` imports it, and tempfile, shutil, bz2, lzma with it),
nor ``mmap`` (the compiled kernels' memory probe imports it, only as it loads numba);
``view`` without ``-r/-t`` plans no scan and loads no pyarrow, nor numcodecs' package, nor the
scan threads' ``concurrent.futures``; ``add`` loads no numcodecs package either; a process
starts no OpenBLAS threads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from corpus import CORPUS

from vcfzarr_sql.cli import COMMANDS

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


#: runs the CLI as ``python -m vcfzarr_sql`` does, then prints the modules it imported
_PROCESS = """
import atexit, runpy, sys
atexit.register(lambda: print("\\n".join(sys.modules), file=sys.stderr))
sys.argv = ["vcfzarr-sql", *sys.argv[1:]]
runpy.run_module("vcfzarr_sql", run_name="__main__")
"""


def imported_modules(*args: str) -> set[str]:
    """The modules a ``vcfzarr-sql ARGS`` process has imported when it exits."""
    process = subprocess.run([sys.executable, "-c", _PROCESS, *args], capture_output=True, text=True,
                             check=True)
    return set(process.stderr.split())


def test_help_lists_the_commands_without_importing_them():
    modules = imported_modules("--help")
    assert not {"duckdb", "pyarrow", "numpy"} & modules
    assert not {f"vcfzarr_sql.cli.{name}" for name in COMMANDS} & modules


def test_a_query_without_table_functions_skips_sqlglot_and_the_scan():
    modules = imported_modules("query", "SELECT 1")
    assert "duckdb" in modules
    assert not {"sqlglot", "pyarrow.dataset", "pandas", "zarr"} & modules


def test_a_query_over_a_store_imports_only_what_it_uses(convert_once):
    store = convert_once(SAMPLE)
    modules = imported_modules("query", f"SELECT sum(gt_AC[1]) FROM vcf_zarr('{store}')")
    assert {"pyarrow.dataset", "vcfzarr_sql.query.execute"} <= modules
    assert not {"pandas", "zarr", "vcfzarr_sql.view", "vcfzarr_sql.converter", "vcfzarr_sql.validation",
                "vcfzarr_sql.serve", "cyvcf2", "tqdm", "sqlglot", "numpy.ma", "pydoc",
                "vcfzarr_sql.stats.dataset"} & modules


def test_stats_from_stored_counts_imports_neither_arrow_nor_duckdb(convert_once):
    # (sample.vcf's store holds the counts stats adds up: it decodes no genotype, tests/qc)
    store = convert_once(SAMPLE)
    modules = imported_modules("stats", str(store), "-s", "-")
    assert {"vcfzarr_sql.qc.collect", "numpy"} <= modules
    assert not {"pyarrow", "duckdb", "sqlglot", "pandas", "zarr", "numcodecs.registry", "importlib.metadata",
                "numpy.ma", "importlib.resources", "zipfile", "mmap"} & modules


def test_view_without_regions_plans_no_scan(convert_once, tmp_path):
    # -s, -i and the record filters read the chunk's arrays: no scan plan, its Arrow schema and
    # pyarrow.compute (0.06 CPU-s, more than the records of a small file), DuckDB nor sqlglot
    store = convert_once(SAMPLE)
    modules = imported_modules("view", str(store), "-s", "NA00002,NA00001", "-i", "QUAL>10 & FMT/DP>3",
                               "-c", "1", "-o", str(tmp_path / "out.vcf"))
    assert {"vcfzarr_sql.view.records", "vcfzarr_sql.query.selection.rows"} <= modules
    assert not {"pyarrow", "vcfzarr_sql.query.plan", "vcfzarr_sql.query.request", "duckdb", "sqlglot",
                "pandas", "zarr"} & modules
    # nor what only a scan of gt_ columns (stored and packed counts) or a URL store (a digest) uses
    assert not {"vcfzarr_sql.query.genotype_counts", "vcfzarr_sql.store.writer", "hashlib"} & modules
    # nor numcodecs' registry (its codecs come from their own modules), nor the scan and fetch
    # threads' concurrent.futures and logging (it decodes inline)
    assert not {"numcodecs.registry", "importlib.metadata", "concurrent.futures", "logging"} & modules
    # nor the multiprocessing lock Blosc makes to choose its threads (tempfile, shutil, bz2, lzma with it)
    assert not {"multiprocessing.synchronize", "tempfile", "lzma"} & modules


def test_view_with_a_region_matches_its_edge_chunks_on_numpy(convert_once, tmp_path):
    # -r/-t: planned from the region set as it is, the edge chunks' records matched on numpy
    # (no Arrow expression parsed back, no Arrow batch, no numpy.ma: 0.013 CPU-s)
    store = convert_once(SAMPLE)
    modules = imported_modules("view", str(store), "-r", "20:1-1230237", "-o", str(tmp_path / "out.vcf"))
    assert "vcfzarr_sql.query.plan" in modules
    assert not {"vcfzarr_sql.query.residual", "numpy.ma", "duckdb", "sqlglot", "pandas"} & modules


def test_view_with_regions_loads_no_arrow(convert_once, tmp_path):
    # -r (as -t): the region set planned and matched with bound predicates and numpy only (pyarrow and
    # pyarrow.compute: ~0.06 CPU-s, a quarter of a small file's view); the output is bcftools'
    # (tests/view/test_view_bcftools.py)
    store = convert_once(SAMPLE)
    modules = imported_modules("view", str(store), "-r", "20:14000-17400,X:1-20", "-o", str(tmp_path / "out.vcf"))
    assert {"vcfzarr_sql.query.plan", "vcfzarr_sql.query.region_set"} <= modules
    assert not {"pyarrow", "vcfzarr_sql.query.expressions", "vcfzarr_sql.query.request"} & modules
    # nor, without -i/-e, the filter expressions' parser and tree (~0.004 CPU-s: 8 dataclasses, a regex)
    assert "vcfzarr_sql.query.selection.expression" not in modules


def test_add_defers_numcodecs_package_start_up(convert_once, tmp_path):
    # (add writes and reads chunks through store/codec_classes.py, as stats and view read them:
    # numcodecs' registry, its entry-point scan and every codec it imports, ~0.03 CPU-s of an add)
    store = tmp_path / "cohort.vcz"
    shutil.copytree(convert_once(SAMPLE), store)
    new = tmp_path / "new.vcf"
    new.write_text("##fileformat=VCFv4.2\n##contig=<ID=20>\n"
                   '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
                   "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tNEW1\n"
                   "20\t14370\t.\tG\tA\t.\tPASS\t.\tGT\t0/1\n")
    modules = imported_modules("add", str(store), str(new))
    assert "vcfzarr_sql.converter.cohort" in modules
    assert not {"numcodecs.registry", "importlib.metadata", "zipfile", "pyarrow", "duckdb", "zarr"} & modules


def test_the_process_starts_no_blas_threads():
    # (OpenBLAS's threads, started when numpy loads, cost ~0.015 CPU-s; no command does linear algebra)
    code = ("import os, sys; from vcfzarr_sql.cli import process\n"
            "with process.process_start():\n"
            "    import numpy\n"
            "    print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out == "1 1\n"
    env["OPENBLAS_NUM_THREADS"] = "3"  # (the environment's choice is kept)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split()[1] == "3"


def test_a_chunk_buffer_does_not_load_arrow():
    # (Arrow's pool saves no page fault where pyarrow is not loaded already: store/memory.py)
    code = ("import sys; from vcfzarr_sql.store import memory; memory.empty(1 << 22, 'i1'); "
            "print('pyarrow' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


_DEFERRED = """
import sys
import numpy as np
from vcfzarr_sql.cli import process
with process.process_start():
    assert process.defer_numcodecs_init()
    from vcfzarr_sql.store.codec_classes import get_codec
    blosc = get_codec({"id": "blosc", "cname": "zstd", "clevel": 7, "shuffle": 1})
    values = np.arange(1000, dtype=np.int32)
    assert (np.frombuffer(blosc.decode(blosc.encode(values)), np.int32) == values).all()
    assert "numcodecs.registry" not in sys.modules
    import numcodecs
    from numcodecs import Zstd
    assert numcodecs.get_codec({"id": "zstd"}) == Zstd() and numcodecs.Blosc is type(blosc)
    assert "numcodecs.registry" in sys.modules
"""


def test_numcodecs_package_deferred_in_a_process_runs_at_its_first_use():
    subprocess.run([sys.executable, "-c", _DEFERRED], check=True)
