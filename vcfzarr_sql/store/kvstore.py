"""Key/value access to the bytes of a Zarr store: a local directory, a zip file, or an fsspec URL.

A Zarr store is a mapping from keys (``"variant_position/0"``) to bytes; this module is the only
place that knows where those bytes live. Every reader here is safe to share between threads.
"""

from __future__ import annotations

import collections
import os
import stat
import threading
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

from vcfzarr_sql.errors import StoreError
from vcfzarr_sql.store.bounds import MAX_CHUNK_BYTES_VARIABLE, max_chunk_bytes

#: How a store's directory is opened: a descriptor to read its keys relative to.
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: Keys whose presence at a prefix marks a Zarr node (v2 group, v2 array, v3 node).
_NODE_KEYS = (".zgroup", ".zarray", "zarr.json")


class KeyValueStore(Protocol):
    """Read-only key/value view of a store (its attributes are read-only too)."""

    @property
    def location(self) -> str:
        """The location as the user gave it (used in error messages)."""
        ...

    @property
    def local_directory(self) -> str | None:
        """The directory the store lives in, when it is a plain local directory (writable),
        else None."""
        ...

    @property
    def revalidates(self) -> bool:
        """Whether reading the root documents again tells if the store changed (not for an
        archive, read once)."""
        ...

    def get(self, key: str) -> bytes | None:
        """The bytes stored under ``key``, or None when the key is absent."""
        ...

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        """The bytes of each present key among ``keys``."""
        ...

    def children(self) -> list[str]:
        """Names of the entries directly under the store's root."""
        ...

    def close(self) -> None:
        """Release open file handles."""
        ...


