"""The "zmq" source and sink against libzmq (pyzmq) peers, on the shared SparkSession."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zmq

from trizmq.spark import _wal, unpack_header

from .conftest import QUERY_TIMEOUT, Libzmq, free_port


def wait_for(cond: Callable[[], bool], what: str, timeout: float = QUERY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def memory_query(df: Any, name: str, checkpoint: Path) -> Any:
    return (
        df.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def rows_of(spark: Any, name: str) -> list[Any]:
    return list(spark.sql(f"select * from {name} order by offset").collect())


def test_libzmq_push_feeds_a_stream(spark: Any, zctx: Libzmq, tmp_path: Path) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    df = (
        spark.readStream.format("zmq")
        .option("endpoint", endpoint)
        .option("socket", "pull")
        .option("mode", "bind")
        .option("wal", str(tmp_path / "wal"))
        .option("segmentBytes", "2000")
        .load()
    )
    query = memory_query(df, "pushed", tmp_path / "ck")
    try:
        push = zctx.socket(zmq.PUSH)
        push.connect(endpoint)
        for i in range(200):
            push.send_multipart([b"hdr", b"row-%03d" % i], copy=True)
        wait_for(lambda: _wal.read_head(tmp_path / "wal") >= 200, "the log to hold 200 rows")
        query.processAllAvailable()
        rows = rows_of(spark, "pushed")
        assert [r.offset for r in rows] == list(range(200))
        assert [r.payload for r in rows] == [b"row-%03d" % i for i in range(200)]
        assert rows[0].frames == [b"hdr", b"row-000"] and rows[0].topic is None
        assert rows[0].received_at is not None
        # one more batch, so that the source commits the first: the log is truncated
        push.send_multipart([b"hdr", b"last"])
        wait_for(lambda: len(rows_of(spark, "pushed")) == 201, "the last row")
        wait_for(lambda: _wal.read_committed(tmp_path / "wal") >= 200, "the commit")
        first_segment = _wal.segments(tmp_path / "wal")[0][0]
        assert first_segment > 0, "commit must delete the processed segments"
    finally:
        query.stop()


def test_libzmq_pub_feeds_a_stream(spark: Any, zctx: Libzmq, tmp_path: Path) -> None:
    pub = zctx.socket(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    wal = tmp_path / "wal"
    df = (
        spark.readStream.format("zmq")
        .option("endpoint", f"tcp://127.0.0.1:{port}")
        .option("socket", "sub")
        .option("subscribe", "a,b")
        .option("wal", str(wal))
        .load()
    )
    query = memory_query(df.selectExpr("offset", "topic", "payload"), "published", tmp_path / "ck")
    try:
        # PUB drops until the subscription arrives (by design): warm up until one is logged
        wait_for(lambda: pub.send_multipart([b"a", b"warm-up"]) or _wal.read_head(wal) > 0,
                 "the subscription")
        warm = _wal.read_head(wal)
        time.sleep(0.1)
        warm = _wal.read_head(wal)
        for i in range(30):
            pub.send_multipart([b"abc"[i % 3 : i % 3 + 1], b"%d" % i])
        wait_for(lambda: _wal.read_head(wal) >= warm + 20, "20 matching rows")
        query.processAllAvailable()
        rows = [r for r in rows_of(spark, "published") if r.payload != b"warm-up"]
        assert len(rows) == 20
        assert {r.topic for r in rows} == {b"a", b"b"}
        assert [int(r.payload) for r in rows] == [i for i in range(30) if i % 3 != 2]
    finally:
        query.stop()


def test_batch_write_to_libzmq_pull(spark: Any, zctx: Libzmq) -> None:
    pull = zctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    (
        spark.range(500)
        .selectExpr("cast(id as string) as payload")
        .write.format("zmq")
        .option("endpoint", f"tcp://127.0.0.1:{port}")
        .option("socket", "push")
        .mode("append")
        .save()
    )
    got = sorted(int(pull.recv()) for _ in range(500))
    assert got == list(range(500))
    # frames column and the de-duplication header
    (
        spark.range(10)
        .selectExpr("array(cast('k' as binary), cast(cast(id as string) as binary)) as frames")
        .coalesce(1)
        .write.format("zmq")
        .option("endpoint", f"tcp://127.0.0.1:{port}")
        .option("header", "true")
        .mode("append")
        .save()
    )
    msgs = [pull.recv_multipart() for _ in range(10)]
    assert sorted(int(m[2]) for m in msgs) == list(range(10))
    assert all(m[1] == b"k" and len(m) == 3 for m in msgs)
    headers = sorted(unpack_header(m[0]) for m in msgs)
    assert headers == [(-1, 0, seq) for seq in range(10)]


def test_stream_write_to_libzmq_pull_and_sub(
    spark: Any, zctx: Libzmq, tmp_path: Path
) -> None:
    pull = zctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    spool = tmp_path / "spool"
    log = _wal.LogWriter(spool, fsync=False)
    log.append([(0, None, [b"%d" % i]) for i in range(300)])
    log.close()
    source = spark.readStream.format("zmq").option("spool", str(spool)).load()
    query = (
        source.select("payload")
        .writeStream.format("zmq")
        .option("endpoint", f"tcp://127.0.0.1:{port}")
        .option("socket", "push")
        .option("header", "true")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT)
    msgs = [pull.recv_multipart() for _ in range(300)]
    assert sorted(int(m[1]) for m in msgs) == list(range(300))
    assert {unpack_header(m[0])[0] for m in msgs} == {0}
    # a PUB sink with a topic column, to a libzmq SUB
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"keep")
    sport = sub.bind_to_random_port("tcp://127.0.0.1")
    df = spark.range(20).selectExpr(
        "if(id % 2 = 0, 'keep', 'drop') as topic", "cast(id as string) as payload"
    )
    deadline = time.monotonic() + QUERY_TIMEOUT
    got: list[list[bytes]] = []
    while not got:  # the first writes may race the subscription: PUB drops by design
        assert time.monotonic() < deadline, "no message reached the SUB"
        df.write.format("zmq").option("endpoint", f"tcp://127.0.0.1:{sport}").option(
            "socket", "pub"
        ).mode("append").save()
        while sub.poll(500):
            got.append(sub.recv_multipart())
    assert got and all(m[0] == b"keep" and int(m[1]) % 2 == 0 for m in got)


def test_radio_sink_feeds_a_dish_source(spark: Any, tmp_path: Path) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    wal = tmp_path / "wal"
    df = (
        spark.readStream.format("zmq")
        .option("endpoint", endpoint)
        .option("socket", "dish")
        .option("groups", "g1")
        .option("wal", str(wal))
        .load()
    )
    query = memory_query(df.selectExpr("offset", "topic", "payload", "frames"), "dished",
                         tmp_path / "ck")
    try:
        rows = spark.range(10).selectExpr(
            "if(id < 5, 'g1', 'g2') as group", "cast(id as string) as payload"
        )

        def write() -> bool:
            rows.write.format("zmq").option("endpoint", endpoint).option(
                "socket", "radio"
            ).mode("append").save()
            return _wal.read_head(wal) >= 5

        # RADIO drops until the DISH's join arrives (by design): write until rows land
        wait_for(write, "rows in the dish's log")
        query.processAllAvailable()
        got = rows_of(spark, "dished")
        assert {r.topic for r in got} == {b"g1"}
        assert {r.payload for r in got} <= {b"%d" % i for i in range(5)}
        assert all(r.frames == [r.payload] for r in got)
    finally:
        query.stop()


def test_worker_sockets_stay_open_across_batches(spark: Any, zctx: Libzmq) -> None:
    """Python workers keep their socket per endpoint from batch to batch: 6 writes of 2
    partitions (12 tasks) to one PULL need far fewer connections than tasks (Spark may
    start a new worker now and then, so the count is not fixed; without reuse it is 12)."""
    from zmq.utils.monitor import recv_monitor_message

    batches, partitions = 6, 2
    pull = zctx.socket(zmq.PULL)
    monitor = pull.get_monitor_socket(zmq.EVENT_ACCEPTED)
    monitor.setsockopt(zmq.RCVTIMEO, 2000)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    try:
        for batch in range(batches):
            (
                spark.range(100)
                .repartition(partitions)
                .selectExpr(f"cast(id + {batch * 100} as string) as payload")
                .write.format("zmq")
                .option("endpoint", f"tcp://127.0.0.1:{port}")
                .option("socket", "push")
                .mode("append")
                .save()
            )
            got = sorted(int(pull.recv()) for _ in range(100))
            assert got == list(range(batch * 100, batch * 100 + 100))
        accepted = 0
        while True:
            try:
                event = recv_monitor_message(monitor)
            except zmq.Again:
                break
            if event["event"] == zmq.EVENT_ACCEPTED:
                accepted += 1
        tasks = batches * partitions
        assert 1 <= accepted <= tasks // 2, f"{accepted} connections for {tasks} tasks"
    finally:
        pull.disable_monitor()
        monitor.close(0)


def test_an_unknown_option_is_refused_by_name(spark: Any, tmp_path: Path) -> None:
    """A typo such as ``wall`` must not leave the log in a temp directory."""
    with pytest.raises(Exception, match=r"no option 'wall'.*did you mean 'wal'"):
        (
            spark.readStream.format("zmq")
            .option("endpoint", f"tcp://127.0.0.1:{free_port()}")
            .option("wall", str(tmp_path / "wal"))
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .start()
            .processAllAvailable()
        )
    rows = spark.createDataFrame([(b"x",)], "payload binary")
    with pytest.raises(Exception, match=r"no option 'sendtimout'.*did you mean 'sendtimeout'"):
        rows.write.format("zmq").option("endpoint", "tcp://127.0.0.1:1").option(
            "sendTimout", "5"
        ).mode("append").save()
    assert not (tmp_path / "wal").exists()


def test_batch_read_of_an_empty_or_committed_log_has_no_rows(spark: Any, tmp_path: Path) -> None:
    def count(*logs: Path) -> int:
        load = spark.read.format("zmq").option("spool", ",".join(map(str, logs))).load()
        return int(load.count())

    empty, full = tmp_path / "empty", tmp_path / "full"
    _wal.LogWriter(empty, fsync=False).close()
    log = _wal.LogWriter(full, fsync=False)
    log.append([(0, None, [b"%d" % i]) for i in range(30)])
    log.close()
    assert count(empty) == 0
    assert count(empty, full) == 30
    _wal.commit(full, 30)
    assert count(full) == 0
    assert count(empty, full) == 0
