"""Shared fixtures: stores converted once per test run (shared by pytest-xdist workers).

- ``convert_once(vcf, **kwargs)``: our converter's store of ``vcf`` (``vcfzarr_sql.convert``).
- ``bio2zarr_once(vcf, zarr_format=2, **kwargs)``: bio2zarr's store of ``vcf``.
- ``simulated_store``: (``engine_cases.simulated``'s case, our store of it).

Both return the store path; a given (file, arguments) pair is converted once per run, whichever
worker asks first (the others wait on a lock), so tests may parametrize finely. Failures are not
cached: each caller gets the converter's own exception. Never write into the returned store.

Fixtures defined in helper modules are registered here for every test module:
``bio2zarr_store`` (store_support.py), ``serving`` and ``data_dir`` (server_sessions.py).

Hypothesis keeps its files (example database, constants of the code under test) in a temporary
directory removed at the end of the run, not in a ``.hypothesis/`` of the checkout (a failing
example is printed with its failure).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import engine_cases
import pytest
from hypothesis.configuration import set_hypothesis_home_dir
from server_sessions import data_dir, serving  # noqa: F401 (fixtures for all test modules)
from store_support import bio2zarr_store  # noqa: F401 (a fixture for all test modules)


def pytest_configure(config: pytest.Config) -> None:
    home = tempfile.mkdtemp(prefix="hypothesis-")
    config.stash[_HYPOTHESIS_HOME] = home
    config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    set_hypothesis_home_dir(home)


_HYPOTHESIS_HOME = pytest.StashKey[str]()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """What this process made in the temporary directory is removed as its session ends, not
    at its exit: pytest-xdist kills a worker that has not exited 10 s after its session (a
    loaded machine), and no exit handler of a killed worker runs. So multiprocessing's exit
    handlers run here (they remove its ``pymp-*`` directory, which holds the socket of the
    forkserver an in-process test server starts: ``vcfzarr_sql.serve.workers``), and the
    Hypothesis home goes."""
    shutil.rmtree(session.config.stash[_HYPOTHESIS_HOME], ignore_errors=True)
    exit_handlers = getattr(sys.modules.get("multiprocessing.util"), "_exit_function", None)
    if exit_handlers is not None:  # (what atexit would run: it runs once)
        exit_handlers()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _shared_root(tmp_path_factory: pytest.TempPathFactory, config: pytest.Config) -> Path:
    """A folder all pytest-xdist workers of this run share (their base temps' parent)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if hasattr(config, "workerinput") else base) / "stores"


def _once(root: Path, tag: str, source, kwargs: dict, write: Callable[[Path], object]) -> Path:
    key = hashlib.sha1(repr((tag, str(source), sorted(kwargs.items()))).encode()).hexdigest()[:16]
    folder = root / f"{tag}-{Path(str(source)).name[:40]}-{key}"
    store = folder / "store.vcz"
    done = folder / "done"
    with _locked(root / f"{key}.lock"):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            write(store)
            done.touch()
    return store


@pytest.fixture(scope="session")
def convert_once(tmp_path_factory, pytestconfig) -> Callable[..., Path]:
    """``convert_once(vcf, **convert_kwargs) -> Path``: our converter's store, once per run."""
    from vcfzarr_sql.converter import convert

    root = _shared_root(tmp_path_factory, pytestconfig)

    def make(vcf, **kwargs) -> Path:
        return _once(root, "ours", vcf, kwargs,
                     lambda store: convert(str(vcf), str(store), show_progress=False, **kwargs))

    return make


@pytest.fixture(scope="session")
def simulated_store(tmp_path_factory, convert_once) -> tuple[engine_cases.StoreCase, Path]:
    """Two contigs of an msprime simulation (``engine_cases.simulated``) and our store of it,
    10 variants x 3 samples a chunk: once per run."""
    case = engine_cases.simulated(tmp_path_factory.mktemp("sim"))
    return case, convert_once(case.vcf, variants_chunk_size=case.variants_chunk,
                              samples_chunk_size=case.samples_chunk)


@pytest.fixture(scope="session")
def bio2zarr_once(tmp_path_factory, pytestconfig) -> Callable[..., Path]:
    """``bio2zarr_once(vcf, zarr_format=2, **bio2zarr_convert_kwargs) -> Path``, once per run."""
    import bio2zarr.vcf

    root = _shared_root(tmp_path_factory, pytestconfig)

    def make(vcf, zarr_format: int = 2, **kwargs) -> Path:
        def write(store: Path) -> None:
            bio2zarr.vcf.convert([str(vcf)], str(store), zarr_format=zarr_format,
                                 icf_path=str(store.parent / "icf"), **kwargs)
            shutil.rmtree(store.parent / "icf", ignore_errors=True)

        return _once(root, f"bio2zarr-v{zarr_format}", vcf, kwargs, write)

    return make


@pytest.fixture(params=["numpy", "numba"])
def kernels(request, monkeypatch) -> str:
    """Run the test once with numpy's path and once with the compiled kernels
    (``VCFZARR_SQL_KERNELS``; :mod:`vcfzarr_sql.kernels`): both must give the same values."""
    if request.param == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("VCFZARR_SQL_KERNELS", request.param)
    return request.param
