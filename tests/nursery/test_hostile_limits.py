"""Hostile peers against the bounds of one message: its wire size and its frames.

``maxmsgsize`` counts a message's wire size (every frame's header and body), so a
message of millions of empty frames counts too; ``max_frames`` (65,536 by default)
bounds the frames of one message even when ``maxmsgsize`` is unlimited. A raw peer
breaking either loses its connection at the header that breaks it, nothing more
is buffered for it, and a libzmq peer on the same socket goes on being served with
memory and descriptors bounded.
"""

from __future__ import annotations

import logging
import os
import struct
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import zmq

import trizmq

NULL_GREETING = (
    b"\xff" + b"\x00" * 7 + b"\x01" + b"\x7f" + b"\x03\x01" + b"NULL".ljust(20, b"\x00")
) + b"\x00" * 32
READY = (
    b"\x04"
    + bytes([len(b"\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH")])
    + (b"\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH")
)
EMPTY_MORE = b"\x01\x00"  # an empty frame, more to follow: 2 bytes on the wire
MIB = 1024 * 1024


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@asynccontextmanager
async def served(**options: Any) -> AsyncIterator[tuple[trizmq.Pull, Any, str]]:
    """A bound Pull with a libzmq PUSH connected to it."""
    ctx: Any = zmq.Context.instance()
    async with trizmq.Pull(**options) as pull:
        endpoint = await pull.bind("tcp://127.0.0.1:0")
        push = ctx.socket(zmq.PUSH)
        push.linger = 0
        push.sndtimeo = 5000
        push.connect(endpoint)
        try:
            push.send(b"hello")
            assert await pull.recv() == b"hello"
            yield pull, push, endpoint
        finally:
            push.close()


