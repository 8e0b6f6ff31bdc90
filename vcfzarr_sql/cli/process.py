"""What a ``vcfzarr-sql`` process does that a program calling :func:`vcfzarr_sql.cli.main`
does not: start and exit like a compiled tool (:func:`process_start`).

- pandas is hidden: pyarrow imports pandas, when it is installed, the first time it converts a
  Python value (its C++ helpers look for ``pandas.NA``), and so does ``import pyarrow.dataset``
  (it makes a scalar expression). That is 0.45 CPU-s, more than importing DuckDB, pyarrow and
  numpy together, for nothing the CLI uses; pyarrow takes a failed import as "pandas is not
  installed" and carries on.
- pyarrow's vendored numpydoc parser is replaced by one that finds no parameters: importing
  ``pyarrow.compute`` (which ``pyarrow.dataset`` does) parses the docstring of every options
  class with it to document the 280 compute functions (~0.015 CPU-s), docs no process reads.
- The cyclic garbage collector waits until the command's modules are imported
  (:func:`imported`): imports make hundreds of thousands of objects and no garbage, and the
  collections they set off cost ~0.05 CPU-s. What is alive then is frozen (never scanned
  again), and so is everything at exit, whose collection at interpreter shutdown frees nothing
  a process needs freed (~0.1 CPU-s).
- numpy's OpenBLAS starts no threads (``OPENBLAS_NUM_THREADS=1`` unless the environment sets
  it, before numpy loads): they spin up at import and cost ~0.015 CPU-s, and no command does
  linear algebra.
- A command that decodes chunks only through :mod:`vcfzarr_sql.store.codec_classes` (``stats``)
  defers numcodecs' package start-up (:func:`defer_numcodecs_init`): its registry scans the
  installed packages' entry points and it imports every codec, 0.05 CPU-s.
- A command that only decompresses (``view``) lets Blosc make no ``multiprocessing`` lock
  (:func:`blosc_without_lock`): ``tempfile``, ``shutil``, ``bz2``, ``lzma`` and more not imported.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from types import ModuleType

#: whether :func:`process_start` holds the collector until :func:`imported`
_holding_collector = False
#: whether this is a ``vcfzarr-sql`` process (in :func:`process_start`)
_in_process = False


class _PandasFinder:
    """A finder that answers ``import pandas`` with ModuleNotFoundError (a meta path finder:
    ``importlib.abc``'s base class would import ``importlib.resources``, and with it
    ``tempfile``, ``shutil``, ``bz2``, ``lzma`` and ``random``, ~0.01 CPU-s)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas":
            raise ModuleNotFoundError("pandas is hidden in a vcfzarr-sql process", name=fullname)
        return None


class _NoDocString:
    """:data:`DOCSCRAPE`'s ``NumpyDocString``, finding no section in any docstring."""

    def __init__(self, docstring: str):
        pass

    def __getitem__(self, section: str) -> list:
        return []


#: the variable numpy's OpenBLAS takes its thread count from when it loads
BLAS_THREADS = "OPENBLAS_NUM_THREADS"
#: the module pyarrow parses the docstrings of its compute options classes with
DOCSCRAPE = "pyarrow.vendored.docscrape"


def _unparsed_docstrings() -> None:
    """pyarrow's compute functions documented without parsing docstrings (unless pyarrow's
    compute functions are made already)."""
    if "pyarrow.compute" not in sys.modules and DOCSCRAPE not in sys.modules:
        stand_in = ModuleType(DOCSCRAPE, "vcfzarr-sql: pyarrow's docstrings are not parsed in its process")
        stand_in.NumpyDocString = _NoDocString  # type: ignore[attr-defined]
        sys.modules[DOCSCRAPE] = stand_in


@contextlib.contextmanager
def process_start() -> Iterator[None]:
    """The block is the whole process: pandas hidden (unless imported already), OpenBLAS
    without threads (unless numpy is loaded or the environment says), pyarrow's
    docstrings not parsed, the collector held until :func:`imported`, and everything frozen
    at the end."""
    global _holding_collector, _in_process
    _in_process = True
    if "numpy" not in sys.modules:
        os.environ.setdefault(BLAS_THREADS, "1")
    finder = _PandasFinder()
    sys.meta_path.insert(0, finder)
    _unparsed_docstrings()
    _holding_collector = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        imported()
        gc.freeze()


