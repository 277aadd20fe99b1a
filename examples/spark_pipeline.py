"""ZeroMQ -> Spark -> ZeroMQ: event-time windows over a stream of pushed events.

    python examples/spark_pipeline.py [--windows 6] [--timeout 180]

Needs ``pip install 'trizmq[spark]'`` and Java 17+. Three parts run at once:

* a **ventilator** (a trizmq PUSH) sends JSON events ``{"ts": ..., "sensor": ..., "value": ...}``;
* **Spark** reads them with the "zmq" source (a PULL that binds), counts and averages
  them per sensor in 2-second event-time windows (with a 2-second watermark), and
  writes each window, once the watermark closes it (append mode: Python data source
  sinks take no update mode), to the "zmq" sink, a PUB (topic ``window``) that connects;
* a **subscriber** (a trizmq SUB that binds) prints every window it receives.

The ventilator and the subscriber are trio tasks in a background thread; Spark
runs ``local[2]`` in this process. Event time only moves while events flow, so the
ventilator pushes until the end.

The program stops once the subscriber has printed ``--windows`` windows, and exits 0.
If that has not happened ``--timeout`` seconds after the start (Spark's start-up
included), it says on stderr how many windows it printed and exits 1. Either way the
query is stopped only once its first batch has completed (waiting at most
``STOP_GRACE`` seconds for that), and between two batches when there is a moment
between them; then the trio tasks are cancelled and the SparkSession is stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import sys
import tempfile
import threading
import time
from typing import Any

import trio

import trizmq

#: seconds to wait, before stopping the query, for its first batch to complete
STOP_GRACE = 60.0
#: seconds to wait, before stopping the query, for a moment between two batches
BETWEEN = 5.0
#: seconds between two looks at the query (Spark offers nothing to await)
POLL = 0.25


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def ventilator(endpoint: str) -> None:
    """Push a few hundred events a second, a little out of order (event time jitters)."""
    async with trizmq.Push(connect=endpoint, linger=0) as push:
        while True:
            for _ in range(20):
                event = {
                    "ts": time.time() - random.random() * 0.5,
                    "sensor": random.choice(["north", "south", "east"]),
                    "value": round(random.gauss(20, 3), 2),
                }
                await push.send(json.dumps(event).encode())
            await trio.sleep(0.05)


class Peers:
    """The trio side, in a background thread: the ventilator and the subscriber.

    The subscriber prints ``windows`` windows, then sets :attr:`enough` (it prints no
    more once :attr:`quiet` is set, but still takes what comes); the ventilator pushes
    until :meth:`stop` cancels both.
    """

    def __init__(self, source: str, sink: str, windows: int) -> None:
        self.source, self.sink, self.windows = source, sink, windows
        self.printed = 0
        self.ready = threading.Event()  # the subscriber is bound (or the thread ended)
        self.enough = threading.Event()  # the subscriber printed all its windows
        self.quiet = threading.Event()  # the subscriber is to print no more
        self.error: BaseException | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self.thread = threading.Thread(target=self._thread, name="trio-peers", daemon=True)

    async def subscriber(self) -> None:
        """Print the windows that Spark publishes, until there are enough."""
        async with trizmq.Sub(bind=self.sink, subscribe=b"window") as sub:
            self.ready.set()
            async for _topic, payload in sub:
                if self.enough.is_set() or self.quiet.is_set():
                    continue  # keep the peer: the query runs on until it is stopped
                w = json.loads(payload)
                print(
                    f"{w['start'][11:19]}-{w['end'][11:19]} {w['sensor']:>5}: "
                    f"{w['events']:4d} events, mean {w['mean']:.2f}",
                    flush=True,
                )
                self.printed += 1
                if self.printed >= self.windows:
                    self.enough.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            nursery.start_soon(self.subscriber)
            nursery.start_soon(ventilator, self.source)

    def _thread(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # the main thread reports it
            self.error = exc
        finally:
            self.ready.set()

    def start(self) -> None:
        self.thread.start()
        if not self.ready.wait(30) or self.error is not None:
            self.stop()
            raise RuntimeError(f"the subscriber did not start: {self.error!r}")

    def stop(self) -> None:
        """Cancel the ventilator and the subscriber and wait for their thread."""
        if self._token is not None and self._scope is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
        self.thread.join(10)


def stop_between_batches(query: Any) -> None:
    """Stop ``query`` after its first batch has completed, between two batches if it can.

    Waits at most STOP_GRACE seconds for the first batch (then stops it in that batch,
    saying so), and at most BETWEEN seconds more for a moment when no batch runs (there
    is none when each batch takes longer than the trigger interval).
    """
    end = time.monotonic() + STOP_GRACE
    while query.isActive and query.lastProgress is None:
        if time.monotonic() >= end:
            print(
                f"spark_pipeline: the first batch still ran after {STOP_GRACE:.0f} s; "
                "stopping the query in it",
                file=sys.stderr,
            )
            break
        time.sleep(POLL)
    end = time.monotonic() + BETWEEN
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < end:
        time.sleep(0.1)
    query.stop()


def main() -> int:
    started = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--windows",
        type=int,
        default=6,
        metavar="N",
        help="stop once the subscriber has printed N windows (default 6)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help="give up (exit 1) if the windows have not all been printed "
        "SECONDS after the start (default 180)",
    )
    args = parser.parse_args()
    if args.windows < 1:
        parser.error("--windows must be at least 1")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    deadline = started + args.timeout

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import trizmq.spark

    source = f"tcp://127.0.0.1:{free_port()}"
    sink = f"tcp://127.0.0.1:{free_port()}"
    peers = Peers(source, sink, args.windows)
    peers.start()
    spark = None
    query = None
    failure: str | None = None
    timed_out = False
    tmp = tempfile.TemporaryDirectory()
    try:
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("trizmq-spark-pipeline")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.streaming.stopTimeout", "60s")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        trizmq.spark.register(spark)

        events = (
            spark.readStream.format("zmq")
            .option("endpoint", source)
            .option("socket", "pull")
            .option("mode", "bind")
            .option("wal", os.path.join(tmp.name, "log"))
            .load()
            .select(
                F.from_json(
                    F.col("payload").cast("string"), "ts double, sensor string, value double"
                ).alias("e")
            )
            .select(F.col("e.ts").cast("timestamp").alias("ts"), "e.sensor", "e.value")
        )
        windows = (
            events.withWatermark("ts", "2 seconds")
            .groupBy(F.window("ts", "2 seconds"), "sensor")
            .agg(F.count("*").alias("events"), F.avg("value").alias("mean"))
            .select(
                F.lit("window").alias("topic"),
                F.to_json(
                    F.struct(
                        F.col("window.start").cast("string").alias("start"),
                        F.col("window.end").cast("string").alias("end"),
                        "sensor",
                        "events",
                        "mean",
                    )
                ).alias("payload"),
            )
        )
        query = (
            windows.writeStream.format("zmq")
            .outputMode("append")
            .option("endpoint", sink)
            .option("socket", "pub")
            .option("mode", "connect")
            .option("checkpointLocation", os.path.join(tmp.name, "checkpoint"))
            .trigger(processingTime="1 second")
            .start()
        )
        while not peers.enough.is_set():
            if not query.isActive:
                failure = f"the query ended: {query.exception()}"
                break
            if not peers.thread.is_alive():
                failure = f"the subscriber or the ventilator ended: {peers.error!r}"
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            peers.enough.wait(min(POLL, remaining))
    finally:
        peers.quiet.set()
        try:
            if query is not None and query.isActive:
                stop_between_batches(query)
        finally:
            peers.stop()
            if spark is not None:
                spark.stop()
            tmp.cleanup()
    if timed_out:  # the count is final: the subscriber's thread has ended
        failure = (
            f"timed out after {args.timeout:g} s: printed {peers.printed} of {args.windows} windows"
        )
    if failure is not None:
        print(f"spark_pipeline: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