async def flood_one_message(endpoint: str, frames: int) -> int:
    """Send one message of ``frames`` empty frames (never ended) until trizmq hangs
    up; return how many bytes got out."""
    host, _, port = endpoint[len("tcp://") :].rpartition(":")
    stream = await trio.open_tcp_stream(host, int(port))
    chunk = EMPTY_MORE * 65536
    sent = 0
    async with stream:
        await stream.send_all(NULL_GREETING + READY)
        try:
            while sent < frames * 2:
                await stream.send_all(chunk)
                sent += len(chunk)
            with trio.fail_after(10):
                while await stream.receive_some(65536):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
    return sent


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        # 2,000,000 empty frames are 4 MB on the wire (no frame bound here): cut
        # after 131,072 of them, 256 KiB
        ({"maxmsgsize": 256 * 1024, "max_frames": None}, "exceeds maxmsgsize"),
        ({}, "exceeds max_frames"),  # maxmsgsize unlimited: max_frames bounds it
    ],
    ids=["maxmsgsize-counts-empty-frames", "max-frames-by-default"],
)
async def test_one_endless_message_of_empty_frames_is_cut(
    caplog: pytest.LogCaptureFixture, options: dict[str, Any], reason: str
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(60):
        async with served(**options) as (pull, push, endpoint):
            before = open_fds()
            tracemalloc.start()
            try:
                await flood_one_message(endpoint, 2_000_000)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            # far less than 2,000,000 frames would hold (~17 MB of list slots alone)
            assert peak < 8 * MIB, peak
            assert any(reason in r.getMessage() for r in caplog.records), caplog.text
            push.send(b"still served")
            assert await pull.recv() == b"still served"
            assert open_fds() <= before + 2
            assert pull.statistics()["live_peers"] == 1


async def test_a_message_at_the_wire_size_limit_passes_and_one_byte_more_does_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """maxmsgsize against libzmq: three 100-byte frames are 306 bytes on the wire."""
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(30):
        async with (
            served(maxmsgsize=306) as (pull, push, endpoint),
            pull.monitor() as events,
        ):
            push.send_multipart([b"a" * 100, b"b" * 100, b"c" * 100])
            assert await pull.recv_multipart() == [b"a" * 100, b"b" * 100, b"c" * 100]
            push.send_multipart([b"a" * 100, b"b" * 100, b"c" * 101])
            async for event in events:
                if isinstance(event, trizmq.Disconnected):
                    break
            # the socket goes on serving: another libzmq peer is heard
            other = zmq.Context.instance().socket(zmq.PUSH)
            other.linger = 0
            other.connect(endpoint)
            try:
                other.send(b"after")
                assert await pull.recv() == b"after"
            finally:
                other.close()
    assert any("exceeds maxmsgsize 306" in r.getMessage() for r in caplog.records)


async def test_many_frames_are_fine_below_the_bound() -> None:
    """A 200,000-frame message is delivered whole when max_frames allows it (and
    handled in linear time: the test is bounded)."""
    frames = [b""] * 199_999 + [b"end"]
    with trio.fail_after(30):
        async with served(max_frames=200_000) as (pull, push, _endpoint):
            push.send_multipart(frames)
            got = await pull.recv_multipart()
            assert len(got) == 200_000 and got[-1] == b"end"


def test_frame_count_is_checked_at_the_header() -> None:
    from trizmq.patterns.sockets import socket_type
    from trizmq.zmtp import Connection, ProtocolError

    conn = Connection("PULL", **socket_type("PULL").handshake_facts(), max_frames=3)
    conn.start()
    conn.receive_data(NULL_GREETING + READY)
    assert conn.receive_data(EMPTY_MORE * 2 + b"\x00\x01x") == [[b"", b"", b"x"]]
    assert conn.receive_data(EMPTY_MORE * 3) == []
    with pytest.raises(ProtocolError, match="max_frames"):
        conn.receive_data(b"\x00\x05")  # the fourth header: refused, no body sent
    assert conn.closed


def test_wire_size_counts_across_reads() -> None:
    from trizmq.patterns.sockets import socket_type
    from trizmq.zmtp import Connection, ProtocolError

    conn = Connection("PULL", **socket_type("PULL").handshake_facts(), maxmsgsize=10)
    conn.start()
    conn.receive_data(NULL_GREETING + READY)
    # 2 + 3 + 2 + 3 = 10 bytes: exactly the limit, fed a byte at a time
    data = b"\x01\x03abc\x00\x03def"
    events: list[Any] = []
    for i in range(len(data)):
        events += conn.receive_data(data[i : i + 1])
    assert events == [[b"abc", b"def"]]
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(b"\x01\x03abc" + b"\x00\x04")  # 5 + 6 = 11


def test_short_inner_frames_count_in_one_read() -> None:
    """An envelope's short frames (MORE set, the parser's own lane) count toward
    both bounds just as other frames do, all in one read."""
    from trizmq.patterns.sockets import socket_type
    from trizmq.zmtp import Connection, ProtocolError

    conn = Connection("PULL", **socket_type("PULL").handshake_facts(), maxmsgsize=9, max_frames=3)
    conn.start()
    conn.receive_data(NULL_GREETING + READY)
    # a REQ's request: the delimiter (2 bytes) and a body (2 + 3): 7 bytes
    assert conn.receive_data(b"\x01\x00\x00\x03abc") == [[b"", b"abc"]]
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(b"\x01\x03abc\x01\x03def")  # 5 + 5 = 10 at an inner frame
    assert conn.closed

    conn = Connection("PULL", **socket_type("PULL").handshake_facts(), max_frames=2)
    conn.start()
    conn.receive_data(NULL_GREETING + READY)
    with pytest.raises(ProtocolError, match="max_frames"):
        conn.receive_data(b"\x01\x00\x01\x00\x01\x00")


def test_long_frames_count_their_nine_byte_header() -> None:
    from trizmq.patterns.sockets import socket_type
    from trizmq.zmtp import Connection, ProtocolError

    conn = Connection("PULL", **socket_type("PULL").handshake_facts(), maxmsgsize=300 + 9)
    conn.start()
    conn.receive_data(NULL_GREETING + READY)
    ok = b"\x02" + struct.pack(">Q", 300) + b"x" * 300
    assert conn.receive_data(ok) == [[b"x" * 300]]
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(b"\x02" + struct.pack(">Q", 301))


# -- subscriptions ----------------------------------------------------------------------


def subscribe_command(topic: bytes) -> bytes:
    body = b"\x09SUBSCRIBE" + topic
    return b"\x04" + bytes([len(body)]) + body


SUB_READY = (
    b"\x04"
    + bytes([len(b"\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB")])
    + (b"\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB")
)


FLOOD = 100_000
KEPT = 10_000


@pytest.mark.parametrize("socket_type", [trizmq.Pub, trizmq.XPub])
async def test_a_subscription_flood_is_bounded_and_given_back(
    caplog: pytest.LogCaptureFixture, socket_type: type[trizmq.Socket]
) -> None:
    """A flood of distinct 16-byte SUBSCRIBEs from one raw peer (the attack of
    1,000,000, at a tenth of the scale, against a twentieth of the default bound; the
    flood is ten times what is kept, so memory that followed it would show): the
    publisher keeps max_subscriptions of them, refuses the rest without dropping the
    peer, memory stays bounded and is given back when the peer leaves, and a libzmq
    SUB connected meanwhile keeps receiving."""
    caplog.set_level(logging.WARNING, logger="trizmq")
    ctx: Any = zmq.Context.instance()
    with trio.fail_after(120):
        async with socket_type(max_subscriptions=KEPT) as pub, trio.open_nursery() as nursery:
            reported = [0]
            if socket_type is trizmq.XPub:
                # an XPUB's application reads the subscriptions it reports
                async def drain() -> None:
                    async for _ in pub:
                        reported[0] += 1

                nursery.start_soon(drain)
            endpoint = await pub.bind("tcp://127.0.0.1:0")
            good = ctx.socket(zmq.SUB)
            good.linger = 0
            good.setsockopt(zmq.SUBSCRIBE, b"news")
            good.connect(endpoint)
            try:
                host, _, port = endpoint[len("tcp://") :].rpartition(":")
                tracemalloc.start()
                try:
                    baseline = tracemalloc.get_traced_memory()[0]
                    stream = await trio.open_tcp_stream(host, int(port))
                    async with stream:
                        await stream.send_all(NULL_GREETING + SUB_READY)
                        batch = 10_000
                        for start in range(0, FLOOD, batch):
                            await stream.send_all(
                                b"".join(
                                    subscribe_command(b"%016d" % n)
                                    for n in range(start, start + batch)
                                )
                            )
                        # everything sent was applied once the statistics say so
                        while pub.statistics()["subscriptions_refused"] < FLOOD - KEPT:
                            await trio.sleep(0.05)
                        held = tracemalloc.get_traced_memory()[0] - baseline
                        stats = pub.statistics()
                        assert stats["subscriptions"] <= KEPT + 1  # the libzmq SUB's too
                        assert stats["subscriptions_refused"] == FLOOD - KEPT
                        assert stats["peers"] == 2  # the raw peer was not dropped
                    # the peer left: its subscriptions and their memory go (an XPUB
                    # reports the cancel of each: once its application has read them)
                    while pub.statistics()["peers"] > 1 or (
                        socket_type is trizmq.XPub and reported[0] < 2 * KEPT + 1
                    ):
                        await trio.sleep(0.01)
                    after = tracemalloc.get_traced_memory()[0] - baseline
                finally:
                    tracemalloc.stop()
                # ~240 bytes a kept subscription (10,000: ~2.4 MB), and far from what
                # 100,000 would hold (~24 MB)
                assert held < 8 * MIB, held
                assert after < 2 * MIB, after
                refusals = [r for r in caplog.records if "subscriptions refused" in r.getMessage()]
                assert len(refusals) == 1  # logged once for the peer, counted since
                while True:  # the libzmq subscriber is served
                    pub.send_nowait(b"news of the day")
                    try:
                        got = good.recv(zmq.NOBLOCK)
                    except zmq.Again:
                        await trio.sleep(0.02)
                        continue
                    assert got == b"news of the day"
                    break
            finally:
                good.close()
            nursery.cancel_scope.cancel()


async def test_a_ten_mebibyte_topic_is_not_kept() -> None:
    with trio.fail_after(60):
        async with trizmq.Pub() as pub:
            endpoint = await pub.bind("tcp://127.0.0.1:0")
            host, _, port = endpoint[len("tcp://") :].rpartition(":")
            stream = await trio.open_tcp_stream(host, int(port))
            async with stream:
                topic = b"t" * (10 * MIB)
                body = b"\x09SUBSCRIBE" + topic
                await stream.send_all(
                    NULL_GREETING + SUB_READY + b"\x06" + struct.pack(">Q", len(body)) + body
                )
                while pub.statistics()["subscriptions_refused"] < 1:
                    await trio.sleep(0.01)
                assert pub.statistics()["subscriptions"] == 0
