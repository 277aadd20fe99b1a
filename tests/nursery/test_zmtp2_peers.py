"""trizmq sockets against a hand-driven ZMTP 2.0 peer (RFC 15) over a real tcp socket.

The peer is written here from RFC 15 and 23/ZMTP's backwards-interoperability
section, independently of ``trizmq.zmtp``: it sends its 10-byte signature, waits for
trizmq's (and its major version, as libzmq's and JeroMQ's engines read 10 bytes
before they answer), sends its revision and socket type, reads trizmq's socket-type
byte and identity frame, sends its own identity frame, and then talks in frames with
flags MORE and LONG only. Each test is bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

import trizmq

SIGNATURE = b"\xff" + b"\x00" * 7 + b"\x01\x7f"
TYPES = {"PAIR": 0, "PUB": 1, "SUB": 2, "REQ": 3, "REP": 4, "DEALER": 5, "ROUTER": 6}
TYPES |= {"PULL": 7, "PUSH": 8}
BOUND = 10


def frame(body: bytes, more: bool = False) -> bytes:
    if len(body) > 255:
        return bytes((0x03 if more else 0x02,)) + struct.pack(">Q", len(body)) + body
    return bytes((0x01 if more else 0x00, len(body))) + body


def message(*frames: bytes) -> bytes:
    return b"".join(frame(body, more=i < len(frames) - 1) for i, body in enumerate(frames))


class Zmtp2Peer:
    """One end of a tcp stream, speaking ZMTP 2.0 by hand."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            data = await self.stream.receive_some(65536)
            assert data, f"trizmq closed the connection; had {bytes(self.buffer)!r}"
            self.buffer += data
        out = bytes(self.buffer[:size])
        del self.buffer[:size]
        return out

    async def closed_by_server(self) -> bytes:
        """Everything trizmq sends until it closes the connection."""
        got = bytes(self.buffer)
        self.buffer.clear()
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return got
            if not data:
                return got
            got += data

    async def greet(self, socket_type: str, identity: bytes = b"") -> tuple[int, bytes]:
        """The staged greeting and the identity frames: trizmq's socket-type byte and
        identity."""
        await self.stream.send_all(SIGNATURE)
        assert await self.exactly(10) == SIGNATURE
        assert await self.exactly(1) == b"\x03"  # trizmq's major version: ZMTP 3
        await self.stream.send_all(b"\x01" + bytes((TYPES[socket_type],)))
        (code,) = await self.exactly(1)
        await self.stream.send_all(frame(identity))
        theirs = await self.frames()
        assert len(theirs) == 1, theirs
        return code, theirs[0]

    async def frames(self) -> list[bytes]:
        """One whole message from trizmq (no command may come: COMMAND is not a 2.0 bit)."""
        out: list[bytes] = []
        while True:
            flags = (await self.exactly(1))[0]
            assert flags in (0x00, 0x01, 0x02, 0x03), f"flags 0x{flags:02X}"
            if flags & 0x02:
                (size,) = struct.unpack(">Q", await self.exactly(8))
            else:
                size = (await self.exactly(1))[0]
            out.append(await self.exactly(size))
            if not flags & 0x01:
                return out


@asynccontextmanager
async def peer_of(sock: trizmq.Socket) -> AsyncIterator[Zmtp2Peer]:
    """A hand-driven peer connected to a port ``sock`` binds."""
    endpoint = await sock.bind("tcp://127.0.0.1:0")
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        yield Zmtp2Peer(stream)


