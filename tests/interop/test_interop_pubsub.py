"""Subscriptions between trizmq and libzmq: filtering, unsubscription, XPUB's view of them."""

from __future__ import annotations

import pytest
import trio
import zmq

import trizmq

from .libzmq import End, Endpoints, LibzmqSocket, TrizmqEnd, await_delivery, link
from .test_interop_messages import CASES, Case, LibzmqFactory, bind_side

PUBSUB = [c for c in CASES if c.libzmq_type not in (zmq.PAIR, zmq.PUSH, zmq.PULL)]


async def receive_up_to(receiver: End, last: bytes) -> list[bytes]:
    """Every first frame received up to and including the message ``[last]``."""
    got: list[bytes] = []
    while not got or got[-1] != last:
        msg = await receiver.recv_within(10)
        assert msg is not None, f"{last!r} never arrived; got {got!r}"
        assert len(msg) == 1, msg
        got.append(msg[0])
    return got


@pytest.mark.parametrize("case", PUBSUB, ids=lambda c: c.id)
@bind_side
async def test_filtering_and_unsubscription(
    case: Case, trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """Only messages matching a subscribed prefix arrive; an unsubscribed prefix stops."""
    with trio.fail_after(20):
        async with case.trizmq_type(linger=0) as tz:
            lz = libzmq(case.libzmq_type)
            await link(tz, lz, trizmq_binds, endpoints)
            tz_end = TrizmqEnd(tz)
            pub, sub = (tz_end, lz) if case.trizmq_sends else (lz, tz_end)
            await sub.add_subscription(b"A")
            await sub.add_subscription(b"B")
            await await_delivery(pub, sub, b"A")
            # B was subscribed before A's marker went through on the same connection
            for topic in [b"A1", b"C1", b"B1", b"", b"a1", b"AB", b"BA", b"C", b"A-last"]:
                await pub.send([topic])
            assert await receive_up_to(sub, b"A-last") == [b"A1", b"B1", b"AB", b"BA", b"A-last"]

            await sub.remove_subscription(b"B")
            # the cancel of B reaches the publisher before the subscription to Z does
            await sub.add_subscription(b"Z")
            await await_delivery(pub, sub, b"Z")
            for topic in [b"B2", b"A2", b"B", b"Z2", b"BA"]:
                await pub.send([topic])
            await pub.send([b"A-last"])
            assert await receive_up_to(sub, b"A-last") == [b"A2", b"Z2", b"A-last"]


async def xpub_recv(xpub: End, nudge: LibzmqSocket | None) -> list[bytes] | None:
    """Receive on an XPUB; ``nudge`` is its libzmq peer when the XPUB is trizmq's.

    An idle libzmq socket attaches a connection it accepted only when the application
    calls into it (see :meth:`LibzmqSocket.process_commands`), so a bound libzmq SUB
    sends nothing to a new peer until then: nudge it until the message arrives.
    """
    if nudge is None:
        return await xpub.recv_within(10)
    with trio.fail_after(10):
        while (msg := await xpub.recv_within(0.05)) is None:
            await nudge.process_commands()
    return msg


XPUB_CASES = [
    pytest.param(trizmq.XPub, zmq.SUB, id="trizmq-XPUB-from-libzmq-SUB"),
    pytest.param(trizmq.XPub, zmq.XSUB, id="trizmq-XPUB-from-libzmq-XSUB"),
    pytest.param(trizmq.Sub, zmq.XPUB, id="libzmq-XPUB-from-trizmq-SUB"),
    pytest.param(trizmq.XSub, zmq.XPUB, id="libzmq-XPUB-from-trizmq-XSUB"),
]


@pytest.mark.parametrize(("trizmq_type", "libzmq_type"), XPUB_CASES)
@bind_side
async def test_xpub_receives_subscriptions(
    trizmq_type: type[trizmq.Socket],
    libzmq_type: int,
    trizmq_binds: bool,
    endpoints: Endpoints,
    libzmq: LibzmqFactory,
) -> None:
    """An XPUB sees b"\\x01topic" and b"\\x00topic" whichever side it is on."""
    with trio.fail_after(20):
        async with trizmq_type(linger=0) as tz:
            lz = libzmq(libzmq_type)
            await link(tz, lz, trizmq_binds, endpoints)
            tz_end = TrizmqEnd(tz)
            xpub, sub = (tz_end, lz) if trizmq_type is trizmq.XPub else (lz, tz_end)
            nudge = lz if xpub is tz_end else None

            async def recv_at_xpub() -> list[bytes] | None:
                return await xpub_recv(xpub, nudge)

            await sub.add_subscription(b"topic")
            assert await recv_at_xpub() == [b"\x01topic"]
            await sub.add_subscription(b"")
            assert await recv_at_xpub() == [b"\x01"]
            # the subscriptions are in place once the XPUB has seen them: no slow joiner
            await xpub.send([b"topic data"])
            assert await sub.recv_within(10) == [b"topic data"]

            await sub.remove_subscription(b"topic")
            assert await recv_at_xpub() == [b"\x00topic"]
            await sub.remove_subscription(b"")
            assert await recv_at_xpub() == [b"\x00"]
            await sub.add_subscription(b"other")
            assert await recv_at_xpub() == [b"\x01other"]
            await xpub.send([b"topic data"])
            await xpub.send([b"other data"])
            assert await sub.recv_within(10) == [b"other data"]

            # a topic longer than 255 bytes takes a long frame (command or message)
            long_topic = bytes(range(256)) + b"L" * 44
            await sub.add_subscription(long_topic)
            assert await recv_at_xpub() == [b"\x01" + long_topic]
            await sub.remove_subscription(long_topic)
            assert await recv_at_xpub() == [b"\x00" + long_topic]

            if libzmq_type == zmq.XSUB or trizmq_type is trizmq.XSub:
                # an XSUB's other messages reach the XPUB's application as they are
                await sub.send([b"hello", b"", b"world"])
                assert await recv_at_xpub() == [b"hello", b"", b"world"]


@bind_side
async def test_xpub_with_two_libzmq_subscribers(
    trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """A trizmq XPUB reports the first subscribe and the last cancel across its peers.

    A subscriber that goes away cancels its topics; data fans out to every
    matching subscriber.
    """
    with trio.fail_after(20):
        async with trizmq.XPub(linger=0) as xpub:
            end = TrizmqEnd(xpub)
            one, two = libzmq(zmq.SUB), libzmq(zmq.SUB)
            await link(xpub, one, trizmq_binds, endpoints)
            if trizmq_binds:
                await link(xpub, two, trizmq_binds, endpoints)
            else:
                # a second libzmq endpoint for the second subscriber
                await link(xpub, two, False, endpoints)

            await one.add_subscription(b"news")
            assert await xpub_recv(end, one) == [b"\x01news"]
            await two.add_subscription(b"news")
            await two.add_subscription(b"sport")
            # the second "news" is not reported (not verbose): "sport" comes next
            assert await xpub_recv(end, two) == [b"\x01sport"]

            await end.send([b"news 1"])
            await end.send([b"sport 1"])
            assert await one.recv_within(10) == [b"news 1"]
            assert await two.recv_within(10) == [b"news 1"]
            assert await two.recv_within(10) == [b"sport 1"]

            await one.remove_subscription(b"news")  # two still holds it: not reported
            await one.add_subscription(b"weather")
            assert await xpub_recv(end, None) == [b"\x01weather"]
            await end.send([b"news 2"])
            await end.send([b"weather 1"])
            assert await one.recv_within(10) == [b"weather 1"]
            assert await two.recv_within(10) == [b"news 2"]

            # the second subscriber leaves: its last topics are cancelled
            two.close()
            cancels = [await xpub_recv(end, None), await xpub_recv(end, None)]
            assert sorted(map(bytes, (m[0] for m in cancels if m))) == [b"\x00news", b"\x00sport"]


@bind_side
async def test_libzmq_xpub_sees_counted_subscriptions(
    trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """A trizmq SUB sends every subscribe, but a cancel only for the last count."""
    with trio.fail_after(20):
        async with trizmq.Sub(linger=0) as sub:
            xpub = libzmq(zmq.XPUB)
            xpub.sock.setsockopt(zmq.XPUB_VERBOSE, 1)  # report repeated subscribes too
            await link(sub, xpub, trizmq_binds, endpoints)
            # first wait for the connection: a (re)connection replays the set, once a topic
            sub.subscribe(b"connected")
            assert await xpub.recv_within(10) == [b"\x01connected"]
            sub.subscribe(b"t")
            sub.subscribe(b"t")
            assert await xpub.recv_within(10) == [b"\x01t"]
            assert await xpub.recv_within(10) == [b"\x01t"]
            sub.unsubscribe(b"t")  # one count left: nothing goes out
            sub.subscribe(b"marker")
            assert await xpub.recv_within(10) == [b"\x01marker"]
            sub.unsubscribe(b"t")
            assert await xpub.recv_within(10) == [b"\x00t"]


@pytest.mark.parametrize("trizmq_is_xpub", [True, False], ids=["trizmq-XPUB", "libzmq-XPUB"])
@bind_side
async def test_many_subscriptions_replayed_on_connect(
    trizmq_is_xpub: bool, trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """1000 subscriptions made before the connection all reach the XPUB when it is made."""
    topics = [b"topic-%d" % i for i in range(1000)]
    with trio.fail_after(20):
        async with (trizmq.XPub if trizmq_is_xpub else trizmq.Sub)(linger=0) as tz:
            lz = libzmq(zmq.SUB if trizmq_is_xpub else zmq.XPUB)
            tz_end = TrizmqEnd(tz)
            xpub, sub = (tz_end, lz) if trizmq_is_xpub else (lz, tz_end)
            for topic in topics:
                await sub.add_subscription(topic)
            await link(tz, lz, trizmq_binds, endpoints)
            nudge = lz if trizmq_is_xpub else None
            seen = [await xpub_recv(xpub, nudge) for _ in topics]
            assert sorted(m[0] for m in seen if m) == sorted(b"\x01" + t for t in topics)
            await xpub.send([b"topic-999 data"])
            await xpub.send([b"other data"])
            await xpub.send([b"topic-0 data"])
            assert await sub.recv_within(10) == [b"topic-999 data"]
            assert await sub.recv_within(10) == [b"topic-0 data"]


@pytest.mark.parametrize("trizmq_type", [trizmq.Pub, trizmq.XPub], ids=["PUB", "XPUB"])
@bind_side
async def test_publisher_never_blocks_on_a_stuck_libzmq_subscriber(
    trizmq_type: type[trizmq.Socket],
    trizmq_binds: bool,
    endpoints: Endpoints,
    libzmq: LibzmqFactory,
) -> None:
    """A libzmq SUB that stops reading costs drops, never a blocked send; order is kept."""
    count = 20_000
    with trio.fail_after(20):
        async with trizmq_type(linger=0, sndhwm=100) as pub:
            sub = libzmq(zmq.SUB)
            sub.sock.setsockopt(zmq.RCVHWM, 10)
            sub.sock.setsockopt(zmq.RCVBUF, 64 * 1024)
            await link(pub, sub, trizmq_binds, endpoints)
            await sub.add_subscription(b"")
            await await_delivery(TrizmqEnd(pub), sub)
            # the subscriber reads nothing while these go out: queues and buffers fill up
            with trio.fail_after(10):
                for i in range(count):
                    await pub.send_multipart([b"%d" % i, bytes(1000)])
            got: list[int] = []
            while (msg := await sub.recv_within(0.2)) is not None:
                got.append(int(msg[0]))
            assert got, "the subscriber got nothing at all"
            assert got == sorted(got), "messages arrived out of order"
            assert len(got) < count, "nothing was dropped: the test did not fill any queue"
