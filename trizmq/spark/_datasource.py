"""The "zmq" Python data source: source (stream and batch) and sink (stream and batch).

See docs/spark.md for the options and the delivery guarantees.
"""

from __future__ import annotations

import bisect
import contextlib
import difflib
import fnmatch
import hashlib
import itertools
import json
import os
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeAlias, cast

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
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

import trizmq

from . import _arrowlog, _wal
from ._header import HEADER
from ._runtime import Runtime, SocketSpec, receive_into_log, runtime
from ._store import Store, open_store
from .relay import manifest_name

__all__ = ["ZmqDataSource"]

SCHEMA = "offset long, received_at timestamp, topic binary, payload binary, frames array<binary>"
#: the Arrow form of :data:`SCHEMA`, as the log's reader builds its batches
ARROW_SCHEMA = _arrowlog.ARROW_SCHEMA
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


#: the options each side knows (lower case, as Spark passes them); Spark's own also pass
SPARK_OPTIONS = frozenset({"path", "checkpointlocation", "queryname"})
SOURCE_OPTIONS = frozenset({
    "endpoint", "socket", "mode", "subscribe", "groups", "wal", "spool", "fsync", "hwm",
    "segmentbytes", "maxrecordspertrigger", "partitions", "minpartitionrows",
    "leaseseconds", "linger",
    "maxbytespertrigger", "minrecordspertrigger", "maxtriggerdelay",
})
SINK_OPTIONS = frozenset({
    "endpoint", "socket", "mode", "delivery", "header", "staging", "group", "hwm",
    "linger", "sendtimeout", "publish",
})


def _check_options(options: dict[str, str], known: frozenset[str], side: str) -> None:
    """Refuse an option this side does not know, naming it and the nearest known one."""
    for name in options:
        if name in known or name in SPARK_OPTIONS:
            continue
        near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"the zmq {side} has no option {name!r}{hint}")


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
    """Offsets ``start`` (inclusive) to ``end`` (exclusive) of the log at ``directory``."""

    def __init__(self, directory: str, start: int, end: int) -> None:
        super().__init__((directory, start, end))
        self.directory = directory
        self.start = start
        self.end = end


def _log_locations(options: dict[str, str]) -> tuple[list[str], bool]:
    """(the log locations, whether spools own them): several spools, or the query's own log.

    A spool location may be a pattern (:func:`_pattern`), which :func:`_discover` expands.
    """
    if "spool" in options:
        spools = _list(options["spool"])
        if not spools:
            raise ValueError("option spool must name at least one log location")
        if len(set(spools)) != len(spools):
            raise ValueError(f"option spool names a location twice: {options['spool']!r}")
        for spool in spools:
            _pattern(spool)  # a glob anywhere but in the last component fails here
        return spools, True
    return [options.get("wal") or _default_dir("wal", options)], False


_GLOB = re.compile(r"[*?\[]")


def _pattern(location: str) -> tuple[str, str] | None:
    """(parent location, glob) of a spool pattern, or None for a plain location."""
    parent, _, last = location.rstrip("/").rpartition("/")
    if not _GLOB.search(location):
        return None
    if _GLOB.search(parent) or not last or not parent:
        raise ValueError(
            f"option spool: only the last component of a location may be a pattern, "
            f"not {location!r}"
        )
    return parent, last


def _discover(parent: str, glob: str) -> list[str]:
    """The logs under ``parent`` whose names match ``glob`` (a log has a ``head``)."""
    found = []
    for name in open_store(parent).children():
        if fnmatch.fnmatchcase(name, glob):
            location = f"{parent}/{name}"
            if open_store(location).exists("head"):
                found.append(location)
    return found


#: seconds between two listings of a spool pattern (a LIST per trigger costs money on S3)
DISCOVER_SECONDS = 1.0


