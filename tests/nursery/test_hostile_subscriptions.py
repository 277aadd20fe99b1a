"""A raw subscriber sends a PUB or an XPUB a subscription of 10 MiB, then one of
100 MiB, slowly: both are refused at their header (``max_subscription_bytes``, 4 MiB)
and none of their topic is kept; the peer stays connected, and the small topic it
subscribes to next brings it what is published. A cancel of 100 MiB is dropped the
same way, unread and unreported, and the peer's next cancel and subscriptions apply.

The publisher runs in its own process (``subscription_victim.py``), which measures
its peak resident memory over the attack with the kernel's own mark (``VmHWM``);
the suite's two runs (with and without ``TRIZMQ_FASTPATH=0``) cover both readers.
"""

from __future__ import annotations

import json
import struct
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from line_process import LineProcess, line_process
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, Request

MIB = 1024 * 1024
VICTIM = Path(__file__).with_name("subscription_victim.py")
#: the topics of the attack, and the most its victim's memory may grow meanwhile
HUGE = (10 * MIB, 100 * MIB)
BOUND = 8 * MIB
#: the attack is written this many bytes at a time
CHUNK = 64 * 1024

NULL_GREETING = (
    b"\xff" + b"\x00" * 7 + b"\x01" + b"\x7f" + b"\x03\x01" + b"NULL".ljust(20, b"\x00")
) + b"\x00" * 32
READY_BODY = b"\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB"
SUB_READY = b"\x04" + bytes([len(READY_BODY)]) + READY_BODY
SUBSCRIBE = b"\x09SUBSCRIBE"
CANCEL = b"\x06CANCEL"

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="reads VmHWM from /proc"
)


@asynccontextmanager
async def victim(
    socket_type: str, transport: str, refusals: int = len(HUGE)
) -> AsyncIterator[LineProcess]:
    """The subscription_victim.py process."""
    argv = [sys.executable, str(VICTIM), socket_type, transport, str(refusals)]
    async with line_process(argv, "victim") as process:
        yield process


class RawSubscriber:
    """A subscriber speaking ZMTP (or ZWS) by hand over one stream."""

    def __init__(self, stream: trio.SocketStream, ws: WSConnection | None) -> None:
        self.stream = stream
        self.ws = ws

    @classmethod
    async def connect(cls, endpoint: str) -> RawSubscriber:
        scheme, _, rest = endpoint.partition("://")
        host, _, port = rest.partition("/")[0].rpartition(":")
        stream = await trio.open_tcp_stream(host, int(port))
        if scheme == "tcp":
            await stream.send_all(NULL_GREETING + SUB_READY)
            return cls(stream, None)
        ws = WSConnection(ConnectionType.CLIENT)
        request = Request(host=host, target="/zmq", subprotocols=["ZWS2.0/NULL"])
        await stream.send_all(ws.send(request))
        while not any(isinstance(event, AcceptConnection) for event in ws.events()):
            ws.receive_data(await stream.receive_some(65536))
        # ZWS: no greeting, and each ZMTP frame a binary message behind its flag byte
        await stream.send_all(ws.send(BytesMessage(data=b"\x02" + READY_BODY)))
        return cls(stream, ws)

    def header(self, form: str, topic: int, *, cancel: bool = False) -> bytes:
        """The header of a subscription (or a cancel) of a ``topic``-byte topic, and its
        first bytes."""
        name = CANCEL if cancel else SUBSCRIBE
        first = b"\x00" if cancel else b"\x01"
        if self.ws is None:
            if form == "command":
                return b"\x06" + struct.pack(">Q", len(name) + topic) + name
            return b"\x02" + struct.pack(">Q", 1 + topic) + first
        head = b"\x02" + name if form == "command" else b"\x00" + first
        # one binary WebSocket frame, masked with a zero key: its payload goes as it is
        return b"\x82\xff" + (len(head) + topic).to_bytes(8, "big") + bytes(4) + head

    async def subscribe_slowly(self, form: str, topic: int, *, cancel: bool = False) -> None:
        await self.stream.send_all(self.header(form, topic, cancel=cancel))
        chunk = b"t" * CHUNK
        left = topic
        while left:
            await self.stream.send_all(chunk[:left])
            left -= min(left, CHUNK)

    async def subscribe(self, topic: bytes, *, cancel: bool = False) -> None:
        if self.ws is None:
            body = (CANCEL if cancel else SUBSCRIBE) + topic
            await self.stream.send_all(b"\x04" + bytes([len(body)]) + body)
        else:
            first = b"\x00" if cancel else b"\x01"
            await self.stream.send_all(self.ws.send(BytesMessage(data=b"\x00" + first + topic)))

    async def receive_until(self, wanted: bytes) -> None:
        seen = b""
        while wanted not in seen:
            data = await self.stream.receive_some(65536)
            assert data, "the publisher closed the connection"
            seen = seen[-len(wanted) :] + data


@pytest.mark.parametrize(
    ("socket_type", "transport", "form"),
    [
        ("PUB", "tcp", "command"),
        ("XPUB", "tcp", "command"),
        ("PUB", "tcp", "message"),
        ("XPUB", "tcp", "message"),
        ("PUB", "ws", "message"),
        ("XPUB", "ws", "command"),
    ],
)
async def test_a_huge_subscription_is_refused_without_being_read(
    socket_type: str, transport: str, form: str
) -> None:
    with trio.fail_after(45):
        async with victim(socket_type, transport) as publisher:
            endpoint = await publisher.line()
            peer = await RawSubscriber.connect(endpoint)
            async with peer.stream:
                await peer.subscribe(b"warm")
                assert await publisher.line() == "ready"
                for topic in HUGE:
                    await peer.subscribe_slowly(form, topic)
                await peer.subscribe(b"news")
                await peer.receive_until(b"news flash")
                report: dict[str, Any] = json.loads(await publisher.line())
    assert report["refused"] == len(HUGE)
    assert report["stats"] == {"peers": 1, "live_peers": 1, "subscriptions": 2}
    if socket_type == "XPUB":  # a refused subscription is not reported
        assert report["reported"] == ["\x01warm", "\x01news"]
    assert report["peak"] < BOUND, report


async def test_a_huge_cancel_is_dropped_without_being_read() -> None:
    with trio.fail_after(45):
        async with victim("XPUB", "tcp", refusals=0) as publisher:
            endpoint = await publisher.line()
            peer = await RawSubscriber.connect(endpoint)
            async with peer.stream:
                await peer.subscribe(b"warm")
                assert await publisher.line() == "ready"
                await peer.subscribe_slowly("command", HUGE[-1], cancel=True)
                # the publisher reports once it holds two: after all of these
                await peer.subscribe(b"warm", cancel=True)
                await peer.subscribe(b"news")
                await peer.subscribe(b"more")
                await peer.receive_until(b"news flash")
                report: dict[str, Any] = json.loads(await publisher.line())
    assert report["refused"] == 0  # a cancel is not a subscription refused
    assert report["stats"] == {"peers": 1, "live_peers": 1, "subscriptions": 2}
    # the huge cancel was not reported; the small one after it was
    assert report["reported"] == ["\x01warm", "\x00warm", "\x01news", "\x01more"]
    assert report["peak"] < BOUND, report
