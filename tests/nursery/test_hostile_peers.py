"""Hostile peers: raw tcp/ipc clients that break ZMTP against a binding trizmq Pull.

Each case opens a raw stream to a Pull that also serves one well-behaved trizmq Push,
lets the raw client misbehave, and checks that:

* trizmq closes the hostile connection by itself (the client sees EOF or a reset
  while it still holds its end open);
* the reason is logged on the ``trizmq`` logger at WARNING;
* the good peer's messages keep arriving, in order, none lost;
* nothing crashes (the socket's nursery would raise) and nothing hangs (every
  test is bounded by ``trio.fail_after``).
"""

from __future__ import annotations

import logging
import struct
import sys
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import pytest
import trio
import trio.testing

import trizmq

# -- raw ZMTP bytes, written independently of trizmq.zmtp ------------------------------

NULL_GREETING = (
    (b"\xff" + b"\x00" * 7 + b"\x01" + b"\x7f" + b"\x03\x01" + b"NULL".ljust(20, b"\x00"))
    + b"\x00"
    + b"\x00" * 31
)
assert len(NULL_GREETING) == 64


def greeting(mechanism: bytes = b"NULL", major: int = 3, minor: int = 1) -> bytes:
    return (
        b"\xff"
        + b"\x00" * 7
        + b"\x01"
        + b"\x7f"
        + bytes((major, minor))
        + mechanism.ljust(20, b"\x00")[:20]
        + b"\x00"
        + b"\x00" * 31
    )


def command(body: bytes) -> bytes:
    if len(body) > 255:
        return b"\x06" + struct.pack(">Q", len(body)) + body
    return b"\x04" + bytes([len(body)]) + body


def ready(socket_type: bytes = b"PUSH", *extra: tuple[bytes, bytes]) -> bytes:
    body = b"\x05READY"
    for name, value in ((b"Socket-Type", socket_type), *extra):
        body += bytes([len(name)]) + name + len(value).to_bytes(4, "big") + value
    return command(body)