@dataclass(frozen=True)
class Admission:
    """How much a micro-batch may take: maximums (rows, payload bytes), and a minimum
    of rows that a batch waits for, at most ``max_delay`` seconds after the last one."""

    max_rows: int | None = None
    max_bytes: int | None = None
    min_rows: int | None = None
    max_delay: float = 15 * 60.0

    @classmethod
    def from_options(cls, options: dict[str, str]) -> Admission:
        """The admission options of a source; a bad value raises naming its option."""
        minimum = _positive(options, "minrecordspertrigger", "minRecordsPerTrigger")
        admission = cls(
            max_rows=_positive(options, "maxrecordspertrigger", "maxRecordsPerTrigger"),
            max_bytes=_positive(options, "maxbytespertrigger", "maxBytesPerTrigger"),
            min_rows=minimum,
        )
        if "maxtriggerdelay" in options:
            if minimum is None:
                raise ValueError("option maxTriggerDelay applies only with minRecordsPerTrigger")
            admission = replace(
                admission, max_delay=_duration(options["maxtriggerdelay"], "maxTriggerDelay")
            )
        if minimum is not None and admission.max_rows is not None and minimum > admission.max_rows:
            raise ValueError(
                f"option minRecordsPerTrigger ({minimum}) is above maxRecordsPerTrigger "
                f"({admission.max_rows})"
            )
        return admission


def _positive(options: dict[str, str], key: str, name: str) -> int | None:
    value = options.get(key)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise ValueError(f"option {name} must be a positive integer, not {value!r}")
    return number


_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([a-z]+)\s*")


