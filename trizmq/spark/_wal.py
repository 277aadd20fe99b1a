"""The write-ahead log of received messages: segments at one location (local or remote).

Layout of a log location (a local directory, or a prefix on S3, GCS, ABFS, HDFS)::

    seg-<first offset, 20 digits>.cols  blocks of records in columns (written today)
    seg-<first offset, 20 digits>.log   records one by one (written before; still read)
    head                                 the next offset to be written (all below are durable)
    committed                            every offset below this one is processed (truncatable)
    lock                                 local: flock-ed by the writer (one owner per log)
    lease                                remote: the writer's lease (one owner per log)

A ``.cols`` segment is a sequence of blocks, one per append of the writer: ``<II``
(length of the rest, crc32 of the rest), then ``<QIIII`` (first offset, records ``n``,
frames ``f``, topic bytes ``t``, 0), then, each array little-endian: ``int64[n]``
received_at (microseconds since the epoch), ``int32[n]`` topic lengths (-1 for none),
``int32[n]`` frame counts, ``int32[f]`` frame lengths, the topics (``t`` bytes), the
frames, and zeros up to a multiple of 8 bytes. The records of a block have offsets
``first .. first + n - 1``. A reader checks one CRC per block and turns a block into
Arrow arrays without a step per record (``_arrowlog``); every block starts 8-byte
aligned, so its arrays can be used in place.

A ``.log`` segment (the format before blocks) is a sequence of records, each ``<II``
(length of the rest, crc32 of the rest) then ``<QqiI`` (offset, received_at, topic
length or -1, frame count), the frame lengths (``<I`` each), the topic and the frames.
The sink's exactly-once staging still writes records so (:func:`encode`). A writer
that opens a log whose last segment is a ``.log`` one starts a ``.cols`` segment.

The writer updates ``head`` only after the blocks are written (and, with ``fsync``,
synced), so an offset below ``head`` is always readable.

On a local directory the writer appends to the last segment and rolls to a new one
past ``segment_bytes``; a torn block (or record) at the end of the last segment (a crash
mid-write) is cut off when a writer reopens the log. On an object store nothing can be
appended: every write of the writer is a new segment object, published whole by its
upload (there is no torn tail), and ``head`` follows it. There is no ``flock`` either:
the writer holds a lease (:class:`Lease`) that it renews, and a writer that was killed
loses the log once its lease runs out.

This module needs neither trio nor pyspark.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import itertools
import json
import mmap
import os
import socket
import struct
import sys
import threading
import time
import uuid
import zlib
from array import array
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import IO, NamedTuple, TypedDict

from ._store import Store, open_store

__all__ = [
    "Lease",
    "LeaseLost",
    "LogWriter",
    "PayloadIndex",
    "Record",
    "Columns",
    "commit",
    "encode_block",
    "read_committed",
    "read_head",
    "read_columns",
    "read_range",
    "segments",
]

_PREFIX = struct.Struct("<II")
_HEADER = struct.Struct("<QqiI")
_LEN = struct.Struct("<I")
_ONE = struct.Struct("<QqiII")  # the header of a record of one frame, and its length
_BLOCK = struct.Struct("<QIIII")  # after the prefix: first offset, n, frames, topic bytes, 0
#: bytes before a block's arrays: the prefix and the block header
BLOCK_HEAD = _PREFIX.size + _BLOCK.size
_SEG = "seg-"
#: the file name endings of the two segment formats
BLOCKS, RECORDS = ".cols", ".log"
#: bytes of topics or of frames one block may hold (its arrays' offsets are int32)
_BLOCK_DATA = 1 << 30
DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
#: seconds a remote writer's lease lasts unless renewed
DEFAULT_LEASE_SECONDS = 30.0

Location = str | os.PathLike[str] | Store
#: what a segment's bytes are read as: a whole object, or a local file mapped
Buffer = bytes | memoryview | mmap.mmap


def _store(location: Location) -> Store:
    return location if isinstance(location, Store) else open_store(os.fspath(location))


class Record(NamedTuple):
    """One received message."""

    offset: int
    received_at_us: int
    topic: bytes | None
    frames: list[bytes]


def encode(offset: int, received_at_us: int, topic: bytes | None, frames: Sequence[bytes]) -> bytes:
    """The bytes of one record."""
    n = len(frames)
    if n == 1:  # the common case, without building a format per record
        frame = frames[0]
        if topic is None:
            body = _ONE.pack(offset, received_at_us, -1, 1, len(frame)) + frame
        else:
            head = _ONE.pack(offset, received_at_us, len(topic), 1, len(frame))
            body = b"".join((head, topic, frame))
    else:
        body = b"".join(
            [
                _HEADER.pack(offset, received_at_us, -1 if topic is None else len(topic), n),
                struct.pack(f"<{n}I", *map(len, frames)),
                topic or b"",
                *frames,
            ]
        )
    return _PREFIX.pack(len(body), zlib.crc32(body)) + body


Message = tuple[int, bytes | None, Sequence[bytes]]


def encode_block(first: int, messages: Sequence[Message]) -> bytes:
    """The bytes of one block holding ``messages`` (``(received_at_us, topic, frames)``)
    at offsets ``first`` on: a block is checked by one CRC and decoded in columns."""
    n = len(messages)
    topics = [m[1] for m in messages]
    counts = array("i", [len(m[2]) for m in messages])
    if counts.count(1) == n:  # the common case: one frame each
        flat = [m[2][0] for m in messages]
    else:
        flat = [f for m in messages for f in m[2]]
    frames = b"".join(flat)
    topic_bytes = b"".join([t for t in topics if t])
    if (len(frames) > _BLOCK_DATA or len(topic_bytes) > _BLOCK_DATA) and n > 1:
        half = n // 2  # int32 array offsets: split what one block cannot hold
        return encode_block(first, messages[:half]) + encode_block(first + half, messages[half:])
    lengths = array("i", map(len, flat))  # OverflowError for a frame of 2 GiB or more
    ats = array("q", [m[0] for m in messages])
    tlens = array("i", [-1 if t is None else len(t) for t in topics])
    if sys.byteorder != "little":
        for a in (ats, tlens, counts, lengths):
            a.byteswap()
    head = _BLOCK.pack(first, n, len(flat), len(topic_bytes), 0)
    size = _BLOCK.size + 16 * n + 4 * len(flat) + len(topic_bytes) + len(frames)
    pad = b"\0" * (-(_PREFIX.size + size) % 8)
    body = b"".join((head, ats, tlens, counts, lengths, topic_bytes, frames, pad))
    return _PREFIX.pack(len(body), zlib.crc32(body)) + body


class Block(NamedTuple):
    """Where one valid block of a segment lies, and its sizes."""

    pos: int  # of its prefix in the segment
    end: int  # past its padding
    first: int
    n: int
    frames: int
    topic_bytes: int


def _scan_blocks(data: Buffer, *, check: bool = True) -> Iterator[Block]:
    """Every whole, valid block of a ``.cols`` segment's bytes (the CRC checked if ``check``)."""
    pos, size = 0, len(data)
    while pos + BLOCK_HEAD <= size:
        length, crc = _PREFIX.unpack_from(data, pos)
        end = pos + _PREFIX.size + length
        if end > size or length < _BLOCK.size:
            return
        if check and zlib.crc32(memoryview(data)[pos + _PREFIX.size : end]) != crc:
            return
        first, n, frames, tbytes, _zero = _BLOCK.unpack_from(data, pos + _PREFIX.size)
        yield Block(pos, end, first, n, frames, tbytes)
        pos = end


