"""The udp:// datagram codec against libzmq 4.3.5 (zeromq.js 6 via tests/node/peer.js).

A Node DISH bound on udp receives datagrams built by ``encode_datagram`` and sent
with Python's socket module; a Node RADIO connected to a Python UDP socket sends
datagrams that ``decode_datagram`` must read. No trizmq socket is involved.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from trizmq.zmtp.datagram import MAX_DATAGRAM, decode_datagram, encode_datagram

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "node" / "peer.js"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not on PATH"),
    pytest.mark.skipif(
        not (ROOT / "node_modules" / "zeromq").is_dir(),
        reason="node_modules/zeromq is missing: run `npm ci` in the repository root",
    ),
]


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_peer(*args: str) -> subprocess.Popen[str]:
    assert NODE is not None
    return subprocess.Popen(
        [NODE, str(PEER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 10) -> tuple[list[Any], str]:
    """Wait for the peer (it exits by itself) and parse its JSON lines."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=5)
    return [json.loads(line) for line in out.splitlines() if line.strip()], err


def test_node_dish_receives_encoded_datagrams() -> None:
    port = free_udp_port()
    proc = start_peer(
        "--type", "dish", "--bind", f"udp://127.0.0.1:{port}", "--join", "grp",
        "--recv", "3", "--timeout", "8000",
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline() or "{}")
        assert ready.get("ready") == [f"udp://127.0.0.1:{port}"], proc.stderr
        body = b"\x00\xff" + bytes(range(256))
        wanted = encode_datagram(b"grp", body)
        unwanted = encode_datagram(b"other", b"not joined")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            deadline = time.monotonic() + 6
            # the dish's udp engine starts asynchronously: send until it has read 3
            while proc.poll() is None and time.monotonic() < deadline:
                sock.sendto(unwanted, ("127.0.0.1", port))
                sock.sendto(wanted, ("127.0.0.1", port))
                time.sleep(0.02)
    finally:
        lines, err = finish(proc)
    assert proc.returncode == 0, err
    messages = [line for line in lines if "body" in line]
    assert len(messages) == 3
    for message in messages:
        assert bytes.fromhex(message["group"]) == b"grp"
        assert bytes.fromhex(message["body"]) == body


@pytest.mark.parametrize("size", ["small", "max"])
def test_node_radio_datagrams_decode(size: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(5)
        port = sock.getsockname()[1]
        if size == "max":
            body = bytes(i % 251 for i in range(MAX_DATAGRAM - 1 - 3))
            body_args = ["--body-hex", body.hex()]
        else:
            body_args = ["--body", "hello {i}"]
        proc = start_peer(
            "--type", "radio", "--connect", f"udp://127.0.0.1:{port}", "--group", "grp",
            *body_args, "--forever", "--interval", "20", "--timeout", "5000",
        )  # fmt: skip
        try:
            received = []
            for _ in range(3):
                data, _address = sock.recvfrom(MAX_DATAGRAM + 1)
                received.append(data)
        finally:
            proc.terminate()
            finish(proc)
    for data in received:
        group, payload = decode_datagram(data)
        assert group == b"grp"
        if size == "max":
            assert len(data) == MAX_DATAGRAM
            assert payload == body
        else:
            assert payload.startswith(b"hello ")
            assert data == encode_datagram(group, payload)
