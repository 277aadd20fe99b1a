"""Back-pressure at the spool: with ``--max-lag`` a spool whose log holds that much
beyond the committed mark stops reading its socket, so PUSH senders block; commits
(the source's ``_wal.commit``, or a streaming query's) let it go on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import zmq

import trizmq
from trizmq.spark import _wal, spool

from .conftest import QUERY_TIMEOUT, S3, Libzmq
from .test_source_sink import memory_query, wait_for

ROOT = Path(__file__).resolve().parents[2]
#: every payload is this long, so that the kernel's socket buffers hold few of them
SIZE = 32 * 1024


def _payload(i: int) -> bytes:
    return b"%08d" % i + b"x" * (SIZE - 8)


def _start(where: str, *extra: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """A spool on ``where`` (a PULL bound to a free port); its announcements once ready."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "trizmq.spark.spool", "--endpoint", "tcp://127.0.0.1:0",
         "--dir", where, "--no-fsync", "--hwm", "10", "--metrics", "127.0.0.1:0", *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    found: dict[str, str] = {}
    timer = threading.Timer(QUERY_TIMEOUT, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            key, _, value = line.strip().partition(" ")
            found[key] = value
            if key == "ready":
                return proc, found
    finally:
        timer.cancel()
    assert proc.stderr is not None
    raise AssertionError(f"the spool did not get ready: {proc.stderr.read()[-2000:]}")


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    proc.communicate(timeout=30)


def _metrics(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("trizmq_spool_"):
            name, value = line.split(" ")
            values[name.split("{")[0][len("trizmq_spool_"):]] = int(value)
    return values


def _status(where: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "trizmq.spark.spool", "status", "--dir", where, "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )
    info: dict[str, Any] = json.loads(done.stdout)
    return info


def _fill(send: Callable[[int], bool], start: int, stop: int, paused: Callable[[], bool]) -> int:
    """Send ``start``, ``start + 1``... without blocking until the spool is paused and a
    send would block; the next index to send."""
    deadline = time.monotonic() + QUERY_TIMEOUT
    i = start
    while i < stop:
        if send(i):
            i += 1
            continue
        if paused():
            return i
        assert time.monotonic() < deadline, f"the spool never paused ({i} sent)"
        time.sleep(0.05)
    raise AssertionError(f"all {stop} messages went through: the sender never blocked")


def _logged(where: str, n: int) -> list[int]:
    return [int(r.frames[0][:8]) for r in _wal.read_range(where, 0, n)]


@pytest.mark.parametrize(("flag", "value"), [("--max-lag", "0"), ("--max-lag", "x"),
                                             ("--max-lag-bytes", "-5")])
def test_a_lag_limit_must_be_a_positive_integer(
    flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        spool.main(["--endpoint", "tcp://127.0.0.1:0", "--dir", str(tmp_path), flag, value])
    err = capsys.readouterr().err
    assert f"argument {flag}: must be a positive integer, not {value!r}" in err
    assert not list(tmp_path.iterdir()), "nothing was opened"


def test_a_full_log_blocks_a_libzmq_push_until_commits(zctx: Libzmq, tmp_path: Path) -> None:
    where, limit, total = str(tmp_path / "spool"), 50, 1000
    proc, announced = _start(where, "--max-lag", str(limit))
    try:
        metrics = announced["metrics"]
        push = zctx.socket(zmq.PUSH)
        push.setsockopt(zmq.SNDHWM, 10)
        push.setsockopt(zmq.SNDBUF, 64 * 1024)
        push.connect(announced["ready"])

        def send(i: int) -> bool:
            try:
                push.send(_payload(i), zmq.NOBLOCK)
            except zmq.Again:
                return False
            return True

        def paused() -> bool:
            return _metrics(metrics)["paused"] == 1

        sent = _fill(send, 0, total, paused)
        # what got through: the log's rows, the spool's queue, the kernel's buffers
        # and the sender's own queue; far fewer than all
        assert limit < sent < 600, sent
        assert _wal.read_head(where) == limit, "the log holds the limit exactly"
        info = _status(where)
        assert (info["lag"], info["paused"], info["max_lag"]) == (limit, True, limit)
        assert _metrics(metrics)["pauses_total"] >= 1

        # the source's commit releases it, a little at a time; it never runs past
        deadline = time.monotonic() + QUERY_TIMEOUT
        while True:
            head = _wal.read_head(where)
            assert head - _wal.read_committed(where) <= limit
            if head == total:
                break
            assert time.monotonic() < deadline, f"stuck at {head} of {total}"
            _wal.commit(where, max(0, head - 10))
            while sent < total and send(sent):
                sent += 1
            time.sleep(0.05)
        assert _logged(where, total) == list(range(total)), "all, once, in order"
        _wal.commit(where, total)
        wait_for(lambda: _status(where)["paused"] is False, "the spool to resume")
    finally:
        _stop(proc)
    assert _status(where)["paused"] is None, "a stopped spool withdraws its backpressure object"


def test_a_trizmq_push_blocks_and_a_bytes_limit_holds(tmp_path: Path) -> None:
    where, total = str(tmp_path / "spool"), 1000
    limit = 20 * SIZE
    proc, announced = _start(where, "--max-lag-bytes", str(limit))

    async def main() -> None:
        with trio.fail_after(2 * QUERY_TIMEOUT):
            async with trizmq.Push(sndhwm=5, connect=[announced["ready"]]) as push:
                sent = 0
                while True:
                    try:
                        push.send_nowait(_payload(sent))
                        sent += 1
                        continue
                    except trio.WouldBlock:
                        pass
                    values = await trio.to_thread.run_sync(_metrics, announced["metrics"])
                    if values["paused"] == 1:
                        break
                    assert sent < total, "the sender never blocked"
                    await trio.sleep(0.05)
                assert sent < 600, sent
                head = _wal.read_head(where)
                values = _metrics(announced["metrics"])
                assert values["lag_bytes"] >= limit
                # one receive batch may pass the limit, never more than what was sent
                assert 20 <= head < sent
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_commit_until, where, total)  # as the source does
                    for i in range(sent, total):
                        await push.send(_payload(i))  # waits while the spool is paused
                _wal.commit(where, total)
                # the metrics read the committed mark, and the bytes lag follows it
                values = await trio.to_thread.run_sync(_metrics, announced["metrics"])
                assert (values["lag"], values["lag_bytes"]) == (0, 0)

    try:
        trio.run(main)
        assert _logged(where, total) == list(range(total))
    finally:
        _stop(proc)


async def _commit_until(where: str, total: int) -> None:
    """Commit the log's head every 50 ms until it reaches ``total``."""
    while (head := _wal.read_head(where)) < total:
        _wal.commit(where, head)
        await trio.sleep(0.05)


def test_a_query_commit_releases_a_paused_spool(
    spark: Any, zctx: Libzmq, tmp_path: Path
) -> None:
    where, limit, total = str(tmp_path / "spool"), 40, 300
    proc, announced = _start(where, "--max-lag", str(limit))
    query = None
    try:
        push = zctx.socket(zmq.PUSH)
        push.setsockopt(zmq.SNDHWM, 10)
        push.setsockopt(zmq.SNDBUF, 64 * 1024)
        push.connect(announced["ready"])
        sent = _fill(lambda i: _try_send(push, i), 0, total,
                     lambda: _metrics(announced["metrics"])["paused"] == 1)
        assert _wal.read_head(where) == limit, "no query runs: the spool stops at the limit"

        def rest() -> None:
            for i in range(sent, total):
                push.send(_payload(i))  # blocks (SNDTIMEO bounds it) until the query commits

        sender = threading.Thread(target=rest, daemon=True)
        sender.start()
        # each batch takes all the paused spool holds: it is released by the next
        # batch's start (latestOffset), not only by Spark's commit of the one before
        df = spark.readStream.format("zmq").option("spool", where).load()
        query = memory_query(df, "backpressure", tmp_path / "ck")

        def count() -> int:
            return int(spark.sql("select count(*) from backpressure").collect()[0][0])

        # some five batches, each waiting for the one before it
        wait_for(lambda: count() == total, f"{total} rows through the query", 4 * QUERY_TIMEOUT)
        sender.join(QUERY_TIMEOUT)
        assert not sender.is_alive()
        rows = spark.sql("select offset, payload from backpressure order by offset").collect()
        assert [r.offset for r in rows] == list(range(total))
        assert [int(r.payload[:8]) for r in rows] == list(range(total)), "once each, in order"
        assert _metrics(announced["metrics"])["pauses_total"] >= 2
    finally:
        if query is not None:
            query.stop()
        _stop(proc)


def _try_send(push: zmq.Socket[bytes], i: int) -> bool:
    try:
        push.send(_payload(i), zmq.NOBLOCK)
    except zmq.Again:
        return False
    return True


def _lease_expiry(uri: str) -> float:
    info = _status(uri)
    return float((info["lease"] or {}).get("expires", 0))


def test_a_paused_spool_on_s3_keeps_its_lease(s3: S3, zctx: Libzmq) -> None:
    uri, limit = s3.uri("paused"), 10
    proc, announced = _start(uri, "--max-lag", str(limit), "--lease-seconds", "3")
    try:
        push = zctx.socket(zmq.PUSH)
        push.setsockopt(zmq.SNDHWM, 10)
        push.setsockopt(zmq.SNDBUF, 64 * 1024)
        push.connect(announced["ready"])
        sent = _fill(lambda i: _try_send(push, i), 0, 1000,
                     lambda: _metrics(announced["metrics"])["paused"] == 1)
        assert _wal.read_head(uri) == limit
        first = _lease_expiry(uri)
        # two renewals later the lease would have run out, had the pause stopped them
        wait_for(lambda: _lease_expiry(uri) > first + 3, "the lease renewed while paused")
        assert proc.poll() is None and _metrics(announced["metrics"])["paused"] == 1
        with pytest.raises(RuntimeError, match="owned by another writer"):
            _wal.LogWriter(uri, lease_wait=0.5)
        _wal.commit(uri, limit)
        wait_for(lambda: _wal.read_head(uri) == min(sent, 2 * limit), "the spool resumed")
    finally:
        _stop(proc)


def test_a_restarted_spool_counts_its_backlog(tmp_path: Path) -> None:
    log = _wal.LogWriter(tmp_path, fsync=False)
    log.append([(0, None, [_payload(i)]) for i in range(30)])
    _wal.commit(tmp_path, 10)
    limit = spool.LagLimit(log, max_rows=25, max_bytes=15 * SIZE)
    assert (limit.rows, limit.bytes) == (20, 20 * SIZE)

    async def room() -> int:
        with trio.fail_after(QUERY_TIMEOUT):
            return await limit.room(100)

    limit.poll = 0.05
    _wal.commit(tmp_path, 16)  # 14 rows left: under both limits

    async def check() -> None:
        assert await room() == 11  # rows: 25 - 14
        assert not limit.paused and limit.pauses == 0
        limit.appended(41, 11 * SIZE)  # now 25 rows, 25 * SIZE bytes beyond 16
        async with trio.open_nursery() as nursery:
            got: list[int] = []

            async def wait() -> None:
                got.append(await room())

            nursery.start_soon(wait)
            while not limit.paused:
                await trio.sleep(0.01)
            assert not got and limit.pauses == 1
            _wal.commit(tmp_path, 31)  # 10 rows left
        assert got == [15] and not limit.paused and limit.bytes == 10 * SIZE

    trio.run(check)
    log.close()
