"""ZeroMQ -> Spark -> ZeroMQ: event-time windows over a stream of pushed events.

    python examples/spark_pipeline.py [--seconds 20]

Needs ``pip install 'trizmq[spark]'`` and Java 17+. Three parts run at once:

* a **ventilator** (a trizmq PUSH) sends JSON events ``{"ts": ..., "sensor": ..., "value": ...}``;
* **Spark** reads them with the "zmq" source (a PULL that binds), counts and averages
  them per sensor in 2-second event-time windows (with a 2-second watermark), and
  writes each window, once the watermark closes it (append mode: Python data source
  sinks take no update mode), to the "zmq" sink, a PUB (topic ``window``) that connects;
* a **subscriber** (a trizmq SUB that binds) prints every window it receives.

The ventilator and the subscriber are trio tasks in a background thread; Spark
runs ``local[2]`` in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys
import tempfile
import threading
import time

import trio

import trizmq


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def ventilator(endpoint: str, stop: trio.Event) -> None:
    """Push a few hundred events a second, a little out of order (event time jitters)."""
    async with trizmq.Push(connect=endpoint, linger=0) as push:
        while not stop.is_set():
            for _ in range(20):
                event = {
                    "ts": time.time() - random.random() * 0.5,
                    "sensor": random.choice(["north", "south", "east"]),
                    "value": round(random.gauss(20, 3), 2),
                }
                await push.send(json.dumps(event).encode())
            await trio.sleep(0.05)


async def subscriber(endpoint: str, ready: threading.Event) -> None:
    """Print every window that Spark publishes (until cancelled)."""
    async with trizmq.Sub(bind=endpoint, subscribe=b"window") as sub:
        ready.set()
        async for _topic, payload in sub:
            w = json.loads(payload)
            print(
                f"{w['start'][11:19]}-{w['end'][11:19]} {w['sensor']:>5}: "
                f"{w['events']:4d} events, mean {w['mean']:.2f}",
                flush=True,
            )


def run_peers(source: str, sink: str, ready: threading.Event, stop: threading.Event) -> None:
    async def main() -> None:
        done = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(subscriber, sink, ready)
            nursery.start_soon(ventilator, source, done)
            await trio.to_thread.run_sync(stop.wait)
            done.set()
            nursery.cancel_scope.cancel()

    trio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import trizmq.spark

    source = f"tcp://127.0.0.1:{free_port()}"
    sink = f"tcp://127.0.0.1:{free_port()}"
    ready, stop = threading.Event(), threading.Event()
    peers = threading.Thread(target=run_peers, args=(source, sink, ready, stop), daemon=True)
    peers.start()
    ready.wait(10)

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("trizmq-spark-pipeline")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    trizmq.spark.register(spark)

    tmp = tempfile.TemporaryDirectory()
    events = (
        spark.readStream.format("zmq")
        .option("endpoint", source)
        .option("socket", "pull")
        .option("mode", "bind")
        .option("wal", os.path.join(tmp.name, "log"))
        .load()
        .select(
            F.from_json(F.col("payload").cast("string"), "ts double, sensor string, value double")
            .alias("e")
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
    with tmp:
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
        try:
            query.awaitTermination(args.seconds)
        finally:
            query.stop()
            stop.set()
            peers.join(10)
            spark.stop()


if __name__ == "__main__":
    main()
