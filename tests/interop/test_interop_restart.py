"""A libzmq peer that goes away and comes back on the same endpoint: delivery resumes.

The libzmq socket is closed and a new one opened on the same endpoint. When libzmq
binds, the trizmq connecter must reconnect by itself (replaying its subscriptions,
for a SUB or XSUB); when trizmq binds, it must drop the old connection and take the
new one (a PAIR included). Either way delivery must resume, in order.
"""

from __future__ import annotations

import pytest
import trio
import zmq

import trizmq

from .libzmq import End, Endpoints, LibzmqSocket, TrizmqEnd, await_delivery
from .test_interop_messages import Case, LibzmqFactory, bind_side

RESTART_CASES = [
    Case(trizmq.Push, zmq.PULL, True),
    Case(trizmq.Pull, zmq.PUSH, False),
    Case(trizmq.Pair, zmq.PAIR, True),
    Case(trizmq.Pair, zmq.PAIR, False),
    Case(trizmq.Sub, zmq.PUB, False),
    Case(trizmq.XSub, zmq.XPUB, False),
    Case(trizmq.Pub, zmq.SUB, True),
    Case(trizmq.XPub, zmq.SUB, True),
]
SUBSCRIBERS = (zmq.PUB, zmq.XPUB, zmq.SUB, zmq.XSUB)


async def start(case: Case, tz: trizmq.Socket, lz: LibzmqSocket) -> tuple[End, End]:
    """Subscribe the receiver if needed and wait until messages flow; (sender, receiver)."""
    tz_end = TrizmqEnd(tz)
    sender, receiver = (tz_end, lz) if case.trizmq_sends else (lz, tz_end)
    if case.libzmq_type in SUBSCRIBERS and receiver is lz:
        await lz.add_subscription(b"")
    await await_delivery(sender, receiver)
    return sender, receiver


async def check_flow(sender: End, receiver: End, tag: bytes) -> None:
    expected = [[tag, b"%d" % i] for i in range(100)]
    for msg in expected:
        await sender.send(msg)
    assert [await receiver.recv_within(10) for _ in expected] == expected


@pytest.mark.parametrize("case", RESTART_CASES, ids=lambda c: c.id)
@bind_side
async def test_libzmq_peer_restarts(
    case: Case, trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    with trio.fail_after(30):
        # the first incarnation has a context of its own: terminating it waits until
        # libzmq's I/O thread has really closed the listener (zmq_close returns before),
        # so the new socket can bind the same port or ipc path without a race
        first_ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        try:
            async with case.trizmq_type(linger=0, reconnect_ivl=0.05) as tz:
                if isinstance(tz, trizmq.XSub):
                    # Sub and XSub replay their subscriptions on every reconnection
                    tz.subscribe(b"")
                first = LibzmqSocket(first_ctx, case.libzmq_type)
                try:
                    if trizmq_binds:
                        endpoint = await tz.bind(endpoints.for_trizmq())
                        await first.connect(endpoint)
                    else:
                        endpoint = await first.bind(endpoints.for_libzmq())
                        await tz.connect(endpoint)
                    sender, receiver = await start(case, tz, first)
                    await check_flow(sender, receiver, b"first")
                finally:
                    first.close()
                await trio.to_thread.run_sync(first_ctx.term)

                second = libzmq(case.libzmq_type)
                if trizmq_binds:
                    await second.connect(endpoint)
                else:
                    assert await second.bind(endpoint) == endpoint
                sender, receiver = await start(case, tz, second)
                await check_flow(sender, receiver, b"second")
        finally:
            if not first_ctx.closed:
                first_ctx.destroy(linger=0)