def _duration(value: str, name: str) -> float:
    """Seconds of a duration such as "5s", "250ms", "2m", "1h" (the unit is required)."""
    match = _DURATION.fullmatch(value.lower())
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(
            f"option {name} must be a duration with a unit (ms, s, m, h, d) such as '5s', "
            f"not {value!r}"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def _ranges(
    spans: dict[str, tuple[int, int]], options: dict[str, str]
) -> list[LogRange]:
    """Partitions over every log's span, sized alike: at most ``partitions`` of
    ``total / partitions`` rows (but at least ``minPartitionRows``) each.

    On remote storage a cut moves to the nearest segment start, so that no partition
    fetches a segment object of which it yields only part (a batch's own bounds may
    still cut one). A local segment is mapped, so a range reads only its own blocks.
    """
    total = sum(max(0, end - start) for start, end in spans.values())
    if total <= 0:
        return []
    parts = max(1, int(options.get("partitions", "2")))
    per = max((total + parts - 1) // parts, int(options.get("minpartitionrows", "50000")), 1)
    out = []
    for location, (start, end) in spans.items():
        if end <= start:
            continue
        cuts = list(range(start + per, end, per))
        store = open_store(location)
        if cuts and not store.local:
            firsts = [f for f, _name in _wal._segment_names(store) if start < f < end]
            cuts = sorted({_nearest(firsts, cut) for cut in cuts}) if firsts else []
        bounds = [start, *cuts, end]
        out += [LogRange(location, a, b) for a, b in itertools.pairwise(bounds)]
    return out


def _nearest(firsts: list[int], cut: int) -> int:
    """The value of the sorted ``firsts`` nearest to ``cut``."""
    i = bisect.bisect_left(firsts, cut)
    near = firsts[max(0, i - 1) : i + 1]
    return min(near, key=lambda f: abs(f - cut))


def _read_range(part: InputPartition) -> Iterator[pa.RecordBatch]:
    """The rows of one partition, as Arrow batches decoded in columns (``_arrowlog``)."""
    if not isinstance(part, LogRange):  # no ranges planned: Spark reads one empty partition
        return
    yield from _arrowlog.read_batches(part.directory, part.start, part.end, ARROW_ROWS)


class _Receiver:
    """The in-query receiver of one log (driver side, one per process)."""

    def __init__(self, rt: Runtime, spec: SocketSpec, location: str, options: dict[str, str]):
        self.log = _wal.LogWriter(
            location,
            fsync=_flag(options, "fsync", True),
            segment_bytes=int(options.get("segmentbytes", str(_wal.DEFAULT_SEGMENT_BYTES))),
            lease_seconds=float(options.get("leaseseconds", str(_wal.DEFAULT_LEASE_SECONDS))),
        )
        self.rt = rt
        self.scope: trio.CancelScope | None = None
        self.done = trio.Event()
        self.error: BaseException | None = None
        try:
            # what _run's task_status.started() passes on
            self.endpoints = cast("list[str]", rt.start(self._run, spec))
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

Offsets = dict[str, int]
#: an offset as Spark keeps it (JSON): ``{"offset": n}`` for one log,
#: ``{"offsets": {location: n}}`` for several; read back with :func:`_log_offset`
SparkOffset: TypeAlias = dict[str, object]


def _log_offset(value: object) -> int:
    """One log's position in an offset Spark handed back: a JSON number."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"not a log offset: {value!r}")
"""One offset per log location."""


class _SourceBase:
    def __init__(self, options: dict[str, str]) -> None:
        _check_options(options, SOURCE_OPTIONS, "source")
        self.options = options
        self.given, self.spooled = _log_locations(options)
        self.patterns = [p for p in map(_pattern, self.given) if p is not None]
        self.plain = [loc for loc in self.given if _pattern(loc) is None]
        for location in [*self.plain, *(parent for parent, _ in self.patterns)]:
            open_store(location)  # a location pyarrow cannot open fails here, named
        self.locations: list[str] = []
        self._listed = -DISCOVER_SECONDS
        self._refresh(force=True)
        self.directory = self.locations[0] if self.locations else self.given[0]

    def _refresh(self, force: bool = False) -> None:
        """The current locations: the plain ones, and what the patterns match now."""
        if not self.patterns:
            self.locations = self.plain
            return
        now = time.monotonic()
        if not force and now - self._listed < DISCOVER_SECONDS:
            return
        found = {loc for parent, glob in self.patterns for loc in _discover(parent, glob)}
        self.locations = [*self.plain, *sorted(found - set(self.plain))]
        self._listed = now

    def _heads(self) -> Offsets:
        return {loc: _wal.read_head(loc) for loc in self.locations}

    def _committed(self) -> Offsets:
        return {loc: _wal.read_committed(loc) for loc in self.locations}

    def _pack(self, offsets: Offsets) -> SparkOffset:
        """Spark's JSON offset: ``{"offset": n}`` for one log, ``{"offsets": {location: n}}``
        for several or for a pattern (its keys in a stable order: Spark compares the JSON)."""
        if not self.patterns and len(self.locations) == 1 and len(offsets) == 1:
            return {"offset": offsets[self.locations[0]]}
        order = [loc for loc in self.locations if loc in offsets]
        order += sorted(set(offsets) - set(order))
        return {"offsets": {loc: offsets[loc] for loc in order}}

    def _unpack(self, packed: SparkOffset | None) -> Offsets:
        if packed is None:
            return self._committed()
        # {"offset": n} is one log's (or, read with several spools, the first one's)
        many = packed.get("offsets")
        if isinstance(many, dict):
            known = cast("dict[str, object]", many)
        elif "offset" in packed and self.locations:
            known = {self.locations[0]: packed["offset"]}
        else:
            known = {}
        # a spool added to the list since the checkpoint, or found by a pattern, starts
        # at its committed mark
        offsets = {
            loc: _log_offset(known[loc]) if loc in known else _wal.read_committed(loc)
            for loc in self.locations
        }
        if self.patterns:  # a spool gone from the pattern's matches keeps its offset
            for loc, value in known.items():
                offsets.setdefault(loc, _log_offset(value))
        return offsets

    def _spans(self, start: Offsets, end: Offsets) -> dict[str, tuple[int, int]]:
        return {loc: (start.get(loc, end[loc]), end[loc]) for loc in end}


class ZmqBatchReader(_SourceBase, DataSourceReader):
    """A batch read of what spools (or a query's log) hold and have not committed."""

    def partitions(self) -> Sequence[InputPartition]:
        return _ranges(self._spans(self._committed(), self._heads()), self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_range(partition)


class ZmqStreamReader(_SourceBase, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming source: offsets are log positions (one per log); the log is written first.

    Admission control is PySpark's: :meth:`getDefaultReadLimit` reports the options'
    limit and :meth:`latestOffset` plans each batch with the limit Spark hands back.
    """

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self._target: Offsets | None = None
        self._released: Offsets = {}
        self.admission = Admission.from_options(options)
        self._last_batch = time.monotonic()  # minRecordsPerTrigger's delay runs from here
        self._payloads: dict[str, _wal.PayloadIndex] = {}
        if not self.spooled:
            _spec(options, for_source=True)  # fail early on bad options

    def _ensure_receiver(self) -> None:
        if self.spooled:
            for location in self.plain:
                if not open_store(location).exists():
                    raise FileNotFoundError(f"no spool log at {location}")
            return
        with _RECEIVERS_LOCK:
            receiver = _RECEIVERS.get(self.directory)
            if receiver is None:
                spec = _spec(self.options, for_source=True)
                receiver = _Receiver(runtime(), spec, self.directory, self.options)
                _RECEIVERS[self.directory] = receiver
        if receiver.error is not None:
            raise RuntimeError(f"the zmq receiver failed: {receiver.error!r}") from receiver.error

    def initialOffset(self) -> SparkOffset:
        self._ensure_receiver()
        self._refresh(force=True)
        return self._pack(self._committed())

    def latestOffset(
        self, start: SparkOffset | None = None, limit: ReadLimit | None = None
    ) -> SparkOffset:
        self._ensure_receiver()
        self._refresh()
        heads = self._heads()
        if start is None:
            if self._target is not None:
                heads = {loc: min(n, self._target.get(loc, n)) for loc, n in heads.items()}
            return self._pack(heads)
        begin = self._unpack(start)
        if self.spooled and begin != self._released:
            # Spark commits a batch only when it starts the next, and starts one only when
            # there are rows; the batch that ended at start is in the commit log, so commit
            # it now: a spool paused at its --max-lag waits for that to go on
            self.commit(start)
            self._released = begin
        # a spool gone from a pattern's matches stays where it was
        ends = {loc: max(heads.get(loc, n), n) for loc, n in begin.items()}
        if self._target is not None:  # availableNow: nothing past the heads at its start
            ends = {
                loc: max(begin[loc], min(n, self._target.get(loc, begin[loc])))
                for loc, n in ends.items()
            }
        admission = self._admission_for(limit)
        if admission is not None:
            ends = self._admit(begin, ends, admission)
        if ends != begin:
            self._last_batch = time.monotonic()
        return self._pack(ends)

    def _admission_for(self, limit: ReadLimit | None) -> Admission | None:
        """The limits of this batch: those of the options, with the one Spark handed us.

        Spark hands back the limit of :meth:`getDefaultReadLimit` (PySpark has no
        composite limit, so that carries one option and the others come from the
        options), or ``ReadAllAvailable`` when the trigger asks for everything
        (``Trigger.Once``). Under ``availableNow`` the minimum does not apply: all the
        rows there will be are there, and waiting for more would only delay the end.
        """
        if limit is None or isinstance(limit, ReadAllAvailable):
            return None
        admission = self.admission
        if isinstance(limit, ReadMaxRows):
            admission = replace(admission, max_rows=limit.max_rows)
        elif isinstance(limit, ReadMaxBytes):
            admission = replace(admission, max_bytes=limit.max_bytes)
        elif isinstance(limit, ReadMinRows):
            admission = replace(admission, min_rows=limit.min_rows)
        if self._target is not None:
            admission = replace(admission, min_rows=None)
        return admission

    def _admit(self, begin: Offsets, ends: Offsets, admission: Admission) -> Offsets:
        available = sum(ends[loc] - begin[loc] for loc in ends)
        if (
            admission.min_rows is not None
            and available < admission.min_rows
            and time.monotonic() - self._last_batch < admission.max_delay
        ):
            return dict(begin)  # no batch yet: wait for rows or for the delay
        if admission.max_rows is not None:
            ends = _limit(begin, ends, admission.max_rows)
        if admission.max_bytes is not None:
            for loc in ends:
                if ends[loc] > begin[loc]:
                    self._payload_index(loc).extend(begin[loc], ends[loc])
            ends = _limit_bytes(begin, ends, admission.max_bytes, self._payloads)
        return ends

    def _payload_index(self, location: str) -> _wal.PayloadIndex:
        index = self._payloads.get(location)
        if index is None:
            index = self._payloads[location] = _wal.PayloadIndex(location)
        return index

    def getDefaultReadLimit(self) -> ReadLimit:
        """The limit Spark carries for the options: the minimum when there is one (it
        decides whether a batch runs at all), else the row or the byte maximum."""
        admission = self.admission
        if admission.min_rows is not None:
            return ReadMinRows(admission.min_rows)
        if admission.max_rows is not None:
            return ReadMaxRows(admission.max_rows)
        if admission.max_bytes is not None:
            return ReadMaxBytes(admission.max_bytes)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> SparkOffset | None:
        return self._pack(self._heads())

    def prepareForTriggerAvailableNow(self) -> None:
        self._ensure_receiver()
        self._refresh(force=True)
        self._target = self._heads()

    def partitions(
        self, start: SparkOffset, end: SparkOffset
    ) -> Sequence[InputPartition]:
        return _ranges(self._spans(self._unpack(start), self._unpack(end)), self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_range(partition)

    def commit(self, end: SparkOffset) -> None:
        for location, offset in self._unpack(end).items():
            # a spool gone from a pattern's matches keeps its offset, and is not written
            if not self.patterns or open_store(location).exists("head"):
                _wal.commit(location, offset)
            index = self._payloads.get(location)
            if index is not None:
                index.forget(offset)

    def stop(self) -> None:
        with _RECEIVERS_LOCK:
            receiver = _RECEIVERS.pop(self.directory, None)
        if receiver is not None:
            receiver.stop()


def _limit(start: Offsets, heads: Offsets, max_rows: int) -> Offsets:
    """Ends that take at most ``max_rows`` rows in all, shared fairly among the logs."""
    left = max(0, max_rows)
    available = {loc: heads[loc] - start[loc] for loc in heads}
    take = dict.fromkeys(heads, 0)
    while left > 0:
        hungry = [loc for loc in heads if available[loc] > take[loc]]
        if not hungry:
            break
        share = max(1, left // len(hungry))
        for loc in hungry:
            more = min(share, available[loc] - take[loc], left)
            take[loc] += more
            left -= more
            if left == 0:
                break
    return {loc: start[loc] + take[loc] for loc in heads}


def _limit_bytes(
    start: Offsets, ends: Offsets, max_bytes: int, sizes: dict[str, _wal.PayloadIndex]
) -> Offsets:
    """Ends whose rows take at most ``max_bytes`` payload bytes in all, shared fairly
    among the logs (``sizes`` has the payload sizes of every log's rows); but at least
    one row, so that a row larger than the limit does not stop the stream."""
    left = max(0, max_bytes)
    take = dict(start)
    while left > 0:
        hungry = [loc for loc in ends if take[loc] < ends[loc]]
        if not hungry:
            break
        moved = False
        share = max(1, left // len(hungry))
        for loc in hungry:
            stop = sizes[loc].fit(take[loc], ends[loc], min(share, left))
            if stop > take[loc]:
                left -= sizes[loc].size(take[loc], stop)
                take[loc], moved = stop, True
        if not moved:  # each next row is above a fair share: give the rest in order
            for loc in hungry:
                stop = sizes[loc].fit(take[loc], ends[loc], left)
                left -= sizes[loc].size(take[loc], stop)
                take[loc] = stop
            break
    if take == start:
        for loc in ends:
            if ends[loc] > start[loc]:
                take[loc] = start[loc] + 1
                break
    return take


# -- sink --------------------------------------------------------------------------------


@dataclass
class ZmqCommit(WriterCommitMessage):
    """What one write task did: rows sent (or staged), and the staged file if any."""

    rows: int
    partition: int
    staged: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


#: messages a sink hands to ``send_many`` at a time (it yields after each batch, so the
#: other tasks of the process's trio thread run between them)
SINK_BATCH = 256


async def _send_all(sock: trizmq.Socket, messages: list[list[bytes]], timeout: float) -> None:
    with trio.fail_after(timeout):
        if isinstance(sock, trizmq.Radio):
            for i, msg in enumerate(messages):
                sock.send_nowait(msg[1], group=msg[0])
                if i % 64 == 63:
                    await trio.sleep(0)
            return
        # in batches: one routing call and one write per batch where the socket has
        # one peer, waiting only where the pattern says (a PUSH at its mark)
        for start in range(0, len(messages), SINK_BATCH):
            await sock.send_many(messages[start : start + SINK_BATCH])


async def _flush(sock: trizmq.Socket, timeout: float, strict: bool) -> None:
    with trio.move_on_after(timeout):
        while sock.statistics().get("queued_out", 0):
            await trio.sleep(0.002)
        return
    if strict:
        raise TimeoutError(f"messages still queued after {timeout}s (no peer took them)")


class _SinkBase:
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        _check_options(options, SINK_OPTIONS, "sink")
        self.options = options
        self.spec = _spec(options, for_source=False)
        names = set(schema.fieldNames())
        if "payload" not in names and "frames" not in names:
            raise ValueError("the zmq sink needs a payload (binary or string) or frames column")
        self.delivery = options.get("delivery", "at-least-once").lower()
        if self.delivery not in ("at-least-once", "exactly-once"):
            raise ValueError(f"option delivery must be at-least-once or exactly-once, not "
                             f"{self.delivery!r}")
        self.publish = options.get("publish", "driver").lower()
        if self.publish not in ("driver", "relays"):
            raise ValueError(f"option publish must be driver or relays, not {self.publish!r}")
        if self.publish == "relays" and self.delivery != "exactly-once":
            raise ValueError('option publish="relays" needs delivery="exactly-once"')
        self.header = _flag(options, "header", False)
        self.timeout = float(options.get("sendtimeout", "60"))
        self.group = options.get("group")
        self.staging = options.get("staging") or _default_dir("staging", options)
        open_store(self.staging)  # a location pyarrow cannot open fails here, named
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
            chunks = []
            for rb in iterator:
                for msg in self._messages(rb, batch_id, partition, rows):
                    chunks.append(_wal.encode(rows, 0, None, msg))
                    rows += 1
            name = f"{batch_id}-{partition}-{attempt}-{uuid.uuid4().hex}.msgs"
            open_store(self.staging).child("pending").write(name, b"".join(chunks), sync=True)
            return ZmqCommit(rows, partition, name)
        rt = runtime()
        sock = rt.socket(self.spec)
        for rb in iterator:
            messages = self._messages(rb, batch_id, partition, rows)
            rt.run(_send_all, sock, messages, self.timeout)
            rows += len(messages)
        rt.run(*self._flush_args(sock))
        return ZmqCommit(rows, partition)

    def _flush_args(
        self, sock: trizmq.Socket
    ) -> tuple[Callable[[trizmq.Socket, float, bool], Awaitable[None]], trizmq.Socket, float, bool]:
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
        store = open_store(self.staging)
        pending = store.child("pending")
        marker = f"published/{batch_id}"
        if self.publish == "relays":
            self._commit_manifest(store, staged, batch_id)
            return
        if batch_id < 0 or not store.exists(marker):
            rt = runtime()
            sock = rt.socket(self.spec)
            for commit in sorted(staged, key=lambda m: m.partition):
                assert commit.staged is not None
                out = [rec.frames for rec in _wal.decode_all(pending.read(commit.staged))]
                rt.run(_send_all, sock, out, self.timeout)
            rt.run(*self._flush_args(sock))
            if batch_id >= 0:
                store.write(marker, b"1", sync=True)
        for commit in staged:
            assert commit.staged is not None
            pending.delete(commit.staged)
        if batch_id >= 0:  # what failed attempts of this batch left behind
            for leftover in pending.list(f"{batch_id}-"):
                pending.delete(leftover)

    def _commit_manifest(self, store: Store, staged: list[ZmqCommit], batch_id: int) -> None:
        """publish="relays": write the batch's manifest for the relays (once per batch id)."""
        pending = store.child("pending")
        name = manifest_name(batch_id)
        known = batch_id >= 0 and (
            store.exists(f"published/{batch_id}") or store.child("manifests").exists(name)
        )
        if known:  # a replayed batch: its first commit's files are the ones published
            keep: set[str] = set()
            with contextlib.suppress(FileNotFoundError):
                listed = json.loads(store.child("manifests").read(name))["files"]
                keep = {str(f["name"]) for f in listed}
            for commit in staged:
                assert commit.staged is not None
                pending.delete(commit.staged)
            for leftover in pending.list(f"{batch_id}-"):
                if leftover not in keep:
                    pending.delete(leftover)
            return
        files = [
            {"name": c.staged, "partition": c.partition, "rows": c.rows}
            for c in sorted(staged, key=lambda m: m.partition)
            if c.rows > 0
        ]
        body = {
            "batch": batch_id,
            "endpoint": ",".join(self.spec.endpoints),
            "socket": self.spec.kind,
            "mode": self.spec.mode,
            "hwm": self.spec.hwm,
            "linger": self.spec.linger,
            "files": files,
        }
        for commit in staged:
            if commit.rows == 0 and commit.staged:
                pending.delete(commit.staged)
        if files:
            store.child("manifests").write(name, json.dumps(body).encode(), sync=True)
        if batch_id >= 0:  # what failed attempts of this batch left behind
            keep = {str(c.staged) for c in staged if c.rows > 0}
            for leftover in pending.list(f"{batch_id}-"):
                if leftover not in keep:
                    pending.delete(leftover)

    def _discard(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        pending = open_store(self.staging).child("pending")
        for m in messages:
            if isinstance(m, ZmqCommit) and m.staged:
                pending.delete(m.staged)


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
