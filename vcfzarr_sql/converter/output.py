"""Where a conversion writes, safely: what ``--force`` may replace, a lock on OUTPUT, the
atomic swap of a finished store into place, and OS errors as one line naming the path.

A store is built in a temporary sibling of OUTPUT (``.NAME.XXXX.tmp``, same file system), so
OUTPUT is at every instant either absent, the old complete store or the new complete one:
the old store is renamed aside (``.NAME.PID.replaced``) before the new one is renamed into
place, and deleted only then. A run killed half way leaves only those hidden, clearly named
siblings, which the next conversion to the same OUTPUT cleans up (under the lock): an old
store left aside goes back to OUTPUT if no new one took its place, the rest is deleted.

>>> refuse_to_replace(["in.vcf"], "in.vcf", force=True)  # doctest: +SKIP
Traceback (most recent call last):
...
vcfzarr_sql.errors.OutputError: in.vcf: is the input file; refusing to replace it
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from vcfzarr_sql.converter.inputs import STDIN
from vcfzarr_sql.errors import OutputError
from vcfzarr_sql.format import spec

#: Suffixes of the hidden siblings of OUTPUT a conversion makes (``.NAME.<...><suffix>``).
WORK_SUFFIX = ".tmp"
REPLACED_SUFFIX = ".replaced"
LOCK_SUFFIX = ".lock"
#: Root metadata of a store, removed first when a replaced store is deleted, so that a delete
#: cut short never leaves something that opens as a store.
_ROOT_METADATA = (".zmetadata", ".zattrs", "zarr.json", ".zgroup")


def os_error(err: OSError, where: str | os.PathLike) -> OutputError:
    """``err`` as one line naming the path it concerns (``where`` when the OS did not say)."""
    path = err.filename if err.filename is not None else os.fspath(where)
    return OutputError(f"{path}: {err.strerror or err}")


def is_vcf_zarr_directory(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a directory holding a VCF Zarr group (v2 or v3) with its version."""
    root = Path(path)
    try:
        if (root / ".zgroup").is_file():
            attrs = json.loads((root / ".zattrs").read_text())
        else:
            document = json.loads((root / "zarr.json").read_text())
            if document.get("node_type") != "group":
                return False
            attrs = document.get("attributes") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(attrs, dict) and spec.ATTR_VERSION in attrs


#: What a Zarr writer puts at the root of a VCF Zarr store (besides one folder per array), and
#: in an array's folder (besides its chunks).
_ROOT_FILES = frozenset({".zgroup", ".zattrs", ".zmetadata", "zarr.json"})
_ARRAY_FILES = frozenset({".zarray", ".zattrs", "zarr.json"})
#: A chunk key below an array's folder: indexes joined by ``.`` or ``/`` (Zarr v2), or ``c/``
#: then indexes (Zarr v3).
_CHUNK_KEY = re.compile(r"(c/)?\d+([./]\d+)*")


def foreign_entry(store: Path) -> Path | None:
    """The first entry of the VCF Zarr directory ``store`` that is not part of a Zarr store
    (what ``--force`` would delete besides the store: a user's file put inside it, a link, a
    folder of something else), or None.

    >>> foreign_entry(Path("/no/such/store")) is None
    True
    """
    for top, folders, files in os.walk(store):
        here = Path(top)
        relative = here.relative_to(store)
        for name in sorted(folders + files):
            path = here / name
            key = (relative / name).as_posix()
            if path.is_symlink():
                return path
            if name in folders:
                continue  # (its files are judged below)
            if relative == Path("."):
                allowed = name in _ROOT_FILES
            else:
                rest = key.partition("/")[2]
                allowed = rest in _ARRAY_FILES or bool(_CHUNK_KEY.fullmatch(rest))
            if not allowed or not path.is_file():
                return path
    return None


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def refuse_to_replace(inputs: Sequence[str | os.PathLike], output: str | os.PathLike,
                      force: bool) -> None:
    """OutputError unless OUTPUT may be written: it does not exist, or ``force`` is set and it is
    a VCF Zarr store that is neither an input, nor holds one, nor the working directory or one
    of its parents, and holds nothing but the store (:func:`foreign_entry`; ``-``, standard
    input, is no file)."""
    out = Path(output)
    if not os.path.lexists(out):
        return
    if not force:
        raise OutputError(f"{out}: already exists (use --force to replace it)")
    if out.is_symlink():
        raise OutputError(f"{out}: is a symbolic link; refusing to replace it")
    resolved = out.resolve()
    for source in (Path(p) for p in inputs if os.fspath(p) != STDIN):
        if resolved == source.resolve():
            raise OutputError(f"{out}: is the input file; refusing to replace it")
        if _inside(source.resolve(), resolved):
            raise OutputError(f"{out}: holds the input file {source}; refusing to replace it")
    if _inside(Path.cwd().resolve(), resolved):
        raise OutputError(f"{out}: is the working directory or one of its parents; "
                          "refusing to replace it")
    if not is_vcf_zarr_directory(out):
        raise OutputError(f"{out}: is not a VCF Zarr store; --force replaces only a VCF Zarr "
                          "store (remove it yourself if it should go)")
    foreign = foreign_entry(out)
    if foreign is not None:
        raise OutputError(f"{out}: holds {foreign.relative_to(out)}, which is not part of a Zarr "
                          "store; --force deletes only a store's own files (move it out, or "
                          "remove the store yourself)")


