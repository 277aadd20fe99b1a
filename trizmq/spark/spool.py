"""The spool: a process that owns a receiving socket and the write-ahead log.

    python -m trizmq.spark.spool --endpoint tcp://*:5557 --socket pull --mode bind --dir DIR

Every message received is appended to the log in DIR (see ``trizmq.spark._wal``)
whether or not a Spark query runs; a query reads it with
``.option("spool", DIR)``, and its commits truncate it. Once the socket is open the
spool prints ``ready <endpoint>[,<endpoint>...]`` (wildcard ports resolved) on
stdout. SIGTERM or SIGINT stops it cleanly.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

import trio

from ._runtime import SocketSpec, receive_into_log
from ._wal import DEFAULT_SEGMENT_BYTES, LogWriter

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trizmq.spark.spool", description="Own a socket and its write-ahead log."
    )
    p.add_argument("--endpoint", required=True, help="endpoint(s), comma-separated")
    p.add_argument("--socket", choices=["pull", "sub", "dish"], default="pull")
    p.add_argument("--mode", choices=["bind", "connect"], default="bind")
    p.add_argument("--dir", required=True, help="the log directory")
    p.add_argument("--subscribe", default="", help="sub: topic prefixes, comma-separated")
    p.add_argument("--groups", default="", help="dish: groups, comma-separated")
    p.add_argument("--hwm", type=int, default=1000)
    p.add_argument("--no-fsync", action="store_true", help="write without fsync (faster, "
                   "survives a process crash but not a power loss)")
    p.add_argument("--segment-bytes", type=int, default=DEFAULT_SEGMENT_BYTES)
    return p


async def _serve(spec: SocketSpec, log: LogWriter) -> None:
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            endpoints = await nursery.start(receive_into_log, spec, log)
            print("ready " + ",".join(endpoints), flush=True)
            async for _sig in signals:
                nursery.cancel_scope.cancel()
                break


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    topics = args.subscribe if args.socket == "sub" else args.groups
    spec = SocketSpec(
        args.socket,
        [e.strip() for e in args.endpoint.split(",") if e.strip()],
        args.mode,
        topics=[t.strip() for t in topics.split(",") if t.strip()],
        hwm=args.hwm,
    )
    log = LogWriter(args.dir, fsync=not args.no_fsync, segment_bytes=args.segment_bytes)
    try:
        trio.run(_serve, spec, log)
    finally:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
