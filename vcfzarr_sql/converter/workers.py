"""Worker processes for parsing and encoding, with the parser's crashes and messages contained.

cyvcf2/htslib can crash the process on some malformed files and print warnings and errors
on file descriptor 2. Every task therefore runs in a worker process (forked where the caller
asks and it is safe, else spawned: :class:`WorkerPool`) with its stderr sent to a file of its own: a failed or
crashed task becomes a one-line
:class:`~vcfzarr_sql.errors.VcfParseError` carrying htslib's ``[E::...]`` message, and
warnings never reach the user's terminal.

Each worker also runs under a memory bound (Linux ``RLIMIT_DATA``: its heap and private
mappings): htslib grows its line buffer without limit, so a single-line gzip bomb would
otherwise take the machine. An allocation the bound refuses ends the conversion with a
one-line error naming the file and the record (see :func:`out_of_memory`).
"""

from __future__ import annotations

import ctypes
import errno
import multiprocessing
import os
import resource
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from vcfzarr_sql.converter.genotype_text import warm_kernels
from vcfzarr_sql.errors import NotVcfError, VcfParseError, VcfZarrError
from vcfzarr_sql.kernels import keep_to_numpy

if TYPE_CHECKING:
    from multiprocessing.sharedctypes import Synchronized

T = TypeVar("T")

_progress: Synchronized[int] | None = None  # a worker's shared record counter (set by _init_worker)
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: The default memory bound of each worker is this share of the machine's physical memory,
#: divided among the workers (what ``convert --max-memory`` sets otherwise).
SHARE_OF_MACHINE = 0.75


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux ``PR_SET_PDEATHSIG``),
    and exit now if the parent ``parent`` is already gone. Elsewhere: nothing."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)


def default_max_memory(workers: int) -> int:
    """Bytes each of ``workers`` worker processes may allocate when no bound is given:
    :data:`SHARE_OF_MACHINE` of the machine's physical memory among them."""
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return int(SHARE_OF_MACHINE * machine) // workers


def limit_memory(limit: int) -> None:
    """Bound this process's heap and private mappings (``RLIMIT_DATA``) to ``limit`` bytes
    (at most the hard limit already set)."""
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def memory_limit() -> int | None:
    """This process's memory bound (``RLIMIT_DATA``), in bytes; None when unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    return None if soft == resource.RLIM_INFINITY else soft


def _errno() -> ctypes._Pointer[ctypes.c_int] | None:
    """C's thread-local ``errno`` (glibc's; None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.__errno_location.restype = ctypes.POINTER(ctypes.c_int)
    return libc.__errno_location()


def clear_errno() -> None:
    """Set C's ``errno`` to 0 (before reading, so that :func:`out_of_memory` sees only the
    reader's own failures)."""
    found = _errno()
    if found is not None:
        found[0] = 0


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a refused allocation: Python's MemoryError, or cyvcf2's
    bare ``Exception`` about ``bcf_read`` with C's ``errno`` left at ENOMEM by htslib (only
    MemoryError off Linux)."""
    found = _errno()
    return isinstance(exc, MemoryError) or (found is not None and found[0] == errno.ENOMEM)


def _init_worker(progress: Synchronized[int], single_process: bool, parent: int,
                 max_memory: int, numpy_only: bool) -> None:
    """``numpy_only``: the parent estimated the conversion's work too small to repay loading
    the compiled kernels (:func:`~.genotype_text.warm_kernels`)."""
    global _progress
    die_with_parent(parent)
    limit_memory(max_memory)
    _progress = progress
    if numpy_only:
        keep_to_numpy()
    if not single_process:
        import numcodecs.blosc as blosc  # (not through the package: its start-up may be deferred)

        blosc.use_threads = False  # the processes are the parallelism


def add_progress(amount: int) -> None:
    """Add to the pool's shared progress counter (records parsed, chunks encoded)."""
    if _progress is not None:
        with _progress.get_lock():
            _progress.value += amount


@dataclass(frozen=True)
class _Failure:
    what: str
    record: str | None = None
    field: str | None = None
    unexpected: bool = False
    explained: bool = False  # the message says why better than htslib's log (NotVcfError)


