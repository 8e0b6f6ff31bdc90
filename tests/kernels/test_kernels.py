"""The kernel policy (vcfzarr_sql/kernels): numpy, numba or tiered by the work asked.

Each kernel's values are tested against its caller's numpy path where the kernel is used; here,
only when a call takes the compiled function. The tiered mode runs in a subprocess, since it
depends on what the process has imported and asked so far.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import vcfzarr_sql.kernels as kernels
from vcfzarr_sql.errors import NotSupportedError
from vcfzarr_sql.kernels import Kernel


def _sum_squares(values: np.ndarray) -> int:
    total = 0
    for v in values:
        total += v * v
    return total


SUM_SQUARES = Kernel(_sum_squares)


def test_numpy_mode_never_compiles(monkeypatch):
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "numpy")
    assert SUM_SQUARES.compiled(work=10**15) is None


def test_numba_mode_compiles_the_function(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "numba")
    compiled = SUM_SQUARES.compiled(work=0)
    assert compiled is not None
    values = np.arange(1000, dtype=np.int64)
    assert compiled(values) == 332833500  # sum of k^2 for k < 1000: 999*1000*1999/6
    assert type(compiled).__module__.startswith("numba")


def test_numba_mode_without_numba_says_how_to_get_it(monkeypatch):
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "numba")
    monkeypatch.setattr(kernels, "_numba_loaded", False)
    with pytest.raises(NotSupportedError, match=r"vcfzarr-sql\[fast\]"):
        Kernel(_sum_squares).compiled(work=0)


def test_an_unknown_mode_is_an_error(monkeypatch):
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "cuda")
    with pytest.raises(NotSupportedError, match="VCFZARR_SQL_KERNELS='cuda' is not one of auto, numpy, numba"):
        SUM_SQUARES.compiled(work=0)


_TIERED = """
import sys
import vcfzarr_sql.kernels as k
def one(x):
    return x
kernel = k.Kernel(one)
small = kernel.compiled(work=k.WORK_TO_COMPILE // 2)
print("numba" in sys.modules, small is None)
large = kernel.compiled(work=k.WORK_TO_COMPILE // 2)
print("numba" in sys.modules, large is not None)
"""


def test_auto_loads_numba_only_once_the_work_repays_it(tmp_path):
    pytest.importorskip("numba")
    script = tmp_path / "tiered.py"  # numba caches only functions defined in a file
    script.write_text(_TIERED)
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True,
        env={**os.environ, "VCFZARR_SQL_KERNELS": "auto"},
    ).stdout.split("\n")
    assert out[:2] == ["False True", "True True"]


def test_auto_without_numba_keeps_to_numpy(monkeypatch):
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "auto")
    monkeypatch.setattr(kernels, "_numba_loaded", False)
    monkeypatch.setattr(kernels, "_work_asked", kernels.WORK_TO_COMPILE)
    assert Kernel(_sum_squares).compiled(work=1) is None


def test_auto_kept_to_numpy_does_not_load_numba_whatever_the_work(monkeypatch):
    """A conversion's worker whose parent found the work too small for numba
    (:func:`kernels.keep_to_numpy`): past the threshold, ``auto`` still takes numpy; ``numba``
    mode is not affected."""
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", "auto")
    monkeypatch.setattr(kernels, "_kept_to_numpy", False)
    monkeypatch.setattr(kernels, "_numba_loaded", False)  # (a call that tried to load: numpy all the same)
    kernels.keep_to_numpy()
    assert kernels._kept_to_numpy
    monkeypatch.setattr(kernels, "_numba_loaded", None)
    monkeypatch.setattr(kernels, "_work_asked", kernels.WORK_TO_COMPILE)
    assert Kernel(_sum_squares).compiled(work=kernels.WORK_TO_COMPILE) is None
    assert kernels._numba_loaded is None  # (numba not even tried)
    if importlib.util.find_spec("numba") is not None:
        monkeypatch.setenv("VCFZARR_SQL_KERNELS", "numba")
        assert Kernel(_sum_squares).compiled(work=0) is not None


_CAPPED = """
import resource, sys
import numpy as np
import vcfzarr_sql.kernels as k
from vcfzarr_sql.query.hwe import hwe_tests
data = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmData"))
_, hard = resource.getrlimit(resource.RLIMIT_DATA)
soft = data + 60 * 2**20
resource.setrlimit(resource.RLIMIT_DATA, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
k._work_asked = k.WORK_TO_COMPILE
hwe, _ = hwe_tests(np.array([8, 7]), np.array([2, 1]), np.array([0, 1]))
print(np.float32(hwe).tolist(), "numba" in sys.modules)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA and /proc: Linux")
def test_auto_under_a_memory_cap_keeps_to_numpy_without_room_to_load_numba():
    """A server session near its memory cap (``RLIMIT_DATA``, 60 MiB left) whose queries have
    asked enough work of the kernels: ``auto`` does not load numba (which maps ~110 MiB; where
    scipy is installed, its OpenBLAS threads hung the process with 40-80 MiB left, and with
    less the query failed with a MemoryError), and the numpy path answers."""
    pytest.importorskip("numba")
    out = subprocess.run(
        [sys.executable, "-c", _CAPPED], capture_output=True, text=True, timeout=60,
        env={**os.environ, "VCFZARR_SQL_KERNELS": "auto"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == f"{[float(np.float32(1 / 9)), 1.0]} False"
