"""A log's records as Arrow record batches: blocks turned into arrays without a step per record.

A ``.cols`` segment (see ``_wal``) holds blocks whose arrays are Arrow's buffers as they
are: a block's ``received_at`` array is the column's values, its frames are the values
of the ``frames`` lists, and cumulative sums of its length arrays are the offsets. So
a block costs a CRC (one ``zlib.crc32`` over the block) and a few numpy and pyarrow
calls, whatever its number of records; a local segment is mapped (``mmap``), so a
range that starts inside it reads only the blocks it needs. Blocks of fewer than
:data:`SMALL_BLOCK` records (a writer under light load appends a few at a time) are
decoded one record at a time with the rows of their neighbours, which is cheaper for
them than the calls a block costs. ``.log`` segments (written before blocks) are
decoded and CRC-checked record by record, as before.

Remote segments are fetched whole, up to :data:`PREFETCH` at a time in threads (the
calls release the GIL), while the partition decodes the one before; partitions are
planned on segment boundaries there (``_datasource._ranges``), so a fetch is never
wider than what its partition yields, except where a batch's own bounds cut a segment.

This module needs pyarrow and numpy (the ``spark`` extra); it never imports pyspark.
"""

from __future__ import annotations

import itertools
import mmap
import os
import struct
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]

from . import _wal
from ._store import Store

__all__ = ["ARROW_SCHEMA", "read_batches"]

ARROW_SCHEMA = pa.schema(
    [
        ("offset", pa.int64()),
        ("received_at", pa.timestamp("us", tz="UTC")),
        ("topic", pa.binary()),
        ("payload", pa.binary()),
        ("frames", pa.list_(pa.binary())),
    ]
)
#: blocks of fewer records than this are decoded record by record (measured: below it,
#: a block's fixed cost of numpy and pyarrow calls is more than its records' Python steps)
SMALL_BLOCK = 64
#: remote segments fetched ahead of the one being decoded
PREFETCH = 4
_TIMESTAMP = ARROW_SCHEMA.field("received_at").type
_LITTLE = sys.byteorder == "little"


def columns_batch(cols: _wal.Columns) -> pa.RecordBatch:
    """An Arrow batch of records decoded one by one (``.log`` segments, small blocks)."""
    values = pa.array(cols.frames, pa.binary())
    if len(cols.frames) == len(cols.offsets) and all(n == 1 for n in cols.counts):
        payloads = values  # one frame each: payload is that frame
        list_offsets = pa.array(range(len(values) + 1), pa.int32())
    else:
        ends = np.cumsum(np.asarray(cols.counts, dtype=np.int64), dtype=np.int64)
        list_offsets = pa.array(np.concatenate(([0], ends)).astype(np.int32))
        # the last frame of each record; b"" for a record of no frames
        last = [cols.frames[e - 1] if n else b"" for e, n in zip(ends, cols.counts, strict=True)]
        payloads = pa.array(last, pa.binary())
    return pa.RecordBatch.from_arrays(
        [
            pa.array(cols.offsets, pa.int64()),
            pa.array(cols.received_at_us, pa.int64()).cast(_TIMESTAMP),
            pa.array(cols.topics, pa.binary()),
            payloads,
            pa.ListArray.from_arrays(list_offsets, values),
        ],
        schema=ARROW_SCHEMA,
    )


def _offsets(lengths: np.ndarray) -> pa.Buffer:
    """Arrow's int32 offsets of values of these lengths (a leading 0, then running sums)."""
    out = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, dtype=np.int32, out=out[1:])
    return pa.py_buffer(out)


