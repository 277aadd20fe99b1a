"""The request-reply examples run as programs: small runs finish, print, exit 0."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: seconds any one example run may take before the test fails
RUN_TIMEOUT = 30


def run_example(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize("transport", ["tcp", "ipc", "inproc"])
def test_lbbroker_serves_every_client(transport: str) -> None:
    done = run_example(
        "lbbroker.py",
        "--clients", "4", "--workers", "3", "--requests", "10", "--transport", transport,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "done: 40 of 40 replies" in done.stdout
    served = {
        worker: int(count)
        for worker, count in re.findall(r"(worker-\d+)\s+served\s+(\d+) requests", done.stdout)
    }
    assert sorted(served) == ["worker-0", "worker-1", "worker-2"]
    assert sum(served.values()) == 40


def test_lazy_pirate_retries_and_recovers() -> None:
    done = run_example(
        "lazy_pirate.py",
        "--requests", "8", "--timeout", "0.2", "--retries", "3",
        "--stall-every", "3", "--crash-every", "5", "--endpoint", "tcp://127.0.0.1:0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "done: 8 of 8 requests answered" in out
    assert "retrying on a new socket" in out
    assert "server: crash with request" in out
    assert "server: restarted" in out
    assert "answering" in out and "late" in out
    for sequence in range(1, 9):
        assert f"client: reply {sequence} OK" in out


def test_lazy_pirate_abandons_a_dead_server() -> None:
    # every request stalls past the timeout: the client gives up after its retries
    done = run_example(
        "lazy_pirate.py",
        "--requests", "2", "--timeout", "0.05", "--retries", "2",
        "--stall-every", "1", "--crash-every", "0", "--endpoint", "tcp://127.0.0.1:0",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "abandoning after 2 retries" in done.stdout
    assert "stopped: 0 of 2 requests answered, 2 retries" in done.stdout


@pytest.mark.parametrize("name", ["lbbroker.py", "lazy_pirate.py"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_examples_stop_cleanly_on_a_signal(name: str, signum: signal.Signals) -> None:
    args, running = {
        "lbbroker.py": (["--requests", "1000000"], "broker: "),
        "lazy_pirate.py": (
            ["--requests", "1000000", "--endpoint", "tcp://127.0.0.1:0"],
            "client: reply 1 OK",
        ),
    }[name]
    with subprocess.Popen(
        [sys.executable, str(EXAMPLES / name), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            # the line printed once the signal handler is in place and work has begun
            for line in proc.stdout:
                if line.startswith(running):
                    break
            else:
                raise AssertionError(proc.stderr.read() if proc.stderr else "no output")
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=RUN_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, err
    assert f"{signum.name}: shutting down" in out
    assert "stopped: " in out