def frame(body: bytes, *, more: bool = False) -> bytes:
    flags = 0x01 if more else 0x00
    if len(body) > 255:
        return bytes([flags | 0x02]) + struct.pack(">Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def long_header(size: int) -> bytes:
    """The 9-byte header of a (last) long message frame declaring ``size`` bytes."""
    return b"\x02" + struct.pack(">Q", size)


HANDSHAKE = NULL_GREETING + ready(b"PUSH")
#: the 10 bytes every versioned greeting starts with (then a ZMTP 2.0 peer's revision 1)
ZMTP2_SIGNATURE = b"\xff" + b"\x00" * 7 + b"\x01\x7f"

# -- the harness -------------------------------------------------------------------------

GOOD_BEFORE = 20
GOOD_AFTER = 20


class Harness:
    def __init__(self, pull: trizmq.Pull, push: trizmq.Push, endpoint: str) -> None:
        self.pull = pull
        self.push = push
        self.endpoint = endpoint
        self.sent = 0
        self.received: list[list[bytes]] = []
        #: the Pull's monitor, when the case opened one
        self.events: Any = None
        self.handshakes = 0

    async def handshaken(self, count: int) -> None:
        """Wait until the Pull has finished ``count`` handshakes in all (from its monitor).

        A hostile client that hangs up must wait for this first, or its close may
        overtake the handshake and end it as a failed handshake instead.
        """
        async for event in self.events:
            if isinstance(event, trizmq.HandshakeSucceeded):
                self.handshakes += 1
                if self.handshakes >= count:
                    return

    async def good_round(self, count: int) -> None:
        """The good peer sends ``count`` messages; all of them arrive, in order."""
        for _ in range(count):
            await self.push.send_multipart([b"good", str(self.sent).encode()])
            self.sent += 1
        while len(self.received) < self.sent:
            self.received.append(await self.pull.recv_multipart())
        assert self.received == [[b"good", str(i).encode()] for i in range(self.sent)]

    @asynccontextmanager
    async def raw(self) -> AsyncIterator[trio.abc.Stream]:
        """A raw stream to the Pull's endpoint."""
        transport, _, address = self.endpoint.partition("://")
        stream: trio.abc.Stream
        if transport in ("tcp", "ws"):
            address = address.partition("/")[0]
            host, _, port = address.rpartition(":")
            stream = await trio.open_tcp_stream(host, int(port))
        else:
            stream = await trio.open_unix_socket(address)
        async with stream:
            yield stream


async def send(stream: trio.abc.Stream, data: bytes) -> None:
    """Send, tolerating a server that already hung up on us."""
    with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.send_all(data)


async def wait_closed_by_server(stream: trio.abc.Stream) -> bytes:
    """Read (and return) everything until trizmq closes the connection."""
    got = bytearray()
    while True:
        try:
            data = await stream.receive_some(65536)
        except trio.BrokenResourceError:  # a reset: closed with our bytes unread
            return bytes(got)
        if not data:
            return bytes(got)
        got += data


async def receive_exactly(stream: trio.abc.Stream, size: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        data = await stream.receive_some(size - len(got))
        assert data, "trizmq closed the connection"
        got += data
    return bytes(got)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("trizmq") and r.levelno >= logging.WARNING
    ]


async def run_case(
    caplog: pytest.LogCaptureFixture,
    transport: str,
    hostile: Callable[[Harness, trio.abc.Stream], Awaitable[None]],
    reason: str,
    connections: int = 1,
    **pull_options: Any,
) -> Harness:
    """Good traffic, then ``hostile`` on a raw stream, then more good traffic.

    ``connections`` is how many hostile connections the case opens; each must end
    (a HandshakeFailed or Disconnected event) before the good peer's last round.
    """
    caplog.set_level(logging.WARNING, logger="trizmq")
    bind = {"tcp": "tcp://127.0.0.1:0", "ws": "ws://127.0.0.1:0/zmq"}.get(transport, "ipc://*")
    with trio.fail_after(10):
        async with trizmq.Pull(**pull_options) as pull, pull.monitor() as events:
            endpoint = await pull.bind(bind)
            async with trizmq.Push(connect=endpoint, linger=0) as push:
                h = Harness(pull, push, endpoint)
                h.events = events
                await h.good_round(GOOD_BEFORE)
                async with h.raw() as stream:
                    await hostile(h, stream)
                ended = 0
                async for event in events:
                    if isinstance(event, (trizmq.HandshakeFailed, trizmq.Disconnected)):
                        ended += 1
                        if ended == connections:
                            break
                await h.good_round(GOOD_AFTER)
                assert pull.statistics()["live_peers"] == 1
    logged = warnings_of(caplog)
    assert any(reason in message for message in logged), logged
    return h


TRANSPORTS = [
    "tcp",
    pytest.param(
        "ipc", marks=pytest.mark.skipif(sys.platform == "win32", reason="no Unix sockets")
    ),
]

# -- handshake-time violations: one script each --------------------------------------------

HANDSHAKE_CASES = {
    "garbage": (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "unversioned greeting"),
    "garbage-after-ff": (b"\xff" + b"\x00" * 8 + b"\x00" + b"junk" * 20, "unversioned greeting"),
    "bad-signature": (b"\xfe" + NULL_GREETING[1:] + ready(), "unversioned greeting"),
    # ZMTP 2.0: signature, revision 1, socket type, then an identity frame; the Pull
    # speaks it to a PUSH (8), and refuses these
    "zmtp-2.0-pull": (ZMTP2_SIGNATURE + b"\x01\x07" + b"\x00\x00", "incompatible socket type"),
    "zmtp-2.0-unknown-type": (ZMTP2_SIGNATURE + b"\x01\x0b" + b"\x00\x00", "does not define"),
    "zmtp-2.0-huge-identity": (
        ZMTP2_SIGNATURE + b"\x01\x08" + long_header(2**40),
        "identity of 1099511627776 bytes",
    ),
    "zmtp-2.0-identity-more": (ZMTP2_SIGNATURE + b"\x01\x08" + b"\x01\x00", "MORE flag"),
    "zmtp-2.0-command": (
        ZMTP2_SIGNATURE + b"\x01\x08" + b"\x00\x00" + command(b"\x04PING\x00\x00"),
        "COMMAND frame from a ZMTP 2.0 peer",
    ),
    "zmtp-revision-0": (ZMTP2_SIGNATURE + b"\x00\x08" + b"\x00\x00", "ZMTP 1.0"),
    "zmtp-1.0": (b"\x01\x00", "unversioned greeting"),
    "mechanism-plain": (greeting(b"PLAIN") + ready(), "security mechanism mismatch"),
    "mechanism-curve": (greeting(b"CURVE"), "peer uses CURVE"),
    "mechanism-junk": (greeting(b"\x01\xfejunk\xff"), "security mechanism mismatch"),
    "incompatible-pub": (NULL_GREETING + ready(b"PUB"), "incompatible socket type"),
    "incompatible-pull": (NULL_GREETING + ready(b"PULL"), "incompatible socket type"),
    "unknown-socket-type": (NULL_GREETING + ready(b"BOGUS"), "incompatible socket type"),
    "message-before-ready": (NULL_GREETING + frame(b"sneaky"), "before the handshake"),
    "wrong-command": (NULL_GREETING + command(b"\x05HELLO" + b"x" * 10), "HELLO"),
    "huge-handshake-command": (NULL_GREETING + b"\x06" + struct.pack(">Q", 2**40), "exceeds the"),
    "invalid-flags": (NULL_GREETING + b"\x80\x00", "flags"),
    "peer-error": (NULL_GREETING + command(b"\x05ERROR\x04nope"), "nope"),
}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("case", sorted(HANDSHAKE_CASES))
async def test_handshake_violation(
    caplog: pytest.LogCaptureFixture, transport: str, case: str
) -> None:
    script, reason = HANDSHAKE_CASES[case]

    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, script)
        # the good peer goes on while the hostile connection is being refused
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.good_round, 5)
            await wait_closed_by_server(stream)

    await run_case(caplog, transport, hostile, reason)


