"""``trizmq proxy`` and ``trizmq monitor`` with libzmq peers."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable

import zmq

from .helpers import free_port, start_cli

ZSock = Callable[[int], zmq.Socket[bytes]]


def test_proxy_streamer_between_pyzmq_push_and_pull(
    zsock: ZSock, procs: list[subprocess.Popen[bytes]]
) -> None:
    front, back = free_port(), free_port()
    proc = start_cli(
        "proxy",
        "--mode",
        "streamer",
        f"tcp://127.0.0.1:{front}",
        f"tcp://127.0.0.1:{back}",
        "--interval",
        "0.2",
    )
    procs.append(proc)
    push, pull = zsock(zmq.PUSH), zsock(zmq.PULL)
    push.connect(f"tcp://127.0.0.1:{front}")
    pull.connect(f"tcp://127.0.0.1:{back}")
    for i in range(5):
        push.send_multipart([b"job", str(i).encode()])
    assert [pull.recv_multipart() for _ in range(5)] == [
        [b"job", str(i).encode()] for i in range(5)
    ]
    assert proc.stdout is not None
    deadline = time.monotonic() + 10
    line = b""
    while time.monotonic() < deadline:  # counters: one line per interval when not a tty
        line = proc.stdout.readline()
        if line.startswith(b"frontend->backend 5 msgs 20 bytes"):
            break
    assert line.startswith(b"frontend->backend 5 msgs 20 bytes | backend->frontend 0 msgs"), line
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert b"Traceback" not in err


def test_proxy_connect_prefix(zsock: ZSock, procs: list[subprocess.Popen[bytes]]) -> None:
    pull = zsock(zmq.PULL)
    back = pull.bind_to_random_port("tcp://127.0.0.1")
    front = free_port()
    proc = start_cli(
        "proxy",
        "-m",
        "streamer",
        "-q",
        f"bind:tcp://127.0.0.1:{front}",
        f"connect:tcp://127.0.0.1:{back}",
    )
    procs.append(proc)
    push = zsock(zmq.PUSH)
    push.connect(f"tcp://127.0.0.1:{front}")
    push.send(b"through")
    assert pull.recv() == b"through"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 143
    assert out == b""
    assert b"Traceback" not in err


def test_monitor_prints_connect_and_handshake(
    zsock: ZSock, procs: list[subprocess.Popen[bytes]]
) -> None:
    router = zsock(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    proc = start_cli("monitor", f"tcp://127.0.0.1:{port}", "-n", "2")
    procs.append(proc)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    lines = out.decode().splitlines()
    assert len(lines) == 2
    assert " Connected tcp://127.0.0.1:" in lines[0]
    assert " HandshakeSucceeded " in lines[1]
    assert "peer_type=ROUTER" in lines[1]


def test_monitor_json_lines(zsock: ZSock, procs: list[subprocess.Popen[bytes]]) -> None:
    pub = zsock(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    proc = start_cli("monitor", "--type", "sub", "--json", f"tcp://127.0.0.1:{port}", "-n", "2")
    procs.append(proc)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in out.decode().splitlines()]
    assert [e["event"] for e in events] == ["Connected", "HandshakeSucceeded"]
    assert events[1]["peer_type"] == "PUB"
