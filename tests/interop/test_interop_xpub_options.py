"""``xpub_welcome_msg`` and ``xpub_manual`` (ZMQ_XPUB_WELCOME_MSG, ZMQ_XPUB_MANUAL)
against libzmq SUB and XPUB sockets."""

from __future__ import annotations

import pytest
import trio
import zmq

import trizmq


async def test_trizmq_xpub_welcomes_each_libzmq_subscriber(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    with trio.fail_after(10):
        async with trizmq.XPub(bind="tcp://127.0.0.1:0", xpub_welcome_msg=b"WELCOME") as xpub:
            subs = []
            for _ in range(2):
                sub = zmq_ctx.socket(zmq.SUB)
                sub.linger = 0
                sub.subscribe(b"")
                sub.connect(xpub.statistics()["bound"][0])
                subs.append(sub)
            for sub in subs:
                assert await trio.to_thread.run_sync(sub.recv) == b"WELCOME"
                sub.close()


async def test_libzmq_xpub_welcome_reaches_a_trizmq_sub(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    xpub = zmq_ctx.socket(zmq.XPUB)
    xpub.linger = 0
    xpub.setsockopt(zmq.XPUB_WELCOME_MSG, b"WELCOME")
    port = xpub.bind_to_random_port("tcp://127.0.0.1")
    with trio.fail_after(10):
        async with trizmq.Sub(connect=f"tcp://127.0.0.1:{port}", subscribe=b"") as sub:
            # libzmq attaches a new pipe (and sends the welcome) when its application
            # thread next uses the socket: here, reading the subscription
            xpub.rcvtimeo = 5000
            assert await trio.to_thread.run_sync(xpub.recv) == b"\x01"
            assert await sub.recv() == b"WELCOME"
    xpub.close()


async def test_manual_xpub_applies_only_what_the_application_says(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    with trio.fail_after(10):
        async with trizmq.XPub(bind="tcp://127.0.0.1:0", xpub_manual=True) as xpub:
            sub = zmq_ctx.socket(zmq.SUB)
            sub.linger = 0
            sub.rcvtimeo = 5000
            sub.subscribe(b"price")
            sub.connect(xpub.statistics()["bound"][0])
            assert await xpub.recv() == b"\x01price"  # reported...
            assert xpub.statistics()["subscriptions"] == 0  # ...not applied
            await xpub.send(b"price 1")  # goes nowhere
            xpub.subscribe(b"price")  # the application applies it
            assert xpub.statistics()["subscriptions"] == 1
            await xpub.send(b"price 2")
            assert await trio.to_thread.run_sync(sub.recv) == b"price 2"
            sub.unsubscribe(b"price")
            assert await xpub.recv() == b"\x00price"
            xpub.unsubscribe(b"price")
            assert xpub.statistics()["subscriptions"] == 0
            sub.close()


async def test_subscribe_on_an_xpub_needs_manual_mode() -> None:
    async with trizmq.XPub() as xpub:
        with pytest.raises(trizmq.StateError, match="xpub_manual=True"):
            xpub.subscribe(b"x")
