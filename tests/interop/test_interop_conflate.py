"""``conflate`` (ZMQ_CONFLATE): keep only the newest message, against libzmq peers,
both directions, and commands never conflated away."""

from __future__ import annotations

import pytest
import trio
import zmq

import trizmq
from trizmq.nursery.pipe import ConflatePipe
from trizmq.zmtp.events import Ping, Subscribe

from .node_peer import free_tcp_port


async def test_conflating_pull_keeps_the_newest_of_a_libzmq_burst(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    push = zmq_ctx.socket(zmq.PUSH)
    push.linger = 0
    with trio.fail_after(10):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0", conflate=True) as pull:
            push.connect(pull.statistics()["bound"][0])
            for i in range(1000):
                push.send(b"%d" % i)
            received = []
            while not received or received[-1] != b"999":
                received.append(await pull.recv())
    numbers = [int(m) for m in received]
    assert numbers == sorted(set(numbers))  # newer and newer, never an older one
    assert len(received) < 1000  # the older ones were replaced, not queued
    push.close()


async def test_conflating_push_sends_only_the_newest_once_connected(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    port = free_tcp_port()
    pull = zmq_ctx.socket(zmq.PULL)
    pull.linger = 0
    pull.rcvtimeo = 200
    with trio.fail_after(10):
        async with trizmq.Push(connect=f"tcp://127.0.0.1:{port}", conflate=True) as push:
            for i in range(10):  # nobody there yet: never blocks, keeps the last one
                push.send_nowait(b"%d" % i)
            pull.bind(f"tcp://127.0.0.1:{port}")
            assert await trio.to_thread.run_sync(pull.recv) == b"9"
            with pytest.raises(zmq.Again):
                await trio.to_thread.run_sync(pull.recv)
    pull.close()


async def test_conflating_sub_against_a_libzmq_pub(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    pub = zmq_ctx.socket(zmq.XPUB)  # to know when the subscription arrived
    pub.linger = 0
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    with trio.fail_after(10):
        async with trizmq.Sub(
            connect=f"tcp://127.0.0.1:{port}", subscribe=b"", conflate=True
        ) as sub:
            assert await trio.to_thread.run_sync(pub.recv) == b"\x01"
            for i in range(500):
                pub.send(b"price %d" % i)
            last = b""
            while last != b"price 499":
                last = await sub.recv()
    pub.close()


def test_a_conflating_pipe_keeps_commands_and_the_newest_message() -> None:
    pipe = ConflatePipe()
    pipe.put([b"old"])
    pipe.put(Ping(0.0, b""))
    pipe.extend([[b"a"], Subscribe(b"t"), [b"b"]])
    assert pipe.offer([b"newest"])
    assert not pipe.full
    assert pipe.drain() == [Ping(0.0, b""), Subscribe(b"t"), [b"newest"]]


def test_conflate_applies_where_libzmq_has_it() -> None:
    for cls in (trizmq.Push, trizmq.Pull, trizmq.Pub, trizmq.Sub, trizmq.Dealer):
        assert cls(conflate=True).options.conflate
    with pytest.raises(TypeError, match="does not apply to a ROUTER"):
        trizmq.Router(conflate=True)
