"""``trizmq send`` / ``trizmq recv`` against libzmq peers (pyzmq), as real subprocesses."""

from __future__ import annotations

import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import trustme
import zmq

from .helpers import bound_endpoint, free_port, run_cli, start_cli

ZSock = Callable[[int], zmq.Socket[bytes]]


def test_recv_pull_from_pyzmq_push(zsock: ZSock, procs: list[subprocess.Popen[bytes]]) -> None:
    proc = start_cli("recv", "--type", "pull", "--bind", "tcp://127.0.0.1:0", "-n", "3", "-s", "|")
    procs.append(proc)
    push = zsock(zmq.PUSH)
    push.connect(bound_endpoint(proc))
    push.send_multipart([b"job", b"42"])
    push.send(b"hello")
    push.send(b"")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == b"job|42\nhello\n\n"


def test_send_push_multipart_with_separator(zsock: ZSock) -> None:
    pull = zsock(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    result = run_cli(
        "send",
        "--type",
        "push",
        "--connect",
        f"tcp://127.0.0.1:{port}",
        "--separator",
        "|",
        input=b"a|b|c\nsingle\n|\nlast-no-newline",
    )
    assert result.returncode == 0, result.stderr
    assert pull.recv_multipart() == [b"a", b"b", b"c"]
    assert pull.recv_multipart() == [b"single"]
    assert pull.recv_multipart() == [b"", b""]
    assert pull.recv_multipart() == [b"last-no-newline"]


def test_send_messages_from_arguments_and_count(zsock: ZSock) -> None:
    pull = zsock(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    result = run_cli(
        "send", "-t", "push", "-c", f"tcp://127.0.0.1:{port}", "-n", "2", "one", "two", "three"
    )
    assert result.returncode == 0, result.stderr
    assert pull.recv_multipart() == [b"one"]
    assert pull.recv_multipart() == [b"two"]
    pull.rcvtimeo = 300
    try:
        pull.recv()
    except zmq.Again:
        pass
    else:
        raise AssertionError("--count 2 sent a third message")


def _prefixed(*frames: bytes) -> bytes:
    last = len(frames) - 1
    return b"".join(
        struct.pack(">I", len(f) | (0x8000_0000 if i < last else 0)) + f
        for i, f in enumerate(frames)
    )


def test_send_length_prefixed_frames(zsock: ZSock) -> None:
    pull = zsock(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    data = _prefixed(b"bin\n\x00ary", b"second") + _prefixed(b"solo") + _prefixed(b"")
    result = run_cli(
        "send", "-t", "push", "-c", f"tcp://127.0.0.1:{port}", "--length-prefixed", input=data
    )
    assert result.returncode == 0, result.stderr
    assert pull.recv_multipart() == [b"bin\n\x00ary", b"second"]
    assert pull.recv_multipart() == [b"solo"]
    assert pull.recv_multipart() == [b""]


def test_recv_length_prefixed_frames(zsock: ZSock, procs: list[subprocess.Popen[bytes]]) -> None:
    proc = start_cli(
        "recv", "-t", "pull", "-b", "tcp://127.0.0.1:0", "-n", "2", "--length-prefixed"
    )
    procs.append(proc)
    push = zsock(zmq.PUSH)
    push.connect(bound_endpoint(proc))
    push.send_multipart([b"a\nb", b"\x00\xff"])
    push.send(b"x" * 70000)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == _prefixed(b"a\nb", b"\x00\xff") + _prefixed(b"x" * 70000)


def test_truncated_length_prefixed_input_is_one_line_error(zsock: ZSock) -> None:
    pull = zsock(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    result = run_cli(
        "send",
        "-t",
        "push",
        "-c",
        f"tcp://127.0.0.1:{port}",
        "--length-prefixed",
        input=struct.pack(">I", 10) + b"abc",
    )
    assert result.returncode == 1
    assert b"length-prefixed input ends inside a message" in result.stderr
    assert b"Traceback" not in result.stderr


def test_send_raw_whole_stdin_is_one_message(zsock: ZSock) -> None:
    pull = zsock(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    payload = b"line 1\nline 2\n\x00binary"
    result = run_cli("send", "-t", "push", "-c", f"tcp://127.0.0.1:{port}", "--raw", input=payload)
    assert result.returncode == 0, result.stderr
    assert pull.recv_multipart() == [payload]


def test_recv_sub_with_subscription(zsock: ZSock, procs: list[subprocess.Popen[bytes]]) -> None:
    pub = zsock(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    proc = start_cli(
        "recv",
        "-t",
        "sub",
        "-c",
        f"tcp://127.0.0.1:{port}",
        "--subscribe",
        "weather",
        "-s",
        "|",
        "-n",
        "3",
    )
    procs.append(proc)
    deadline = time.monotonic() + 20
    while proc.poll() is None and time.monotonic() < deadline:
        pub.send_multipart([b"news", b"ignored"])
        pub.send_multipart([b"weather", b"sunny"])
        time.sleep(0.02)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert out == b"weather|sunny\n" * 3


def test_send_pub_waits_for_the_subscriber(zsock: ZSock) -> None:
    port = free_port()
    sub = zsock(zmq.SUB)
    sub.subscribe(b"")
    sub.connect(f"tcp://127.0.0.1:{port}")  # before the publisher binds: libzmq retries
    result = run_cli("send", "-t", "pub", "-b", f"tcp://127.0.0.1:{port}", "-s", "|", "t|1", "t|2")
    assert result.returncode == 0, result.stderr
    assert sub.recv_multipart() == [b"t", b"1"]
    assert sub.recv_multipart() == [b"t", b"2"]


def test_req_prints_replies_of_pyzmq_rep(
    zsock: ZSock, procs: list[subprocess.Popen[bytes]]
) -> None:
    rep = zsock(zmq.REP)
    port = rep.bind_to_random_port("tcp://127.0.0.1")
    proc = start_cli("send", "-t", "req", "-c", f"tcp://127.0.0.1:{port}", "ping", "again")
    procs.append(proc)
    for _ in range(2):
        request = rep.recv()
        rep.send(request.upper())
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == b"PING\nAGAIN\n"


def test_recv_rep_answers_pyzmq_req(zsock: ZSock, procs: list[subprocess.Popen[bytes]]) -> None:
    proc = start_cli("recv", "-t", "rep", "-b", "tcp://127.0.0.1:0", "--reply", "pong", "-n", "2")
    procs.append(proc)
    req = zsock(zmq.REQ)
    req.connect(bound_endpoint(proc))
    for text in (b"one", b"two"):
        req.send(text)
        assert req.recv() == b"pong"
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == b"one\ntwo\n"


def test_router_line_mode_uses_hex_routing_ids(
    zsock: ZSock, procs: list[subprocess.Popen[bytes]]
) -> None:
    proc = start_cli("recv", "-t", "router", "-b", "tcp://127.0.0.1:0", "-s", "|", "-n", "1")
    procs.append(proc)
    dealer = zsock(zmq.DEALER)
    dealer.setsockopt(zmq.ROUTING_ID, b"\x01id")
    dealer.connect(bound_endpoint(proc))
    dealer.send(b"hi")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == b"016964|hi\n"


def test_recv_timeout_without_enough_messages_fails_in_one_line() -> None:
    result = run_cli("recv", "-t", "pull", "-b", "tcp://127.0.0.1:0", "-n", "1", "--timeout", "0.3")
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert lines[-1] == "trizmq recv: error: timed out after 0.3 s having received 0 of 1 message"
    assert b"Traceback" not in result.stderr


def test_radio_to_dish_over_udp(procs: list[subprocess.Popen[bytes]]) -> None:
    dish = start_cli("recv", "-t", "dish", "-b", "udp://127.0.0.1:0", "--join", "news", "-n", "1")
    procs.append(dish)
    endpoint = bound_endpoint(dish)
    deadline = time.monotonic() + 20
    while dish.poll() is None and time.monotonic() < deadline:  # udp: no delivery guarantee
        result = run_cli("send", "-t", "radio", "-c", endpoint, "-g", "news", "flash")
        assert result.returncode == 0, result.stderr
        time.sleep(0.1)
    out, err = dish.communicate(timeout=10)
    assert dish.returncode == 0, err
    assert out == b"flash\n"


def test_send_and_recv_over_wss_with_tls_options(
    procs: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """``--tls-cert``/``--tls-key`` bind wss://, ``--tls-ca`` connects to it (trustme CA)."""
    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    cert.private_key_pem.write_to_path(str(tmp_path / "server.key"))
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    recv = start_cli(
        "recv", "-t", "pull", "-b", "wss://localhost:0/cli", "-n", "2",
        "--tls-cert", str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server.key"),
    )  # fmt: skip
    procs.append(recv)
    endpoint = bound_endpoint(recv)
    assert endpoint.startswith("wss://") and endpoint.endswith("/cli")
    endpoint = endpoint.replace("127.0.0.1", "localhost")
    sent = run_cli("send", "-t", "push", "-c", endpoint, "--tls-ca", str(tmp_path / "ca.pem"),
                   "one", "two")  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    out, err = recv.communicate(timeout=20)
    assert recv.returncode == 0, err
    assert out == b"one\ntwo\n"


def test_tls_options_that_do_not_combine_are_refused() -> None:
    result = run_cli("send", "-t", "push", "-c", "wss://localhost:1/", "--tls-key", "k.pem", "x")
    assert result.returncode == 2 and b"--tls-key needs --tls-cert" in result.stderr
