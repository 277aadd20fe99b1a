"""Rows per second through the Spark "zmq" source and sink (64-byte payloads).

    python benchmarks/spark_bench.py [--rows 500000] [--no-fsync] [--json out.json]
    python benchmarks/spark_bench.py --case backlog [--rows N]   # the backlog read alone
    python benchmarks/spark_bench.py --case parquet [--rows N]   # the backlog against Parquet
    python benchmarks/spark_bench.py --case decode [--rows N]    # the log into Arrow, no Spark
    python benchmarks/spark_bench.py --latency [--rates 1000,100000] [--seconds 20]
    python benchmarks/spark_bench.py --case exactly-once [--rows N] [--batch-rows N]

* **source**: a libzmq (pyzmq) PUSH sends ``--rows`` messages to a streaming query
  (``socket=pull``, ``mode=bind``, the in-query log) whose sink is ``noop``; the
  rate is rows over the time from the first send until the query has processed
  every row (receive, log write and fsync, planning, reading the log on executors).
* **backlog**: the same rows, already in a spool's log, drained by an
  ``availableNow`` query (``noop`` sink); rows over the query's whole run.
* **sink**: ``spark.range(rows)`` with a 64-byte binary ``payload`` column is written
  with ``df.write.format("zmq")`` (``socket=push``) to a libzmq PULL; the rate is rows
  over the time from the start of the write until the PULL has received every row.
* **latency** (``--latency``, instead of the three above): a libzmq PUSH sends
  timestamped messages at a steady rate (each of ``--rates``, msgs/s, for
  ``--seconds``) to a streaming query (the in-query log with fsync, the default
  trigger); its ``foreachBatch`` takes each row's send time and, once the batch's rows
  are in the driver, records now minus that. Printed: p50, p99 and the largest, beside
  the figure Spark documents for micro-batch processing (end-to-end latencies "as low
  as 100 milliseconds").

* **exactly-once** (``--case exactly-once``, alone): the exactly-once sink's rows/s,
  published by the driver (``publish="driver"``) and by one and two relays
  (``publish="relays"``), on ``local-cluster[2,1,1024]``; see :func:`bench_exactly_once`.

* **parquet** (``--case parquet``): the same spool's rows drained as in *backlog*, and
  the same rows (offset, received_at, topic, payload, frames) written once as Parquet
  and read by Spark's own Parquet source into the same ``noop`` sink; each read's
  rows/s per executor core (``local[2]``: 2), and the ratio zmq ÷ Parquet. The
  Parquet files are written before the clock starts, with as many files as the zmq
  read has partitions.

* **decode** (``--case decode``, no Spark): rows/s of one Python process turning a
  log into Arrow batches as an executor's partition does: a log of records (the format
  before blocks: a CRC and a Python step per record) and logs of blocks written in
  appends of 10,000, 1,000, 100 and 10 messages; the best of three reads each.

Spark runs ``local[2]`` in this process (the exactly-once case: a local cluster).
Each measurement runs once after a small warm-up; the numbers include Spark's job overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
from typing import Any

import zmq

PAYLOAD = b"x" * 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import trizmq.spark

    trizmq.spark.register(spark)
    return spark


def bench_source(spark: Any, rows: int, fsync: bool, tmp: str) -> float:
    endpoint = f"tcp://127.0.0.1:{_free_port()}"
    query = (
        spark.readStream.format("zmq")
        .option("endpoint", endpoint)
        .option("socket", "pull")
        .option("wal", os.path.join(tmp, "wal"))
        .option("fsync", str(fsync).lower())
        .option("hwm", "100000")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", os.path.join(tmp, "ck"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.SNDHWM, 100000)
    push.connect(endpoint)

    def processed() -> int:
        return sum(p["numInputRows"] for p in query.recentProgress)

    try:
        push.send(PAYLOAD)  # warm-up: the query's first batch
        deadline = time.monotonic() + 120
        while processed() < 1:
            assert time.monotonic() < deadline, "the source query did not start"
            time.sleep(0.05)
        t0 = time.perf_counter()
        for _ in range(rows):
            push.send(PAYLOAD)
        while processed() < rows + 1:
            assert time.monotonic() < deadline + 600, "the source query fell behind"
            time.sleep(0.01)
        rate = rows / (time.perf_counter() - t0)
        if os.environ.get("SPARK_BENCH_VERBOSE"):
            for p in query.recentProgress:
                print(p["batchId"], p["numInputRows"], p["durationMs"], file=sys.stderr)
        return rate
    finally:
        query.stop()
        push.close(linger=0)
        ctx.term()


def bench_backlog(spark: Any, rows: int, tmp: str) -> float:
    """Rows/s of a query draining a spool's log (availableNow, noop sink), start to end."""
    from trizmq.spark._wal import LogWriter

    spool = os.path.join(tmp, "spool")
    log = LogWriter(spool, fsync=False)
    now = time.time_ns() // 1000
    for start in range(0, rows, 10000):
        log.append([(now, None, [PAYLOAD])] * min(10000, rows - start))
    log.close()
    t0 = time.perf_counter()
    query = (
        spark.readStream.format("zmq").option("spool", spool).load()
        .writeStream.format("noop")
        .option("checkpointLocation", os.path.join(tmp, "ck-backlog"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(600), "the backlog query did not finish"
    return rows / (time.perf_counter() - t0)


def bench_parquet(spark: Any, rows: int, tmp: str, repetitions: int = 2) -> dict[str, float]:
    """Rows/s per core of the backlog read and of Spark's Parquet source on the same rows."""
    from trizmq.spark._wal import LogWriter

    spool = os.path.join(tmp, "spool-parquet")
    log = LogWriter(spool, fsync=False)
    now = time.time_ns() // 1000
    for start in range(0, rows, 10000):
        log.append([(now, None, [PAYLOAD])] * min(10000, rows - start))
    log.close()
    cores = spark.sparkContext.defaultParallelism
    table = os.path.join(tmp, "parquet")
    # the rows the source yields, with its schema, written once as Parquet
    spark.read.format("zmq").option("spool", spool).load().repartition(cores).write.parquet(
        table
    )
    zmq_rates, parquet_rates = [], []
    for i in range(repetitions):
        t0 = time.perf_counter()
        query = (
            spark.readStream.format("zmq").option("spool", spool).load()
            .writeStream.format("noop")
            .option("checkpointLocation", os.path.join(tmp, f"ck-parquet-{i}"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(600), "the backlog query did not finish"
        zmq_rates.append(rows / (time.perf_counter() - t0) / cores)
        t0 = time.perf_counter()
        schema = spark.read.parquet(table).schema
        query = (
            spark.readStream.schema(schema).parquet(table)
            .writeStream.format("noop")
            .option("checkpointLocation", os.path.join(tmp, f"ck-parquet-files-{i}"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(600), "the Parquet query did not finish"
        parquet_rates.append(rows / (time.perf_counter() - t0) / cores)
    zmq_rate, parquet_rate = sorted(zmq_rates)[len(zmq_rates) // 2], sorted(parquet_rates)[
        len(parquet_rates) // 2
    ]
    return {
        "backlog_rows_per_s_per_core": round(zmq_rate),
        "parquet_rows_per_s_per_core": round(parquet_rate),
        "backlog_over_parquet": round(zmq_rate / parquet_rate, 3),
    }


def bench_decode(rows: int, tmp: str) -> dict[str, int]:
    """Rows/s of reading a log into Arrow batches in this process (what a partition does)."""
    from pathlib import Path

    from trizmq.spark import _arrowlog, _wal

    def best(location: str, n: int) -> int:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            got = sum(b.num_rows for b in _arrowlog.read_batches(location, 0, n))
            times.append(time.perf_counter() - t0)
            assert got == n
        return round(n / min(times))

    now = time.time_ns() // 1000
    records = Path(tmp, "records")
    records.mkdir()
    with open(records / f"seg-{0:020d}.log", "wb") as f:  # as the writer before blocks did
        for i in range(rows):
            f.write(_wal.encode(i, now, None, [PAYLOAD]))
    (records / "head").write_text(str(rows))
    out = {"records_rows_per_s": best(str(records), rows)}
    for per in (10_000, 1_000, 100, 10):
        n = rows if per >= 1_000 else min(rows, 10_000 * per)  # a head write per append
        location = os.path.join(tmp, f"blocks-{per}")
        log = _wal.LogWriter(location, fsync=False)
        for start in range(0, n, per):
            log.append([(now, None, [PAYLOAD])] * min(per, n - start))
        log.close()
        out[f"blocks_of_{per}_rows_per_s"] = best(location, n)
    return out


def bench_sink(spark: Any, rows: int) -> float:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.setsockopt(zmq.RCVHWM, 100000)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    df = spark.range(rows, numPartitions=2).selectExpr("cast(repeat('x', 64) as binary) as payload")
    df.cache().count()  # the rows exist before the clock starts
    done = threading.Event()

    def receive(n: int) -> None:
        for _ in range(n):
            pull.recv()
        done.set()

    def write() -> None:
        df.write.format("zmq").option("endpoint", f"tcp://127.0.0.1:{port}").option(
            "socket", "push"
        ).mode("append").save()

    try:
        threading.Thread(target=receive, args=(rows,), daemon=True).start()
        write()  # warm-up: workers and their sockets
        done.wait(120)
        done.clear()
        threading.Thread(target=receive, args=(rows,), daemon=True).start()
        t0 = time.perf_counter()
        write()
        assert done.wait(600), "the PULL did not get every row"
        return rows / (time.perf_counter() - t0)
    finally:
        df.unpersist()
        pull.close(linger=0)
        ctx.term()


#: what Spark's Structured Streaming guide says micro-batch processing achieves
SPARK_MICRO_BATCH_LATENCY = 'end-to-end latencies "as low as 100 milliseconds"'


def _send_paced(endpoint: str, rate: int, seconds: float, go: Any, total: Any) -> None:
    """The latency case's sender (its own process): one message, then, once ``go`` is set,
    ``rate`` msgs/s for ``seconds``, each starting with its send time (us, 8 bytes)."""
    pad = b"x" * (len(PAYLOAD) - 8)
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.SNDHWM, 200000)
    push.connect(endpoint)
    push.send((time.time_ns() // 1000).to_bytes(8, "big") + pad)  # the query's first batch
    go.wait()
    sent = 0
    t0 = time.time()
    while (now := time.time()) < t0 + seconds:
        due = int((now - t0) * rate)
        while sent < due:
            push.send((time.time_ns() // 1000).to_bytes(8, "big") + pad)
            sent += 1
        time.sleep(0.0005)
    total.value = sent + 1
    push.close(linger=-1)  # every message out before the process ends
    ctx.term()


def bench_latency(spark: Any, rate: int, seconds: float, tmp: str) -> dict[str, float]:
    """End-to-end latency (send to the rows in a ``foreachBatch``) at ``rate`` msgs/s."""
    import multiprocessing

    endpoint = f"tcp://127.0.0.1:{_free_port()}"
    latencies: list[int] = []  # microseconds
    received = [0]
    measure_from = [float("inf")]  # time.time() after the warm-up

    def measure(df: Any, batch_id: int) -> None:
        sent = df.selectExpr(
            "cast(conv(hex(substring(payload, 1, 8)), 16, 10) as bigint) as sent"
        ).toArrow().column("sent").to_pylist()
        now = time.time_ns() // 1000
        first = measure_from[0] * 1e6
        latencies.extend(now - at for at in sent if at >= first)
        received[0] += len(sent)

    query = (
        spark.readStream.format("zmq")
        .option("endpoint", endpoint)
        .option("socket", "pull")
        .option("wal", os.path.join(tmp, f"wal-latency-{rate}"))
        .option("hwm", "200000")
        .load()
        .writeStream.foreachBatch(measure)
        .option("checkpointLocation", os.path.join(tmp, f"ck-latency-{rate}"))
        .start()
    )
    spawn = multiprocessing.get_context("spawn")
    go, total = spawn.Event(), spawn.Value("q", 0)
    warm_up = 2.0  # seconds at the rate, not measured
    sender = spawn.Process(target=_send_paced, args=(endpoint, rate, warm_up + seconds, go, total))
    sender.start()
    try:
        deadline = time.monotonic() + 120
        while received[0] < 1:
            assert time.monotonic() < deadline, "the latency query did not start"
            time.sleep(0.05)
        measure_from[0] = time.time() + warm_up
        go.set()
        sender.join(warm_up + seconds + 120)
        assert total.value > 0, "the sender did not finish"
        deadline = time.monotonic() + 300
        while received[0] < total.value:
            assert time.monotonic() < deadline, "the latency query fell behind"
            time.sleep(0.05)
        batches = len([p for p in query.recentProgress if p["numInputRows"]])
        if os.environ.get("SPARK_BENCH_VERBOSE"):
            for p in query.recentProgress:
                print(p["batchId"], p["numInputRows"], p["durationMs"], file=sys.stderr)
    finally:
        query.stop()
        if sender.is_alive():
            sender.kill()
    latencies.sort()
    assert latencies, "no message was measured"

    def pick(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] / 1000

    return {
        "rate": rate,
        "messages": len(latencies),
        "p50_ms": round(pick(0.50), 1),
        "p99_ms": round(pick(0.99), 1),
        "max_ms": round(latencies[-1] / 1000, 1),
        "batches": batches,
    }


def main_latency(args: argparse.Namespace) -> None:
    """The ``--latency`` case: p50/p99 at each rate, beside Spark's documented figure."""
    spark = session()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for rate in (int(r) for r in args.rates.split(",")):
            results.append(bench_latency(spark, rate, args.seconds, tmp))
    spark.stop()
    for r in results:
        print(f"{r['rate']:>7} msgs/s: p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, "
              f"max {r['max_ms']} ms ({r['messages']} messages, {r['batches']} batches)")
    print(f"Spark's guide, micro-batch processing: {SPARK_MICRO_BATCH_LATENCY}")
    out = {"cores": os.cpu_count(), "payload_bytes": len(PAYLOAD), "latency": results,
           "spark_documented": SPARK_MICRO_BATCH_LATENCY}
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
def bench_exactly_once(rows: int, relays: int, tmp: str, batch_rows: int) -> float:
    """Rows/s of the exactly-once sink on ``local-cluster[2,1,1024]``: an availableNow
    query drains ``rows`` rows of a spool's log in batches of ``batch_rows`` into a
    libzmq PULL, published by the driver (``relays=0``, ``publish="driver"``) or by that
    many relay processes (``publish="relays"``); from the query's start until the PULL
    has every row."""
    import subprocess

    from pyspark.sql import SparkSession

    from trizmq.spark._wal import LogWriter

    spark = SparkSession.getActiveSession()
    assert spark is not None
    name = f"eo-{relays}-{time.time_ns()}"
    spool = os.path.join(tmp, name, "spool")
    log = LogWriter(spool, fsync=False)
    now = time.time_ns() // 1000
    for start in range(0, rows, 10000):
        log.append([(now, None, [PAYLOAD])] * min(10000, rows - start))
    log.close()
    staging = os.path.join(tmp, name, "staging")
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.setsockopt(zmq.RCVHWM, 100000)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    done = threading.Event()

    def receive() -> None:
        for _ in range(rows):
            pull.recv()
        done.set()

    procs = []
    try:
        for _ in range(relays):
            proc = subprocess.Popen(
                [sys.executable, "-m", "trizmq.spark.relay", "--staging", staging],
                stdout=subprocess.PIPE, text=True,
            )
            procs.append(proc)
            assert proc.stdout is not None and proc.stdout.readline().startswith("ready")
        threading.Thread(target=receive, daemon=True).start()
        t0 = time.perf_counter()
        query = (
            spark.readStream.format("zmq").option("spool", spool)
            .option("partitions", "2").option("maxRecordsPerTrigger", str(batch_rows))
            .load().select("payload")
            .writeStream.format("zmq")
            .option("endpoint", f"tcp://127.0.0.1:{port}")
            .option("delivery", "exactly-once")
            .option("publish", "relays" if relays else "driver")
            .option("staging", staging)
            .option("checkpointLocation", os.path.join(tmp, name, "ck"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(900), "the exactly-once query did not finish"
        assert done.wait(900), "the PULL did not get every row"
        return rows / (time.perf_counter() - t0)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(60)
        pull.close(linger=0)
        ctx.term()


def main_exactly_once(args: argparse.Namespace) -> None:
    """``--case exactly-once``: the driver's commit against one and two relays, interleaved."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import trizmq.spark

    trizmq.spark.register(spark)
    rates: dict[str, list[int]] = {"driver": [], "1 relay": [], "2 relays": []}
    with tempfile.TemporaryDirectory() as tmp:
        bench_exactly_once(20000, 1, tmp, 10000)  # warm-up: executors and their workers
        for _ in range(args.repetitions):
            for key, relays in (("driver", 0), ("1 relay", 1), ("2 relays", 2)):
                rate = bench_exactly_once(args.rows, relays, tmp, args.batch_rows)
                rates[key].append(round(rate))
                print(f"{key}: {rate:,.0f} rows/s", file=sys.stderr, flush=True)
    spark.stop()
    result = {"rows": args.rows, "batch_rows": args.batch_rows, "cores": os.cpu_count(),
              "exactly_once_rows_per_s": rates}
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--no-fsync", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--case", choices=["all", "backlog", "parquet", "decode", "exactly-once"],
                        default="all", help="exactly-once: the sink's driver commit against relays")
    parser.add_argument("--latency", action="store_true", help="measure latency instead")
    parser.add_argument("--rates", default="1000,100000", help="--latency: msgs/s, comma list")
    parser.add_argument("--seconds", type=float, default=20.0, help="--latency: per rate")
    parser.add_argument("--repetitions", type=int, default=1, help="exactly-once: rounds")
    parser.add_argument("--batch-rows", type=int, default=100_000,
                        help="exactly-once: rows per micro-batch")
    args = parser.parse_args()
    if args.latency:
        main_latency(args)
        return
    if args.case == "exactly-once":
        main_exactly_once(args)
        return
    if args.case == "decode":
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps({"rows": args.rows, **bench_decode(args.rows, tmp)}, indent=2))
        return
    spark = session()
    if args.case != "all":
        with tempfile.TemporaryDirectory() as tmp:
            if args.case == "backlog":
                bench_backlog(spark, args.rows, os.path.join(tmp, "warm-up"))  # JIT, workers
                one = {"source_backlog_rows_per_s": round(bench_backlog(spark, args.rows, tmp))}
            else:
                one = bench_parquet(spark, args.rows, tmp)
        spark.stop()
        print(json.dumps({"rows": args.rows, "cores": os.cpu_count(), **one}, indent=2))
        return
    with tempfile.TemporaryDirectory() as tmp:
        source = bench_source(spark, args.rows, not args.no_fsync, tmp)
        backlog = bench_backlog(spark, args.rows, tmp)
    sink = bench_sink(spark, args.rows)
    spark.stop()
    result = {
        "rows": args.rows,
        "payload_bytes": len(PAYLOAD),
        "fsync": not args.no_fsync,
        "cores": os.cpu_count(),
        "source_rows_per_s": round(source),
        "source_backlog_rows_per_s": round(backlog),
        "sink_rows_per_s": round(sink),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