class DirectoryStore:
    """A store in a local directory: keys are relative file paths.

    The directory is opened once, and every key is read relative to that descriptor
    (``openat``), so all reads come from the directory that was opened. Before each read the
    path is checked to still lead to it (device and inode): a store directory replaced while
    it is read (by a link to another store, say) is a StoreError, never rows of another store.
    """

    def __init__(self, location: str, directory: str, root_fd: int | None = None):
        self.location = location
        self.local_directory = directory
        self.revalidates = True
        self._fd: int | None = None
        try:
            fd = os.open(directory, DIRECTORY_FLAGS) if root_fd is None else root_fd
        except OSError as err:
            raise StoreError(f"{location}: cannot open the store's directory "
                             f"({err.strerror})") from None
        self._fd = fd
        st = os.fstat(fd)
        self._identity = (st.st_dev, st.st_ino)

    def _root(self) -> int:
        """The store directory's descriptor, once its path is checked to still lead to it."""
        fd = self._fd
        if fd is None:
            raise StoreError(f"{self.location}: the store is closed")
        try:
            st = os.stat(self.local_directory)
            same = (st.st_dev, st.st_ino) == self._identity
        except OSError:
            same = False
        if not same:
            raise StoreError(f"{self.location}: the store's directory was moved or replaced "
                             "while it was read")
        return fd

    def get(self, key: str) -> bytes | None:
        fd = self._root()
        try:
            file = self.open_file(key, key, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            raise unreadable(self, key, err) from None
        return self.read_file(file, key)

    def open_file(self, path: str, key: str, flags: int = 0, dir_fd: int | None = None) -> OpenFile | None:
        """The file at ``path`` (of ``key``; relative to ``dir_fd`` when given) open for reading,
        None when it is a directory; StoreError when it is anything but a regular file (a FIFO
        would block the reader, a socket or device fail); OSError when it cannot be opened.
        ``flags``: more ``os.open`` flags."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | flags, dir_fd=dir_fd)
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            return OpenFile(fd, st.st_size)
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            return None
        raise StoreError(f"{self.location}: {key} is not a regular file")

    def read_file(self, file: OpenFile | None, key: str) -> bytes | None:
        """:meth:`read_value` of a file :meth:`open_file` gave (None: a directory), closed after."""
        if file is None:
            return None
        try:
            return self.read_value(file, key)
        finally:
            os.close(file.fd)

    def read_value(self, file: OpenFile, key: str) -> bytes:
        """The bytes of the open ``file`` of ``key``: StoreError past ``max_chunk_bytes()``."""
        limit = max_chunk_bytes()
        # Read with the descriptor (no Python file object: 3 us of a small chunk's read), the
        # size its ``fstat`` gave (a read asks for that many bytes, not the limit: a small
        # chunk's read is 4x faster so) and one more, which says whether the file grew since.
        value = _read_upto(file.fd, min(file.size, limit) + 1)
        if len(value) > file.size:  # the file grew since fstat
            value += _read_upto(file.fd, limit + 1 - len(value))
        _bounded(self, key, len(value), limit)
        return value

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        return _present(self, keys)

    def children(self) -> list[str]:
        return sorted(os.listdir(self._root()))

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        # (at interpreter exit this module's globals may already be None, `os` and `contextlib`
        # with them: the function that closes is bound here, and nothing else global is used)
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            try:
                _close(fd)
            except OSError:
                pass


class ZipStore:
    """A store in a zip file, as zarr's ``ZipStore`` writes it (keys at the root of the archive).

    An archive holding one top-level folder that is the store (``zip -r x.zip x.zarr``) works too.
    """

    def __init__(self, location: str, file: Any):
        self.location = location
        self.local_directory = None
        self.revalidates = False
        self._lock = threading.Lock()
        self._file = file  # a path, or a file object this store owns
        import zipfile  # (imported by zip stores only: a directory store's process saves 3 ms)

        try:
            self._zip = zipfile.ZipFile(file)
        except (zipfile.BadZipFile, OSError) as err:
            raise StoreError(f"{location}: not a readable zip file ({err})") from None
        names = self._zip.namelist()
        self._names = set(names)
        if len(self._names) != len(names):  # zipfile reads the last of them, other readers the first
            twice = min(name for name, n in collections.Counter(names).items() if n > 1)
            self.close()
            raise StoreError(f"{location}: the zip archive holds {twice} more than once "
                             "(a damaged or forged archive)")
        self._prefix = self._root_prefix()

    def _root_prefix(self) -> str:
        if any(key in self._names for key in _NODE_KEYS):
            return ""
        tops = {name.split("/", 1)[0] for name in self._names if "/" in name}
        for top in sorted(tops):
            if any(f"{top}/{key}" in self._names for key in _NODE_KEYS):
                return f"{top}/"
        return ""

    def get(self, key: str) -> bytes | None:
        name = self._prefix + key
        if name not in self._names:
            return None
        with self._lock:
            _bounded(self, key, self._zip.getinfo(name).file_size, max_chunk_bytes())
            return self._zip.read(name)  # at most file_size bytes: zipfile stops there

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        return _present(self, keys)

    def children(self) -> list[str]:
        n = len(self._prefix)
        return sorted(
            {name[n:].split("/", 1)[0] for name in self._names if name.startswith(self._prefix)}
            - {""}
        )

    def close(self) -> None:
        self._zip.close()
        if not isinstance(self._file, str):
            self._file.close()


#: What an fsspec filesystem raises for a key that is not there.
_ABSENT = (FileNotFoundError, IsADirectoryError, NotADirectoryError)


class FsspecStore:
    """A store at an fsspec URL (``s3://``, ``gs://``, ``memory://``, ``file://``...).

    Keys are read as given (no glob patterns), a failed read is a StoreError naming the key
    (never an absent key), and a value over ``max_chunk_bytes()`` is refused once received.
    """

    def __init__(self, location: str, fs: Any, root: str):
        self.location = location
        self.local_directory = None
        self.revalidates = True
        self._fs = fs
        self._root = root.rstrip("/")

    def _path(self, key: str) -> str:
        return f"{self._root}/{key}"

    def get(self, key: str) -> bytes | None:
        try:
            value = self._fs.cat_file(self._path(key))
        except _ABSENT:
            return None
        except Exception as err:  # noqa: BLE001 - any filesystem's error, named for the user
            raise unreadable(self, key, err) from err
        return self._within_bounds(key, value)

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        # (cat_ranges reads each path as given and concurrently on async filesystems; ``cat``
        # would expand glob characters in a store's path)
        values = self._fs.cat_ranges([self._path(key) for key in keys], None, None, on_error="return")
        found = {}
        for key, value in zip(keys, values):
            if isinstance(value, _ABSENT):
                continue
            if isinstance(value, BaseException):
                raise unreadable(self, key, value) from value
            found[key] = self._within_bounds(key, value)
        return found

    def _within_bounds(self, key: str, value: bytes) -> bytes:
        _bounded(self, key, len(value), max_chunk_bytes())
        return value

    def children(self) -> list[str]:
        entries = self._fs.ls(self._root, detail=False)
        return sorted(self._fs._strip_protocol(e).rstrip("/").rsplit("/", 1)[-1] for e in entries)

    def close(self) -> None:
        pass


class OpenFile(NamedTuple):
    """A regular file of a store open for reading: its descriptor and the size ``fstat`` gave."""

    fd: int
    size: int


def _read_upto(fd: int, count: int) -> bytes:
    """Up to ``count`` bytes from descriptor ``fd``: fewer only at the end of the file."""
    value = os.read(fd, count)
    while 0 < len(value) < count:
        more = os.read(fd, count - len(value))
        if not more:
            break
        value += more
    return value


def _bounded(store: KeyValueStore, key: str, size: int, limit: int) -> None:
    """StoreError when the value of ``key`` (``size`` bytes) is over ``limit``."""
    if size > limit:
        raise StoreError(f"{store.location}: {key} holds more than {limit} bytes "
                         f"(${MAX_CHUNK_BYTES_VARIABLE})")


def unreadable(store: KeyValueStore, key: str, err: BaseException) -> StoreError:
    """The StoreError for ``key`` of ``store`` that could not be read because of ``err`` (an
    OSError by its reason, which names no path; another error by its type and message)."""
    if isinstance(err, OSError) and err.strerror:
        detail = err.strerror
    else:
        detail = f"{type(err).__name__}: {' '.join(str(err).split()) or 'no detail'}"
    return StoreError(f"{store.location}: cannot read {key} ({detail})")


def _present(store: KeyValueStore, keys: Iterable[str]) -> dict[str, bytes]:
    out = {}
    for key in keys:
        value = store.get(key)
        if value is not None:
            out[key] = value
    return out


def is_url(path: str) -> bool:
    """True when ``path`` names an fsspec URL (``proto://...`` or a chained ``a::b://...``)."""
    return "://" in path or "::" in path


def open_kv(path: str, storage_options: dict | None = None) -> KeyValueStore:
    """The key/value store at ``path``; StoreError when nothing usable is there."""
    if is_url(path):
        return _open_url(path, storage_options or {})
    if os.path.isdir(path):
        return DirectoryStore(path, path)
    if os.path.isfile(path):
        import zipfile

        if zipfile.is_zipfile(path):
            return ZipStore(path, path)
        raise StoreError(f"{path}: not a Zarr store (a file that is not a zip archive)")
    raise StoreError(f"{path}: no such file or directory")


def _open_url(url: str, storage_options: dict) -> KeyValueStore:
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec is a test dependency
        raise StoreError(f"{url}: reading URLs needs fsspec (pip install fsspec)") from None
    try:
        fs, root = fsspec.core.url_to_fs(url, **storage_options)
    except (ValueError, ImportError) as err:
        raise StoreError(f"{url}: cannot open URL ({err})") from None
    if root.endswith(".zip") and fs.isfile(root):
        return ZipStore(url, fs.open(root, "rb"))
    if not fs.exists(root):
        raise StoreError(f"{url}: no such file or directory")
    return FsspecStore(url, fs, root)
