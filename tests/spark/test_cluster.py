"""On a real multi-executor cluster, with every log on a real S3 API server (no shared disk).

``local-cluster[2,1,1024]`` runs two executor JVMs, each with its own Python workers, as
a cluster manager would; the logs (spools, the query's own log, the exactly-once
staging area) live on the loopback S3 server (moto, its own process), so an executor
can read nothing the driver wrote to its local disk. This module runs first among the
Spark tests (file order) and stops its session at its end; the local tests build theirs
after it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from trizmq.spark import _wal, unpack_header

from .conftest import CLUSTER, QUERY_TIMEOUT, S3, Libzmq, build_session, spark_env, stop_session
from .test_crash import crash_and_replay
from .test_delivery import _flaky
from .test_source_sink import wait_for

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.needs_java


@pytest.fixture(scope="module")
def cluster(s3: S3) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:  # one SparkContext per process: the local one makes way
        stop_session(active)
    session = build_session("trizmq-cluster-tests", CLUSTER)
    try:
        wait_for(lambda: _executors(session) >= 2, "two executors", 120)
        yield session
    finally:
        stop_session(session)


def _executors(spark: Any) -> int:
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1


class Spool:
    """``python -m trizmq.spark.spool`` on an S3 log, bound to a free port."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trizmq.spark.spool", "--endpoint", "tcp://127.0.0.1:0",
             "--dir", uri, "--lease-seconds", "10", "--no-fsync"],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, env=spark_env(),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("ready tcp://127.0.0.1:"), line
        self.endpoint = line.split()[1]

    def head(self) -> int:
        return _wal.read_head(self.uri)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(30) == 0
        self.proc.communicate(timeout=30)


def _received(pull: zmq.Socket[bytes], n: int) -> list[list[bytes]]:
    got = []
    while len(got) < n and pull.poll(int(QUERY_TIMEOUT * 1000)):
        got.append(pull.recv_multipart())
    while pull.poll(500):  # anything beyond n is a duplicate the test must see
        got.append(pull.recv_multipart())
    return got


def test_libzmq_push_through_two_spools_on_s3_to_a_sink(
    cluster: Any, s3: S3, zctx: Libzmq, tmp_path: Path
) -> None:
    assert _executors(cluster) == 2
    spools = [Spool(s3.uri("spool-a")), Spool(s3.uri("spool-b"))]
    try:
        push = zctx.socket(zmq.PUSH)
        for spool in spools:
            push.connect(spool.endpoint)
        pull = zctx.socket(zmq.PULL)
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        n = 3000
        for i in range(n):
            push.send(b"%d" % i)
        wait_for(lambda: sum(s.head() for s in spools) == n, f"{n} rows on S3")
        assert all(s.head() > 0 for s in spools), "ZeroMQ round-robins across the spools"
        query = (
            cluster.readStream.format("zmq")
            .option("spool", ",".join(s.uri for s in spools))
            .option("minPartitionRows", "100")
            .option("partitions", "4")
            .load()
            .select("payload")
            .writeStream.format("zmq")
            .option("endpoint", f"tcp://127.0.0.1:{port}")
            .option("header", "true")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        try:
            got = _received(pull, n)
            payloads = sorted(int(m[1]) for m in got)
            assert payloads == list(range(n)), "every row, once"
            # one more batch, so that the source commits the first: on S3, every spool
            push.send(b"%d" % n)
            assert [int(m[1]) for m in _received(pull, 1)] == [n]
            wait_for(
                lambda: sum(_wal.read_committed(s.uri) for s in spools) >= n, "the commits on S3"
            )
        finally:
            query.stop()
        assert len({unpack_header(m[0])[1] for m in got}) > 1, "several partitions wrote"
        offsets = sorted((tmp_path / "ck" / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
        last = json.loads(offsets[-1].read_text().splitlines()[-1])
        assert set(last["offsets"]) == {s.uri for s in spools}, "one offset per spool"
        assert list((tmp_path / "ck").rglob("seg-*")) == [], "no log on the driver's disk"
    finally:
        for spool in spools:
            spool.stop()


def test_exactly_once_sink_with_staging_on_s3(
    cluster: Any, s3: S3, zctx: Libzmq, tmp_path: Path
) -> None:
    spool = s3.uri("spool")
    log = _wal.LogWriter(spool, lease_seconds=10)
    log.append([(0, None, [b"%d" % i]) for i in range(400)])
    log.close()
    staging = s3.uri("staging")
    pull = zctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    flaky = _flaky(tmp_path / "failed")  # executors share this host's disk: a test marker
    query = (
        cluster.readStream.format("zmq")
        .option("spool", spool)
        .option("partitions", "2")
        .option("minPartitionRows", "100")
        .load()
        .select(flaky("payload").alias("payload"))
        .writeStream.format("zmq")
        .option("endpoint", f"tcp://127.0.0.1:{port}")
        .option("delivery", "exactly-once")
        .option("header", "true")
        .option("staging", staging)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT)
    assert query.exception() is None
    assert (tmp_path / "failed").exists(), "the failure was injected"
    got = _received(pull, 400)
    assert sorted(int(m[1]) for m in got) == list(range(400)), "no loss, no duplicate"
    objects = s3.objects(staging)
    assert any(name.startswith("published/") for name in objects), "the ledger is on S3"
    assert not any(name.startswith("pending/") for name in objects), "staged rows are gone"


def test_driver_killed_mid_batch_with_its_log_on_s3(s3: S3, tmp_path: Path) -> None:
    crash_and_replay(
        tmp_path, wal=s3.uri("wal"), DRIVER_MASTER=CLUSTER, DRIVER_LEASE_SECONDS="5"
    )
