"""Compiled kernels: the loops numpy cannot vectorise, compiled by numba when it is installed.

A kernel is a plain Python function over numpy arrays and numbers, written in the subset of
Python that numba compiles (``numba.njit``), and wrapped in :class:`Kernel`. Its caller keeps a
numpy way of doing the same job, which is what runs without numba (the ``fast`` extra is
optional) and what every kernel is tested against: both give the same values, bit for bit.

Whether a call takes the kernel is decided by :func:`Kernel.compiled`, from the
``VCFZARR_SQL_KERNELS`` environment variable, read at each call:

* ``numpy``: never (the numpy path);
* ``numba``: always; an error when numba cannot be imported (the tests of both paths);
* ``auto`` (or unset): tiered, as a JIT is. Importing numba and loading the cached machine code
  costs a process about 0.2-0.4 CPU-s, more than most single queries of a small store spend
  in numpy. So a process takes the compiled kernels once numba is already imported in it, or
  once the work its callers asked of kernels adds up to :data:`WORK_TO_COMPILE`. A one-off
  small query never pays for the compiler; a session or a conversion that does real work pays
  once. A conversion decides once, before its workers start, from the size of its input;
  the workers of one too small keep to numpy (:func:`keep_to_numpy`), rather than load numba
  part-way, when what is left to save no longer repays it.

The unit of work, for every caller: a nanosecond of CPU time the call would save on the
compiled path against the numpy path, which is what loading the kernels must repay. Each caller
estimates it from a per-item saving it measured, written beside its call (per genotype call, per
byte of text, per 64-bit word, ...); where the kernel is many times faster than numpy, that is
about numpy's own time.

Compiled code is cached on disk by numba (``cache=True``: ``__pycache__`` beside this package's
sources, or numba's user cache directory where those are read-only), so the LLVM compilation
happens once per installation; the cache is trusted as Python's own bytecode cache is
(docs/security.md). A process in which numba cannot be imported or fails to load keeps to
numpy for good; in ``auto`` mode, one with too little memory left to load it (under a cap: a
server session, :data:`LOAD_ROOM`) keeps to numpy until it has more.

>>> def _total(values):
...     total = 0
...     for v in values:
...         total += v
...     return total
>>> kernel = Kernel(_total)
>>> import os, numpy as np
>>> os.environ["VCFZARR_SQL_KERNELS"] = "numpy"
>>> kernel.compiled(work=10**12) is None
True
>>> del os.environ["VCFZARR_SQL_KERNELS"]
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

from vcfzarr_sql.errors import NotSupportedError

__all__ = ["Kernel", "WORK_TO_COMPILE", "keep_to_numpy", "kernel_mode"]

P = ParamSpec("P")
R = TypeVar("R")

#: Units of work (nanoseconds of CPU time the compiled path saves) a process asks of kernels
#: before ``auto`` loads numba: ~0.5 s, a little more than the import and the cached code cost.
WORK_TO_COMPILE = 500_000_000

#: Bytes of address space a process must have left for ``auto`` to load numba: importing it
#: and loading a first kernel maps ~110 MiB (numba's BLAS check loads scipy's OpenBLAS, where
#: scipy is installed, whose threads' buffers hang rather than fail with 40-80 MiB left under
#: ``RLIMIT_DATA``, as a server session near its memory cap has).
LOAD_ROOM = 256 * 2**20

_MODES = ("auto", "numpy", "numba")
_lock = threading.Lock()
_work_asked = 0
#: None: numba not tried yet; False: it could not be loaded in this process.
_numba_loaded: bool | None = None
#: Whether ``auto`` keeps this process to numpy for good (:func:`keep_to_numpy`).
_kept_to_numpy = False


def kernel_mode() -> str:
    """``VCFZARR_SQL_KERNELS`` as one of ``auto``, ``numpy``, ``numba``.

    >>> import os
    >>> os.environ["VCFZARR_SQL_KERNELS"] = "NumPy"
    >>> kernel_mode()
    'numpy'
    >>> del os.environ["VCFZARR_SQL_KERNELS"]
    >>> kernel_mode()
    'auto'
    """
    mode = os.environ.get("VCFZARR_SQL_KERNELS", "auto").strip().lower() or "auto"
    if mode not in _MODES:
        raise NotSupportedError(
            f"VCFZARR_SQL_KERNELS={mode!r} is not one of {', '.join(_MODES)}"
        )
    return mode


def _load_numba() -> bool:
    """Import numba once; False (for good) when it is not installed or cannot load."""
    global _numba_loaded
    if _numba_loaded is None:
        try:
            import numba  # noqa: F401
        except Exception:  # ImportError, or a broken/limited environment (MemoryError, OSError)
            _numba_loaded = False
        else:
            _numba_loaded = True
    return _numba_loaded


def _room_to_load() -> bool:
    """Whether this process may still map :data:`LOAD_ROOM` private bytes (what a memory cap,
    ``RLIMIT_DATA`` or ``RLIMIT_AS``, counts): tried, with nothing touched, and given back.
    (``mmap`` is imported here, not with this package: ~0.5 ms that a process which never
    loads numba, as ``stats`` from stored counts, does not pay.)"""
    import mmap

    if not hasattr(mmap, "MAP_PRIVATE"):  # (Windows: no such cap)
        return True
    try:
        mmap.mmap(-1, LOAD_ROOM, flags=mmap.MAP_PRIVATE).close()
    except (OSError, ValueError, MemoryError):
        return False
    return True


def keep_to_numpy() -> None:
    """Keep this process to numpy for good in ``auto`` mode (the kernels it has loaded stay in
    use): for a process whose whole work a caller estimated up front and found too little to
    repay loading numba (a conversion's workers: :func:`~vcfzarr_sql.converter.genotype_text.warm_kernels`).
    Tiering by the work asked so far would load it anyway once the calls' work added up to
    the threshold, with the conversion part done: a forked worker of a 350 MB GT-only text
    inherited the estimate its parent had counted, 0.32 of the 0.5 s, and loaded numba at
    its third chunk of fifty, ~0.9 CPU-s to load for ~0.5 saved (docs/benchmarks.md, stop 39)."""
    global _kept_to_numpy
    _kept_to_numpy = True


class Kernel(Generic[P, R]):
    """A function numba compiles on first use (cached on disk), or None where numpy is used."""

    def __init__(self, function: Callable[P, R]) -> None:
        self.function = function
        self.__doc__ = function.__doc__
        self._compiled: Callable[P, R] | None = None

    def compiled(self, work: int) -> Callable[P, R] | None:
        """The compiled function if this call should take it, else None. ``work``: the
        nanoseconds of CPU time the compiled path would save this call (the module's unit),
        counted toward ``auto``'s threshold whichever path the call takes."""
        global _work_asked
        mode = kernel_mode()
        if mode == "numpy":
            return None
        with _lock:
            if mode == "auto" and self._compiled is None:
                if _kept_to_numpy:
                    return None
                _work_asked += max(int(work), 0)
                if "numba" not in sys.modules and _work_asked < WORK_TO_COMPILE:
                    return None
            if self._compiled is None:
                if mode == "auto" and not _room_to_load():  # (each kernel's first load maps memory)
                    return None
                if not _load_numba():
                    if mode == "numba":
                        raise NotSupportedError(
                            "VCFZARR_SQL_KERNELS=numba, but numba cannot be imported "
                            "(pip install 'vcfzarr-sql[fast]')"
                        )
                    return None
                import numba

                self._compiled = numba.njit(cache=True, nogil=True)(self.function)
            return self._compiled
