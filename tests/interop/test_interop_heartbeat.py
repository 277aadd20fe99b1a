"""ZMTP 3.1 heartbeats between trizmq and libzmq: PING/PONG keep an idle connection up.

Whichever side sends PINGs (with a short timeout, and from libzmq a TTL too), the
other must answer them or the connection is dropped. The test lets an idle PAIR
connection live through many heartbeat timeouts, then checks that it was never
dropped and that messages still flow.

With ``heartbeat_timeout`` left at its default (the interval) the same must hold, on
either side and on both: the timeout clock starts when a PING is sent, so a peer is
never judged before it was asked. Both ends' monitors watch the connection.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import trio
import zmq
from zmq.utils.monitor import recv_monitor_message

import trizmq
from trizmq.zmtp.events import Ping, Pong
from trizmq.zmtp.outbound import _COMMAND_ENCODERS

from .libzmq import Endpoints, TrizmqEnd, await_delivery, link
from .test_interop_messages import LibzmqFactory, bind_side

IVL = 0.05
TIMEOUT = 0.2
#: how long the idle connection must survive: several heartbeat timeouts
IDLE = 3 * TIMEOUT


@pytest.mark.parametrize("pinging", ["libzmq", "trizmq"])
@bind_side
async def test_heartbeats_keep_an_idle_connection(
    pinging: str, trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    options = {}
    if pinging == "trizmq":
        options = {"heartbeat_ivl": IVL, "heartbeat_timeout": TIMEOUT}
    with trio.fail_after(20):
        async with trizmq.Pair(linger=0, reconnect_ivl=0.05, **options) as tz:
            events = tz.monitor()
            lz = libzmq(zmq.PAIR)
            if pinging == "libzmq":
                lz.sock.setsockopt(zmq.HEARTBEAT_IVL, int(IVL * 1000))
                lz.sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(TIMEOUT * 1000))
                # the TTL (whole tenths of a second on the wire) bounds trizmq's next read
                lz.sock.setsockopt(zmq.HEARTBEAT_TTL, int(TIMEOUT * 1000))
            await link(tz, lz, trizmq_binds, endpoints)
            await await_delivery(TrizmqEnd(tz), lz)

            # idle: only heartbeats cross the connection now. Waiting is the point here
            # (nothing may happen), so this is a sleep and not an await of an event.
            await trio.sleep(IDLE)

            await tz.send(b"to libzmq")
            assert await lz.recv_within(10) == [b"to libzmq"]
            await lz.send([b"to trizmq"])
            assert await TrizmqEnd(tz).recv_within(10) == [b"to trizmq"]
            events.close()
            seen = [event async for event in events]
        handshakes = [e for e in seen if isinstance(e, trizmq.HandshakeSucceeded)]
        drops = [e for e in seen if isinstance(e, trizmq.Disconnected)]
        assert len(handshakes) == 1 and not drops, (
            f"the idle connection was dropped despite heartbeats: {seen!r}"
        )


#: a short interval, each one a chance to drop a healthy peer under the old rule
SHORT_IVL = 0.1
#: how long the idle connection is watched: eight intervals
WATCH = 8 * SHORT_IVL


def count_commands_written(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the PINGs and PONGs trizmq's writers encode from now on, by class name."""
    written: Counter[str] = Counter()
    for cls in (Ping, Pong):
        encode = _COMMAND_ENCODERS[cls]

        def counting(conn: Any, cmd: Any, encode: Any = encode, name: str = cls.__name__) -> bytes:
            written[name] += 1
            return encode(conn, cmd)  # type: ignore[no-any-return]

        monkeypatch.setitem(_COMMAND_ENCODERS, cls, counting)
    return written


def libzmq_events(monitor: zmq.Socket[bytes]) -> list[int]:
    """The events libzmq's monitor socket holds now."""
    events = []
    while True:
        try:
            events.append(recv_monitor_message(monitor, zmq.NOBLOCK)["event"])  # type: ignore[index]
        except zmq.Again:
            return events


@pytest.mark.parametrize("pinging", ["trizmq", "libzmq", "both"])
@bind_side
async def test_an_idle_connection_with_the_default_timeout_stays_up(
    pinging: str,
    trizmq_binds: bool,
    endpoints: Endpoints,
    libzmq: LibzmqFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No ``heartbeat_timeout``: it defaults to the interval. An idle connection makes
    exactly one handshake and no disconnect on either side while PINGs flow."""
    written = count_commands_written(monkeypatch)
    trizmq_pings = pinging in ("trizmq", "both")
    options = {"heartbeat_ivl": SHORT_IVL} if trizmq_pings else {}
    with trio.fail_after(30):
        async with (
            trizmq.Pair(linger=0, reconnect_ivl=0.05, **options) as tz,
            tz.monitor() as events,
        ):
            lz = libzmq(zmq.PAIR)
            if pinging in ("libzmq", "both"):
                lz.sock.setsockopt(zmq.HEARTBEAT_IVL, int(SHORT_IVL * 1000))
                # libzmq's own timeout is not under test: a generous one keeps a stall of
                # this loaded test process from counting as trizmq's silence
                lz.sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 1000)
            monitor = lz.sock.get_monitor_socket(
                zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED
            )
            try:
                await link(tz, lz, trizmq_binds, endpoints)
                await await_delivery(TrizmqEnd(tz), lz)
                before = written.copy()
                # idle: nothing may happen, which cannot be awaited, so this is a sleep
                await trio.sleep(WATCH)
                during = written - before
                await tz.send(b"to libzmq")
                assert await lz.recv_within(10) == [b"to libzmq"]
                await lz.send([b"to trizmq"])
                assert await TrizmqEnd(tz).recv_within(10) == [b"to trizmq"]
                seen_by_libzmq = libzmq_events(monitor)
            finally:
                lz.sock.disable_monitor()
                monitor.close(linger=0)
            events.close()
            seen = [event async for event in events]
    handshakes = [e for e in seen if isinstance(e, trizmq.HandshakeSucceeded)]
    drops = [e for e in seen if isinstance(e, trizmq.Disconnected)]
    assert len(handshakes) == 1 and not drops, seen
    assert seen_by_libzmq == [zmq.EVENT_HANDSHAKE_SUCCEEDED], seen_by_libzmq
    # about eight of each; a loaded machine may delay a few
    if trizmq_pings:
        assert during["Ping"] >= 3, during
    if pinging in ("libzmq", "both"):
        assert during["Pong"] >= 3, during  # one per PING received from libzmq
