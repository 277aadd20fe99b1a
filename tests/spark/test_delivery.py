"""Delivery guarantees: the spool outlives queries; exactly-once survives task retries."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zmq

from trizmq.spark import _wal, unpack_header
from trizmq.spark._datasource import ZmqCommit, ZmqStreamWriter

from .conftest import QUERY_TIMEOUT, Libzmq, spark_env
from .test_source_sink import wait_for


def _spool_log(path: Path, n: int) -> None:
    log = _wal.LogWriter(path, fsync=False)
    log.append([(0, None, [b"%d" % i]) for i in range(n)])
    log.close()


def _flaky(marker: Path) -> Any:
    from pyspark import TaskContext
    from pyspark.sql.functions import udf

    @udf("binary", useArrow=False)  # type: ignore[misc]
    def flaky(payload: bytes) -> bytes:
        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0 and payload == b"250":
            marker.touch()
            raise RuntimeError("injected task failure")
        return payload

    return flaky


@pytest.mark.parametrize("delivery", ["exactly-once", "at-least-once"])
def test_injected_task_failure(spark: Any, zctx: Libzmq, tmp_path: Path, delivery: str) -> None:
    pull = zctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    _spool_log(tmp_path / "spool", 400)
    flaky = _flaky(tmp_path / "failed")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "20")
    try:
        query = (
            spark.readStream.format("zmq")
            .option("spool", str(tmp_path / "spool"))
            .option("partitions", "1")
            .load()
            .select(flaky("payload").alias("payload"))
            .writeStream.format("zmq")
            .option("endpoint", f"tcp://127.0.0.1:{port}")
            .option("delivery", delivery)
            .option("header", "true")
            .option("staging", str(tmp_path / "staging"))
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(QUERY_TIMEOUT)
        assert query.exception() is None
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert (tmp_path / "failed").exists(), "the failure was injected"
    got = []
    while pull.poll(1000):
        got.append(pull.recv_multipart())
    payloads = [int(m[1]) for m in got]
    if delivery == "exactly-once":
        assert sorted(payloads) == list(range(400)), "no loss, no duplicate"
        assert list((tmp_path / "staging" / "published").iterdir()), "the batch is in the ledger"
        assert not list((tmp_path / "staging" / "pending").iterdir()), "staged files are gone"
    else:
        # at-least-once: the failed attempt's rows may come again; the header de-duplicates
        assert sorted(set(payloads)) == list(range(400))
        unique = {unpack_header(m[0]): int(m[1]) for m in got}
        assert sorted(unique.values()) == list(range(400))


def test_exactly_once_replayed_commit_publishes_nothing(zctx: Libzmq, tmp_path: Path) -> None:
    from pyspark.sql.types import BinaryType, StructField, StructType

    pull = zctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    options = {
        "endpoint": f"tcp://127.0.0.1:{port}",
        "delivery": "exactly-once",
        "staging": str(tmp_path),
    }
    schema = StructType([StructField("payload", BinaryType())])
    writer = ZmqStreamWriter(options, schema)

    def stage(n: int) -> ZmqCommit:
        name = f"7-0-0-staged-{n}.msgs"  # as a task stages it: a name under staging/pending
        (tmp_path / "pending").mkdir(exist_ok=True)
        (tmp_path / "pending" / name).write_bytes(
            b"".join(_wal.encode(i, 0, None, [b"%d" % i]) for i in range(n))
        )
        return ZmqCommit(n, 0, name)

    writer.commit([stage(5)], 7)
    writer.commit([stage(5)], 7)  # the driver replays batch 7 after a crash
    got = []
    while pull.poll(1000):
        got.append(pull.recv())
    assert got == [b"%d" % i for i in range(5)]


def test_spool_outlives_queries(spark: Any, zctx: Libzmq, tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    spool = subprocess.Popen(
        [sys.executable, "-m", "trizmq.spark.spool", "--endpoint", "tcp://127.0.0.1:0",
         "--socket", "pull", "--mode", "bind", "--dir", str(spool_dir), "--no-fsync"],
        stdout=subprocess.PIPE, text=True, env=spark_env(),
    )
    try:
        assert spool.stdout is not None
        line = spool.stdout.readline()
        assert line.startswith("ready tcp://127.0.0.1:"), line
        push = zctx.socket(zmq.PUSH)
        push.connect(line.split()[1])

        def send(start: int, stop: int) -> None:
            for i in range(start, stop):
                push.send(b"%d" % i)
            wait_for(lambda: _wal.read_head(spool_dir) >= stop, f"{stop} rows spooled")

        send(0, 100)  # no query runs: the spool keeps them
        assert spark.read.format("zmq").option("spool", str(spool_dir)).load().count() == 100
        seen: list[list[int]] = []

        def run() -> None:
            batch: list[int] = []
            query = (
                spark.readStream.format("zmq").option("spool", str(spool_dir)).load()
                .writeStream.foreachBatch(
                    lambda df, _id: batch.extend(int(r.payload) for r in df.collect())
                )
                .option("checkpointLocation", str(tmp_path / "ck"))
                .trigger(availableNow=True)
                .start()
            )
            assert query.awaitTermination(QUERY_TIMEOUT)
            seen.append(sorted(batch))

        run()
        send(100, 150)  # between queries
        run()
        assert seen == [list(range(100)), list(range(100, 150))]
        assert _wal.read_committed(spool_dir) >= 100  # the second query committed the first's
        assert spool.poll() is None, "the spool outlives the queries"
    finally:
        spool.send_signal(signal.SIGTERM)
        assert spool.wait(30) == 0
        if spool.stdout is not None:
            spool.stdout.close()
