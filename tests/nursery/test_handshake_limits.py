"""Hostile peers against the handshake limits: handshake_ivl, max_handshakes, maxmsgsize.

* a slow-loris handshake (bytes trickled one at a time) is dropped at
  ``handshake_ivl``, however steadily it trickles: the bound is on the whole
  handshake, not on each read;
* a flood of thousands of half-open TCP connections that send nothing neither crashes
  the socket nor grows its memory beyond what ``max_handshakes`` connections cost, and
  an already-connected peer keeps flowing meanwhile;
* a new well-behaved peer is admitted during the flood, without waiting for the
  flood's handshakes to time out (a newcomer evicts the oldest handshake when every
  slot is taken; more in test_handshake_flood.py);
* through CURVE, an oversized frame is refused at its outer header, before anything
  is decrypted (or even received).

Real time is used only where the test is about time (``handshake_ivl`` is short).
"""

from __future__ import annotations

import logging
import resource
import socket
import struct
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import pytest
import trio

import trizmq
from trizmq.patterns.sockets import socket_type
from trizmq.zmtp import Connection, CurveClientMechanism

# -- raw bytes, independent of trizmq.zmtp ---------------------------------------------


def greeting(mechanism: bytes = b"NULL", as_server: bool = False) -> bytes:
    return (
        b"\xff"
        + b"\x00" * 7
        + b"\x01\x7f\x03\x01"
        + mechanism.ljust(20, b"\x00")
        + (b"\x01" if as_server else b"\x00")
        + b"\x00" * 31
    )


def ready(socket_type: bytes = b"PUSH") -> bytes:
    body = b"\x05READY" + b"\x0bSocket-Type" + len(socket_type).to_bytes(4, "big") + socket_type
    return b"\x04" + bytes([len(body)]) + body


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "trizmq" and r.levelno >= logging.WARNING
    ]


async def closed_by_server(stream: trio.abc.Stream) -> None:
    """Read until trizmq hangs up (EOF or reset)."""
    with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while await stream.receive_some(65536):
            pass


@asynccontextmanager
async def good_pair(**pull_options: object) -> AsyncIterator[tuple[trizmq.Pull, trizmq.Push, str]]:
    """A bound Pull (with ``pull_options``) and a connected, handshaken, well-behaved Push."""
    async with trizmq.Pull(**pull_options) as pull:
        endpoint = await pull.bind("tcp://127.0.0.1:0")
        async with trizmq.Push(connect=endpoint, linger=0) as push:
            await push.send(b"hello")
            assert await pull.recv() == b"hello"
            yield pull, push, endpoint


