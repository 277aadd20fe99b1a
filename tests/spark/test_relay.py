"""publish="relays": the exactly-once sink's rows go out through relay processes, not the driver.

A driver of its own (this module run as a program, ``local-cluster[2,1,1024]``, staging
on the loopback S3 server) runs the streaming queries once for the module: each stages
its batches and commits only manifests, with no consumer yet. The tests then start
relays (``python -m trizmq.spark.relay``) on those staging areas and check what a
libzmq PULL receives.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from trizmq.spark import _wal, unpack_header
from trizmq.spark import relay as relay_module

from .conftest import CLUSTER, QUERY_TIMEOUT, S3, Libzmq, spark_env
from .test_source_sink import wait_for

ROOT = Path(__file__).resolve().parents[2]

#: rows of each staged query, per micro-batch, and the batches it makes
ROWS = 2000
PER_BATCH = 1000
#: the staging areas the module's driver fills: name -> payload bytes, flaky
QUERIES = {"one": (8, False), "two": (8, True), "killed": (8192, False)}


def _payload(i: int, size: int) -> bytes:
    return (b"%d|" % i).ljust(size, b"x")


def _driver_main(config_path: str) -> None:
    """The module's Spark driver: one availableNow query per staging area, then exit."""
    from pyspark import TaskContext
    from pyspark.sql.functions import udf

    from .conftest import build_session

    config = json.loads(Path(config_path).read_text())
    spark = build_session("trizmq-relay-tests", CLUSTER)
    marker = Path(config["marker"])

    @udf("binary", useArrow=False)  # type: ignore[misc]
    def flaky(payload: bytes) -> bytes:
        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0 and payload.startswith(b"1250|"):
            marker.touch()
            raise RuntimeError("injected task failure")
        return payload

    for name, query in config["queries"].items():
        df = (
            spark.readStream.format("zmq")
            .option("spool", query["spool"])
            .option("partitions", "2")
            .option("minPartitionRows", "100")
            .option("maxRecordsPerTrigger", str(PER_BATCH))
            .load()
        )
        column = flaky("payload") if query["flaky"] else df["payload"]
        running = (
            df.select(column.alias("payload"))
            .writeStream.format("zmq")
            .option("endpoint", query["endpoint"])
            .option("delivery", "exactly-once")
            .option("publish", "relays")
            .option("header", "true")
            .option("hwm", "20")
            .option("staging", query["staging"])
            .option("checkpointLocation", query["checkpoint"])
            .trigger(availableNow=True)
            .start()
        )
        running.awaitTermination()
        assert running.exception() is None, running.exception()
        print(f"staged {name}", flush=True)
    spark.stop()


class Staged:
    """A staging area the module's driver filled, and the bound PULL its manifests name
    (bound before the driver ran, read by nobody until a test does)."""

    def __init__(self, staging: str, pull: zmq.Socket[bytes]) -> None:
        self.staging = staging
        self.pull = pull
        self.endpoint = pull.getsockopt_string(zmq.LAST_ENDPOINT)


@pytest.fixture(scope="module")
def pulls() -> Iterator[Libzmq]:
    lib = Libzmq()
    yield lib
    lib.close()