def _run(stderr_path: str, parsing: bool, fn: Callable[..., T], args: tuple[object, ...]) -> T | _Failure:
    """Run ``fn(*args)`` with fd 2 sent to ``stderr_path``; a parsing failure is returned, not
    raised (anything else is a bug, and raised)."""
    saved = os.dup(2)
    with open(stderr_path, "ab") as err:
        os.dup2(err.fileno(), 2)
    try:
        return fn(*args)
    except VcfParseError as exc:
        return _Failure(exc.what, exc.record, exc.field, explained=isinstance(exc, NotVcfError))
    except MemoryError:
        return _Failure(f"a worker needed more memory than --max-memory allows ({memory_limit()} bytes)",
                        explained=True)
    except VcfZarrError as exc:
        return _Failure(str(exc), unexpected=True)
    except OSError as exc:
        if exc.errno is None:  # cyvcf2's IOError about the input (no errno): a parse error
            return _Failure(f"{type(exc).__name__}: {exc}")
        # the disk, not the input (a full disk, a read-only folder): one line naming the path
        where = exc.filename or Path(stderr_path).parent
        return _Failure(f"{where}: {exc.strerror}", unexpected=True)
    except Exception as exc:  # cyvcf2 raises bare Exceptions for htslib read errors
        if not parsing:
            raise
        return _Failure(f"{type(exc).__name__}: {exc}")
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def htslib_error(stderr_path: str | Path) -> str | None:
    """The first htslib error (``[E::...]``) a task printed, if any."""
    try:
        text = Path(stderr_path).read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("[E::"):
            return line.strip()
    return None


def _forkable() -> bool:
    """Whether a worker may be forked from this process: on Linux, with no other Python
    thread and no DuckDB loaded (a thread's locks, or DuckDB's native threads', could be held
    for ever in the child; numpy's OpenBLAS and Blosc threads reset themselves in a forked
    child, by their ``pthread_atfork`` handlers, as do scipy's OpenBLAS threads, which numba
    starts where scipy is installed when it loads a first kernel, to check for BLAS; numba
    itself starts none without ``parallel=True``)."""
    return sys.platform.startswith("linux") and threading.active_count() == 1 \
        and "duckdb" not in sys.modules


class WorkerPool:
    """Worker processes running tasks for one input file."""

    def __init__(self, input_path: str, workers: int, log_dir: str | Path, max_memory: int | None = None,
                 *, fork: bool = False):
        """``max_memory``: bytes each worker may allocate (default: :func:`default_max_memory`).
        ``fork``: fork the workers instead of spawning them (a caller that has imported the
        converter: a forked worker imports nothing), on Linux in a process running no other
        thread and no DuckDB (:func:`_forkable`). The compiled kernels a large input needs are
        loaded first (:func:`~.genotype_text.warm_kernels`), so that forked workers share
        them (the threads loading them may start are fork-safe: :func:`_forkable`)."""
        #: whether the workers are forked
        self.forked = fork and _forkable()
        warm = warm_kernels(input_path) if self.forked else None
        if warm:
            self.forked = _forkable()
        ctx = multiprocessing.get_context("fork" if self.forked else "spawn")
        self.input_path = input_path
        self.log_dir = Path(log_dir)
        self.progress = ctx.Value("q", 0)
        self.executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(self.progress, workers == 1, os.getpid(),
                      default_max_memory(workers) if max_memory is None else max_memory, warm is False),
        )
        self._tasks = 0

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def kill(self) -> None:
        """Stop now: kill the workers (their running tasks are abandoned). ``_processes`` is
        private, but the executor has no public way to do this before Python 3.14."""
        for process in list((self.executor._processes or {}).values()):
            process.kill()
        self.executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:  # an error or an interrupt: do not wait for the other tasks to finish
            self.kill()

    def run(self, fn: Callable[..., T], tasks: Iterable[tuple[object, ...]],
            on_progress: Callable[[], None] | None = None, *, parsing: bool = True) -> list[T]:
        """``[fn(*args) for args in tasks]``, run in the workers. With ``parsing``, a task's
        exception or crash is raised as a :class:`VcfParseError` for the input file.
        ``on_progress`` is called a few times a second while waiting."""
        futures: dict[Future[T | _Failure], str] = {}
        for args in tasks:
            log = str(self.log_dir / f"task{self._tasks:06d}.stderr")
            self._tasks += 1
            futures[self.executor.submit(_run, log, parsing, fn, args)] = log
        results: dict[Future[T | _Failure], T] = {}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            if on_progress is not None:
                on_progress()
            for future in done:
                results[future] = self._check(future, futures[future], pending)
        return [results[f] for f in futures]

    def _check(self, future: Future[T | _Failure], log: str, pending: set[Future[T | _Failure]]) -> T:
        """The result of a finished task, or its failure raised (the pending tasks cancelled)."""
        try:
            result = future.result()
        except BrokenProcessPool:
            for f in pending:
                f.cancel()
            what = htslib_error(log) or self._any_htslib_error() or "the VCF parser crashed"
            raise VcfParseError(self.input_path, what) from None
        if isinstance(result, _Failure):
            for f in pending:
                f.cancel()
            if result.unexpected:
                raise VcfZarrError(result.what)
            htslib = None if result.explained else htslib_error(log)  # the cause, when htslib says it
            if htslib:
                raise VcfParseError(self.input_path, htslib)
            raise VcfParseError(self.input_path, result.what, record=result.record, field=result.field)
        return result

    def _any_htslib_error(self) -> str | None:
        for log in sorted(self.log_dir.glob("*.stderr")):
            found = htslib_error(log)
            if found:
                return found
        return None