def block_batch(buf: pa.Buffer, b: _wal.Block) -> pa.RecordBatch:
    """The records of one block as an Arrow batch, its arrays in place in ``buf``."""
    n, nf = b.n, b.frames
    pos = b.pos + _wal.BLOCK_HEAD
    tlens = np.frombuffer(buf, dtype="<i4", count=n, offset=pos + 8 * n)
    counts = np.frombuffer(buf, dtype="<i4", count=n, offset=pos + 12 * n)
    lengths = np.frombuffer(buf, dtype="<i4", count=nf, offset=pos + 16 * n)
    tpos = pos + 16 * n + 4 * nf
    fpos = tpos + b.topic_bytes
    fbytes = int(lengths.sum(dtype=np.int64))
    if not 0 <= b.end - fpos - fbytes < 8:  # what is left is the padding
        raise ValueError(f"the block at byte {b.pos} does not hold {fbytes} bytes of frames")
    values = pa.Array.from_buffers(
        pa.binary(), nf, [None, _offsets(lengths), buf.slice(fpos, fbytes)]
    )
    if b.topic_bytes == 0 and int(tlens.max(initial=-1)) < 0:
        topics = pa.nulls(n, pa.binary())
    else:
        valid = tlens >= 0
        topics = pa.Array.from_buffers(
            pa.binary(),
            n,
            [
                pa.array(valid).buffers()[1],
                _offsets(np.where(valid, tlens, 0)),
                buf.slice(tpos, b.topic_bytes),
            ],
            null_count=n - int(valid.sum()),
        )
    if nf == n and bool((counts == 1).all()):
        payloads = values
        list_offsets = pa.py_buffer(np.arange(n + 1, dtype=np.int32))
    else:
        list_offsets = _offsets(counts)
        ends = np.frombuffer(list_offsets, dtype=np.int32)[1:]
        if nf == 0:
            payloads = pa.Array.from_buffers(
                pa.binary(), n, [None, pa.py_buffer(np.zeros(n + 1, np.int32)), pa.py_buffer(b"")]
            )
        else:
            payloads = values.take(pa.array(np.maximum(ends - 1, 0)))
            empty = counts == 0
            if bool(empty.any()):  # a record of no frames: payload b""
                payloads = pc.if_else(pa.array(empty), pa.scalar(b"", pa.binary()), payloads)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.arange(b.first, b.first + n, dtype=np.int64)),
            pa.Array.from_buffers(_TIMESTAMP, n, [None, buf.slice(pos, 8 * n)]),
            topics,
            payloads,
            pa.ListArray.from_buffers(
                pa.list_(pa.binary()), n, [None, list_offsets], children=[values]
            ),
        ],
        schema=ARROW_SCHEMA,
    )


def _small_columns(data: bytes | mmap.mmap, b: _wal.Block, expected: int, end: int,
                   cols: _wal.Columns) -> None:
    """Add the records of a small block (offsets ``expected`` to ``end``) to ``cols``."""
    n, nf = b.n, b.frames
    pos = b.pos + _wal.BLOCK_HEAD
    ats = struct.unpack_from(f"<{n}q", data, pos)
    tlens = struct.unpack_from(f"<{n}i", data, pos + 8 * n)
    counts = struct.unpack_from(f"<{n}i", data, pos + 12 * n)
    lengths = struct.unpack_from(f"<{nf}i", data, pos + 16 * n)
    tpos = pos + 16 * n + 4 * nf
    fpos = tpos + b.topic_bytes
    lo, hi = max(0, expected - b.first), min(n, end - b.first)
    if nf == n and counts.count(1) == n and b.topic_bytes == 0 and tlens.count(-1) == n:
        starts = list(itertools.accumulate(lengths, initial=fpos))  # one frame each, no topics
        cols.frames.extend([data[starts[i] : starts[i + 1]] for i in range(lo, hi)])
        cols.topics.extend([None] * (hi - lo))
        cols.counts.extend(counts[lo:hi])
    else:
        li = 0
        for i in range(n):
            tlen, count = tlens[i], counts[i]
            keep = lo <= i < hi
            if tlen >= 0:
                if keep:
                    cols.topics.append(data[tpos : tpos + tlen])
                tpos += tlen
            elif keep:
                cols.topics.append(None)
            for length in lengths[li : li + count]:
                if keep:
                    cols.frames.append(data[fpos : fpos + length])
                fpos += length
            li += count
            if keep:
                cols.counts.append(count)
    cols.offsets.extend(range(b.first + lo, b.first + hi))
    cols.received_at_us.extend(ats[lo:hi])


