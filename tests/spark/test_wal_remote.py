"""The write-ahead log and the spool on a real S3 API server (moto, on loopback): no Spark."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import zmq

from trizmq.spark import _wal
from trizmq.spark._runtime import _append, _renew_lease
from trizmq.spark._store import open_store

from .conftest import S3, free_port

ROOT = Path(__file__).resolve().parents[2]


def test_append_read_commit_on_s3(s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    uri = s3.uri("wal")
    log = _wal.LogWriter(uri, lease_seconds=10)
    for i in range(10):
        log.append([(i, b"t" if i % 2 else None, [b"h", b"p%d" % i])])
    assert _wal.read_head(uri) == 10
    recs = list(_wal.read_range(uri, 3, 7))
    assert [r.offset for r in recs] == [3, 4, 5, 6]
    assert recs[0].frames == [b"h", b"p3"] and recs[0].topic == b"t" and recs[1].topic is None
    cols = list(_wal.read_columns(uri, 0, 10))
    assert sum(len(c.offsets) for c in cols) == 10
    # every write is one whole object: ten segments, a head, a lease
    assert len(_wal.segments(uri)) == 10
    assert "lease" in s3.objects(uri)
    _wal.commit(uri, 8)
    assert _wal.read_committed(uri) == 8
    assert [first for first, _ in _wal.segments(uri)] == [8, 9]  # 0..7 held only committed rows
    assert [r.offset for r in _wal.read_range(uri, 8, 10)] == [8, 9]
    with pytest.raises(LookupError, match="truncated or lost"):
        list(_wal.read_range(uri, 0, 10))
    log.close()
    assert "lease" not in s3.objects(uri), "a clean close releases the lease"
    assert list(tmp_path.iterdir()) == [], "a URI never becomes a local directory"
    reopened = _wal.LogWriter(uri, lease_seconds=10)
    assert reopened.next_offset == 10
    reopened.close()


def test_one_writer_per_remote_log(s3: S3) -> None:
    uri = s3.uri("one-writer")
    log = _wal.LogWriter(uri, lease_seconds=30)
    with pytest.raises(RuntimeError, match="owned by another writer"):
        _wal.LogWriter(uri, lease_seconds=30, lease_wait=0.5)
    log.close()
    _wal.LogWriter(uri, lease_seconds=30, lease_wait=0).close()


def test_a_killed_writer_loses_the_log_after_its_lease(s3: S3) -> None:
    uri = s3.uri("takeover")
    first = _wal.LogWriter(uri, lease_seconds=2)
    first.append([(0, None, [b"a"]), (0, None, [b"b"])])
    # `first` stops renewing, as a SIGKILLed writer does; a new writer waits out its lease
    started = time.monotonic()
    second = _wal.LogWriter(uri, lease_seconds=2)
    assert time.monotonic() - started < 10
    assert second.next_offset == 2
    second.append([(0, None, [b"c"])])
    with pytest.raises(_wal.LeaseLost, match="taken by"):
        first.renew()
    first.lease.renewed = 0.0  # its next write must check the lease first
    with pytest.raises(_wal.LeaseLost):
        first.append([(0, None, [b"zombie"])])
    assert [r.frames for r in _wal.read_range(uri, 0, 3)] == [[b"a"], [b"b"], [b"c"]]
    assert _wal.read_head(uri) == 3
    second.close()


def _failing_lease_writes(
    log: _wal.LogWriter, monkeypatch: pytest.MonkeyPatch, times: int
) -> list[float]:
    """Make the next ``times`` writes of ``log``'s lease fail as an unreachable store
    does (an OSError); return the list the failures' times go into."""
    assert log.lease is not None
    store = log.lease.store
    write = store.write
    failed: list[float] = []

    def flaky(name: str, data: bytes, *, sync: bool = True) -> None:
        if name == "lease" and len(failed) < times:
            failed.append(time.monotonic())
            raise OSError("injected: the object store did not answer")
        write(name, data, sync=sync)

    monkeypatch.setattr(store, "write", flaky)
    return failed


