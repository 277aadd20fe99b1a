"""Heartbeats against hand-written ZMTP peers, in virtual time.

The rule under test is libzmq's: a PING goes out every ``heartbeat_ivl``; the timeout
clock starts when a PING is sent (unless it already runs) and anything received stops
it; ``heartbeat_timeout`` (default: the interval) on that clock drops the connection.
A TTL announced in a peer's PING bounds only the wait for the next read.

Each test links a trizmq socket to a :class:`RawPeer` (greeting, READY, then PING
handling written here byte by byte) over the ``trizmq.testing`` virtual network, so
minutes of heartbeats take no real time and the drop times are exact. The raw bytes
come from ``tests/zmtp/helpers.py``, imported as ``zmtp.helpers`` (``tests/`` is on the
path through its ``conftest.py``).
"""

from __future__ import annotations

import itertools
import logging
import math
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from zmtp.helpers import raw_command, raw_frame, raw_greeting, raw_ready

import trizmq
from trizmq._endpoint import parse_endpoint
from trizmq.testing import VirtualNetwork, open_virtual_network

ENDPOINT = "tcp://127.0.0.1:7500"
IVL = 1.0
#: trizmq binds and the raw peer connects, or the other way round
ROLES = pytest.mark.parametrize("trizmq_binds", [True, False], ids=["trizmq-binds", "raw-binds"])


class _Closed(Exception):
    pass


