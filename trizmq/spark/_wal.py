"""The write-ahead log of received messages: segment files in one directory.

Layout of a log directory::

    seg-<first offset, 20 digits>.log   records, appended by the one writer
    head                                 the next offset to be written (all below are durable)
    committed                            every offset below this one is processed (truncatable)
    lock                                 flock-ed by the writer: one owner per log

A record is ``<II`` (length of the rest, crc32 of the rest) then ``<QqiI`` (offset,
received_at in microseconds since the epoch, topic length or -1 for none, frame
count), the frame lengths (``<I`` each), the topic and the frames. A torn record at
the end of the last segment (a crash mid-write) is cut off when a writer reopens the
log. The writer updates ``head`` only after the records are written (and, with
``fsync``, synced), so an offset below ``head`` is always readable.

This module needs neither trio nor pyspark.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import struct
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "LogWriter",
    "Record",
    "Columns",
    "commit",
    "read_committed",
    "read_head",
    "read_columns",
    "read_range",
    "segments",
]

_PREFIX = struct.Struct("<II")
_HEADER = struct.Struct("<QqiI")
_LEN = struct.Struct("<I")
_SEG = "seg-"
DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024


class Record(NamedTuple):
    """One received message."""

    offset: int
    received_at_us: int
    topic: bytes | None
    frames: list[bytes]


def encode(offset: int, received_at_us: int, topic: bytes | None, frames: Sequence[bytes]) -> bytes:
    """The bytes of one record."""
    n = len(frames)
    body = b"".join(
        [
            _HEADER.pack(offset, received_at_us, -1 if topic is None else len(topic), n),
            struct.pack(f"<{n}I", *map(len, frames)),
            topic or b"",
            *frames,
        ]
    )
    return _PREFIX.pack(len(body), zlib.crc32(body)) + body


def _decode(body: memoryview) -> Record:
    offset, at, tlen, n = _HEADER.unpack_from(body, 0)
    pos = _HEADER.size
    lengths = struct.unpack_from(f"<{n}I", body, pos)
    pos += 4 * n
    topic: bytes | None = None
    if tlen >= 0:
        topic = bytes(body[pos : pos + tlen])
        pos += tlen
    frames = []
    for length in lengths:
        frames.append(bytes(body[pos : pos + length]))
        pos += length
    return Record(offset, at, topic, frames)


def segments(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """The segment files of a log, as (first offset, path), oldest first."""
    found = []
    for path in Path(directory).glob(f"{_SEG}*.log"):
        with contextlib.suppress(ValueError):
            found.append((int(path.name[len(_SEG) : -4]), path))
    return sorted(found)


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def _write_int(path: Path, value: int, *, sync: bool) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(str(value))
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def read_head(directory: str | os.PathLike[str]) -> int:
    """The next offset the writer will use: every offset below it is in the log."""
    return _read_int(Path(directory) / "head")


def read_committed(directory: str | os.PathLike[str]) -> int:
    """The committed mark: every offset below it was processed by a query."""
    return _read_int(Path(directory) / "committed")


def commit(directory: str | os.PathLike[str], end: int) -> None:
    """Record that offsets below ``end`` are processed and delete the segments holding only them.

    The last segment (the one the writer appends to) is never deleted.
    """
    path = Path(directory)
    if end > read_committed(path):
        _write_int(path / "committed", end, sync=True)
    segs = segments(path)
    for (_first, seg), (next_first, _next) in itertools.pairwise(segs):
        if next_first <= end:
            with contextlib.suppress(FileNotFoundError):
                seg.unlink()


def _scan(path: Path) -> Iterator[tuple[int, int, memoryview]]:
    """(position, end position, body) of every whole, valid record of a segment."""
    data = memoryview(path.read_bytes())
    pos, size = 0, len(data)
    while pos + _PREFIX.size <= size:
        length, crc = _PREFIX.unpack_from(data, pos)
        end = pos + _PREFIX.size + length
        if end > size:
            return
        body = data[pos + _PREFIX.size : end]
        if zlib.crc32(body) != crc:
            return
        yield pos, end, body
        pos = end


def read_range(directory: str | os.PathLike[str], start: int, end: int) -> Iterator[Record]:
    """The records with ``start <= offset < end``, in offset order.

    Raises ``LookupError`` if a record of the range is missing (truncated by a commit
    or never written), so that a query never silently skips data.
    """
    if end <= start:
        return
    segs = segments(directory)
    expected = start
    for i, (first, path) in enumerate(segs):
        following = segs[i + 1][0] if i + 1 < len(segs) else None
        if following is not None and following <= start:
            continue
        if first >= end:
            break
        try:
            scanned = _scan(path)
            for _pos, _end, body in scanned:
                offset = _HEADER.unpack_from(body, 0)[0]
                if offset < start:
                    continue
                if offset >= end:
                    return
                if offset != expected:
                    break
                yield _decode(body)
                expected += 1
        except FileNotFoundError:
            break
    if expected < end:
        raise LookupError(
            f"the log in {os.fspath(directory)} has no record {expected} "
            f"(range {start}..{end}): truncated or lost"
        )


class Columns(NamedTuple):
    """Records in columns: offsets, times, topics, every frame flat, each record's frame count."""

    offsets: list[int]
    received_at_us: list[int]
    topics: list[bytes | None]
    frames: list[bytes]
    counts: list[int]


