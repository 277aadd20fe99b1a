"""Faults of the virtual network: arguments checked at the call, drop(), delay(handshake=)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

import trizmq
from trizmq.testing import SocketFactory, VirtualNetwork

EP = "tcp://127.0.0.1:5600"

# -- arguments are checked when the fault is set -----------------------------------------

BAD_CALLS: list[tuple[str, Callable[[VirtualNetwork], Any], type[Exception], str]] = [
    ("stall-direction", lambda n: n.stall(EP, "sideways"), ValueError, "direction"),
    ("stall-direction-type", lambda n: n.stall(EP, 1), TypeError, "direction"),
    ("delay-negative", lambda n: n.delay(EP, -1), ValueError, "seconds"),
    ("delay-nan", lambda n: n.delay(EP, math.nan), ValueError, "seconds"),
    ("delay-inf", lambda n: n.delay(EP, math.inf), ValueError, "seconds"),
    ("delay-str", lambda n: n.delay(EP, "1"), TypeError, "seconds"),
    ("delay-direction", lambda n: n.delay(EP, 1, "up"), ValueError, "direction"),
    ("delay-handshake", lambda n: n.delay(EP, 1, handshake="no"), TypeError, "handshake"),
    ("drop-zero", lambda n: n.drop(EP, 0), ValueError, "count"),
    ("drop-float", lambda n: n.drop(EP, 1.5), TypeError, "count"),
    ("drop-bool", lambda n: n.drop(EP, True), TypeError, "count"),
    ("drop-direction", lambda n: n.drop(EP, 1, "down"), ValueError, "direction"),
    ("cut-inproc", lambda n: n.cut("inproc://name"), ValueError, "endpoint"),
    ("stall-udp", lambda n: n.stall("udp://127.0.0.1:5600"), ValueError, "endpoint"),
    ("refuse-int", lambda n: n.refuse(5600), TypeError, "endpoint"),
    ("admit-garbage", lambda n: n.admit("127.0.0.1:5600"), ValueError, "endpoint"),
    ("resume-no-port", lambda n: n.resume("tcp://127.0.0.1"), ValueError, "endpoint"),
    ("drop-port-zero", lambda n: n.drop("tcp://127.0.0.1:0"), ValueError, "endpoint"),
    ("link-count-ipc-star", lambda n: n.link_count("ipc://*"), ValueError, "endpoint"),
]


@pytest.mark.parametrize(
    ("call", "error", "argument"),
    [case[1:] for case in BAD_CALLS],
    ids=[case[0] for case in BAD_CALLS],
)
async def test_a_bad_fault_fails_at_the_call_naming_the_argument(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
    call: Callable[[VirtualNetwork], Any],
    error: type[Exception],
    argument: str,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind=EP)
        push = await zmq_sockets(trizmq.Push, connect=EP)
        await push.send(b"before")
        assert await pull.recv() == b"before"
        with pytest.raises(error, match=argument):
            call(virtual_network)
        # nothing was half-applied: the link works as before
        await push.send(b"after")
        assert await pull.recv() == b"after"
        assert virtual_network.link_count() == 1


async def test_directions_of_a_link_check_their_argument(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        await zmq_sockets(trizmq.Pull, bind=EP)
        push = await zmq_sockets(trizmq.Push, connect=EP)
        await push.send(b"x")
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(ValueError, match="direction"):
            virtual_network.links[0].directions("sideways")


# -- drop --------------------------------------------------------------------------------


async def test_drop_loses_the_next_whole_message_and_nothing_else(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://*:5601")
        push = await zmq_sockets(trizmq.Push, connect="tcp://localhost:5601")
        await push.send(b"first")
        assert await pull.recv() == b"first"
        virtual_network.drop("tcp://127.0.0.1:5601", count=1, direction="out")
        await push.send_multipart([b"lost", b"with", b"all its frames"])
        await push.send_multipart([b"kept", b"whole"])
        await push.send(b"next")
        assert await pull.recv_multipart() == [b"kept", b"whole"]
        assert await pull.recv() == b"next"
        assert virtual_network.dropped == 1
        assert virtual_network.link_count() == 1  # the connection itself is untouched


async def test_drop_counts_messages_across_links_present_and_future(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        virtual_network.drop("tcp://127.0.0.1:5602", count=2, direction="out")  # before any bind
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:5602")
        one = await zmq_sockets(trizmq.Push, connect="tcp://127.0.0.1:5602")
        two = await zmq_sockets(trizmq.Push, connect="tcp://localhost:5602")
        for push, payload in [(one, b"1"), (two, b"2"), (one, b"3"), (two, b"4")]:
            await push.send(payload)
            await trio.testing.wait_all_tasks_blocked()  # written onto its link, in this order
        assert {await pull.recv(), await pull.recv()} == {b"3", b"4"}
        assert virtual_network.dropped == 2


async def test_drop_leaves_subscriptions_and_drops_published_messages_in(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        # a budget waiting on the SUB -> PUB direction, where only SUBSCRIBE travels
        virtual_network.drop("tcp://127.0.0.1:5603", count=5, direction="out")
        pub = await zmq_sockets(trizmq.Pub, bind="tcp://127.0.0.1:5603")
        sub = await zmq_sockets(trizmq.Sub, connect="tcp://127.0.0.1:5603", subscribe=b"")
        while True:  # the subscription arrives (a dropped SUBSCRIBE would loop to fail_after)
            await pub.send(b"probe")
            with trio.move_on_after(0.1):
                if await sub.recv() == b"probe":
                    break
        assert virtual_network.dropped == 0
        virtual_network.drop("tcp://127.0.0.1:5603", count=2, direction="in")
        for payload in (b"m1", b"m2", b"m3"):
            await pub.send(payload)
        got = await sub.recv()
        while got == b"probe":  # probes still in flight from the loop above
            got = await sub.recv()
        assert got == b"m3"
        assert virtual_network.dropped == 2


async def test_heartbeats_are_never_dropped(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(120):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:5604")
        push = await zmq_sockets(
            trizmq.Push,
            connect="tcp://127.0.0.1:5604",
            heartbeat_ivl=1.0,
            heartbeat_timeout=2.5,
        )
        events = push.monitor()
        await push.send(b"first")
        assert await pull.recv() == b"first"
        virtual_network.drop("tcp://127.0.0.1:5604", count=1)
        await trio.sleep(30)  # virtual: PINGs and PONGs cross both ways, none dropped
        assert virtual_network.dropped == 0
        await push.send(b"dropped")
        await push.send(b"kept")
        assert await pull.recv() == b"kept"
        assert virtual_network.dropped == 1
        events.close()
        seen = [event async for event in events]
        assert not any(isinstance(e, trizmq.Disconnected) for e in seen), seen


async def test_drop_works_through_plain_security(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        async with trizmq.Authenticator(passwords={"admin": "secret"}):
            virtual_network.drop("tcp://127.0.0.1:5605", count=1, direction="both")
            pull = await zmq_sockets(
                trizmq.Pull, bind="tcp://127.0.0.1:5605", security=trizmq.PlainServer()
            )
            push = await zmq_sockets(
                trizmq.Push,
                connect="tcp://127.0.0.1:5605",
                security=trizmq.PlainClient(username="admin", password="secret"),
            )
            await push.send(b"dropped")
            await push.send(b"kept")
            assert await pull.recv() == b"kept"
            assert virtual_network.dropped == 1


async def test_drop_does_not_apply_under_curve(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    server_public, server_secret = trizmq.curve_keypair()
    client_public, client_secret = trizmq.curve_keypair()
    with trio.fail_after(60):
        virtual_network.drop("tcp://127.0.0.1:5606", count=1)
        pull = await zmq_sockets(
            trizmq.Pull,
            bind="tcp://127.0.0.1:5606",
            security=trizmq.CurveServer(secret_key=server_secret),
        )
        push = await zmq_sockets(
            trizmq.Push,
            connect="tcp://127.0.0.1:5606",
            security=trizmq.CurveClient(
                server_key=server_public, public_key=client_public, secret_key=client_secret
            ),
        )
        sent = [[b"a"], [b"b", b"c"], [b"d"]]
        for message in sent:
            await push.send_multipart(message)
        assert [await pull.recv_multipart() for _ in sent] == sent
        assert virtual_network.dropped == 0


# -- delay -------------------------------------------------------------------------------


async def handshake_time(push: trizmq.Push) -> float:
    events = push.monitor()
    async for event in events:
        if isinstance(event, trizmq.HandshakeSucceeded):
            break
    events.close()
    return trio.current_time()


async def test_delay_slows_the_handshake_too_by_default(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:5607")
        virtual_network.delay("tcp://localhost:5607", 1.0)
        start = trio.current_time()
        push = await zmq_sockets(trizmq.Push)
        await push.connect("tcp://127.0.0.1:5607")
        # the greetings cross both ways in stages (the signatures, the versions, the
        # rest), then the READYs: at least two round trips of 1 + 1 s
        assert await handshake_time(push) - start >= 4.0
        sent_at = trio.current_time()
        await push.send(b"slow")
        assert await pull.recv() == b"slow"
        assert trio.current_time() - sent_at >= 1.0


async def test_delay_without_the_handshake_slows_only_what_follows(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:5608")
        virtual_network.delay("tcp://127.0.0.1:5608", 2.0, "out", handshake=False)
        start = trio.current_time()
        push = await zmq_sockets(trizmq.Push)
        await push.connect("tcp://127.0.0.1:5608")
        assert await handshake_time(push) - start < 0.5
        sent_at = trio.current_time()
        await push.send(b"slow")
        assert await pull.recv() == b"slow"
        assert 2.0 <= trio.current_time() - sent_at < 2.5
        virtual_network.delay("tcp://127.0.0.1:5608", 0)  # undone for the live link too
        sent_at = trio.current_time()
        await push.send(b"fast")
        assert await pull.recv() == b"fast"
        assert trio.current_time() - sent_at < 0.5