def test_a_failed_lease_renewal_is_tried_again(s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    """One renewal lost to a store error while the lease still holds: the receiver's
    renewal task goes on, and the next renewal keeps the lease."""
    log = _wal.LogWriter(s3.uri("renew-again"), lease_seconds=3)
    assert log.lease is not None and log.renew_interval == 1
    failed = _failing_lease_writes(log, monkeypatch, times=1)
    acquired = log.lease.renewed

    async def renew_for_a_while() -> None:
        with trio.fail_after(10), trio.move_on_after(2.6):
            await _renew_lease(log, 1)

    trio.run(renew_for_a_while)
    assert len(failed) == 1
    assert log.lease.renewed > failed[0], "renewed after the failure"
    assert log.lease.renewed - acquired > 1.5
    holder = log.lease.holder()
    assert holder is not None and holder["owner"] == log.lease.owner
    log.close()


def test_lease_renewals_failing_until_it_runs_out_end_the_receiver(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renewals that keep failing: the error ends the renewal task (and with it the
    receiver) once the next try would come after the lease ran out, not at the first."""
    log = _wal.LogWriter(s3.uri("renew-never"), lease_seconds=3)
    assert log.lease is not None
    failed = _failing_lease_writes(log, monkeypatch, times=100)
    acquired = log.lease.renewed

    async def renew() -> None:
        with trio.fail_after(10):
            await _renew_lease(log, 1)

    with pytest.raises(OSError, match="injected"):
        trio.run(renew)
    assert len(failed) == 2, "tried again once while the lease held"
    assert failed[-1] - acquired + 1 >= 3, "gave up only when the next try would be too late"
    log.lease.renewed = time.monotonic()  # let close release the lease it still holds
    monkeypatch.undo()
    log.close()


def _failing_log_writes(
    log: _wal.LogWriter, monkeypatch: pytest.MonkeyPatch, name: str, times: int
) -> list[float]:
    """Make the next ``times`` writes of ``log``'s objects whose name starts with
    ``name`` (``seg-`` or ``head``) fail as an unreachable store does; return the list
    the failures' times go into."""
    store = log.store
    write = store.write
    failed: list[float] = []

    def flaky(key: str, data: bytes, *, sync: bool = True) -> None:
        if key.startswith(name) and len(failed) < times:
            failed.append(time.monotonic())
            raise OSError("injected: the object store did not answer")
        write(key, data, sync=sync)

    monkeypatch.setattr(store, "write", flaky)
    return failed


def _batch(first: int, count: int) -> list[tuple[int, bytes | None, list[bytes]]]:
    return [(i, None, [b"m%d" % i]) for i in range(first, first + count)]


@pytest.mark.parametrize("failing", ["seg-", "head"])
def test_a_failed_append_is_made_again_once(
    s3: S3, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """Two appends lost to store errors, in the segment's write or in the head's after
    it: the receiver makes the append again, and the log holds each message once."""
    uri = s3.uri(f"append-again-{failing}")
    log = _wal.LogWriter(uri, lease_seconds=10)
    failed = _failing_log_writes(log, monkeypatch, failing, times=2)

    async def append_twice() -> None:
        with trio.fail_after(10):
            await _append(log, _batch(0, 3))
            await _append(log, _batch(3, 2))

    trio.run(append_twice)
    assert len(failed) == 2
    assert log.next_offset == 5 and _wal.read_head(uri) == 5
    assert [first for first, _ in _wal.segments(uri)] == [0, 3]
    assert [r.frames for r in _wal.read_range(uri, 0, 5)] == [[b"m%d" % i] for i in range(5)]
    monkeypatch.undo()
    log.close()


def test_appends_failing_for_a_lease_end_the_receiver(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segment writes that keep failing while the lease itself renews: the error ends
    the receiver once a lease's length has gone by since the first failure."""
    log = _wal.LogWriter(s3.uri("append-never"), lease_seconds=1)
    failed = _failing_log_writes(log, monkeypatch, "seg-", times=1000)

    async def append() -> None:
        with trio.fail_after(10):
            await _append(log, _batch(0, 1))

    with pytest.raises(OSError, match="injected"):
        trio.run(append)
    assert len(failed) >= 3, "tried again while the lease held"
    assert failed[-1] - failed[0] < 1, "gave up when the next try would be a lease late"
    assert log.next_offset == 0 and _wal.segments(s3.uri("append-never")) == []
    monkeypatch.undo()
    log.close()


def test_a_segment_written_without_its_head_counts(s3: S3) -> None:
    """A writer killed between a segment upload and its head: the next one goes on after it."""
    uri = s3.uri("headless")
    log = _wal.LogWriter(uri, lease_seconds=10)
    log.append([(0, None, [b"a"])])
    store = open_store(uri)
    store.write(f"seg-{1:020d}.log", _wal.encode(1, 0, None, [b"b"]))  # no head update
    log.close()
    log = _wal.LogWriter(uri, lease_seconds=10)
    assert log.next_offset == 2
    log.close()


def test_an_unknown_scheme_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="nosuch://x"):
        open_store("nosuch://x/y")


def _spool(uri: str, endpoint: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "trizmq.spark.spool", "--endpoint", endpoint, "--dir", uri,
         "--no-fsync", *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _lines(proc: subprocess.Popen[str]) -> Iterator[str]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            return
        yield line.strip()


def _wait_ready(proc: subprocess.Popen[str], timeout: float) -> dict[str, str]:
    """The spool's announcements (metrics, ready) once it prints ready; fails on timeout."""
    found: dict[str, str] = {}
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        for line in _lines(proc):
            key, _, value = line.partition(" ")
            found[key] = value
            if key == "ready":
                return found
    finally:
        timer.cancel()
    assert proc.stderr is not None
    raise AssertionError(f"the spool did not get ready: {proc.stderr.read()[-2000:]}")


def _wait(cond: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_spool_on_s3_survives_sigkill_and_reports_lag(s3: S3) -> None:
    uri = s3.uri("spool")
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.setsockopt(zmq.SNDTIMEO, 30_000)
    push.connect(endpoint)
    spool = _spool(uri, endpoint, "--lease-seconds", "3", "--metrics", "127.0.0.1:0")
    second = None
    try:
        announced = _wait_ready(spool, 60)
        metrics_url = announced["metrics"]
        for i in range(100):
            push.send(b"m%d" % i)
        _wait(lambda: _wal.read_head(uri) == 100, "100 rows on S3")
        with urllib.request.urlopen(metrics_url, timeout=10) as response:
            text = response.read().decode()
        assert f'trizmq_spool_lag{{log="{uri}"}} 100' in text
        assert f'trizmq_spool_received_total{{log="{uri}"}} 100' in text
        status = subprocess.run(
            [sys.executable, "-m", "trizmq.spark.spool", "status", "--dir", uri, "--json"],
            cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
        )
        info = json.loads(status.stdout)
        assert (info["head"], info["committed"], info["lag"]) == (100, 0, 100)
        assert info["lease"]["owner"].endswith(tuple("0123456789abcdef"))
        _wal.commit(uri, 40)  # what a query's commit does
        with urllib.request.urlopen(metrics_url, timeout=10) as response:
            assert f'trizmq_spool_lag{{log="{uri}"}} 60' in response.read().decode()

        os.killpg(spool.pid, signal.SIGKILL)  # no clean close: the lease stays behind
        spool.wait(30)
        for i in range(100, 150):  # queued by libzmq while no spool runs
            push.send(b"m%d" % i)
        second = _spool(uri, endpoint, "--lease-seconds", "3")
        _wait_ready(second, 60)  # after the killed spool's lease ran out
        _wait(lambda: _wal.read_head(uri) == 150, "the rows sent while it was down")
        rows = [r.frames[0] for r in _wal.read_range(uri, 40, 150)]
        assert rows == [b"m%d" % i for i in range(40, 150)]
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
        assert "lease" not in s3.objects(uri), "a stopped spool releases its lease"
    finally:
        for proc in (spool, second):
            if proc is not None:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate(timeout=30)  # and close its pipes
        push.close(linger=0)
        ctx.term()


def test_max_rows_are_shared_fairly_among_spools() -> None:
    from trizmq.spark._datasource import _limit

    start = {"a": 0, "b": 10, "c": 5}
    heads = {"a": 100, "b": 12, "c": 5}
    assert _limit(start, heads, 50) == {"a": 48, "b": 12, "c": 5}
    assert _limit(start, heads, 1000) == heads
    assert _limit(start, heads, 3) == {"a": 2, "b": 11, "c": 5}
    assert _limit(start, heads, 0) == start
