"""A driver killed mid-batch (SIGKILL) and restarted replays the same rows from the log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from .conftest import QUERY_TIMEOUT, free_port, spark_env
from .test_source_sink import wait_for

ROOT = Path(__file__).resolve().parents[2]


def _driver(
    endpoint: str, tmp: Path, *crash: str, wal: str | None = None, **env: str
) -> subprocess.Popen[bytes]:
    args = [endpoint, wal or str(tmp / "wal"), str(tmp / "ck"), str(tmp / "out"), *crash]
    # its output is kept, one file per driver, for the message of a failed wait
    log = tmp / f"driver-{len(list(tmp.glob('driver-*.log')))}.log"
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.spark.driver_app", *args],
            cwd=ROOT,
            env={**spark_env(), **env},
            start_new_session=True,  # its JVM is in its group: killpg kills both
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _logs(tmp: Path, lines: int = 40) -> str:
    """The last lines of each driver's output."""
    return "".join(
        f"\n--- {log.name} (last {lines} lines)\n"
        + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
        for log in sorted(tmp.glob("driver-*.log"))
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def _rows(path: Path) -> list[list[object]]:
    return [list(r) for r in json.loads(path.read_text())]


@pytest.mark.needs_java
def test_driver_killed_mid_batch_replays_the_same_rows(tmp_path: Path) -> None:
    crash_and_replay(tmp_path)


def crash_and_replay(tmp_path: Path, wal: str | None = None, **env: str) -> None:
    """Rows a, a driver killed in a batch of rows b, a restarted driver: each row once."""
    (tmp_path / "out").mkdir()
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.setsockopt(zmq.SNDTIMEO, int(QUERY_TIMEOUT * 1000))
    push.connect(endpoint)
    out = tmp_path / "out"
    first = _driver(endpoint, tmp_path, "b", wal=wal, **env)
    second = None

    def delivered() -> list[str]:
        return sorted(str(row[1]) for f in out.glob("batch-*.json") for row in _rows(f))

    try:
        for i in range(50):
            push.send(b"a%d" % i)
        wait_for(lambda: len(delivered()) == 50, "the a rows", 120)
        for i in range(50):
            push.send(b"b%d" % i)
        wait_for(lambda: any(out.glob("crashing-*.json")), "a batch of b rows to start", 60)
        time.sleep(0.5)
        _kill(first)  # mid-batch: the batch is planned (offset log) but not committed
        (crashing,) = out.glob("crashing-*.json")
        batch_id = crashing.name.split("-")[1].split(".")[0]
        seen_before_crash = _rows(crashing)
        assert not (out / f"batch-{batch_id}.json").exists()
        second = _driver(endpoint, tmp_path, wal=wal, **env)
        wait_for(lambda: (out / f"batch-{batch_id}.json").exists(), "the replay", 120)
        assert _rows(out / f"batch-{batch_id}.json") == seen_before_crash, "the same rows"
        expected = sorted([f"a{i}" for i in range(50)] + [f"b{i}" for i in range(50)])
        # the replayed batch may hold only some b rows; the rest follow in later batches
        wait_for(lambda: delivered() == expected, "every row exactly once", 60)
    except AssertionError as exc:
        # a timed-out wait alone says nothing of why: add what the drivers said
        raise AssertionError(f"{exc}; delivered: {delivered()}{_logs(tmp_path)}") from exc
    finally:
        _kill(first)
        if second is not None:
            _kill(second)
        push.close(linger=0)
        ctx.term()
