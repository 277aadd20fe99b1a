"""The spool: a process that owns a receiving socket and the write-ahead log.

    python -m trizmq.spark.spool --endpoint tcp://*:5557 --socket pull --mode bind --dir LOG
    python -m trizmq.spark.spool status --dir LOG [--json]

Every message received is appended to the log at LOG (a directory or a URI such as
``s3://bucket/prefix``; see ``trizmq.spark._wal``) whether or not a Spark query runs;
a query reads it with ``.option("spool", LOG)`` (several spools: comma-separated), and
its commits truncate it. Once the socket is open the spool prints
``ready <endpoint>[,<endpoint>...]`` (wildcard ports resolved) on stdout. SIGTERM or
SIGINT stops it cleanly.

Lag is what the spool holds and no query has committed yet: ``status`` prints it
(head, committed, lag, segments, the writer's lease, whether the spool is paused)
for any log, and ``--metrics HOST:PORT`` serves the same numbers, with the messages
received since start and the pauses, as Prometheus text on
``http://HOST:PORT/metrics``.

Back-pressure (:class:`LagLimit`): with ``--max-lag ROWS`` or ``--max-lag-bytes
BYTES``, a spool whose lag reaches the limit stops reading its socket, so its queues
fill to their high-water mark and PUSH senders block, instead of the log growing; it
reads the committed mark again (at once, then after ``LAG_POLL_FIRST`` seconds,
doubled while nothing changes up to ``LAG_POLL``) and resumes when the query has
caught up. Rows are exact: a receive takes no more than the room left. Bytes are the
messages' bytes (their frames, and a DISH group), not the log's record headers; the
limit may be passed by one receive batch. A spool with a limit keeps a
``backpressure`` object in the log (its limits, and whether it is paused, rewritten
as it pauses and resumes) for ``status``; a clean stop deletes it. (Spark commits a
batch's end only when it starts the next batch, so the source also commits, when
asked for new data, where its last batch ended: see
``ZmqStreamReader.latestOffset``.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import time
from collections import deque
from collections.abc import Sequence
from functools import partial
from typing import TypedDict

import trio

from ._runtime import SocketSpec, receive_into_log
from ._store import Store, open_store
from ._wal import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_SEGMENT_BYTES,
    Lease,
    LeaseRecord,
    LogWriter,
    read_columns,
    read_committed,
    read_head,
    segments,
)

__all__ = ["LagLimit", "SpoolStatus", "main", "status"]

_log = logging.getLogger("trizmq")

#: bytes of an HTTP request the metrics endpoint reads at most, and seconds it waits
_MAX_REQUEST = 8192
_REQUEST_TIMEOUT = 5.0
#: seconds between reads of the committed mark while the spool is paused: the first
#: wait, doubled after each read that finds no progress, up to the longest
LAG_POLL_FIRST = 0.02
LAG_POLL = 1.0
#: the object of the log where a spool with a lag limit says whether it is paused
BACKPRESSURE = "backpressure"
#: spans of offsets whose bytes :class:`LagLimit` keeps (pairs merge past this)
_MAX_SPANS = 1024


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trizmq.spark.spool",
        description="Own a socket and its write-ahead log "
        "(or, as 'status --dir LOG', print a log's lag).",
    )
    p.add_argument("--endpoint", required=True, help="endpoint(s), comma-separated")
    p.add_argument("--socket", choices=["pull", "sub", "dish"], default="pull")
    p.add_argument("--mode", choices=["bind", "connect"], default="bind")
    p.add_argument("--dir", required=True, help="the log: a directory or a URI (s3://b/p, ...)")
    p.add_argument("--subscribe", default="", help="sub: topic prefixes, comma-separated")
    p.add_argument("--groups", default="", help="dish: groups, comma-separated")
    p.add_argument("--hwm", type=int, default=1000)
    p.add_argument("--no-fsync", action="store_true", help="write without fsync (faster, "
                   "survives a process crash but not a power loss)")
    p.add_argument("--segment-bytes", type=int, default=DEFAULT_SEGMENT_BYTES)
    p.add_argument("--lease-seconds", type=float, default=DEFAULT_LEASE_SECONDS,
                   help="remote logs: how long the writer's lease lasts unless renewed")
    p.add_argument("--metrics", default="", metavar="HOST:PORT",
                   help="serve Prometheus metrics (head, committed, lag) on this address")
    p.add_argument("--max-lag", type=_positive_int, default=None, metavar="ROWS",
                   help="stop reading the socket while the log holds this many rows "
                   "beyond the committed mark")
    p.add_argument("--max-lag-bytes", type=_positive_int, default=None, metavar="BYTES",
                   help="the same in message bytes (the limit may be passed by one batch)")
    return p


def _status_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trizmq.spark.spool status", description="Print a log's lag."
    )
    p.add_argument("--dir", required=True, help="the log: a directory or a URI")
    p.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    return p


class SpoolStatus(TypedDict):
    """:func:`status`: a log's head and committed offsets, their lag, its segments, its
    lease holder (a remote log's; None for a local one, or none held), and, when a spool
    with ``--max-lag``/``--max-lag-bytes`` runs on it, whether it is paused and its
    limits (None otherwise)."""

    log: str
    head: int
    committed: int
    lag: int
    segments: int
    lease: LeaseRecord | None
    paused: bool | None
    max_lag: int | None
    max_lag_bytes: int | None


def _backpressure(store: Store) -> dict[str, object]:
    try:
        value = json.loads(store.read(BACKPRESSURE))
    except (FileNotFoundError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def status(location: str) -> SpoolStatus:
    """What the log at ``location`` holds: head, committed, lag, segments, lease holder,
    and whether its spool is paused by back-pressure."""
    store = open_store(location)
    head = read_head(store)
    committed = read_committed(store)
    holder = None if store.local else Lease(store).holder()
    pressure = _backpressure(store)
    paused = pressure.get("paused")
    return {
        "log": store.location,
        "head": head,
        "committed": committed,
        "lag": max(0, head - committed),
        "segments": len(segments(store)),
        "lease": holder,
        "paused": paused if isinstance(paused, bool) else None,
        "max_lag": _int_or_none(pressure.get("max_lag")),
        "max_lag_bytes": _int_or_none(pressure.get("max_lag_bytes")),
    }


class LagLimit:
    """Back-pressure: how much the receive loop may take, given what the log holds
    beyond the committed mark (rows, and message bytes) and the limits.

    The head is known here (the loop reports each append); the committed mark is read
    from the log only when the lag reaches a limit (and by the metrics): at once, then
    after ``LAG_POLL_FIRST`` seconds, doubled after each read that finds no progress
    up to ``poll``, while it stays there (the spool is paused: it does not read its
    socket). Message bytes are kept per span of offsets (one span per append, pairs
    merged past ``_MAX_SPANS``); a span the committed mark cuts counts pro rata.
    """

    def __init__(
        self,
        log: LogWriter,
        max_rows: int | None = None,
        max_bytes: int | None = None,
        *,
        poll: float = LAG_POLL,
    ) -> None:
        for name, value in (("--max-lag", max_rows), ("--max-lag-bytes", max_bytes)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        self.store = log.store
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.poll = poll
        self.head = log.next_offset
        self.committed = min(read_committed(self.store), self.head)
        self.paused = False
        #: how many times the spool paused
        self.pauses = 0
        self._start = self.committed  # the first offset of the first span
        self._spans: deque[tuple[int, int]] = deque()  # (end offset, message bytes)
        self._bytes = 0
        if max_bytes is not None:
            self._count_backlog()

    @property
    def limited(self) -> bool:
        """Whether there is a limit at all."""
        return self.max_rows is not None or self.max_bytes is not None

    @property
    def rows(self) -> int:
        """Rows logged beyond the committed mark (as last read)."""
        return max(0, self.head - self.committed)

    @property
    def bytes(self) -> int:
        """Message bytes logged beyond the committed mark (as last read)."""
        if not self._spans:
            return 0
        end, nbytes = self._spans[0]
        cut = nbytes * (self.committed - self._start) // max(1, end - self._start)
        return self._bytes - max(0, cut)

    def _count_backlog(self) -> None:
        """The bytes of what the log holds uncommitted when the spool starts (read once)."""
        for _try in range(3):
            try:
                for cols in read_columns(self.store, self.committed, self.head):
                    nbytes = sum(map(len, cols.frames))
                    nbytes += sum(len(t) for t in cols.topics if t is not None)
                    self._add(cols.offsets[-1] + 1, nbytes)
                return
            except (LookupError, FileNotFoundError):  # a query committed meanwhile
                self._spans.clear()
                self._bytes = 0
                self.committed = self._start = min(read_committed(self.store), self.head)
        _log.warning("the backlog of %s could not be counted: its bytes count as 0",
                     self.store.location)

    def _add(self, end: int, nbytes: int) -> None:
        self._spans.append((end, nbytes))
        self._bytes += nbytes
        if len(self._spans) > _MAX_SPANS:
            spans = list(self._spans)
            merged = [(b[0], a[1] + b[1]) for a, b in zip(spans[0::2], spans[1::2], strict=False)]
            if len(spans) % 2:
                merged.append(spans[-1])
            self._spans = deque(merged)

    def observe(self, committed: int) -> None:
        """The committed mark is ``committed`` (read from the log; it only grows)."""
        self.committed = min(max(self.committed, committed), self.head)
        while self._spans and self._spans[0][0] <= self.committed:
            end, nbytes = self._spans.popleft()
            self._bytes -= nbytes
            self._start = end
        if not self._spans:
            self._start = self.committed

    def appended(self, head: int, nbytes: int) -> None:
        """The loop appended messages of ``nbytes`` bytes; the head is now ``head``."""
        if head > self.head:
            if self.max_bytes is not None:
                if not self._spans:
                    self._start = self.head
                self._add(head, nbytes)
            self.head = head

    def _left(self, most: int) -> int:
        if self.max_bytes is not None and self.bytes >= self.max_bytes:
            return 0
        if self.max_rows is not None:
            return max(0, min(most, self.max_rows - self.rows))
        return most

    async def room(self, most: int) -> int:
        """How many messages (1 to ``most``) the loop may receive; waits, paused, while none."""
        wait = LAG_POLL_FIRST
        while True:
            left = self._left(most)
            if left > 0:
                if self.paused:
                    self.paused = False
                    await self.publish()
                return left
            try:
                committed = await trio.to_thread.run_sync(read_committed, self.store)
            except OSError as exc:
                _log.warning("reading the committed mark of %s failed (%s)",
                             self.store.location, exc)
                committed = self.committed
            if committed > self.committed:
                self.observe(committed)
                wait = LAG_POLL_FIRST
                continue
            if not self.paused:
                self.paused = True
                self.pauses += 1
                await self.publish()
            await trio.sleep(min(wait, self.poll))
            wait *= 2

    def record(self) -> dict[str, object]:
        """What the ``backpressure`` object of the log says."""
        return {"paused": self.paused, "pauses": self.pauses, "max_lag": self.max_rows,
                "max_lag_bytes": self.max_bytes, "at": time.time()}

    async def publish(self) -> None:
        """Write :meth:`record` to the log (a failure is logged: it is only for status)."""
        body = json.dumps(self.record()).encode()
        try:
            await trio.to_thread.run_sync(partial(self.store.write, BACKPRESSURE, body,
                                                  sync=False))
        except OSError as exc:
            _log.warning("writing %s of %s failed (%s)", BACKPRESSURE, self.store.location, exc)

    def withdraw(self) -> None:
        """Delete the ``backpressure`` object (the spool stops)."""
        with contextlib.suppress(OSError):
            self.store.delete(BACKPRESSURE)


class _Counter:
    """Messages received since the spool started, and its back-pressure (for the metrics)."""

    def __init__(self, log: LogWriter, limit: LagLimit | None = None) -> None:
        self.start = log.next_offset
        self.log = log
        self.limit = limit

    @property
    def received(self) -> int:
        return self.log.next_offset - self.start


def _metrics_text(counter: _Counter, info: SpoolStatus) -> str:
    escaped = counter.log.location.replace("\\", "\\\\").replace('"', '\\"')
    label = '{log="' + escaped + '"}'
    lines = []
    limit = counter.limit
    pressure: list[tuple[str, str, int, str]] = []
    if limit is not None:
        pressure += [
            ("paused", "gauge", int(limit.paused), "1 while the spool does not read its socket"),
            ("pauses_total", "counter", limit.pauses, "times the spool paused since start"),
        ]
        if limit.max_bytes is not None:
            pressure.append(("lag_bytes", "gauge", limit.bytes,
                             "message bytes logged beyond the committed mark, as last read"))
    for name, kind, value, text in (
        ("head", "gauge", info["head"], "next offset the spool writes"),
        ("committed", "gauge", info["committed"], "offsets below this are committed by a query"),
        ("lag", "gauge", info["lag"], "messages logged and not yet committed"),
        ("segments", "gauge", info["segments"], "segment files or objects of the log"),
        ("received_total", "counter", counter.received, "messages logged since start"),
        *pressure,
    ):
        lines += [f"# HELP trizmq_spool_{name} {text}", f"# TYPE trizmq_spool_{name} {kind}",
                  f"trizmq_spool_{name}{label} {value}"]
    return "\n".join(lines) + "\n"


async def _serve_metric(stream: trio.SocketStream, counter: _Counter) -> None:
    async with stream:
        request = b""
        with trio.move_on_after(_REQUEST_TIMEOUT):
            while b"\r\n\r\n" not in request and len(request) < _MAX_REQUEST:
                chunk = await stream.receive_some(_MAX_REQUEST)
                if not chunk:
                    break
                request += chunk
        line = request.split(b"\r\n", 1)[0].split()
        if len(line) >= 2 and line[0] == b"GET" and line[1] in (b"/metrics", b"/"):
            try:
                info = await trio.to_thread.run_sync(status, counter.log.location)
                if counter.limit is not None:  # a fresher committed mark than its own
                    counter.limit.observe(info["committed"])
                body = _metrics_text(counter, info).encode()
                head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            except OSError as exc:
                body, head = f"log unreadable: {exc}\n".encode(), b"HTTP/1.1 503 Unavailable\r\n"
        else:
            body, head = b"GET /metrics\n", b"HTTP/1.1 404 Not Found\r\n"
        with trio.move_on_after(_REQUEST_TIMEOUT):
            await stream.send_all(
                head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
            )


async def _serve(
    spec: SocketSpec, log: LogWriter, metrics: str = "", limit: LagLimit | None = None
) -> None:
    if limit is not None and limit.limited:
        await limit.publish()
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            endpoints = await nursery.start(
                partial(receive_into_log, admission=limit), spec, log
            )
            if metrics:
                host, _, port = metrics.rpartition(":")
                counter = _Counter(log, limit)
                listeners = await nursery.start(
                    partial(trio.serve_tcp, host=host or None),
                    partial(_serve_metric, counter=counter),
                    int(port),
                )
                bound = listeners[0].socket.getsockname()
                print(f"metrics http://{bound[0]}:{bound[1]}/metrics", flush=True)
            print("ready " + ",".join(endpoints), flush=True)
            async for _sig in signals:
                nursery.cancel_scope.cancel()
                break


def main(argv: Sequence[str] | None = None) -> int:
    """Run the spool (or, with ``status`` first, print a log's lag); the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["status"]:
        sargs = _status_parser().parse_args(argv[1:])
        info = status(sargs.dir)
        if sargs.json:
            print(json.dumps(info))
        else:
            lease = info["lease"]
            for key, value in info.items():
                if key == "lease" and lease:
                    left = float(lease.get("expires", 0)) - time.time()
                    value = f"{lease.get('owner')} (runs out in {left:.1f} s)"
                print(f"{key}: {value}")
        return 0
    args = _parser().parse_args(argv)
    if args.metrics and ":" not in args.metrics:
        _parser().error(f"--metrics takes HOST:PORT, not {args.metrics!r}")
    topics = args.subscribe if args.socket == "sub" else args.groups
    spec = SocketSpec(
        args.socket,
        [e.strip() for e in args.endpoint.split(",") if e.strip()],
        args.mode,
        topics=[t.strip() for t in topics.split(",") if t.strip()],
        hwm=args.hwm,
    )
    log = LogWriter(args.dir, fsync=not args.no_fsync, segment_bytes=args.segment_bytes,
                    lease_seconds=args.lease_seconds)
    limit = None
    try:
        limit = LagLimit(log, args.max_lag, args.max_lag_bytes)
        trio.run(_serve, spec, log, args.metrics, limit)
    finally:
        if limit is not None and limit.limited:
            limit.withdraw()
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