@asynccontextmanager
async def peer_for(sock: trizmq.Socket) -> AsyncIterator[Zmtp2Peer]:
    """A hand-driven peer that listens, and ``sock`` connected to it."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with listeners[0]:
        port = listeners[0].socket.getsockname()[1]
        await sock.connect(f"tcp://127.0.0.1:{port}")
        stream = await listeners[0].accept()
        async with stream:
            yield Zmtp2Peer(stream)


async def test_push_to_trizmq_pull() -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Pull(linger=0) as pull, peer_of(pull) as peer:
            assert await peer.greet("PUSH") == (TYPES["PULL"], b"")
            big = b"x" * 1000
            await peer.stream.send_all(message(b"a") + message(b"b", b"", big))
            assert await pull.recv_multipart() == [b"a"]
            assert await pull.recv_multipart() == [b"b", b"", big]
            (stats,) = pull.stats().peers
            assert stats.messages_received == 2


async def test_trizmq_push_to_a_zmtp2_pull() -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Push(linger=0) as push, peer_for(push) as peer:
            await push.send_multipart([b"one", b"x" * 300])
            assert await peer.greet("PULL") == (TYPES["PUSH"], b"")
            assert await peer.frames() == [b"one", b"x" * 300]


async def test_router_takes_the_identity_frame_as_routing_id() -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Router(linger=0, routing_id=b"srv") as router, peer_of(router) as peer:
            # the ROUTER's own identity goes out in its identity frame
            assert await peer.greet("DEALER", identity=b"peer-7") == (TYPES["ROUTER"], b"srv")
            await peer.stream.send_all(message(b"", b"ask"))
            assert await router.recv_multipart() == [b"peer-7", b"", b"ask"]
            await router.send_multipart([b"peer-7", b"", b"answer"])
            assert await peer.frames() == [b"", b"answer"]


async def test_trizmq_req_to_a_zmtp2_rep() -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Req(linger=0) as req, peer_for(req) as peer:
            assert await peer.greet("REP") == (TYPES["REQ"], b"")
            await req.send(b"ping?")
            assert await peer.frames() == [b"", b"ping?"]
            await peer.stream.send_all(message(b"", b"pong"))
            assert await req.recv() == b"pong"


async def test_sub_subscribes_with_data_frames() -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Sub(subscribe=b"news", linger=0) as sub, peer_for(sub) as pub:
            assert await pub.greet("PUB") == (TYPES["SUB"], b"")
            assert await pub.frames() == [b"\x01news"]
            sub.unsubscribe(b"news")
            sub.subscribe(b"")
            assert await pub.frames() == [b"\x00news"]
            assert await pub.frames() == [b"\x01"]
            await pub.stream.send_all(message(b"weather", b"rain"))
            assert await sub.recv_multipart() == [b"weather", b"rain"]


@pytest.mark.parametrize("kind", ["PUB", "XPUB"])
async def test_publisher_reads_subscriptions_as_data_frames(kind: str) -> None:
    with trio.fail_after(BOUND):
        publisher = trizmq.Pub(linger=0) if kind == "PUB" else trizmq.XPub(linger=0)
        async with publisher as pub, peer_of(pub) as sub:
            # XPUB is a PUB on the wire (RFC 15)
            assert await sub.greet("SUB") == (TYPES["PUB"], b"")
            await sub.stream.send_all(message(b"\x01top"))
            if kind == "XPUB":
                assert await pub.recv() == b"\x01top"
            got: list[list[bytes]] = []
            arrived = trio.Event()

            async def read() -> None:
                got.append(await sub.frames())
                arrived.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                # until the subscription is in (a PUB tells it nowhere else)
                while not arrived.is_set():
                    await pub.send(b"other")
                    await pub.send(b"top!")
                    with trio.move_on_after(0.01):
                        await arrived.wait()
            assert got == [[b"top!"]]  # "other" never went out
            assert pub.stats().subscriptions == 1


async def test_heartbeats_off_for_a_zmtp2_peer() -> None:
    """No PING to a peer that has none, and no timeout for its silence."""
    ivl = 0.02
    with trio.fail_after(BOUND):
        push = trizmq.Push(heartbeat_ivl=ivl, heartbeat_timeout=ivl, linger=0)
        async with push, peer_of(push) as peer:
            await peer.greet("PULL")
            # silent for 25 intervals: an absence cannot be awaited
            await trio.sleep(25 * ivl)
            await push.send(b"still here")
            # the first frame since the handshake (a PING would fail its flags check)
            assert await peer.frames() == [b"still here"]
            stats = push.stats()
    assert stats.connections["heartbeat_timeouts"] == 0
    assert stats.connections["disconnects"] == 0
    assert all(p.pings_sent == 0 for p in stats.peers)


async def test_command_frame_costs_the_peer_its_connection() -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Pull(linger=0) as pull, pull.monitor() as events:
            async with peer_of(pull) as peer:
                await peer.greet("PUSH")
                await peer.stream.send_all(message(b"ok"))
                assert await pull.recv() == b"ok"
                await peer.stream.send_all(b"\x04\x05\x04PING")
                await peer.closed_by_server()
            async for event in events:
                if isinstance(event, trizmq.Disconnected):
                    break
            assert pull.stats().disconnect_causes["protocol_error"] == 1


@pytest.mark.parametrize("security", ["PLAIN", "CURVE"])
async def test_secure_server_refuses_a_zmtp2_peer(security: str) -> None:
    options: trizmq.Security = (
        trizmq.PlainServer()
        if security == "PLAIN"
        else trizmq.CurveServer(secret_key=trizmq.curve_keypair()[1])
    )
    with trio.fail_after(BOUND):
        async with trizmq.Pull(security=options, linger=0) as pull, pull.monitor() as events:
            async with peer_of(pull) as peer:
                await peer.stream.send_all(SIGNATURE)
                assert await peer.exactly(11) == SIGNATURE + b"\x03"
                await peer.stream.send_all(b"\x01\x08" + frame(b""))
                # closed without a socket-type byte or anything after it
                assert await peer.closed_by_server() == b""
            async for event in events:
                if isinstance(event, trizmq.HandshakeFailed):
                    assert "no security mechanism" in event.reason
                    break
            stats = pull.stats()
    assert stats.handshake_failure_causes["downgrade"] == 1
    assert stats.connections["handshake_failures"] == 1


@pytest.mark.parametrize("admitted", [True, False])
async def test_null_with_a_zap_domain_asks_zap_for_a_zmtp2_peer(admitted: bool) -> None:
    allow = ["127.0.0.1"] if admitted else ["10.9.9.9"]
    with trio.fail_after(BOUND):
        async with (
            trizmq.Authenticator(allow=allow) as auth,
            trizmq.Pull(zap_domain="global", linger=0) as pull,
            pull.monitor() as events,
            peer_of(pull) as peer,
        ):
            await peer.greet("PUSH")
            if admitted:
                await peer.stream.send_all(message(b"hello"))
                assert await pull.recv() == b"hello"
            else:
                # ZMTP 2.0 has no ERROR: the refusal only closes
                assert await peer.closed_by_server() == b""
                async for event in events:
                    if isinstance(event, trizmq.HandshakeFailed):
                        break
                assert pull.stats().handshake_failure_causes["zap_400"] == 1
            assert (auth.admitted, auth.refused) == ((1, 0) if admitted else (0, 1))