def defer_numcodecs_init() -> bool:
    """In a ``vcfzarr-sql`` process (:func:`process_start`) that has not imported numcodecs:
    put the ``numcodecs`` package in ``sys.modules`` with its ``__init__`` not run (its codec
    modules import without it, :mod:`vcfzarr_sql.store.codec_classes`), to run at the first
    attribute anyone asks of the package (``numcodecs.get_codec``, ``from numcodecs import
    Blosc``). Whether it did. A command's choice, never the library's: code that reads
    numcodecs' registry without asking the package first would find it empty."""
    if not _in_process or "numcodecs" in sys.modules:
        return False
    spec = importlib.util.find_spec("numcodecs")
    if spec is None or spec.loader is None:
        return False
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock, started = threading.RLock(), [False]

    def finish(name: str) -> object:  # (PEP 562: asked only for names the package lacks)
        with lock:  # (other threads wait for the package; its own imports find what is set)
            if not started[0]:
                started[0] = True
                loader.exec_module(package)
        try:
            return vars(package)[name]
        except KeyError:
            raise AttributeError(f"module 'numcodecs' has no attribute {name!r}") from None

    setattr(package, "__getattr__", finish)  # noqa: B010 (a module's, PEP 562)
    sys.modules["numcodecs"] = package
    return True


def blosc_without_lock() -> bool:
    """numcodecs' Blosc (0.16) makes a ``multiprocessing.Lock`` at its first (de)compression, to
    know whether it may run Blosc's threads in its global context: that imports
    ``multiprocessing.synchronize`` and with it ``tempfile``, ``shutil``, ``bz2``, ``lzma``,
    ``random`` and ``multiprocessing.util`` (17 modules, ~0.015 CPU-s, more under load). Marked
    as made and absent, numcodecs takes its path for "no lock": each call decompresses in a
    context of its own, on one thread, as it does in any thread but the main one (the CPU is the
    same: the 4,000 x 500 benchmark store's chunks 33 ms either way). Whether it did (not
    once a lock is made, or outside a ``vcfzarr-sql`` process: :func:`process_start`). A command's
    choice, for commands that only decompress: Blosc compresses a chunk into other bytes on one
    thread than on several (``store.writer.blosc_single_threaded``)."""
    if not _in_process:
        return False
    import numcodecs.blosc as blosc

    if getattr(blosc, "_MUTEX_IS_INIT", True) is not False or not hasattr(blosc, "get_mutex"):
        return False
    blosc._MUTEX, blosc._MUTEX_IS_INIT = None, True
    return True


def imported() -> None:
    """The command's modules are imported: the collector runs again (if :func:`process_start`
    held it), over the objects made from now on."""
    global _holding_collector
    if _holding_collector:
        _holding_collector = False
        gc.freeze()
        gc.enable()


#: glibc's ``mallopt`` parameters: the free memory at the heap's top returned to the system
#: beyond this many bytes, and the size from which an allocation is a mapping of its own
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: (a chunk's arrays, up to 1000 records x 10,000 diploid samples of int8, are kept on the heap)
TRIM_THRESHOLD, MMAP_THRESHOLD = 128 << 20, 32 << 20


def reuse_freed_memory() -> bool:
    """Make glibc's ``malloc`` keep the memory of freed chunk arrays for the next chunk's, from
    now on in this process (False: not glibc). A command's choice, never the library's: it
    changes the allocator of the whole process.

    By default an array of a few MB is a mapping of its own, or is handed back when freed:
    each chunk's arrays came in as fresh pages, one page fault each 4 kB (on 2,000 samples,
    about a quarter of a .pgen export's CPU, in the kernel). The process keeps up to
    :data:`TRIM_THRESHOLD` bytes of freed memory instead.
    """
    from vcfzarr_sql.serve.memory import mallopt

    return mallopt((_M_MMAP_THRESHOLD, MMAP_THRESHOLD), (_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