@pytest.fixture(scope="module")
def staged(
    s3: S3, pulls: Libzmq, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Staged]:
    tmp = tmp_path_factory.mktemp("relay-driver")
    out: dict[str, Staged] = {}
    queries = {}
    for name, (size, flaky) in QUERIES.items():
        spool = s3.uri(f"relay-spool-{name}")
        log = _wal.LogWriter(spool, lease_seconds=10)
        log.append([(0, None, [_payload(i, size)]) for i in range(ROWS)])
        log.close()
        pull = pulls.socket(zmq.PULL)
        pull.setsockopt(zmq.RCVHWM, 20)
        pull.bind_to_random_port("tcp://127.0.0.1")
        out[name] = Staged(s3.uri(f"relay-staging-{name}"), pull)
        queries[name] = {"spool": spool, "staging": out[name].staging, "flaky": flaky,
                         "endpoint": out[name].endpoint, "checkpoint": str(tmp / f"ck-{name}")}
    config = tmp / "config.json"
    config.write_text(json.dumps({"queries": queries, "marker": str(tmp / "failed")}))
    log_path = tmp / "driver.log"
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.test_relay", str(config)],
            cwd=ROOT, env=spark_env(), start_new_session=True,
            stdout=log_file, stderr=subprocess.STDOUT,
        )
    try:
        code = proc.wait(600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert code == 0, log_path.read_text(errors="replace")[-4000:]
    assert (tmp / "failed").exists(), "the task failure was injected"
    return out


class Relay:
    """``python -m trizmq.spark.relay`` on a staging area."""

    def __init__(self, staging: str, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trizmq.spark.relay", "--staging", staging, *flags],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, env=spark_env(),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.metrics = ""
        if line.startswith("metrics "):
            self.metrics = line.split()[1]
            line = self.proc.stdout.readline()
        assert line.startswith("ready "), line

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(60) == 0
        self.proc.communicate(timeout=30)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)
        self.proc.communicate(timeout=30)


@pytest.fixture
def relays() -> Iterator[list[Relay]]:
    started: list[Relay] = []
    yield started
    for r in started:
        if r.proc.poll() is None:
            r.kill()


def _receive(pull: zmq.Socket[bytes], n: int) -> list[tuple[tuple[int, int, int], int]]:
    """(header, row number) of what comes: n messages, then any duplicate that follows."""
    got = []
    while len(got) < n and pull.poll(int(QUERY_TIMEOUT * 1000)):
        head, payload = pull.recv_multipart()
        got.append((unpack_header(head), int(payload.split(b"|", 1)[0])))
    while pull.poll(1000):
        head, payload = pull.recv_multipart()
        got.append((unpack_header(head), int(payload.split(b"|", 1)[0])))
    return got


def _pending(staging: str) -> int:
    return relay_module.status(staging)["pending_manifests"]


@pytest.mark.needs_java
def test_one_relay_publishes_every_row_once_in_order_with_status_and_metrics(
    staged: dict[str, Staged], relays: list[Relay], s3: S3
) -> None:
    area = staged["one"]
    before = subprocess.run(
        [sys.executable, "-m", "trizmq.spark.relay", "--staging", area.staging, "--status",
         "--json"], cwd=ROOT, env=spark_env(), capture_output=True, text=True, timeout=60,
        check=True,
    )
    info = json.loads(before.stdout)
    assert info["pending_manifests"] == ROWS // PER_BATCH, "one manifest per batch"
    assert info["pending_rows"] == ROWS
    text = subprocess.run(
        [sys.executable, "-m", "trizmq.spark.relay", "--staging", area.staging, "--status"],
        cwd=ROOT, env=spark_env(), capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    assert f"pending_rows: {ROWS}" in text
    assert "batch 0 partition 0: 0/" in text
    pull = area.pull
    relays.append(Relay(area.staging, "--metrics", "127.0.0.1:0"))
    got = _receive(pull, ROWS)
    assert sorted(row for _h, row in got) == list(range(ROWS)), "every row, once"
    headers = [h for h, _row in got]
    assert headers == sorted(headers), "one relay: batch, then partition, then row order"
    assert len({h[0] for h in headers}) == ROWS // PER_BATCH, "one manifest per batch"
    wait_for(lambda: _pending(area.staging) == 0, "the manifests in the ledger")
    with urllib.request.urlopen(relays[0].metrics, timeout=30) as response:
        metrics = response.read().decode()
    label = '{staging="' + area.staging + '"}'
    assert f"trizmq_relay_pending_manifests{label} 0" in metrics
    assert f"trizmq_relay_pending_rows{label} 0" in metrics
    assert f"trizmq_relay_published_rows_total{label} {ROWS}" in metrics
    assert f"trizmq_relay_published_batches{label} {ROWS // PER_BATCH}" in metrics
    relays[0].stop()
    objects = s3.objects(area.staging)
    assert sum(name.startswith("published/") for name in objects) == ROWS // PER_BATCH
    assert not [n for n in objects if n.startswith(("pending/", "manifests/", "relay/"))]


@pytest.mark.needs_java
def test_two_relays_share_the_batches_of_a_query_with_a_retried_task(
    staged: dict[str, Staged], relays: list[Relay]
) -> None:
    area = staged["two"]  # its query failed a task once: the retry's file is the one staged
    pull = area.pull
    relays.extend([Relay(area.staging), Relay(area.staging)])
    got = _receive(pull, ROWS)
    assert sorted(row for _h, row in got) == list(range(ROWS)), "every row, once"
    by_file: dict[tuple[int, int], list[int]] = {}
    for (batch, partition, seq), _row in got:
        by_file.setdefault((batch, partition), []).append(seq)
    assert all(seqs == sorted(seqs) for seqs in by_file.values()), "a file goes out in order"
    wait_for(lambda: _pending(area.staging) == 0, "the manifests in the ledger")
    for r in relays:
        r.stop()


@pytest.mark.needs_java
def test_a_relay_killed_mid_file_and_its_successor(
    staged: dict[str, Staged], relays: list[Relay]
) -> None:
    area = staged["killed"]
    pull = area.pull
    got: list[tuple[tuple[int, int, int], int]] = []
    reading = threading.Event()
    reading.set()

    def paced() -> None:  # a slow consumer (a message every 2 ms): the relay waits on it
        while reading.is_set():
            if pull.poll(100):
                head, payload = pull.recv_multipart()
                got.append((unpack_header(head), int(payload.split(b"|", 1)[0])))
                time.sleep(0.002)

    reader = threading.Thread(target=paced, daemon=True)
    reader.start()
    flags = ("--lease-seconds", "3", "--progress-rows", "50")
    first = Relay(area.staging, *flags)
    relays.append(first)

    def partly_sent() -> bool:
        files = [f for m in relay_module.status(area.staging)["manifests"] for f in m["files"]]
        return any(0 < f["sent"] < f["rows"] for f in files)

    try:
        wait_for(partly_sent, "a file partly sent")
        first.kill()
        info = relay_module.status(area.staging)
        cut = [f for m in info["manifests"] for f in m["files"] if 0 < f["sent"] < f["rows"]]
        assert len(cut) == 1 and cut[0]["lease"] is not None, "killed in the middle of a file"
        relays.append(Relay(area.staging, *flags))  # takes the file over after the lease
        wait_for(lambda: len({row for _h, row in got}) >= ROWS, "every row", 3 * QUERY_TIMEOUT)
        wait_for(lambda: _pending(area.staging) == 0, "the manifests in the ledger")
    finally:
        reading.clear()
        reader.join(30)
    while pull.poll(1000):  # any duplicate still on its way
        head, payload = pull.recv_multipart()
        got.append((unpack_header(head), int(payload.split(b"|", 1)[0])))
    rows = Counter(row for _h, row in got)
    assert sorted(rows) == list(range(ROWS)), "no row lost"
    twice = [(h, row) for h, row in got if rows[row] > 1]
    files = {(h[0], h[1]) for h, _row in twice}
    assert len(files) <= 1, "duplicates come from one file only"
    assert len({h for h, _row in got}) == len(set(got)), "a duplicate has its first's header"
    assert len(twice) <= 2 * cut[0]["rows"], "at most the rest of that file again"
    assert sorted({h: row for h, row in got}.values()) == list(range(ROWS)), (
        "the header removes every duplicate"
    )
    relays[-1].stop()


def _writer(tmp_path: Path, port: int) -> Any:
    from pyspark.sql.types import BinaryType, StructField, StructType

    from trizmq.spark._datasource import ZmqStreamWriter

    options = {"endpoint": f"tcp://127.0.0.1:{port}", "delivery": "exactly-once",
               "publish": "relays", "header": "true", "staging": str(tmp_path)}
    return ZmqStreamWriter(options, StructType([StructField("payload", BinaryType())]))


def _stage(tmp_path: Path, batch: int, attempt: int, n: int) -> Any:
    from trizmq.spark._datasource import ZmqCommit

    name = f"{batch}-0-{attempt}-staged.msgs"  # as a task stages it, under staging/pending
    (tmp_path / "pending").mkdir(exist_ok=True)
    (tmp_path / "pending" / name).write_bytes(
        b"".join(_wal.encode(i, 0, None, [b"%d" % i]) for i in range(n))
    )
    return ZmqCommit(n, 0, name)


def test_a_replayed_batch_adds_no_manifest(
    zctx: Libzmq, tmp_path: Path, relays: list[Relay]
) -> None:
    pull = zctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    writer = _writer(tmp_path, port)
    writer.commit([_stage(tmp_path, 7, 0, 5)], 7)
    writer.commit([_stage(tmp_path, 7, 1, 5)], 7)  # the driver replays batch 7 after a crash
    assert sorted(os.listdir(tmp_path / "manifests")) == [relay_module.manifest_name(7)]
    assert sorted(os.listdir(tmp_path / "pending")) == ["7-0-0-staged.msgs"]
    relays.append(Relay(str(tmp_path)))
    got = []
    while len(got) < 5 and pull.poll(int(QUERY_TIMEOUT * 1000)):
        got.append(pull.recv())
    wait_for(lambda: _pending(str(tmp_path)) == 0, "batch 7 in the ledger")
    writer.commit([_stage(tmp_path, 7, 2, 5)], 7)  # and again, once it is published
    assert not os.listdir(tmp_path / "manifests"), "a published batch adds no manifest"
    while pull.poll(1000):
        got.append(pull.recv())
    relays[0].stop()
    assert got == [b"%d" % i for i in range(5)], "published once, in order"


def test_a_relay_finishes_a_manifest_whose_files_are_done(
    zctx: Libzmq, tmp_path: Path, relays: list[Relay]
) -> None:
    pull = zctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    writer = _writer(tmp_path, port)
    writer.commit([_stage(tmp_path, 3, 0, 5)], 3)
    writer.commit([_stage(tmp_path, 4, 0, 5)], 4)
    staging = relay_module.Staging(str(tmp_path))
    first = staging.pending_manifests()[0]
    for file in first.files:  # a relay sent batch 3 and was killed before the ledger
        staging.file_done(file)
    relays.append(Relay(str(tmp_path)))
    wait_for(lambda: _pending(str(tmp_path)) == 0, "batches 3 and 4 in the ledger")
    got = []
    while pull.poll(1000):
        got.append(pull.recv())
    relays[0].stop()
    assert got == [b"%d" % i for i in range(5)], "batch 4 only: batch 3's file was done"
    assert sorted(os.listdir(tmp_path / "published")) == ["3", "4"]
    assert not os.listdir(tmp_path / "pending")


def test_publish_option_is_checked(tmp_path: Path) -> None:
    from pyspark.sql.types import BinaryType, StructField, StructType

    from trizmq.spark._datasource import ZmqStreamWriter

    schema = StructType([StructField("payload", BinaryType())])
    base = {"endpoint": "tcp://127.0.0.1:1", "staging": str(tmp_path)}
    with pytest.raises(ValueError, match="option publish"):
        ZmqStreamWriter({**base, "delivery": "exactly-once", "publish": "executors"}, schema)
    with pytest.raises(ValueError, match="option publish"):
        ZmqStreamWriter({**base, "publish": "relays"}, schema)  # at-least-once


if __name__ == "__main__":
    _driver_main(sys.argv[1])