def read_columns(
    directory: str | os.PathLike[str], start: int, end: int, rows: int = 65536
) -> Iterator[Columns]:
    """As :func:`read_range`, in column chunks of up to ``rows`` records (the fast path)."""
    if end <= start:
        return
    expected = start
    header = _HEADER.unpack_from
    prefix = _PREFIX.unpack_from
    crc32 = zlib.crc32
    segs = segments(directory)
    cols = Columns([], [], [], [], [])
    for i, (first, path) in enumerate(segs):
        following = segs[i + 1][0] if i + 1 < len(segs) else None
        if following is not None and following <= start:
            continue
        if first >= end:
            break
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            break
        pos, size = 0, len(data)
        while pos + 8 <= size and expected < end:
            length, crc = prefix(data, pos)
            body_at = pos + 8
            pos = body_at + length
            if pos > size:
                break
            offset, at, tlen, n = header(data, body_at)
            if offset < start:
                continue
            if offset != expected or crc32(data[body_at:pos]) != crc:
                break
            at_data = body_at + 24 + 4 * n
            lengths = struct.unpack_from(f"<{n}I", data, body_at + 24) if n != 1 else None
            if tlen >= 0:
                cols.topics.append(data[at_data : at_data + tlen])
                at_data += tlen
            else:
                cols.topics.append(None)
            if lengths is None:
                cols.frames.append(data[at_data:pos])
            else:
                for flen in lengths:
                    cols.frames.append(data[at_data : at_data + flen])
                    at_data += flen
            cols.offsets.append(offset)
            cols.received_at_us.append(at)
            cols.counts.append(n)
            expected += 1
            if len(cols.offsets) >= rows:
                yield cols
                cols = Columns([], [], [], [], [])
        if expected >= end:
            break
    if cols.offsets:
        yield cols
    if expected < end:
        raise LookupError(
            f"the log in {os.fspath(directory)} has no record {expected} "
            f"(range {start}..{end}): truncated or lost"
        )


class LogWriter:
    """The one appender of a log directory (it holds the directory's lock)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        fsync: bool = True,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self._lock = open(self.directory / "lock", "a+")  # noqa: SIM115 (held while open)
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise RuntimeError(
                f"the log in {os.fspath(directory)} is owned by another writer "
                "(a spool or a running query)"
            ) from None
        self.next_offset = max(read_head(self.directory), read_committed(self.directory))
        segs = segments(self.directory)
        self._file = None
        self._size = 0
        if segs:
            first, path = segs[-1]
            valid_end = 0
            last = first - 1
            for _pos, end, body in _scan(path):
                valid_end = end
                last = _HEADER.unpack_from(body, 0)[0]
            with open(path, "r+b") as f:  # cut a torn tail off
                f.truncate(valid_end)
            self.next_offset = max(self.next_offset, last + 1)
            self._file = open(path, "ab")  # noqa: SIM115
            self._size = valid_end
        _write_int(self.directory / "head", self.next_offset, sync=fsync)

    def append(self, messages: Sequence[tuple[int, bytes | None, Sequence[bytes]]]) -> int:
        """Write ``(received_at_us, topic, frames)`` messages durably; return the new head."""
        if not messages:
            return self.next_offset
        if self._file is None or self._size >= self.segment_bytes:
            self._roll()
        assert self._file is not None
        offset = self.next_offset
        chunks = []
        for at, topic, frames in messages:
            chunks.append(encode(offset, at, topic, frames))
            offset += 1
        data = b"".join(chunks)
        self._file.write(data)
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        self._size += len(data)
        self.next_offset = offset
        _write_int(self.directory / "head", offset, sync=False)
        return offset

    def _roll(self) -> None:
        if self._file is not None:
            self._file.close()
        path = self.directory / f"{_SEG}{self.next_offset:020d}.log"
        self._file = open(path, "ab")  # noqa: SIM115
        self._size = path.stat().st_size
        if self.fsync:
            dfd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def close(self) -> None:
        """Close the segment and release the lock."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._lock.close()
