"""trizmq and libzmq exchange messages over tcp and ipc, each side binding in turn.

Every test is parametrized over the transport (``endpoints``: tcp, ipc) and over
which side binds (``trizmq_binds``), and most over a table of socket-type pairs in
which the data goes from ``sender`` to ``receiver``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pytest
import trio
import zmq

import trizmq

from .libzmq import End, Endpoints, LibzmqSocket, TrizmqEnd, await_delivery, link


class Case(NamedTuple):
    trizmq_type: type[trizmq.Socket]
    libzmq_type: int
    trizmq_sends: bool

    @property
    def id(self) -> str:
        tz, lz = self.trizmq_type.socket_type, zmq.SocketType(self.libzmq_type).name
        return f"trizmq-{tz}-to-libzmq-{lz}" if self.trizmq_sends else f"libzmq-{lz}-to-trizmq-{tz}"


CASES = [
    Case(trizmq.Pair, zmq.PAIR, True),
    Case(trizmq.Pair, zmq.PAIR, False),
    Case(trizmq.Push, zmq.PULL, True),
    Case(trizmq.Pull, zmq.PUSH, False),
    Case(trizmq.Pub, zmq.SUB, True),
    Case(trizmq.Sub, zmq.PUB, False),
    Case(trizmq.XPub, zmq.SUB, True),
    Case(trizmq.Sub, zmq.XPUB, False),
    Case(trizmq.Pub, zmq.XSUB, True),
    Case(trizmq.XSub, zmq.PUB, False),
    Case(trizmq.XPub, zmq.XSUB, True),
    Case(trizmq.XSub, zmq.XPUB, False),
]
ONE_TO_ONE = [c for c in CASES if c.libzmq_type in (zmq.PAIR, zmq.PUSH, zmq.PULL)]

bind_side = pytest.mark.parametrize(
    "trizmq_binds", [True, False], ids=["trizmq-binds", "libzmq-binds"]
)
LibzmqFactory = Callable[[int], LibzmqSocket]

MESSAGES = [
    [b"hello"],
    [b""],  # a single 0-byte frame
    [b"a", b"b", b"c"],
    [b"", b"", b""],  # only empty frames
    [b"head", b"", b"tail"],  # an empty frame in the middle
    [b"x" * 300, b""],  # a long frame (> 255 bytes) then an empty one
    [b"s" * 255, b"l" * 256],  # the largest short frame, the smallest long one
    [bytes(range(256)) * 4],  # every byte value
    [b"%d" % i for i in range(1000)],  # many frames
]


async def open_pair(
    case: Case,
    tz: trizmq.Socket,
    libzmq: LibzmqFactory,
    trizmq_binds: bool,
    endpoints: Endpoints,
) -> tuple[End, End]:
    """Link the two sockets, subscribe the receiver to everything, await delivery.

    Returns ``(sender, receiver)``.
    """
    lz = libzmq(case.libzmq_type)
    await link(tz, lz, trizmq_binds, endpoints)
    tz_end = TrizmqEnd(tz)
    sender, receiver = (tz_end, lz) if case.trizmq_sends else (lz, tz_end)
    if case.libzmq_type in (zmq.PUB, zmq.XPUB, zmq.SUB, zmq.XSUB):
        await receiver.add_subscription(b"")
    await await_delivery(sender, receiver)
    return sender, receiver


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@bind_side
async def test_messages(
    case: Case, trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """Single-part and multipart messages, empty frames included, arrive whole and in order."""
    with trio.fail_after(20):
        async with case.trizmq_type(linger=0) as tz:
            sender, receiver = await open_pair(case, tz, libzmq, trizmq_binds, endpoints)
            for msg in MESSAGES:
                await sender.send(msg)
            received = [await receiver.recv_within(10) for _ in MESSAGES]
            assert received == MESSAGES
            if case.trizmq_type is trizmq.Pair:
                # PAIR is symmetric: the other way too
                for msg in MESSAGES:
                    await receiver.send(msg)
                received = [await sender.recv_within(10) for _ in MESSAGES]
                assert received == MESSAGES


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@bind_side
async def test_16mib_frame(
    case: Case, trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """A 16 MiB frame, between two small ones, arrives intact."""
    big = bytes(range(256)) * (1 << 16)
    assert len(big) == 16 * 1024 * 1024
    with trio.fail_after(20):
        async with case.trizmq_type(linger=0) as tz:
            sender, receiver = await open_pair(case, tz, libzmq, trizmq_binds, endpoints)
            await sender.send([b"before"])
            await sender.send([b"big", big, b""])
            await sender.send([b"after"])
            assert await receiver.recv_within(10) == [b"before"]
            msg = await receiver.recv_within(10)
            assert msg is not None, "the 16 MiB message never arrived"
            assert [len(f) for f in msg] == [3, len(big), 0]
            assert msg == [b"big", big, b""]
            assert await receiver.recv_within(10) == [b"after"]


TOTAL = 100_000


@pytest.mark.parametrize(
    "case", [c for c in ONE_TO_ONE if c.trizmq_type is not trizmq.Pair], ids=lambda c: c.id
)
@bind_side
async def test_100k_in_order(
    case: Case, trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """PUSH/PULL: 100,000 messages, none lost, in order, with sender and receiver concurrent."""
    expected = [[b"%d" % i] for i in range(TOTAL)]
    with trio.fail_after(40):
        async with case.trizmq_type(linger=0) as tz:
            lz = libzmq(case.libzmq_type)
            await link(tz, lz, trizmq_binds, endpoints)
            received: list[list[bytes]] = []
            if case.trizmq_sends:

                async def receive() -> None:
                    received.extend(await lz.recv_many(TOTAL))

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(receive)
                    for msg in expected:
                        await tz.send_multipart(msg)
            else:

                async def send() -> None:
                    await lz.send_many(expected)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send)
                    for _ in range(TOTAL):
                        received.append(await tz.recv_multipart())
            assert len(received) == TOTAL
            first_wrong = next((i for i in range(TOTAL) if received[i] != expected[i]), None)
            assert first_wrong is None, f"message {first_wrong} is {received[first_wrong]!r}"


@pytest.mark.parametrize("case", [c for c in ONE_TO_ONE if c.trizmq_sends], ids=lambda c: c.id)
@bind_side
async def test_close_flushes_to_libzmq(
    case: Case, trizmq_binds: bool, endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """Leaving ``async with`` writes out every queued message (within ``linger``)."""
    count = 10_000
    expected = [[b"%d" % i, b"x" * 100] for i in range(count)]
    with trio.fail_after(20):
        lz = libzmq(case.libzmq_type)
        received: list[list[bytes]] = []

        async def receive() -> None:
            received.extend(await lz.recv_many(count))

        # the socket closes (flushing) first, then the nursery waits for the receiver
        async with trio.open_nursery() as nursery, case.trizmq_type(linger=10) as tz:
            await link(tz, lz, trizmq_binds, endpoints)
            nursery.start_soon(receive)
            for msg in expected:
                await tz.send_multipart(msg)
            # many of these are still queued when the socket starts closing
        assert len(received) == count
        assert received == expected
