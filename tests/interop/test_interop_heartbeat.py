"""ZMTP 3.1 heartbeats between trizmq and libzmq: PING/PONG keep an idle connection up.

Whichever side sends PINGs (with a short timeout, and from libzmq a TTL too), the
other must answer them or the connection is dropped. The test lets an idle PAIR
connection live through many heartbeat timeouts, then checks that it was never
dropped and that messages still flow.
"""

from __future__ import annotations

import pytest
import trio
import zmq

import trizmq

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
