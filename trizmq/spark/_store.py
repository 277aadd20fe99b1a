"""Where a log lives: a local directory or a prefix on cluster storage, one small interface.

A location is a plain path, a ``file://`` URI (both local: POSIX files, appends,
``flock``, ``fsync``) or any URI that ``pyarrow.fs`` opens (``s3://bucket/prefix``,
``gs://``, ``abfs://``, ``hdfs://``): an object store, where an object is written whole
(atomically: it exists complete or not at all) and never appended to. Credentials and
endpoints come from each filesystem's own configuration (for S3 the ``AWS_*``
environment variables), never from a trizmq option. A URI is never turned into a local
directory of the same name.

This module needs pyarrow only for remote locations; it imports neither trio nor pyspark.
"""

from __future__ import annotations

import builtins
import contextlib
import os
from pathlib import Path
from typing import Protocol, overload
from urllib.parse import urlparse

__all__ = ["LocalStore", "RemoteStore", "Store", "open_store"]


class Store:
    """The operations a log needs from its location. Names are relative ("head", "seg-…")."""

    #: True for POSIX storage: the log appends to segments and flocks a lock file
    local: bool = False
    #: the location as the user gave it (for messages)
    location: str = ""

    def list(self, prefix: str = "", under: str = "") -> list[str]:
        """Names (relative to ``under``) of the objects in ``under`` starting with ``prefix``."""
        raise NotImplementedError

    def children(self) -> builtins.list[str]:
        """Names of the sub-locations (directories, or prefixes on an object store) here."""
        raise NotImplementedError

    def read(self, name: str) -> bytes:
        """The whole object; ``FileNotFoundError`` if there is none."""
        raise NotImplementedError

    def read_from(self, name: str, position: int) -> bytes:
        """The object's bytes from ``position`` on (a local file is read from there)."""
        return self.read(name)[position:]

    def write(self, name: str, data: bytes, *, sync: bool = True) -> None:
        """Replace the object ``name`` with ``data`` atomically (durably when ``sync``)."""
        raise NotImplementedError

    def delete(self, name: str) -> None:
        """Delete ``name``; nothing if it is already gone."""
        raise NotImplementedError

    def exists(self, name: str = "") -> bool:
        """Whether ``name`` (or, with no name, the location itself) exists."""
        raise NotImplementedError

    def child(self, name: str) -> Store:
        """The store of a sub-location."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"


class LocalStore(Store):
    """A local directory: files replaced by rename, fsync-ed on request."""

    local = True

    def __init__(self, path: str | os.PathLike[str], location: str | None = None) -> None:
        self.path = Path(path)
        self.location = location if location is not None else os.fspath(path)

    def list(self, prefix: str = "", under: str = "") -> list[str]:
        base = self.path / under if under else self.path
        try:
            return sorted(p.name for p in base.iterdir() if p.name.startswith(prefix))
        except FileNotFoundError:
            return []

    def children(self) -> builtins.list[str]:
        try:
            return sorted(p.name for p in self.path.iterdir() if p.is_dir())
        except FileNotFoundError:
            return []

    def read(self, name: str) -> bytes:
        return (self.path / name).read_bytes()

    def read_from(self, name: str, position: int) -> bytes:
        with open(self.path / name, "rb") as f:
            f.seek(position)
            return f.read()

    def write(self, name: str, data: bytes, *, sync: bool = True) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.path / name).unlink()

    def exists(self, name: str = "") -> bool:
        return (self.path / name).exists() if name else self.path.is_dir()

    def child(self, name: str) -> LocalStore:
        return LocalStore(self.path / name, f"{self.location.rstrip('/')}/{name}")


class _FileInfo(Protocol):
    """A ``pyarrow.fs.FileInfo``: its path, and its type (a ``pyarrow.fs.FileType``)."""

    @property
    def path(self) -> str: ...

    @property
    def type(self) -> object: ...


class _FileSelector(Protocol):
    """A ``pyarrow.fs.FileSelector``: the prefix whose objects it lists."""

    @property
    def base_dir(self) -> str: ...


class _Stream(Protocol):
    """A ``pyarrow`` input or output stream, used as a context manager."""

    def __enter__(self) -> _Stream: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def read(self) -> bytes: ...

    def write(self, data: bytes) -> object: ...


class FileSystem(Protocol):
    """The calls a :class:`RemoteStore` makes on a ``pyarrow.fs.FileSystem`` (pyarrow
    has no type annotations)."""

    @overload
    def get_file_info(self, paths_or_selector: str, /) -> _FileInfo: ...

    @overload
    def get_file_info(self, paths_or_selector: _FileSelector, /) -> list[_FileInfo]: ...

    def open_input_stream(self, path: str, /) -> _Stream: ...

    def open_output_stream(self, path: str, /) -> _Stream: ...

    def delete_file(self, path: str, /) -> None: ...


class RemoteStore(Store):
    """A prefix of a ``pyarrow.fs`` filesystem (an object store, HDFS): whole-object writes."""

    local = False

    def __init__(self, fs: FileSystem, root: str, location: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.location = location

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}" if name else self.root

    def list(self, prefix: str = "", under: str = "") -> list[str]:
        from pyarrow import fs as pafs  # type: ignore[import-untyped,unused-ignore]

        base = self._path(under)
        selector = pafs.FileSelector(base, allow_not_found=True)
        names = []
        for info in self.fs.get_file_info(selector):
            name = info.path.rsplit("/", 1)[-1]
            if name.startswith(prefix) and info.type == pafs.FileType.File:
                names.append(name)
        return sorted(names)

    def children(self) -> builtins.list[str]:
        from pyarrow import fs as pafs

        selector = pafs.FileSelector(self.root, allow_not_found=True)
        return sorted(
            info.path.rstrip("/").rsplit("/", 1)[-1]
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.Directory
        )

    def read(self, name: str) -> bytes:
        with self.fs.open_input_stream(self._path(name)) as f:
            return bytes(f.read())

    def write(self, name: str, data: bytes, *, sync: bool = True) -> None:
        # An object store publishes an object whole when its upload completes (the sync).
        with self.fs.open_output_stream(self._path(name)) as f:
            f.write(data)

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self._path(name))

    def exists(self, name: str = "") -> bool:
        from pyarrow import fs as pafs

        if not name:  # a prefix exists once anything is under it (object stores have no dirs)
            info = self.fs.get_file_info(self.root)
            return bool(info.type != pafs.FileType.NotFound) or bool(self.list())
        return bool(self.fs.get_file_info(self._path(name)).type == pafs.FileType.File)

    def child(self, name: str) -> RemoteStore:
        return RemoteStore(self.fs, self._path(name), f"{self.location.rstrip('/')}/{name}")


_REMOTE: dict[tuple[int, str], tuple[FileSystem, str]] = {}


def open_store(location: str) -> Store:
    """The store of ``location``: a plain path or ``file://`` URI is local, other URIs remote.

    Raises ``ValueError`` naming the location if ``pyarrow.fs`` cannot open its scheme.
    """
    if not isinstance(location, str) or not location.strip():
        raise ValueError(f"a log location must be a path or a URI, not {location!r}")
    location = location.strip()
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if not scheme or (len(scheme) == 1 and os.name == "nt"):
        return LocalStore(location)
    if scheme == "file":
        return LocalStore(parsed.path or "/", location)
    key = (os.getpid(), location)  # a forked worker opens its own (SDK clients do not fork)
    cached = _REMOTE.get(key)
    if cached is None:
        try:
            from pyarrow import fs as pafs

            filesystem, root = pafs.FileSystem.from_uri(location)
        except (ImportError, ValueError, OSError) as exc:
            raise ValueError(f"cannot open the log location {location!r}: {exc}") from exc
        cached = _REMOTE[key] = (filesystem, root)
    return RemoteStore(cached[0], cached[1], location)
