"""The TCP options (libzmq's ZMQ_TCP_KEEPALIVE*, ZMQ_SNDBUF/RCVBUF, ZMQ_CONNECT_TIMEOUT):
set on the connections trizmq makes and accepts, with libzmq peers at the other end."""

from __future__ import annotations

import contextlib
import socket

import pytest
import trio
import zmq

import trizmq
from trizmq._endpoint import parse_endpoint
from trizmq.patterns.sockets.table import options_for
from trizmq.transport.tcp import TCP

OPTIONS = {
    "tcp_keepalive": True,
    "tcp_keepalive_idle": 30,
    "tcp_keepalive_intvl": 5,
    "tcp_keepalive_cnt": 3,
    "sndbuf": 65536,
    "rcvbuf": 131072,
}


def check(sock: socket.socket | trio.socket.SocketType) -> None:
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
    if hasattr(socket, "TCP_KEEPIDLE"):
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 5
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 3
    # the kernel may round a buffer size up (Linux doubles it)
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 65536
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 131072


async def test_options_are_set_on_connected_and_accepted_sockets() -> None:
    options = options_for("PULL", OPTIONS)
    with trio.fail_after(5):
        listener = await TCP.listen(parse_endpoint("tcp://127.0.0.1:0", for_bind=True), options)
        async with listener:
            endpoint = parse_endpoint(listener.endpoint, for_bind=False)
            client = await TCP.connect(endpoint, options)
            server, _ = await listener.accept()
            async with client, server:
                check(client.socket)  # type: ignore[attr-defined]
                check(server.socket)  # type: ignore[attr-defined]


async def test_defaults_leave_the_system_alone() -> None:
    options = options_for("PULL", {})
    with trio.fail_after(5):
        listener = await TCP.listen(parse_endpoint("tcp://127.0.0.1:0", for_bind=True), options)
        async with listener:
            client = await TCP.connect(parse_endpoint(listener.endpoint, for_bind=False), options)
            async with client:
                assert client.socket.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 0  # type: ignore[attr-defined]


async def test_messages_flow_with_the_options_both_ways_against_libzmq() -> None:
    zmq_ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    pull = zmq_ctx.socket(zmq.PULL)
    pull.linger = 0
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    push = zmq_ctx.socket(zmq.PUSH)
    push.linger = 0
    with trio.fail_after(10):
        async with (
            trizmq.Push(connect=f"tcp://127.0.0.1:{port}", **OPTIONS) as tz_push,
            trizmq.Pull(bind="tcp://127.0.0.1:0", **OPTIONS) as tz_pull,
        ):
            push.connect(tz_pull.statistics()["bound"][0])
            await tz_push.send(b"to libzmq")
            push.send(b"to trizmq")
            assert await tz_pull.recv() == b"to trizmq"
            assert await trio.to_thread.run_sync(pull.recv) == b"to libzmq"
    push.close()
    pull.close()
    zmq_ctx.term()


async def test_connect_timeout_ends_a_connect_that_hangs() -> None:
    """A listener whose accept queue is full drops SYNs (Linux): a connect to it hangs
    until connect_timeout, which then counts as a failed attempt, retried."""
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(0)
    port = blackhole.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):  # fill the accept queue (and the SYN queue's allowance)
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            fillers.append(filler)
        with trio.fail_after(10):
            async with trizmq.Push(connect_timeout=0.2, linger=0) as push, push.monitor() as events:
                await push.connect(f"tcp://127.0.0.1:{port}")
                async for event in events:
                    if isinstance(event, trizmq.ConnectDelayed):
                        break
                assert "timed out after 0.2s" in event.reason
    finally:
        for filler in fillers:
            filler.close()
        blackhole.close()


@pytest.mark.parametrize(
    ("name", "value"),
    [("tcp_keepalive", 1), ("sndbuf", 0), ("rcvbuf", -1), ("connect_timeout", 0)],
)
def test_bad_values_name_the_option(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name):
        trizmq.Push(**{name: value})