async def test_bad_ready_metadata(caplog: pytest.LogCaptureFixture) -> None:
    # a property whose declared value length runs past the end of the command
    body = b"\x05READY" + b"\x0bSocket-Type" + (1000).to_bytes(4, "big") + b"PUSH"

    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, NULL_GREETING + command(body))
        await wait_closed_by_server(stream)

    await run_case(caplog, "tcp", hostile, "handshake refused")


# -- violations after a completed handshake ----------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_garbage_after_handshake(caplog: pytest.LogCaptureFixture, transport: str) -> None:
    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, HANDSHAKE + frame(b"fine") + b"\xf0" + b"garbage" * 50)
        await wait_closed_by_server(stream)

    await run_case(caplog, transport, hostile, "reserved frame flag bits set (flags 0xF0)")


async def test_second_ready_after_handshake(caplog: pytest.LogCaptureFixture) -> None:
    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, HANDSHAKE + ready(b"PUSH"))
        await wait_closed_by_server(stream)

    await run_case(caplog, "tcp", hostile, "READY")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(b"\x00", id="header-byte"),
        pytest.param(b"\x02\x00\x00", id="half-long-header"),
        pytest.param(b"\x00\x64" + b"x" * 10, id="short-body"),
        pytest.param(frame(b"part", more=True), id="more-frame-without-last"),
        pytest.param(long_header(10_000) + b"y" * 300, id="long-body"),
    ],
)
@pytest.mark.parametrize("clean", [True, False], ids=["eof", "reset"])
async def test_truncated_frame_then_close(
    caplog: pytest.LogCaptureFixture, transport: str, tail: bytes, clean: bool
) -> None:
    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, HANDSHAKE + tail)
        if clean:
            # read trizmq's whole handshake, so that our close is a clean EOF
            # (closing with unread bytes makes TCP send a reset instead)
            await receive_exactly(stream, 64)
            header = await receive_exactly(stream, 2)
            assert header[0] == 0x04, header
            await receive_exactly(stream, header[1])
        await h.good_round(5)
        # the good peer's handshake and ours, before we hang up
        await h.handshaken(2)
        # the hostile client hangs up in the middle of a message

    await run_case(caplog, transport, hostile, "mid-message")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    "header",
    [
        pytest.param(long_header(2**60), id="long-2**60"),
        pytest.param(long_header(2**63 - 1), id="long-max"),
        pytest.param(long_header(1025), id="long-just-over"),
        pytest.param(b"\x00\xff", id="short-255"),
        pytest.param(b"\x01" + bytes([200]), id="short-more-200"),
        pytest.param(frame(b"ok" * 50, more=True) + b"\x00\xc8", id="second-frame"),
    ],
)
async def test_frame_beyond_maxmsgsize_is_refused_at_its_header(
    caplog: pytest.LogCaptureFixture, transport: str, header: bytes
) -> None:
    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        # only the header: the body is never sent, yet trizmq hangs up
        await send(stream, HANDSHAKE + header)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.good_round, 5)
            await wait_closed_by_server(stream)

    await run_case(caplog, transport, hostile, "exceeds maxmsgsize", maxmsgsize=150)