def block_crc_ok(data: Buffer, block: Block) -> bool:
    """Whether a block found with ``check=False`` has the CRC its prefix says."""
    crc = _PREFIX.unpack_from(data, block.pos)[1]
    return bool(zlib.crc32(memoryview(data)[block.pos + _PREFIX.size : block.end]) == crc)


def _block_records(data: Buffer, b: Block) -> Iterator[Record]:
    """The records of one block, one by one (the plain path; Spark reads in columns)."""
    n, nf = b.n, b.frames
    pos = b.pos + BLOCK_HEAD
    ats = struct.unpack_from(f"<{n}q", data, pos)
    tlens = struct.unpack_from(f"<{n}i", data, pos + 8 * n)
    counts = struct.unpack_from(f"<{n}i", data, pos + 12 * n)
    lengths = struct.unpack_from(f"<{nf}i", data, pos + 16 * n)
    tpos = pos + 16 * n + 4 * nf
    fpos = tpos + b.topic_bytes
    li = 0
    for i in range(n):
        topic: bytes | None = None
        if tlens[i] >= 0:
            topic = bytes(data[tpos : tpos + tlens[i]])
            tpos += tlens[i]
        frames = []
        for length in lengths[li : li + counts[i]]:
            frames.append(bytes(data[fpos : fpos + length]))
            fpos += length
        li += counts[i]
        yield Record(b.first + i, ats[i], topic, frames)


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


