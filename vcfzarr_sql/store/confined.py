"""Stores confined to directories: what a server may read.

:class:`DataDirs` are the directories whose stores a server serves (paths checked after
resolving symlinks, URLs refused); :class:`ConfinedDirectory` reads every file of a store only
through real directories inside it, so a link inside a store cannot lead out of it.
"""

from __future__ import annotations

import errno
import glob
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from vcfzarr_sql.errors import AccessError, StoreError
from vcfzarr_sql.store.kvstore import DIRECTORY_FLAGS, DirectoryStore, is_url, unreadable
from vcfzarr_sql.store.opening import open_store
from vcfzarr_sql.store.vcz import VczStore


@dataclass(frozen=True)
class DataDirs:
    """The directories whose stores a server serves (real paths, symlinks resolved).

    A relative store path is taken relative to the first one.
    """

    roots: tuple[str, ...]

    @classmethod
    def of(cls, directories: Iterable[str | os.PathLike]) -> DataDirs:
        """The data directories ``directories`` (each must be an existing directory)."""
        roots = []
        for directory in directories:
            real = os.path.realpath(os.fspath(directory))
            if not os.path.isdir(real):
                raise AccessError(f"{os.fspath(directory)}: data directory is not a directory")
            roots.append(real)
        if not roots:
            raise AccessError("at least one data directory is needed")
        return cls(tuple(roots))

    def contains(self, real_path: str) -> bool:
        """Whether the resolved ``real_path`` is one of the directories or under one."""
        return any(_under(real_path, root) for root in self.roots)

    def resolve(self, path: str) -> str:
        """The real path of the store ``path`` names; AccessError unless it is under a data
        directory (the same error whether or not something is there).

        >>> dirs = DataDirs(("/data",))
        >>> dirs.resolve("/etc/../data/x.zarr")
        '/data/x.zarr'
        >>> dirs.resolve("ftp://host/x.zarr")
        Traceback (most recent call last):
        ...
        vcfzarr_sql.errors.AccessError: ftp://host/x.zarr: URLs are not served; only stores under the data directories
        """
        if is_url(path):
            raise AccessError(f"{path}: URLs are not served; only stores under the data directories")
        try:
            real = os.path.realpath(os.path.join(self.roots[0], path))
        except (OSError, ValueError):  # (a link /proc will not read; a NUL in the path)
            real = None
        if real is None or not self.contains(real):
            raise AccessError(f"{path}: not under a served data directory")
        return real

    def glob(self, pattern: str) -> Iterator[str]:
        """The paths under the data directories that ``pattern`` (a glob, relative to the first
        one) matches; AccessError, before anything is listed, when the pattern itself is not
        under one (so that the answer tells nothing of other directories). A match that is a
        link leading outside them is left out.

        >>> DataDirs(("/data",)).glob("/etc/*")
        Traceback (most recent call last):
        ...
        vcfzarr_sql.errors.AccessError: /etc/*: not under a served data directory
        """
        base = os.path.normpath(os.path.join(self.roots[0], pattern))
        root = next((r for r in self.roots if _under(base, r)), None)
        if root is None or is_url(pattern) or "\0" in pattern:
            raise AccessError(f"{pattern}: not under a served data directory")
        paths = (os.path.join(root, m) for m in glob.iglob(os.path.relpath(base, root), root_dir=root))
        return (path for path in paths if self.contains(os.path.realpath(path)))

    def open_store(self, path: str) -> VczStore:
        """The store at ``path``, each of its files read only if it lies inside the store."""
        real = self.resolve(path)
        root = next(r for r in self.roots if _under(real, r))
        if not os.path.isdir(real):
            return open_store(real)
        # (a cohort's batches are directories inside it: confined to the data directory too)
        return open_store(real, kv=ConfinedDirectory(path, real, root),
                          sub_stores=lambda inner: ConfinedDirectory(
                              f"{path}/{inner}", os.path.join(real, inner), root))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class ConfinedDirectory(DirectoryStore):
    """A directory store that reads a key only through real directories and a regular file
    inside the store: no symlink, no ``..`` on the way.

    Our reader opens chunk files itself (DuckDB's file-system settings do not apply), so a
    symlink inside a store (``call_genotype/0.0 -> /etc/shadow``) would otherwise be read.
    The store's directory is opened once, from the data directory ``root`` down, one real
    directory at a time (``openat`` with ``O_NOFOLLOW``); each key is then opened the same way
    from that descriptor, so a link swapped in anywhere on the way is refused, and the
    descriptor is the store even if its path is later replaced (which
    :class:`~vcfzarr_sql.store.kvstore.DirectoryStore` also reports).
    """

    def __init__(self, location: str, directory: str, root: str):
        try:
            relative = os.path.relpath(directory, root)
            parts = [] if relative == os.curdir else relative.split(os.sep)
            fd = _descend(os.open(root, DIRECTORY_FLAGS), parts, owned=True)
        except OSError as err:
            if err.errno == errno.ELOOP:  # a component became a symlink since it was resolved
                raise AccessError(f"{location}: not under a served data directory") from None
            raise StoreError(f"{location}: cannot open the store's directory "
                             f"({err.strerror})") from None
        super().__init__(location, directory, root_fd=fd)

    def get(self, key: str) -> bytes | None:
        parts = key.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise AccessError(f"{self.location}: {key} leads outside the store")
        root = self._root()
        try:
            fd = _descend(root, parts[:-1], owned=False)
            try:
                file = self.open_file(parts[-1], key, os.O_NOFOLLOW, dir_fd=fd)
            finally:
                if fd != root:
                    os.close(fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            if err.errno == errno.ELOOP:  # a symlink on the way
                raise AccessError(f"{self.location}: {key} leads outside the store") from None
            raise unreadable(self, key, err) from None
        return self.read_file(file, key)


def _descend(fd: int, parts: list[str], *, owned: bool) -> int:
    """The directory ``parts`` below the directory ``fd``, opened one real directory at a time
    (never through a symlink: OSError ELOOP). ``owned``: ``fd`` is closed once it is not needed,
    as is every directory on the way (also on error)."""
    for part in parts:
        try:
            below = os.open(part, DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
        except NotADirectoryError:  # (Linux says so, not ELOOP, for a link with O_DIRECTORY)
            if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
            raise
        finally:
            if owned:
                os.close(fd)
        fd, owned = below, True
    return fd