def _siblings(output: Path, suffix: str) -> list[Path]:
    prefix = f".{output.name}."
    try:
        names = os.listdir(output.parent)
    except OSError:
        return []
    return [output.parent / n for n in names
            if n.startswith(prefix) and n.endswith(suffix) and len(n) > len(prefix + suffix)]


def delete_store(path: Path) -> None:
    """Delete a store: its root metadata first (a cut-short delete leaves no openable store)."""
    for name in _ROOT_METADATA:
        with contextlib.suppress(FileNotFoundError):
            (path / name).unlink()
    shutil.rmtree(path)


def remove_leftovers(output: Path) -> None:
    """Clean up after killed runs (call with the lock held: no live conversion to OUTPUT owns
    these): a whole store renamed aside by a run killed before its new store was in place goes
    back to OUTPUT if OUTPUT is absent; other replaced stores and work folders are deleted."""
    replaced = sorted(_siblings(output, REPLACED_SUFFIX), key=lambda p: p.stat().st_mtime)
    whole = [p for p in replaced if is_vcf_zarr_directory(p)]
    if whole and not os.path.lexists(output):
        os.rename(whole[-1], output)
        replaced.remove(whole[-1])
    for leftover in replaced:
        delete_store(leftover)
    for leftover in _siblings(output, WORK_SUFFIX):
        shutil.rmtree(leftover)


def lock_path(output: Path) -> Path:
    """The lock file of OUTPUT: a hidden sibling ``.NAME.lock``."""
    return output.parent / f".{output.name}{LOCK_SUFFIX}"


#: The file descriptors of the locks this process holds (:func:`output_lock`).
_HELD: set[int] = set()


def _drop_inherited_locks() -> None:
    """In a forked child: point its copies of the parent's lock descriptors at /dev/null. An
    ``flock`` belongs to the open file, so a child keeping a copy (``add``'s forked workers)
    would hold the lock after its parent's death until it exits itself."""
    for fd in _HELD:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, fd)
        os.close(null)
    _HELD.clear()


os.register_at_fork(after_in_child=_drop_inherited_locks)


@contextlib.contextmanager
def output_lock(output: Path) -> Iterator[None]:
    """Hold an exclusive lock on OUTPUT for the block; OutputError at once if another
    conversion holds it. The lock dies with its process (``flock``)."""
    path = lock_path(output)
    while True:
        handle = open(path, "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise OutputError(f"{output}: another conversion is writing it (lock {path})") from None
        try:
            if os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino:
                break  # else the holder removed the file we locked: lock the new one
        except FileNotFoundError:
            pass
        handle.close()
    _HELD.add(handle.fileno())
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _HELD.discard(handle.fileno())
        handle.close()


def swap_into_place(store: Path, output: Path) -> None:
    """Rename the finished ``store`` to OUTPUT; an old store there is renamed aside first and
    deleted once the new one is in place."""
    aside = None
    if os.path.lexists(output):
        aside = output.parent / f".{output.name}.{os.getpid()}{REPLACED_SUFFIX}"
        os.rename(output, aside)
    os.rename(store, output)
    if aside is not None:
        delete_store(aside)