def _segment_names(store: Store) -> list[tuple[int, str]]:
    found = []
    for name in store.list(_SEG):
        stem, dot, ext = name.rpartition(".")
        if dot and f".{ext}" in (BLOCKS, RECORDS):
            with contextlib.suppress(ValueError):
                found.append((int(stem[len(_SEG) :]), name))
    return sorted(found)


def _last_offset(name: str, data: bytes | memoryview, first: int) -> tuple[int, int]:
    """(the last offset, the end of the valid bytes) of a segment (``first - 1``, 0: empty)."""
    last, valid_end = first - 1, 0
    if name.endswith(BLOCKS):
        for b in _scan_blocks(data):
            last, valid_end = b.first + b.n - 1, b.end
    else:
        for _pos, end, body in _scan(data):
            last, valid_end = _HEADER.unpack_from(body, 0)[0], end
    return last, valid_end


def segments(location: Location) -> list[tuple[int, str]]:
    """The segments of a log, as (first offset, path or URI), oldest first."""
    store = _store(location)
    base = store.location.rstrip("/")
    return [(first, f"{base}/{name}") for first, name in _segment_names(store)]


def _read_int(store: Store, name: str) -> int:
    try:
        return int(store.read(name).decode().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def read_head(location: Location) -> int:
    """The next offset the writer will use: every offset below it is in the log."""
    return _read_int(_store(location), "head")


def read_committed(location: Location) -> int:
    """The committed mark: every offset below it was processed by a query."""
    return _read_int(_store(location), "committed")


def commit(location: Location, end: int) -> None:
    """Record that offsets below ``end`` are processed and delete the segments holding only them.

    The last segment (the one the writer appends to) is never deleted.
    """
    store = _store(location)
    if end > read_committed(store):
        store.write("committed", str(end).encode(), sync=True)
    for (_first, seg), (next_first, _next) in itertools.pairwise(_segment_names(store)):
        if next_first <= end:
            store.delete(seg)


def _scan(data: bytes | memoryview) -> Iterator[tuple[int, int, memoryview]]:
    """(position, end position, body) of every whole, valid record of a segment's bytes."""
    data = memoryview(data)
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


def scan_file(path: str | os.PathLike[str]) -> Iterator[Record]:
    """Every whole, valid record of one local file of records (a segment, a staged file)."""
    for _pos, _end, body in _scan(Path(path).read_bytes()):
        yield _decode(body)


def decode_all(data: bytes) -> Iterator[Record]:
    """Every whole, valid record of ``data`` (the bytes of a segment or a staged object)."""
    for _pos, _end, body in _scan(data):
        yield _decode(body)


def _missing(store: Store, expected: int, start: int, end: int) -> LookupError:
    return LookupError(
        f"the log in {store.location} has no record {expected} "
        f"(range {start}..{end}): truncated or lost"
    )


def _covering(store: Store, start: int, end: int) -> Iterator[tuple[int, str]]:
    """The segments that may hold offsets ``start`` to ``end``."""
    segs = _segment_names(store)
    for i, (first, name) in enumerate(segs):
        following = segs[i + 1][0] if i + 1 < len(segs) else None
        if following is not None and following <= start:
            continue
        if first >= end:
            break
        yield first, name


def read_range(location: Location, start: int, end: int) -> Iterator[Record]:
    """The records with ``start <= offset < end``, in offset order.

    Raises ``LookupError`` if a record of the range is missing (truncated by a commit
    or never written), so that a query never silently skips data.
    """
    if end <= start:
        return
    store = _store(location)
    expected = start
    for _first, name in _covering(store, start, end):
        try:
            data = store.read(name)
        except FileNotFoundError:
            break
        if name.endswith(BLOCKS):
            records: Iterator[Record] = (
                r for b in _scan_blocks(data) if b.first + b.n > start
                for r in _block_records(data, b)
            )
        else:
            records = (_decode(body) for _pos, _end, body in _scan(data))
        for record in records:
            if record.offset < start:
                continue
            if record.offset >= end:
                return
            if record.offset != expected:
                break
            yield record
            expected += 1
    if expected < end:
        raise _missing(store, expected, start, end)


class Columns(NamedTuple):
    """Records in columns: offsets, times, topics, every frame flat, each record's frame count."""

    offsets: list[int]
    received_at_us: list[int]
    topics: list[bytes | None]
    frames: list[bytes]
    counts: list[int]


def read_columns(location: Location, start: int, end: int, rows: int = 65536) -> Iterator[Columns]:
    """As :func:`read_range`, in column chunks of up to ``rows`` records.

    The plain path (a Python step per record). Spark reads with
    ``_arrowlog.read_batches``, which turns blocks into Arrow as they are and goes
    through :func:`record_columns` only for ``.log`` segments.
    """
    if end <= start:
        return
    store = _store(location)
    expected = start
    for _first, name in _covering(store, start, end):
        try:
            data = store.read(name)
        except FileNotFoundError:
            break
        if name.endswith(BLOCKS):
            cols = Columns([], [], [], [], [])
            for b in _scan_blocks(data):
                if b.first + b.n <= expected:
                    continue
                for r in _block_records(data, b):
                    if r.offset < expected:
                        continue
                    if r.offset != expected or expected >= end:
                        break
                    cols.offsets.append(r.offset)
                    cols.received_at_us.append(r.received_at_us)
                    cols.topics.append(r.topic)
                    cols.frames.extend(r.frames)
                    cols.counts.append(len(r.frames))
                    expected += 1
                    if len(cols.offsets) >= rows:
                        yield cols
                        cols = Columns([], [], [], [], [])
                if expected >= end or b.first + b.n != expected:
                    break
            if cols.offsets:
                yield cols
        else:
            expected = yield from record_columns(data, expected, end, rows)
        if expected >= end:
            break
    if expected < end:
        raise _missing(store, expected, start, end)


def record_columns(
    data: bytes | mmap.mmap, expected: int, end: int, rows: int = 65536
) -> Generator[Columns, None, int]:
    """The records of a ``.log`` segment from ``expected`` on (below ``end``), in column
    chunks of up to ``rows``; returns the next offset expected (the first missing, if a
    record is torn, out of order or fails its CRC). Each record's CRC is checked."""
    header = _HEADER.unpack_from
    prefix = _PREFIX.unpack_from
    crc32 = zlib.crc32
    cols = Columns([], [], [], [], [])
    pos, size = 0, len(data)
    while pos + 8 <= size and expected < end:
        length, crc = prefix(data, pos)
        body_at = pos + 8
        pos = body_at + length
        if pos > size:
            break
        offset, at, tlen, n = header(data, body_at)
        if offset < expected:
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
    if cols.offsets:
        yield cols
    return expected


def _payload_sizes(data: Buffer, b: Block) -> Sequence[int]:
    """The payload (last frame) bytes of each record of a block (0 for no frames)."""
    pos = b.pos + BLOCK_HEAD
    lengths = struct.unpack_from(f"<{b.frames}i", data, pos + 16 * b.n)
    if b.frames == b.n:
        counts = struct.unpack_from(f"<{b.n}i", data, pos + 12 * b.n)
        if counts.count(1) == b.n:  # one frame each: the frames are the payloads
            return lengths
    else:
        counts = struct.unpack_from(f"<{b.n}i", data, pos + 12 * b.n)
    ends = itertools.accumulate(counts)
    return [lengths[e - 1] if c else 0 for e, c in zip(ends, counts, strict=True)]


class PayloadIndex:
    """The payload bytes of a log's records (each one's last frame), for sizing batches.

    A reader (the driver, for ``maxBytesPerTrigger``) keeps one per log. It reads each
    record's header once, as the log grows: a local segment being appended to is read
    on from where the last call stopped, and a remote segment, written whole, is read
    once. Only offsets from the first one asked for on are held, and :meth:`forget`
    drops those a commit made useless, so it holds the sizes of the log's uncommitted
    records at most (eight bytes each).
    """

    def __init__(self, location: Location) -> None:
        self.store = _store(location)
        self.base = 0
        self._sums = [0]  # payload bytes of offsets base .. base + i - 1
        self._segment: str | None = None
        self._position = 0  # in _segment, past the last record indexed

    @property
    def end(self) -> int:
        """The first offset not indexed yet."""
        return self.base + len(self._sums) - 1

    def _restart(self, start: int) -> None:
        self.base, self._sums, self._segment, self._position = start, [0], None, 0

    def extend(self, start: int, end: int) -> None:
        """Index offsets ``start`` to ``end`` (below the log's head); ``LookupError`` if missing."""
        if start < self.base or start > self.end:
            self._restart(start)
        if self.end >= end:
            return
        sums = self._sums
        for _first, name in _covering(self.store, self.end, end):
            if self.end >= end:
                break
            at = self._position if name == self._segment else 0
            try:
                data = memoryview(self.store.read_from(name, at))
            except FileNotFoundError:
                break
            if name.endswith(BLOCKS):
                for b in _scan_blocks(data):
                    if b.first > self.end:
                        break
                    skip = self.end - b.first
                    for size in itertools.islice(_payload_sizes(data, b), skip, None):
                        sums.append(sums[-1] + size)
                    self._segment, self._position = name, at + b.end
                    if self.end >= end:
                        break
                continue
            for _pos, stop, body in _scan(data):
                offset, _at, _tlen, n = _HEADER.unpack_from(body, 0)
                if offset < self.end:
                    continue
                if offset != self.end:
                    break
                size = _LEN.unpack_from(body, _HEADER.size + 4 * (n - 1))[0] if n else 0
                sums.append(sums[-1] + size)
                self._segment, self._position = name, at + stop
                if self.end >= end:
                    break
        if self.end < end:
            raise _missing(self.store, self.end, start, end)

    def size(self, start: int, end: int) -> int:
        """Payload bytes of offsets ``start`` to ``end`` (indexed by :meth:`extend`)."""
        return self._sums[end - self.base] - self._sums[start - self.base]

    def fit(self, start: int, end: int, budget: int) -> int:
        """The furthest ``e`` (``start <= e <= end``) whose rows from ``start`` take at most
        ``budget`` payload bytes."""
        if end <= start:
            return start
        sums, base = self._sums, self.base
        limit = sums[start - base] + budget
        i = bisect.bisect_right(sums, limit, start - base, end - base + 1) - 1
        return max(start, i + base)

    def forget(self, below: int) -> None:
        """Drop the sizes of offsets below ``below`` (committed: never asked for again)."""
        cut = min(below, self.end) - self.base
        if cut > 0:
            self._sums = [s - self._sums[cut] for s in self._sums[cut:]]
            self.base += cut


class LeaseLost(RuntimeError):
    """A remote writer found its lease taken (or could not renew it in time): it stops writing."""


class LeaseRecord(TypedDict, total=False):
    """A lease as stored (JSON): who holds it, and when it runs out (``time.time()``)."""

    owner: str
    expires: float


class Lease:
    """One writer per remote log: a ``lease`` object naming its owner and when it runs out.

    Object stores have no ``flock``. A writer takes the lease when there is none or the
    one there has run out (by the taker's clock: hosts' clocks must agree to well under
    the lease), writes its own, waits ``settle`` seconds and reads it back: of writers
    that raced, only the last one written still finds its name and goes on. The holder
    renews every third of the lease and checks, before each write of the log, that its
    last renewal is less than half a lease old (renewing first if not, and stopping
    with :class:`LeaseLost` if someone else holds it). A writer that was killed loses
    the log at most ``seconds`` after its last renewal; :meth:`acquire` waits that long
    for it. Closing deletes the lease, so a clean restart waits for nothing.
    """

    def __init__(self, store: Store, seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        if not seconds > 0:
            raise ValueError(f"the lease must last more than 0 seconds, not {seconds!r}")
        self.store = store
        self.seconds = float(seconds)
        self.settle = min(1.0, self.seconds / 10)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.renewed = 0.0  # time.monotonic() of the last confirmed write of our lease
        self._lock = threading.Lock()

    def _read(self) -> LeaseRecord | None:
        try:
            value: LeaseRecord = json.loads(self.store.read("lease"))
        except FileNotFoundError:
            return None
        except ValueError:
            return {"owner": "?", "expires": 0.0}  # unreadable: treat as run out
        return value if isinstance(value, dict) else {"owner": "?", "expires": 0.0}

    def _write(self) -> float:
        started = time.monotonic()
        body = {"owner": self.owner, "expires": time.time() + self.seconds}
        self.store.write("lease", json.dumps(body).encode())
        return started

    def holder(self) -> LeaseRecord | None:
        """The lease as it is stored (owner, expires), or None."""
        return self._read()

    def acquire(self, wait: float | None = None) -> None:
        """Take the lease, waiting up to ``wait`` seconds (default: one lease) for it to run out."""
        limit = time.monotonic() + (self.seconds + 2 * self.settle if wait is None else wait)
        while True:
            current = self._read()
            if current is None or current.get("owner") == self.owner or (
                float(current.get("expires", 0)) <= time.time()
            ):
                started = self._write()
                time.sleep(self.settle)
                again = self._read()
                if again is not None and again.get("owner") == self.owner:
                    self.renewed = started
                    return
                current = again
            left = limit - time.monotonic()
            if left <= 0:
                owner = (current or {}).get("owner", "?")
                raise RuntimeError(
                    f"the log in {self.store.location} is owned by another writer "
                    f"({owner}, a spool or a running query; its lease did not run out "
                    "in time)"
                )
            expires = float((current or {}).get("expires", 0))
            time.sleep(max(0.05, min(left, expires - time.time() + 0.01, 1.0)))

    def renew(self) -> None:
        """Renew the lease; :class:`LeaseLost` if another writer holds it now."""
        with self._lock:
            current = self._read()
            if current is not None and current.get("owner") != self.owner:
                raise LeaseLost(
                    f"the lease of the log in {self.store.location} was taken by "
                    f"{current.get('owner')}: this writer stops"
                )
            self.renewed = self._write()

    def check(self) -> None:
        """Before a write: renew if the last renewal is half a lease old."""
        if time.monotonic() - self.renewed >= self.seconds / 2:
            self.renew()

    def release(self) -> None:
        """Delete the lease if it is still ours."""
        with self._lock, contextlib.suppress(OSError):
            current = self._read()
            if current is not None and current.get("owner") == self.owner:
                self.store.delete("lease")


class LogWriter:
    """The one appender of a log (it holds the log's lock, or on remote storage its lease)."""

    def __init__(
        self,
        location: Location,
        *,
        fsync: bool = True,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        lease_wait: float | None = None,
    ) -> None:
        """Open the log at ``location`` for writing (``lease_wait``: remote logs, seconds to
        wait for another writer's lease to run out; default one lease)."""
        self.store = _store(location)
        self.location = self.store.location
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self._file: IO[bytes] | None = None
        self._size = 0
        self._lock_file: IO[str] | None = None
        self.lease: Lease | None = None
        if self.store.local:
            self._open_local()
        else:
            self.lease = Lease(self.store, lease_seconds)
            self.lease.acquire(lease_wait)
            try:
                self._open_remote()
            except BaseException:
                self.lease.release()
                raise

    @property
    def directory(self) -> Path:
        """The local directory of the log (local logs only)."""
        return Path(getattr(self.store, "path", self.location))

    @property
    def renew_interval(self) -> float | None:
        """How often a remote writer renews its lease while idle (None: local, no lease)."""
        return None if self.lease is None else self.lease.seconds / 3

    def _open_local(self) -> None:
        directory = self.directory
        directory.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(directory / "lock", "a+")  # noqa: SIM115 (held while open)
        try:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.close()
            raise RuntimeError(
                f"the log in {self.location} is owned by another writer "
                "(a spool or a running query)"
            ) from None
        self.next_offset = max(read_head(self.store), read_committed(self.store))
        segs = _segment_names(self.store)
        if segs:
            first, name = segs[-1]
            path = directory / name
            last, valid_end = _last_offset(name, path.read_bytes(), first)
            if name.endswith(RECORDS) and valid_end == 0:
                path.unlink()  # an empty segment of records: its offset starts a .cols one
            else:
                with open(path, "r+b") as f:  # cut a torn tail off
                    f.truncate(valid_end)
            self.next_offset = max(self.next_offset, last + 1)
            if name.endswith(BLOCKS):  # a segment of records is left as it is
                self._file = open(path, "ab")  # noqa: SIM115
                self._size = valid_end
        self.store.write("head", str(self.next_offset).encode(), sync=self.fsync)

    def _open_remote(self) -> None:
        self.next_offset = max(read_head(self.store), read_committed(self.store))
        segs = _segment_names(self.store)
        if segs:  # a writer killed between a segment and its head: the segment counts
            first, name = segs[-1]
            last, _end = _last_offset(name, self.store.read(name), first)
            self.next_offset = max(self.next_offset, last + 1)
        self.store.write("head", str(self.next_offset).encode())

    def renew(self) -> None:
        """Renew a remote writer's lease (nothing for a local log)."""
        if self.lease is not None:
            self.lease.renew()

    def append(self, messages: Sequence[tuple[int, bytes | None, Sequence[bytes]]]) -> int:
        """Write ``(received_at_us, topic, frames)`` messages durably; return the new head."""
        if not messages:
            return self.next_offset
        offset = self.next_offset + len(messages)
        data = encode_block(self.next_offset, messages)
        if self.lease is not None:
            # the head moves only once both writes are done: an append that failed
            # part-way may be made again with the same messages, which rewrites the
            # same segment object, never a second copy of them at a later offset
            self.lease.check()
            self.store.write(f"{_SEG}{self.next_offset:020d}{BLOCKS}", data)
            self.store.write("head", str(offset).encode())
            self.next_offset = offset
            return offset
        if self._file is None or self._size >= self.segment_bytes:
            self._roll()
        assert self._file is not None
        self._file.write(data)
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        self._size += len(data)
        self.next_offset = offset
        self.store.write("head", str(offset).encode(), sync=False)
        return offset

    def _roll(self) -> None:
        if self._file is not None:
            self._file.close()
        path = self.directory / f"{_SEG}{self.next_offset:020d}{BLOCKS}"
        self._file = open(path, "ab")  # noqa: SIM115
        self._size = path.stat().st_size
        if self.fsync:
            dfd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def close(self) -> None:
        """Close the segment and release the lock (or the lease)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None
        if self.lease is not None:
            self.lease.release()