class _Batcher:
    """Gathers batches into ones of about ``rows`` rows (Spark pays per batch it is sent)."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.pending: list[pa.RecordBatch] = []
        self.count = 0
        self.small = _wal.Columns([], [], [], [], [])

    def add(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        self._flush_small()
        if batch.num_rows >= self.rows and not self.pending:
            for at in range(0, batch.num_rows, self.rows):
                yield batch.slice(at, self.rows)
            return
        self.pending.append(batch)
        self.count += batch.num_rows
        if self.count >= self.rows:
            yield from self.flush()

    def _flush_small(self) -> None:
        if self.small.offsets:
            batch = columns_batch(self.small)
            self.small = _wal.Columns([], [], [], [], [])
            self.pending.append(batch)
            self.count += batch.num_rows

    def flush(self) -> Iterator[pa.RecordBatch]:
        self._flush_small()
        if len(self.pending) == 1:
            yield self.pending[0]
        elif self.pending:
            # one chunk per column: a single batch (pa.concat_batches needs pyarrow 19)
            yield pa.Table.from_batches(self.pending).combine_chunks().to_batches()[0]
        self.pending, self.count = [], 0


def _mapped(path: Path) -> tuple[pa.Buffer, mmap.mmap | bytes]:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return pa.py_buffer(b""), b""
        view = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
    return pa.py_buffer(view), view


def _fetch(
    store: Store, names: list[str]
) -> Iterator[tuple[str, pa.Buffer, bytes | mmap.mmap] | None]:
    """Each segment's bytes in order (None once one is gone): local ones mapped, remote
    ones fetched up to :data:`PREFETCH` ahead in threads."""
    if store.local:
        base = Path(getattr(store, "path", store.location))
        for name in names:
            try:
                buf, data = _mapped(base / name)
            except FileNotFoundError:
                yield None
                return
            yield name, buf, data
        return
    with ThreadPoolExecutor(max_workers=min(PREFETCH, max(1, len(names)))) as pool:
        ahead: list[tuple[str, Future[bytes]]] = []
        todo = iter(names)
        try:
            while True:
                while len(ahead) < PREFETCH and (more := next(todo, None)) is not None:
                    ahead.append((more, pool.submit(store.read, more)))
                if not ahead:
                    return
                name, future = ahead.pop(0)
                try:
                    data = future.result()
                except FileNotFoundError:
                    yield None
                    return
                yield name, pa.py_buffer(data), data
        finally:
            for _name, future in ahead:
                future.cancel()


def read_batches(
    location: _wal.Location, start: int, end: int, rows: int = 65536
) -> Iterator[pa.RecordBatch]:
    """The records with ``start <= offset < end`` as Arrow batches of about ``rows`` rows.

    Raises ``LookupError`` if a record of the range is missing (truncated by a commit,
    never written, or failing its CRC), as :func:`_wal.read_range` does.
    """
    if end <= start:
        return
    store = _wal._store(location)
    expected = start
    out = _Batcher(rows)
    names = [name for _first, name in _wal._covering(store, start, end)]
    for got in _fetch(store, names):
        if got is None:
            break
        name, buf, data = got
        if name.endswith(_wal.RECORDS):
            for cols in _wal.record_columns(data, expected, end, rows):
                expected = cols.offsets[-1] + 1
                yield from out.add(columns_batch(cols))
        else:
            for b in _wal._scan_blocks(data, check=False):
                last = b.first + b.n
                if last <= expected:
                    continue
                if b.first > expected or not _wal.block_crc_ok(data, b):
                    break
                if b.n < SMALL_BLOCK or not _LITTLE:
                    _small_columns(data, b, expected, end, out.small)
                    if len(out.small.offsets) >= rows:
                        yield from out.flush()
                else:
                    batch = block_batch(buf, b)
                    if b.first < expected or last > end:
                        lo = expected - b.first
                        batch = batch.slice(lo, min(last, end) - b.first - lo)
                    yield from out.add(batch)
                expected = min(last, end)
                if expected >= end:
                    break
        if expected >= end:
            break
    yield from out.flush()
    if expected < end:
        raise _wal._missing(store, expected, start, end)