def host_port(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    return host, int(port)


# -- slow loris ---------------------------------------------------------------------------

HANDSHAKE_IVL = 0.5
TRICKLE = 0.05  # one byte every 50 ms: the NULL handshake alone would take > 4 s


def curve_hello_bytes() -> tuple[bytes, trizmq.CurveServer]:
    """A CURVE client's greeting (what a slow loris trickles to a CURVE server)."""
    public, secret = trizmq.curve_keypair()
    server = trizmq.CurveServer(secret_key=trizmq.curve_keypair()[1])
    conn = Connection(
        "PUSH",
        **socket_type("PUSH").handshake_facts(),
        mechanism=CurveClientMechanism(
            trizmq.z85_decode(server.public_key),
            trizmq.z85_decode(public),
            trizmq.z85_decode(secret),
        ),
    )
    return conn.start(staged=False), server  # the whole greeting, for a script


@pytest.mark.parametrize("mechanism", ["NULL", "CURVE"])
async def test_slow_loris_is_dropped_at_handshake_ivl(
    caplog: pytest.LogCaptureFixture, mechanism: str
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    if mechanism == "CURVE":
        script, security = curve_hello_bytes()
    else:
        script, security = greeting() + ready(), None
    with trio.fail_after(10):
        async with trizmq.Pull(security=security, handshake_ivl=HANDSHAKE_IVL) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            stream = await trio.open_tcp_stream(*host_port(endpoint))
            async with stream:
                start = trio.current_time()
                sent = 0

                async def trickle() -> None:
                    nonlocal sent
                    with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                        for i in range(len(script)):
                            await stream.send_all(script[i : i + 1])
                            sent += 1
                            await trio.sleep(TRICKLE)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(trickle)
                    await closed_by_server(stream)
                    elapsed = trio.current_time() - start
                    nursery.cancel_scope.cancel()
            # dropped at handshake_ivl, although bytes kept arriving every 50 ms
            assert HANDSHAKE_IVL * 0.9 <= elapsed <= HANDSHAKE_IVL + 1.0, elapsed
            assert sent < len(script)
    assert any("handshake timed out" in m for m in warnings_of(caplog)), warnings_of(caplog)


async def test_slow_loris_does_not_stall_a_connected_peer() -> None:
    with trio.fail_after(10):
        async with good_pair(handshake_ivl=HANDSHAKE_IVL) as (pull, push, endpoint):
            script = greeting() + ready()
            stream = await trio.open_tcp_stream(*host_port(endpoint))
            count = 0
            worst = 0.0

            async def trickle() -> None:
                with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    for i in range(len(script)):
                        await stream.send_all(script[i : i + 1])
                        await trio.sleep(TRICKLE)

            async def good_traffic() -> None:
                # the good peer's messages flow, one by one, while the loris trickles
                nonlocal count, worst
                while True:
                    t0 = trio.current_time()
                    await push.send(b"%d" % count)
                    assert await pull.recv() == b"%d" % count
                    worst = max(worst, trio.current_time() - t0)
                    count += 1
                    await trio.sleep(TRICKLE)  # pacing: the test is about time

            async with stream, trio.open_nursery() as nursery:
                nursery.start_soon(trickle)
                nursery.start_soon(good_traffic)
                await closed_by_server(stream)
                nursery.cancel_scope.cancel()
            assert count >= 5, count
            assert worst < 0.25, worst


# -- floods of half-open connections ------------------------------------------------------

FLOOD = 2000
MAX_HANDSHAKES = 100


def raise_file_limit(needed: int) -> int:
    """Raise the soft RLIMIT_NOFILE towards ``needed``; return how many connections fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return needed if soft == resource.RLIM_INFINITY else min(needed, soft)


def open_flood(endpoint: str, count: int) -> list[socket.socket]:
    """``count`` raw TCP connects that never send a byte.

    Plain non-blocking stdlib sockets: the kernel completes as many handshakes as the
    listener's backlog takes, the rest stay half-open (SYN sent, retried by the kernel).
    """
    address = host_port(endpoint)
    flood = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(address)
        flood.append(sock)
    return flood


def close_flood(flood: list[socket.socket]) -> None:
    for sock in flood:
        # RST rather than FIN: no TIME_WAIT pile-up on the test machine
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()


class Handshakes:
    """Counts, from the monitor, the accepted connections still in their handshake."""

    def __init__(self, full_at: int = MAX_HANDSHAKES) -> None:
        #: set once ``full_at`` connections have been accepted
        self.full = trio.Event()
        self.full_at = full_at
        self.in_flight = 0
        self.most = 0
        self.accepted = 0
        self.timed_out = 0
        self.evicted = 0
        self.succeeded = 0

    async def watch(self, events: trizmq.Monitor) -> None:
        async for event in events:
            if isinstance(event, trizmq.Accepted):
                self.accepted += 1
                if self.accepted >= self.full_at:
                    self.full.set()
                self.in_flight += 1
                self.most = max(self.most, self.in_flight)
            elif isinstance(event, (trizmq.HandshakeFailed, trizmq.HandshakeSucceeded)):
                self.in_flight -= 1
                if isinstance(event, trizmq.HandshakeSucceeded):
                    self.succeeded += 1
                elif "timed out" in event.reason:
                    self.timed_out += 1
                elif "evicted" in event.reason:
                    self.evicted += 1


async def test_a_flood_of_silent_connections_is_bounded() -> None:
    count = raise_file_limit(FLOOD * 2 + 200)
    flood_size = min(FLOOD, (count - 200) // 2)
    assert flood_size >= 500, f"the file limit ({count}) leaves room for only {flood_size}"
    handshake_ivl = 1.0
    with trio.fail_after(30):
        async with (
            trizmq.Pull(handshake_ivl=handshake_ivl, max_handshakes=MAX_HANDSHAKES) as pull,
            pull.monitor(capacity=100_000) as events,
        ):
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            counts = Handshakes()
            async with trio.open_nursery() as watchers:
                watchers.start_soon(counts.watch, events)
                async with trizmq.Push(connect=endpoint, linger=0) as push:
                    await push.send(b"before")
                    assert await pull.recv() == b"before"
                    tracemalloc.start()
                    try:
                        base, _ = tracemalloc.get_traced_memory()
                        flood = open_flood(endpoint, flood_size)
                        try:
                            # the flood stays open for 2.5 handshake_ivl: two rounds of
                            # max_handshakes time out while the good peer keeps sending
                            worst = 0.0
                            sent = 0
                            deadline = trio.current_time() + 2.5 * handshake_ivl
                            while trio.current_time() < deadline:
                                t0 = trio.current_time()
                                await push.send_multipart([b"good", b"%d" % sent])
                                assert await pull.recv_multipart() == [b"good", b"%d" % sent]
                                worst = max(worst, trio.current_time() - t0)
                                sent += 1
                                await trio.sleep(0.01)  # pacing: the test is about time
                            _, peak = tracemalloc.get_traced_memory()
                        finally:
                            close_flood(flood)
                    finally:
                        tracemalloc.stop()
                    # memory: what max_handshakes connections cost, not what the flood is
                    per_hundred = 3 * 2**20
                    assert peak - base < per_hundred * MAX_HANDSHAKES / 100 + 2**20, (
                        f"peak {peak - base} bytes during a flood of {flood_size}"
                    )
                    # the good peer was never held up beyond the bound
                    assert sent > 50, sent
                    assert worst < 0.5, worst
                    # at most max_handshakes were ever in their handshake at once
                    assert counts.most <= MAX_HANDSHAKES, counts.most
                    # the server ended the flood's handshakes: at handshake_ivl, or earlier
                    # when newer arrivals (the kernel retries refused SYNs after 1 s, just
                    # when handshake_ivl is up) evicted them
                    ended = counts.timed_out + counts.evicted
                    assert ended >= MAX_HANDSHAKES, (counts.timed_out, counts.evicted)
                    # the socket survived: the good peer and a newcomer still get through
                    await push.send(b"after")
                    assert await pull.recv() == b"after"
                    async with trizmq.Push(connect=endpoint, linger=0) as newcomer:
                        await newcomer.send(b"newcomer")
                        with trio.fail_after(handshake_ivl * 3):
                            assert await pull.recv() == b"newcomer"
                watchers.cancel_scope.cancel()


async def test_a_newcomer_is_admitted_during_the_flood() -> None:
    """A flood of 200 silent connections fills max_handshakes=100: the newcomer,
    arriving behind them, is accepted at once and evicts the oldest of them; it does
    not wait for the flood's handshakes to time out."""
    handshake_ivl = 0.5
    flood_size = 2 * MAX_HANDSHAKES
    raise_file_limit(flood_size * 2 + 200)
    with trio.fail_after(20):
        async with (
            trizmq.Pull(handshake_ivl=handshake_ivl, max_handshakes=MAX_HANDSHAKES) as pull,
            pull.monitor(capacity=10_000) as events,
        ):
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            counts = Handshakes()
            async with trio.open_nursery() as watchers:
                watchers.start_soon(counts.watch, events)
                flood = open_flood(endpoint, flood_size)
                try:
                    # let the acceptor fill its slots, so the newcomer queues behind
                    await counts.full.wait()
                    start = trio.current_time()
                    async with trizmq.Push(connect=endpoint, linger=0) as newcomer:
                        await newcomer.send(b"newcomer")
                        assert await pull.recv() == b"newcomer"
                        waited = trio.current_time() - start
                finally:
                    close_flood(flood)
                watchers.cancel_scope.cancel()
            # not past the flood's timeouts; the slack covers the kernel: with its backlog
            # full it may drop the newcomer's SYN, which Linux retransmits after 1 s and
            # then 3 s more
            assert waited <= 2 * handshake_ivl + 4.5, waited
            assert counts.most <= MAX_HANDSHAKES


# -- oversized frames through CURVE -------------------------------------------------------


async def raw_curve_handshake(
    endpoint: str, server_public: bytes
) -> tuple[trio.SocketStream, Connection]:
    """A raw TCP stream that completes a real CURVE handshake (as a PUSH)."""
    public, secret = trizmq.curve_keypair()
    conn = Connection(
        "PUSH",
        **socket_type("PUSH").handshake_facts(),
        mechanism=CurveClientMechanism(
            trizmq.z85_decode(server_public), trizmq.z85_decode(public), trizmq.z85_decode(secret)
        ),
    )
    stream = await trio.open_tcp_stream(*host_port(endpoint))
    await stream.send_all(conn.start())
    while not conn.handshake_complete:
        data = await stream.receive_some(65536)
        assert data, "the server hung up during the handshake"
        conn.receive_data(data)
        out = conn.data_to_send()
        if out:
            await stream.send_all(out)
    return stream, conn


@pytest.mark.parametrize("declared", [2**40, 1025 + 100])
async def test_an_oversized_curve_frame_is_refused_at_its_outer_header(
    caplog: pytest.LogCaptureFixture, declared: int
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    server_public, server_secret = trizmq.curve_keypair()
    security = trizmq.CurveServer(secret_key=server_secret)
    with trio.fail_after(10):
        async with trizmq.Pull(security=security, maxmsgsize=1024) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            stream, conn = await raw_curve_handshake(endpoint, server_public)
            async with stream:
                # a boxed message within the limit (its wire size: 1015 bytes and a
                # 9-byte header) is delivered
                await stream.send_all(conn.encode_message([b"x" * 1015]))
                assert await pull.recv() == b"x" * 1015
                # an outer MESSAGE frame header declaring more: only its 9 header bytes
                # are sent; trizmq hangs up without waiting for (or decrypting) a body
                await stream.send_all(b"\x02" + struct.pack(">Q", declared))
                await closed_by_server(stream)
            assert any("exceeds maxmsgsize" in m for m in warnings_of(caplog)), warnings_of(caplog)
            # the server stays healthy
            public, secret = trizmq.curve_keypair()
            client = trizmq.CurveClient(
                server_key=server_public, public_key=public, secret_key=secret
            )
            async with trizmq.Push(security=client, connect=endpoint, linger=0) as push:
                await push.send(b"still serving")
                assert await pull.recv() == b"still serving"


async def test_maxmsgsize_through_curve_between_trizmq_sockets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """maxmsgsize bounds the plaintext's wire size: exactly the limit passes (4087
    bytes and a 9-byte header), one byte more drops the connection (the message is
    lost), and the client reconnects for the next."""
    caplog.set_level(logging.WARNING, logger="trizmq")
    server_public, server_secret = trizmq.curve_keypair()
    public, secret = trizmq.curve_keypair()
    with trio.fail_after(10):
        async with trizmq.Pull(
            security=trizmq.CurveServer(secret_key=server_secret), maxmsgsize=4096
        ) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            client = trizmq.CurveClient(
                server_key=server_public, public_key=public, secret_key=secret
            )
            async with (
                trizmq.Push(security=client, connect=endpoint, linger=0) as push,
                push.monitor() as events,
            ):
                await push.send(b"a" * 4087)
                assert await pull.recv() == b"a" * 4087
                await push.send(b"b" * 4088)
                # once the client has seen the server hang up, what it sends waits in
                # its queue for the next connection (sent earlier, it could be lost
                # on the dying one, as in any ZeroMQ)
                async for event in events:
                    if isinstance(event, trizmq.Disconnected):
                        break
                await push.send(b"c" * 10)
                assert await pull.recv() == b"c" * 10
    assert any("exceeds maxmsgsize 4096" in m for m in warnings_of(caplog)), warnings_of(caplog)