async def test_frame_length_beyond_two_to_the_63(caplog: pytest.LogCaptureFixture) -> None:
    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, HANDSHAKE + b"\x02" + b"\xff" * 8)
        await wait_closed_by_server(stream)

    await run_case(caplog, "tcp", hostile, "exceeds 2^63-1")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_huge_declared_length_without_limit_allocates_nothing(
    caplog: pytest.LogCaptureFixture, transport: str
) -> None:
    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        tracemalloc.start()
        try:
            await send(stream, HANDSHAKE + long_header(2**62) + b"z" * 1000)
            # the good peer keeps flowing while the hostile frame stays pending
            await h.good_round(10)
            for _ in range(10):
                await send(stream, b"z" * 4096)
                await h.good_round(1)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 16 * 2**20, f"peak {peak} bytes while a 2**62-byte frame was pending"
        # the connection is still open (no limit was set): the server did not hang up
        with trio.move_on_after(0.05):
            while True:
                assert await stream.receive_some(65536) != b"", "trizmq hung up"

    # the hostile peer closes in the middle of its enormous frame
    await run_case(caplog, transport, hostile, "mid-message")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    "script",
    [
        pytest.param(b"", id="silent"),
        pytest.param(NULL_GREETING[:20], id="partial-greeting"),
        pytest.param(NULL_GREETING, id="greeting-no-ready"),
        pytest.param(NULL_GREETING + ready()[:5], id="partial-ready"),
    ],
)
async def test_handshake_timeout(
    caplog: pytest.LogCaptureFixture, transport: str, script: bytes
) -> None:
    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, script)
        # bounded real wait: handshake_ivl is 0.5 s
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(h.good_round, 5)
                await wait_closed_by_server(stream)

    await run_case(caplog, transport, hostile, "handshake timed out", handshake_ivl=0.5)


async def test_many_hostile_peers_at_once(caplog: pytest.LogCaptureFixture) -> None:
    scripts = [script for script, _ in HANDSHAKE_CASES.values()]

    async def hostile(h: Harness, stream: trio.abc.Stream) -> None:
        async def one(script: bytes) -> None:
            async with h.raw() as s:
                await send(s, script)
                await wait_closed_by_server(s)

        async with trio.open_nursery() as nursery:
            for script in scripts:
                nursery.start_soon(one, script)
            await h.good_round(30)
        await send(stream, b"\x00")
        await wait_closed_by_server(stream)

    await run_case(caplog, "tcp", hostile, "incompatible socket type", connections=len(scripts) + 1)


# -- the only peer, read by the receiving task itself ---------------------------------------

ONLY_PEER_CASES = {
    "garbage": (b"\xf0" + b"garbage" * 50, "reserved frame flag bits set (flags 0xF0)"),
    "mid-message": (frame(b"part", more=True), "mid-message"),
}


@pytest.mark.fastpath
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("case", sorted(ONLY_PEER_CASES))
async def test_only_peer_misbehaving_while_a_task_reads_it(
    caplog: pytest.LogCaptureFixture, transport: str, case: str
) -> None:
    """With one peer and a task parked in a receive, the task reads the connection
    itself (read-through, ``ReadThrough`` in ``trizmq.nursery.fastpath.read_through``): what it
    meets must end that connection just as the reader would, and nothing else."""
    tail, reason = ONLY_PEER_CASES[case]
    caplog.set_level(logging.WARNING, logger="trizmq")
    bind = {"tcp": "tcp://127.0.0.1:0", "ws": "ws://127.0.0.1:0/zmq"}.get(transport, "ipc://*")
    with trio.fail_after(10):
        async with trizmq.Pull() as pull, pull.monitor() as events:
            endpoint = await pull.bind(bind)
            h = Harness(pull, None, endpoint)  # type: ignore[arg-type]
            h.events = events
            got_in, got = trio.open_memory_channel[list[bytes]](10)

            async def receive() -> None:
                while True:
                    got_in.send_nowait(await pull.recv_multipart())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive)
                async with h.raw() as stream:
                    await send(stream, HANDSHAKE)
                    await h.handshaken(1)
                    # read trizmq's whole handshake, so that our close is a clean EOF
                    await receive_exactly(stream, 64)
                    header = await receive_exactly(stream, 2)
                    await receive_exactly(stream, header[1])
                    # one good message: the reader wakes for it too, finds the task
                    # waiting again, and leaves the socket to it
                    await send(stream, frame(b"fine"))
                    assert await got.receive() == [b"fine"]
                    await trio.testing.wait_all_tasks_blocked()
                    fast: Any = pull._fast
                    (read_through,) = fast.readers.values()
                    assert read_through is not None and read_through.waiting is not None
                    await send(stream, tail)
                    if case == "garbage":
                        await wait_closed_by_server(stream)
                async for event in events:
                    if isinstance(event, trizmq.Disconnected):
                        break
                # the receiving task met it, not the reader
                assert read_through.ended
                async with trizmq.Push(connect=endpoint) as push:
                    await push.send(b"good")
                    assert await got.receive() == [b"good"]
                nursery.cancel_scope.cancel()
    logged = warnings_of(caplog)
    assert any(reason in message for message in logged), logged
