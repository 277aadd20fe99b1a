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
(head, committed, lag, segments, the writer's lease) for any log, and ``--metrics
HOST:PORT`` serves the same numbers, with the messages received since start, as
Prometheus text on ``http://HOST:PORT/metrics``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import TypedDict

import trio

from ._runtime import SocketSpec, receive_into_log
from ._store import open_store
from ._wal import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_SEGMENT_BYTES,
    Lease,
    LeaseRecord,
    LogWriter,
    read_committed,
    read_head,
    segments,
)

__all__ = ["main", "status"]

#: bytes of an HTTP request the metrics endpoint reads at most, and seconds it waits
_MAX_REQUEST = 8192
_REQUEST_TIMEOUT = 5.0


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
    return p


def _status_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trizmq.spark.spool status", description="Print a log's lag."
    )
    p.add_argument("--dir", required=True, help="the log: a directory or a URI")
    p.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    return p


class SpoolStatus(TypedDict):
    """:func:`status`: a log's head and committed offsets, their lag, its segments and
    its lease holder (a remote log's; None for a local one, or none held)."""

    log: str
    head: int
    committed: int
    lag: int
    segments: int
    lease: LeaseRecord | None


def status(location: str) -> SpoolStatus:
    """What the log at ``location`` holds: head, committed, lag, segments, lease holder."""
    store = open_store(location)
    head = read_head(store)
    committed = read_committed(store)
    holder = None if store.local else Lease(store).holder()
    return {
        "log": store.location,
        "head": head,
        "committed": committed,
        "lag": max(0, head - committed),
        "segments": len(segments(store)),
        "lease": holder,
    }


class _Counter:
    """Messages received since the spool started (for the metrics)."""

    def __init__(self, log: LogWriter) -> None:
        self.start = log.next_offset
        self.log = log

    @property
    def received(self) -> int:
        return self.log.next_offset - self.start


def _metrics_text(counter: _Counter) -> str:
    info = status(counter.log.location)
    escaped = counter.log.location.replace("\\", "\\\\").replace('"', '\\"')
    label = '{log="' + escaped + '"}'
    lines = []
    for name, kind, value, text in (
        ("head", "gauge", info["head"], "next offset the spool writes"),
        ("committed", "gauge", info["committed"], "offsets below this are committed by a query"),
        ("lag", "gauge", info["lag"], "messages logged and not yet committed"),
        ("segments", "gauge", info["segments"], "segment files or objects of the log"),
        ("received_total", "counter", counter.received, "messages logged since start"),
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
                body = (await trio.to_thread.run_sync(_metrics_text, counter)).encode()
                head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            except OSError as exc:
                body, head = f"log unreadable: {exc}\n".encode(), b"HTTP/1.1 503 Unavailable\r\n"
        else:
            body, head = b"GET /metrics\n", b"HTTP/1.1 404 Not Found\r\n"
        with trio.move_on_after(_REQUEST_TIMEOUT):
            await stream.send_all(
                head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
            )


async def _serve(spec: SocketSpec, log: LogWriter, metrics: str = "") -> None:
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            endpoints = await nursery.start(receive_into_log, spec, log)
            if metrics:
                host, _, port = metrics.rpartition(":")
                counter = _Counter(log)
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
    try:
        trio.run(_serve, spec, log, args.metrics)
    finally:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