class RawPeer:
    """A ZMTP 3.1 NULL peer written by hand: greeting and READY, then PING handling.

    It records every PING trizmq sends (virtual time, TTL in tenths) and every PONG,
    answers PINGs with PONG while :attr:`answering` allows (``None``: always, a number:
    that many more), sends nothing else unless told to (:meth:`send`), and notes the
    time trizmq closes the connection. With ``reading=False`` it reads nothing after
    the handshake, like a frozen process; with ``pace=(size, seconds)`` it reads at
    most ``size`` bytes every ``seconds``, like a slow consumer.
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        socket_type: bytes,
        *,
        answering: int | None = None,
        reading: bool = True,
        pace: tuple[int, float] | None = None,
    ) -> None:
        self.stream = stream
        self.socket_type = socket_type
        self.answering = answering
        self.reading = reading
        self.pace = pace
        self.pings: list[tuple[float, int]] = []
        self.pongs: list[bytes] = []
        self.messages: list[bytes] = []
        self.handshaken_at = math.nan
        self.handshaken = trio.Event()
        self.closed_at = math.nan
        self.closed = trio.Event()
        self._buffer = bytearray()
        self._send_lock = trio.StrictFIFOLock()

    async def send(self, data: bytes) -> None:
        """Write raw bytes (one writer at a time)."""
        async with self._send_lock:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise _Closed from exc

    async def _read(self, size: int) -> bytes:
        while len(self._buffer) < size:
            if self.pace is not None and self.handshaken.is_set():
                await trio.sleep(self.pace[1])
            try:
                data = await self.stream.receive_some(self.pace[0] if self.pace else 65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise _Closed from exc
            if not data:
                raise _Closed
            self._buffer += data
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out

    async def _frame(self) -> tuple[int, bytes]:
        flags = (await self._read(1))[0]
        if flags & 0x02:
            (size,) = struct.unpack(">Q", await self._read(8))
        else:
            size = (await self._read(1))[0]
        return flags, await self._read(size)

    async def run(self) -> None:
        try:
            await self.send(raw_greeting() + raw_ready((b"Socket-Type", self.socket_type)))
            greeting = await self._read(64)
            assert greeting[0] == 0xFF and greeting[10] == 3, greeting
            flags, body = await self._frame()
            assert flags & 0x04 and body.startswith(b"\x05READY"), body
            self.handshaken_at = trio.current_time()
            self.handshaken.set()
            if not self.reading:
                await trio.sleep_forever()
            while True:
                flags, body = await self._frame()
                if not flags & 0x04:
                    self.messages.append(body)
                    continue
                name, data = body[1 : 1 + body[0]], body[1 + body[0] :]
                if name == b"PING":
                    (ttl,) = struct.unpack(">H", data[:2])
                    self.pings.append((trio.current_time(), ttl))
                    if self.answering is None or self.answering > 0:
                        if self.answering is not None:
                            self.answering -= 1
                        await self.send(raw_command(b"PONG", data[2:]))
                elif name == b"PONG":
                    self.pongs.append(data)
        except _Closed:
            self.closed_at = trio.current_time()
            self.closed.set()


@asynccontextmanager
async def linked(
    network: VirtualNetwork, sock: trizmq.Socket, trizmq_binds: bool, **peer: Any
) -> AsyncIterator[RawPeer]:
    """``sock`` and a running :class:`RawPeer` (``RawPeer(**peer)``), handshaken."""
    listener: Any = None
    if trizmq_binds:
        await sock.bind(ENDPOINT)
        stream = await network.connect(parse_endpoint(ENDPOINT, for_bind=False))
    else:
        listener = await network.listen(parse_endpoint(ENDPOINT, for_bind=True))
        await sock.connect(ENDPOINT)
        stream, _ = await listener.accept()
    raw = RawPeer(stream, **peer)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(raw.run)
            await raw.handshaken.wait()
            yield raw
            nursery.cancel_scope.cancel()
    finally:
        await stream.aclose()
        if listener is not None:
            await listener.aclose()


def counts(seen: list[Any]) -> tuple[int, int]:
    """(handshakes, disconnects) among monitor events."""
    return (
        sum(isinstance(e, trizmq.HandshakeSucceeded) for e in seen),
        sum(isinstance(e, trizmq.Disconnected) for e in seen),
    )


async def drained(events: Any) -> list[Any]:
    events.close()
    return [event async for event in events]


@ROLES
@pytest.mark.parametrize("timeout", [None, 0.5, 3.0], ids=["default", "half", "three"])
async def test_a_peer_that_answers_every_ping_is_never_dropped(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    trizmq_binds: bool,
    timeout: float | None,
) -> None:
    """An idle peer that only answers PINGs stays connected for five virtual minutes,
    whatever the timeout (shorter than the interval included: the clock starts at the
    PING), and it receives a PING every interval."""
    with trio.fail_after(600):
        options: dict[str, Any] = {"heartbeat_ivl": IVL, "heartbeat_timeout": timeout}
        virtual_network.delay(ENDPOINT, 0.1)  # a round trip of 0.2 s
        async with (
            trizmq.Pull(**options) as pull,
            pull.monitor() as events,
            linked(virtual_network, pull, trizmq_binds, socket_type=b"PUSH") as raw,
        ):
            await trio.sleep(300)
            assert not raw.closed.is_set()
            times = [at for at, _ in raw.pings]
            assert 299 <= len(times) <= 301
            assert all(abs(b - a - IVL) < 1e-6 for a, b in itertools.pairwise(times)), times
            assert times[0] - raw.handshaken_at <= IVL + 0.2 + 1e-6
            assert all(ttl == 0 for _, ttl in raw.pings)  # no heartbeat_ttl: TTL 0
            await raw.send(raw_frame(0, b"still here"))
            assert await pull.recv() == b"still here"
            assert counts(await drained(events)) == (1, 0)


@ROLES
@pytest.mark.parametrize("timeout", [None, 2.5], ids=["default", "2.5"])
async def test_a_silent_peer_is_dropped_timeout_after_the_first_ping(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    caplog: pytest.LogCaptureFixture,
    trizmq_binds: bool,
    timeout: float | None,
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    expected = timeout or IVL
    with trio.fail_after(600):
        options: dict[str, Any] = {"heartbeat_ivl": IVL, "heartbeat_timeout": timeout}
        async with trizmq.Push(**options) as push, push.monitor() as events:
            async with linked(
                virtual_network, push, trizmq_binds, socket_type=b"PULL", answering=0
            ) as raw:
                await raw.closed.wait()
                first = raw.pings[0][0]
                assert first - raw.handshaken_at == pytest.approx(IVL, abs=0.01)
                assert expected <= raw.closed_at - first <= expected + 0.01
                # PINGs went on every interval while the clock ran
                assert len(raw.pings) == math.ceil(expected / IVL)
            handshakes, drops = counts(await drained(events))
            assert handshakes >= 1 and drops >= 1
    assert "heartbeat timeout" in caplog.text


@ROLES
async def test_a_peer_that_stops_answering_is_dropped_timeout_after_its_first_unanswered_ping(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    trizmq_binds: bool,
) -> None:
    """The clock starts at the first PING left unanswered, not at the last read."""
    with trio.fail_after(600):
        async with (
            trizmq.Push(heartbeat_ivl=IVL, heartbeat_timeout=2.5) as push,
            linked(virtual_network, push, trizmq_binds, socket_type=b"PULL", answering=5) as raw,
        ):
            await raw.closed.wait()
            unanswered = raw.pings[5][0]
            assert 2.5 <= raw.closed_at - unanswered <= 2.5 + 0.01
            assert len(raw.pings) == 8  # five answered, then three while the clock ran


@ROLES
async def test_a_frozen_peer_is_dropped_even_while_our_writes_block(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    trizmq_binds: bool,
) -> None:
    """A peer that reads nothing: our messages fill the link and the writer blocks, so
    the PING is never written; the clock counts from when it was queued instead."""
    with trio.fail_after(600):
        async with (
            trizmq.Push(heartbeat_ivl=IVL, heartbeat_timeout=2.0, linger=0) as push,
            push.monitor() as events,
            linked(virtual_network, push, trizmq_binds, socket_type=b"PULL", reading=False) as raw,
        ):
            for _ in range(200):  # 800 KiB: more than the link holds
                await push.send(b"x" * 4096)
            async for event in events:
                if isinstance(event, trizmq.Disconnected):
                    break
            dropped = trio.current_time() - raw.handshaken_at
            assert IVL + 2.0 <= dropped <= IVL + 2.0 + 0.01


@ROLES
async def test_a_ping_goes_ahead_of_queued_messages(
    autojump_clock: trio.testing.MockClock, trizmq_binds: bool
) -> None:
    """A slow but live consumer: 800 KiB queued for a peer reading 40 KiB/s through a
    link that holds 16 KiB. Behind the queue a PING would take 20 s to arrive, four
    timeouts; ahead of it, it arrives within about two seconds and is answered, so
    the connection lasts until every message is read."""
    with trio.fail_after(600):
        async with (
            open_virtual_network(capacity=16 * 1024) as network,
            trizmq.Push(heartbeat_ivl=IVL, heartbeat_timeout=5.0) as push,
            push.monitor() as events,
            linked(network, push, trizmq_binds, socket_type=b"PULL", pace=(4096, 0.1)) as raw,
        ):
            sent = [b"%06d" % i + b"x" * 4090 for i in range(200)]
            for message in sent:
                await push.send(message)
            while len(raw.messages) < len(sent):
                await trio.sleep(1)
            assert raw.messages == sent
            assert len(raw.pings) >= 5 and not raw.closed.is_set()
            assert counts(await drained(events)) == (1, 0)


@ROLES
async def test_a_peer_ttl_bounds_the_wait_for_the_next_read(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    caplog: pytest.LogCaptureFixture,
    trizmq_binds: bool,
) -> None:
    """A peer announces a TTL of 3 s in a PING and falls silent: dropped 3 s later,
    after its PING was answered with a PONG echoing the context. (trizmq has no
    heartbeats of its own here.)"""
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(600):
        async with (
            trizmq.Pull() as pull,
            linked(virtual_network, pull, trizmq_binds, socket_type=b"PUSH") as raw,
        ):
            await trio.sleep(10)  # no TTL yet: silence is fine
            assert not raw.closed.is_set()
            pinged = trio.current_time()
            await raw.send(raw_command(b"PING", struct.pack(">H", 30) + b"ctx"))
            await raw.closed.wait()
            assert 3.0 <= raw.closed_at - pinged <= 3.0 + 0.01
            assert raw.pongs == [b"ctx"]
    assert "heartbeat TTL" in caplog.text


@ROLES
@pytest.mark.parametrize("same_write", [True, False], ids=["same-read", "later"])
async def test_any_data_after_a_ping_clears_its_ttl(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    trizmq_binds: bool,
    same_write: bool,
) -> None:
    """A message after the TTL's PING (in the same read, or a second later) lifts the
    TTL: the peer may then be silent for as long as it likes."""
    with trio.fail_after(600):
        async with (
            trizmq.Pull() as pull,
            pull.monitor() as events,
            linked(virtual_network, pull, trizmq_binds, socket_type=b"PUSH") as raw,
        ):
            ping = raw_command(b"PING", struct.pack(">H", 30))
            if same_write:
                await raw.send(ping + raw_frame(0, b"data"))
            else:
                await raw.send(ping)
                await trio.sleep(1)
                await raw.send(raw_frame(0, b"data"))
            assert await pull.recv() == b"data"
            await trio.sleep(60)
            assert not raw.closed.is_set()
            assert raw.pongs == [b""]
            assert counts(await drained(events)) == (1, 0)


async def test_two_trizmq_sockets_heartbeating_both_ways_stay_up(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    """Both sides ping with the default timeout, over a link with latency."""
    with trio.fail_after(600):
        async with (
            trizmq.Pull(bind=ENDPOINT, heartbeat_ivl=IVL) as pull,
            pull.monitor() as pull_events,
        ):
            virtual_network.delay(ENDPOINT, 0.3)
            async with (
                trizmq.Push(heartbeat_ivl=IVL) as push,
                push.monitor() as push_events,
            ):
                await push.connect(ENDPOINT)
                await push.send(b"first")
                assert await pull.recv() == b"first"
                await trio.sleep(120)
                await push.send(b"still here")
                assert await pull.recv() == b"still here"
                assert counts(await drained(push_events)) == (1, 0)
                assert counts(await drained(pull_events)) == (1, 0)
