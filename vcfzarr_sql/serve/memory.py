"""The server's memory as a whole: a cap the process sets on itself, and what it uses now.

DuckDB's ``memory_limit`` holds per session, and only for what DuckDB's buffer manager
counts: a string built inside one scalar call (``repeat('x', 2000000000)``) is neither
counted nor interruptible. So a server with a cap (``Limits.max_memory``) has the kernel
refuse its process any allocation that would take it past the cap (:func:`cap_process_memory`,
``RLIMIT_DATA``), and such an allocation fails at once, as DuckDB's ``Out of Memory Error`` of
that statement only. ``RLIMIT_DATA`` counts address space, not memory: thread stacks reserve
8 MiB each, and the allocators keep the address space of memory they freed (measured: 3 GB of
address space for 0.18 GB resident after a 9 MB statement). So the watchdog
(:mod:`.watchdog`) resets the limit a few times a second to the address space in use plus what
the cap leaves of resident memory (plus the stacks of :data:`SPARE_THREADS` threads, so that
threads can still start): a single allocation larger than what is left fails, retained
address space never does. Allocations made between two looks, or reserved and filled later,
can together pass the cap. glibc is also told to use one arena (:func:`one_malloc_arena`),
whose freed space is used again. The watchdog also cancels the oldest statement when the process's
resident memory (:func:`resident_bytes`) passes :data:`CANCEL_AT` of the cap, so a query
that DuckDB can interrupt ends with a clear message before allocations start failing.

>>> parse_size("300MB"), parse_size("1GiB"), parse_size("2.5 kb")
(300000000, 1073741824, 2500)
>>> default_cap("300MB", physical=64 << 30)
1900000000
>>> default_cap("1GB", physical=4 << 30)
3221225472
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import resource

from vcfzarr_sql.errors import VcfZarrError

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([a-z]*)\s*")
#: What the server itself takes besides its sessions (Python, pyarrow, DuckDB, threads).
BASE = 10**9
#: The default cap is this many times the per-session ``memory_limit``, plus :data:`BASE`.
SESSIONS_IN_CAP = 3
#: ... and at most this share of the machine's physical memory.
SHARE_OF_MACHINE = 0.75
#: The watchdog cancels the oldest statement past this share of the cap (resident memory).
CANCEL_AT = 0.9
#: The watchdog reads proportional sizes (costly) only once resident sizes (cheap, never
#: less) pass this share of the cap; below it, its decisions are those proportional sizes give.
EXACT_PAST = 0.5
#: Threads that may always start, whatever the cap leaves (their stacks are address space).
SPARE_THREADS = 16
#: glibc's ``mallopt`` parameter of the number of arenas.
_M_ARENA_MAX = -8
#: glibc's thread stack when ``RLIMIT_STACK`` is unlimited (x86-64).
_UNLIMITED_STACK = 32 << 20


class MemorySizeError(VcfZarrError):
    """A memory size that cannot be read (``300MB``, ``2GiB``...)."""


def parse_size(text: str) -> int:
    """Bytes of a size as DuckDB writes them (``KB`` = 1000, ``KiB`` = 1024; no unit: bytes)."""
    match = _SIZE.fullmatch(text.lower())
    if match is None or match.group(2) not in _UNITS:
        raise MemorySizeError(f"{text!r} is not a memory size (say 300MB, 2GB or 1GiB)")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def physical_memory() -> int:
    """Bytes of physical memory of the machine."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def default_cap(memory_limit: str, physical: int | None = None) -> int:
    """The process cap when none is given: :data:`SESSIONS_IN_CAP` sessions at their
    ``memory_limit`` plus :data:`BASE`, at most :data:`SHARE_OF_MACHINE` of ``physical``."""
    machine = physical_memory() if physical is None else physical
    return min(SESSIONS_IN_CAP * parse_size(memory_limit) + BASE, int(SHARE_OF_MACHINE * machine))


def thread_stack_bytes() -> int:
    """The address space glibc reserves for a new thread's stack (``RLIMIT_STACK``'s)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    return _UNLIMITED_STACK if soft == resource.RLIM_INFINITY else soft


def cap_process_memory(limit: int, used: int | None = None) -> None:
    """Refuse this process, from now on, new address space beyond what ``limit`` bytes leave of
    its memory in use (``used``, default its resident memory; and the stacks of
    :data:`SPARE_THREADS` threads): ``RLIMIT_DATA``, heap and private mappings as the kernel
    counts them. A lower hard limit is kept."""
    one_malloc_arena()
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    data, resident = _status("VmData"), _status("VmRSS") if used is None else used
    if data is None or resident is None:
        return
    limit = data + max(limit - resident, 0) + SPARE_THREADS * thread_stack_bytes()
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


@functools.cache
def one_malloc_arena() -> bool:
    """Make glibc's ``malloc`` use one arena from now on (False: not glibc)."""
    return mallopt((_M_ARENA_MAX, 1))


def mallopt(*settings: tuple[int, int]) -> bool:
    """Set glibc's ``mallopt`` parameters ``(parameter, value)``, in order, for the whole
    process from now on (False: not glibc, or one was refused)."""
    try:
        libc = ctypes.CDLL(None)  # (the process's symbols, libc's among them: no ldconfig run)
        return all(libc.mallopt(parameter, value) for parameter, value in settings)
    except (OSError, AttributeError):
        return False


def _status(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` in bytes (None without ``/proc``)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(field.encode() + b":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def resident_bytes(pid: int | None = None) -> int:
    """Bytes of process ``pid``'s resident memory now (None: this one's; 0 when it is gone or
    ``/proc`` is missing). Cheap (``/proc/PID/statm``), and never less than
    :func:`proportional_bytes`."""
    try:
        with open(f"/proc/{'self' if pid is None else pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def used_bytes(pid: int | None = None, exact: bool = True) -> int:
    """The memory process ``pid`` (None: this one) takes: :func:`proportional_bytes`, or
    not ``exact``, :func:`resident_bytes` (cheaper and never less)."""
    return proportional_bytes(pid) if exact else resident_bytes(pid)


def proportional_bytes(pid: int | None = None) -> int:
    """Bytes of memory process ``pid`` (None: this one) takes, pages it shares with other
    processes counted in proportion (``Pss`` of ``/proc/PID/smaps_rollup``: session processes
    forked from one parent share its pages, which resident sizes would count once each); 0
    when it is gone or ``/proc`` is missing. Costly: about 7 ms per GB resident."""
    try:
        with open(f"/proc/{'self' if pid is None else pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0

