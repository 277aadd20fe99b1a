"""The "zmq" Python data source: source (stream and batch) and sink (stream and batch).

See docs/spark.md for the options and the delivery guarantees.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import trio
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

import trizmq

from . import HEADER, _wal
from ._runtime import Runtime, SocketSpec, receive_into_log, runtime

__all__ = ["ZmqDataSource"]

SCHEMA = "offset long, received_at timestamp, topic binary, payload binary, frames array<binary>"
ARROW_SCHEMA = pa.schema(
    [
        ("offset", pa.int64()),
        ("received_at", pa.timestamp("us", tz="UTC")),
        ("topic", pa.binary()),
        ("payload", pa.binary()),
        ("frames", pa.list_(pa.binary())),
    ]
)
#: rows per Arrow record batch produced by the source
ARROW_ROWS = 65536


def _flag(options: dict[str, str], name: str, default: bool) -> bool:
    value = options.get(name)
    if value is None:
        return default
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"option {name} must be true or false, not {value!r}")


def _list(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _spec(options: dict[str, str], *, for_source: bool) -> SocketSpec:
    kind = options.get("socket", "pull" if for_source else "push").lower()
    allowed = ("pull", "sub", "dish") if for_source else ("push", "pub", "radio")
    if kind not in allowed:
        raise ValueError(f"option socket must be one of {', '.join(allowed)}, not {kind!r}")
    endpoints = _list(options.get("endpoint"))
    if not endpoints:
        raise ValueError("option endpoint is required (tcp://host:port[,...])")
    default_mode = "bind" if kind in ("pull", "dish") else "connect"
    mode = options.get("mode", default_mode).lower()
    if mode not in ("bind", "connect"):
        raise ValueError(f"option mode must be bind or connect, not {mode!r}")
    topics = _list(options.get("subscribe") if kind == "sub" else options.get("groups"))
    hwm = int(options.get("hwm", "100000" if for_source else "10000"))
    linger = float(options.get("linger", "30"))
    return SocketSpec(kind, endpoints, mode, topics=topics, hwm=hwm, linger=linger)


def _default_dir(kind: str, options: dict[str, str]) -> str:
    key = "|".join(f"{k}={options.get(k, '')}" for k in ("socket", "endpoint", "mode"))
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"trizmq-spark-{kind}", digest)


class ZmqDataSource(DataSource):
    """ZeroMQ as a Spark data source, registered as "zmq" by :func:`trizmq.spark.register`."""

    @classmethod
    def name(cls) -> str:
        return "zmq"

    def schema(self) -> str:
        return SCHEMA

    def _options(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in self.options.items()}

    def reader(self, schema: StructType) -> DataSourceReader:
        return ZmqBatchReader(self._options())

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return ZmqStreamReader(self._options())

    def writer(self, schema: StructType, overwrite: bool) -> ZmqWriter:
        return ZmqWriter(self._options(), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> ZmqStreamWriter:
        return ZmqStreamWriter(self._options(), schema)


# -- source ------------------------------------------------------------------------------


class LogRange(InputPartition):
    """Offsets ``start`` (inclusive) to ``end`` (exclusive) of the log in ``directory``."""

    def __init__(self, directory: str, start: int, end: int) -> None:
        super().__init__((start, end))
        self.directory = directory
        self.start = start
        self.end = end


def _log_dir(options: dict[str, str]) -> tuple[str, bool]:
    """(log directory, whether a spool owns it)."""
    if "spool" in options:
        return options["spool"], True
    return options.get("wal") or _default_dir("wal", options), False


def _ranges(directory: str, start: int, end: int, options: dict[str, str]) -> list[LogRange]:
    if end <= start:
        return []
    parts = max(1, int(options.get("partitions", "2")))
    per = max((end - start + parts - 1) // parts, int(options.get("minpartitionrows", "50000")))
    return [LogRange(directory, s, min(s + per, end)) for s in range(start, end, per)]


def _read_range(part: LogRange) -> Iterator[pa.RecordBatch]:
    for cols in _wal.read_columns(part.directory, part.start, part.end, ARROW_ROWS):
        values = pa.array(cols.frames, pa.binary())
        if len(cols.frames) == len(cols.offsets):  # one frame each: payload is that frame
            payloads = values
            list_offsets = pa.array(range(len(values) + 1), pa.int32())
        else:
            ends: list[int] = []
            total = 0
            for n in cols.counts:
                total += n
                ends.append(total)
            list_offsets = pa.array([0, *ends], pa.int32())
            # the last frame of each record; b"" for a record of no frames
            pairs = zip(ends, cols.counts, strict=True)
            last = [cols.frames[e - 1] if n else b"" for e, n in pairs]
            payloads = pa.array(last, pa.binary())
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(cols.offsets, pa.int64()),
                pa.array(cols.received_at_us, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                pa.array(cols.topics, pa.binary()),
                payloads,
                pa.ListArray.from_arrays(list_offsets, values),
            ],
            schema=ARROW_SCHEMA,
        )


class _Receiver:
    """The in-query receiver of one log directory (driver side, one per process)."""

    def __init__(self, rt: Runtime, spec: SocketSpec, directory: str, options: dict[str, str]):
        self.log = _wal.LogWriter(
            directory,
            fsync=_flag(options, "fsync", True),
            segment_bytes=int(options.get("segmentbytes", str(_wal.DEFAULT_SEGMENT_BYTES))),
        )
        self.rt = rt
        self.scope: trio.CancelScope | None = None
        self.done = trio.Event()
        self.error: BaseException | None = None
        try:
            self.endpoints: list[str] = rt.start(self._run, spec)
        except BaseException:
            self.log.close()
            raise

    async def _run(self, spec: SocketSpec, task_status: trio.TaskStatus[list[str]]) -> None:
        self.done = trio.Event()
        try:
            with trio.CancelScope() as self.scope:
                await receive_into_log(spec, self.log, failed=self._failed, task_status=task_status)
        finally:
            self.done.set()

    def _failed(self, exc: Exception) -> None:
        self.error = exc

    def stop(self) -> None:
        async def cancel() -> None:
            if self.scope is not None:
                self.scope.cancel()
                await self.done.wait()

        self.rt.run(cancel)
        self.log.close()


_RECEIVERS: dict[str, _Receiver] = {}
_RECEIVERS_LOCK = threading.Lock()


class _SourceBase:
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.directory, self.spooled = _log_dir(options)

    def _head(self) -> int:
        return _wal.read_head(self.directory)


class ZmqBatchReader(_SourceBase, DataSourceReader):
    """A batch read of what a spool (or a query's log) holds and has not committed."""

    def partitions(self) -> Sequence[InputPartition]:
        start = _wal.read_committed(self.directory)
        return _ranges(self.directory, start, self._head(), self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LogRange)
        return _read_range(partition)


class ZmqStreamReader(_SourceBase, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming source: offsets are log positions; the log is written before they show."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self._target: int | None = None
        if not self.spooled:
            _spec(options, for_source=True)  # fail early on bad options

    def _ensure_receiver(self) -> None:
        if self.spooled:
            if not Path(self.directory).is_dir():
                raise FileNotFoundError(f"no spool log in {self.directory}")
            return
        with _RECEIVERS_LOCK:
            receiver = _RECEIVERS.get(self.directory)
            if receiver is None:
                spec = _spec(self.options, for_source=True)
                receiver = _Receiver(runtime(), spec, self.directory, self.options)
                _RECEIVERS[self.directory] = receiver
        if receiver.error is not None:
            raise RuntimeError(f"the zmq receiver failed: {receiver.error!r}") from receiver.error

    def initialOffset(self) -> dict[str, int]:
        self._ensure_receiver()
        return {"offset": _wal.read_committed(self.directory)}

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: Any = None
    ) -> dict[str, int]:
        self._ensure_receiver()
        head = self._head()
        if self._target is not None:
            head = min(head, self._target)
        if isinstance(limit, ReadMaxRows) and start is not None:
            head = min(head, start["offset"] + limit.max_rows)
        if start is not None:
            head = max(head, start["offset"])
        return {"offset": head}

    def getDefaultReadLimit(self) -> Any:
        if "maxrecordspertrigger" in self.options:
            return ReadMaxRows(int(self.options["maxrecordspertrigger"]))
        return super().getDefaultReadLimit()

    def reportLatestOffset(self) -> dict[str, int] | None:
        return {"offset": self._head()}

    def prepareForTriggerAvailableNow(self) -> None:
        self._ensure_receiver()
        self._target = self._head()

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        return _ranges(self.directory, start["offset"], end["offset"], self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LogRange)
        return _read_range(partition)

    def commit(self, end: dict[str, int]) -> None:
        _wal.commit(self.directory, end["offset"])

    def stop(self) -> None:
        with _RECEIVERS_LOCK:
            receiver = _RECEIVERS.pop(self.directory, None)
        if receiver is not None:
            receiver.stop()


# -- sink --------------------------------------------------------------------------------


@dataclass
class ZmqCommit(WriterCommitMessage):
    """What one write task did: rows sent (or staged), and the staged file if any."""

    rows: int
    partition: int
    staged: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


async def _send_all(sock: trizmq.Socket, messages: list[list[bytes]], timeout: float) -> None:
    with trio.fail_after(timeout):
        radio = isinstance(sock, trizmq.Radio)
        for i, msg in enumerate(messages):
            if radio:
                assert isinstance(sock, trizmq.Radio)
                sock.send_nowait(msg[1], group=msg[0])
            else:
                try:
                    sock.send_multipart_nowait(msg)
                except trio.WouldBlock:
                    await sock.send_multipart(msg)
            if i % 64 == 63:
                await trio.sleep(0)


async def _flush(sock: trizmq.Socket, timeout: float, strict: bool) -> None:
    with trio.move_on_after(timeout):
        while sock.statistics().get("queued_out", 0):
            await trio.sleep(0.002)
        return
    if strict:
        raise TimeoutError(f"messages still queued after {timeout}s (no peer took them)")


class _SinkBase:
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.spec = _spec(options, for_source=False)
        names = set(schema.fieldNames())
        if "payload" not in names and "frames" not in names:
            raise ValueError("the zmq sink needs a payload (binary or string) or frames column")
        self.delivery = options.get("delivery", "at-least-once").lower()
        if self.delivery not in ("at-least-once", "exactly-once"):
            raise ValueError(f"option delivery must be at-least-once or exactly-once, not "
                             f"{self.delivery!r}")
        self.header = _flag(options, "header", False)
        self.timeout = float(options.get("sendtimeout", "60"))
        self.group = options.get("group")
        self.staging = options.get("staging") or _default_dir("staging", options)
        if self.spec.kind == "radio" and "group" not in names and not self.group:
            raise ValueError("a radio sink needs a group column or option group")

    # Messages in the socket's form: frames, or [group, data] for radio.
    def _messages(self, rb: pa.RecordBatch, batch_id: int, partition: int, seq: int
                  ) -> list[list[bytes]]:
        names = rb.schema.names
        n = rb.num_rows
        if "frames" in names:
            bodies: list[list[bytes]] = [list(f or []) for f in rb.column("frames").to_pylist()]
        else:
            col = rb.column("payload")
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                col = col.cast(pa.binary())
            bodies = [[p or b""] for p in col.to_pylist()]
        kind = self.spec.kind
        if kind == "radio":
            if "group" in names:
                gcol = rb.column("group")
                if not pa.types.is_binary(gcol.type):
                    gcol = gcol.cast(pa.binary())
                groups = [g or b"" for g in gcol.to_pylist()]
            else:
                groups = [(self.group or "").encode()] * n
            out = []
            for i in range(n):
                data = b"".join(bodies[i])
                if self.header:
                    data = HEADER.pack(batch_id, partition, seq + i) + data
                out.append([groups[i], data])
            return out
        if self.header:
            for i in range(n):
                bodies[i].insert(0, HEADER.pack(batch_id, partition, seq + i))
        if kind == "pub" and "topic" in names:
            tcol = rb.column("topic")
            if not pa.types.is_binary(tcol.type):
                tcol = tcol.cast(pa.binary())
            for body, topic in zip(bodies, tcol.to_pylist(), strict=False):
                body.insert(0, topic or b"")
        return bodies

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> ZmqCommit:
        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        prop = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
        batch_id = int(prop) if prop else -1
        rows = 0
        if self.delivery == "exactly-once":
            pending = Path(self.staging) / "pending"
            pending.mkdir(parents=True, exist_ok=True)
            name = f"{batch_id}-{partition}-{attempt}-{uuid.uuid4().hex}.msgs"
            path = pending / name
            with open(path, "wb") as f:
                for rb in iterator:
                    for msg in self._messages(rb, batch_id, partition, rows):
                        f.write(_wal.encode(rows, 0, None, msg))
                        rows += 1
                f.flush()
                os.fsync(f.fileno())
            return ZmqCommit(rows, partition, str(path))
        rt = runtime()
        sock = rt.socket(self.spec)
        for rb in iterator:
            messages = self._messages(rb, batch_id, partition, rows)
            rt.run(_send_all, sock, messages, self.timeout)
            rows += len(messages)
        rt.run(*self._flush_args(sock))
        return ZmqCommit(rows, partition)

    def _flush_args(self, sock: trizmq.Socket) -> tuple[Any, ...]:
        """Wait for the socket to write its queue out: a PUSH must (or the task fails);
        a PUB or RADIO drops for slow peers anyway, so it waits at most a second."""
        if self.spec.kind == "push":
            return (_flush, sock, self.timeout, True)
        return (_flush, sock, min(self.timeout, 1.0), False)

    def _publish(self, messages: Sequence[WriterCommitMessage | None], batch_id: int) -> None:
        """Driver side of exactly-once: publish the staged rows of ``batch_id`` once."""
        if self.delivery != "exactly-once":
            return
        staged = [m for m in messages if isinstance(m, ZmqCommit) and m.staged]
        ledger = Path(self.staging) / "published"
        ledger.mkdir(parents=True, exist_ok=True)
        marker = ledger / str(batch_id)
        if batch_id < 0 or not marker.exists():
            rt = runtime()
            sock = rt.socket(self.spec)
            for commit in sorted(staged, key=lambda m: m.partition):
                assert commit.staged is not None
                out = [rec.frames for rec in _read_staged(commit.staged)]
                rt.run(_send_all, sock, out, self.timeout)
            rt.run(*self._flush_args(sock))
            if batch_id >= 0:
                _wal._write_int(marker, 1, sync=True)
        for commit in staged:
            assert commit.staged is not None
            Path(commit.staged).unlink(missing_ok=True)
        if batch_id >= 0:  # what failed attempts of this batch left behind
            for leftover in (Path(self.staging) / "pending").glob(f"{batch_id}-*.msgs"):
                leftover.unlink(missing_ok=True)

    def _discard(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        for m in messages:
            if isinstance(m, ZmqCommit) and m.staged:
                Path(m.staged).unlink(missing_ok=True)


def _read_staged(path: str) -> Iterator[_wal.Record]:
    for _pos, _end, body in _wal._scan(Path(path)):
        yield _wal._decode(body)


class ZmqWriter(_SinkBase, DataSourceArrowWriter):
    """Batch sink: ``df.write.format("zmq")``."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ZmqCommit:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._publish(messages, -1)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._discard(messages)


class ZmqStreamWriter(_SinkBase, DataSourceStreamArrowWriter):
    """Streaming sink: ``df.writeStream.format("zmq")``."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ZmqCommit:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._publish(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._discard(messages)
