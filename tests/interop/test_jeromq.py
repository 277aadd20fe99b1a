"""trizmq against JeroMQ 0.3.6 (Debian's ``libjeromq-java``), which speaks ZMTP 2.0.

JeroMQ 0.3 is a Java port of libzmq 3.2: it greets with RFC 15's 12 bytes (signature,
revision 1, socket type), sends its identity as a first frame, subscribes with
``\\x01topic`` messages and knows no commands. trizmq answers it in ZMTP 2.0 as
libzmq 4.3 does, after a greeting sent in stages. Each test runs
``tests/jeromq/Peer.java`` in its own JVM (bounded by its ``--timeout`` and a
``trio.fail_after``), with either side binding, over tcp, and reads its JSON lines.
The slow joiner is handled without sleeping: a peer prints ``ready`` once bound, and
a publisher, which cannot know when a subscriber has joined, keeps sending until the
subscriber has reported what the test needs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

import trizmq

from .jeromq_peer import JeromqPeer, compiled_peer, jeromq_peer, requires_jeromq

pytestmark = requires_jeromq

SIDES = ["trizmq-binds", "jeromq-binds"]
#: each JVM takes a second or more to start on a loaded machine: a generous bound
BOUND = 60


@pytest.fixture(scope="module")
def classes() -> Path:
    return compiled_peer()


@asynccontextmanager
async def linked(
    sock: trizmq.Socket, classes: Path, side: str, *args: str
) -> AsyncIterator[JeromqPeer]:
    """A JeroMQ peer running ``args``, linked to ``sock`` over tcp: whichever ``side``
    says binds, the other connects."""
    if side == "trizmq-binds":
        endpoint = await sock.bind("tcp://127.0.0.1:0")
        async with jeromq_peer(classes, *args, "--connect", endpoint) as peer:
            assert await peer.ready() == [endpoint]
            yield peer
    else:
        async with jeromq_peer(classes, *args, "--bind", "tcp://127.0.0.1:0") as peer:
            (endpoint,) = await peer.ready()
            await sock.connect(endpoint)
            yield peer


async def keep_sending(send: Callable[[int], Awaitable[None]], until: trio.Event) -> None:
    """Call ``send(i)`` every 10 ms until ``until`` is set (a publisher's slow joiner)."""
    for i in range(100_000):
        if until.is_set():
            return
        await send(i)
        with trio.move_on_after(0.01):
            await until.wait()


def zmtp2_peers(sock: trizmq.Socket) -> int:
    """How many of the socket's current peers speak ZMTP 2.0 (their codec's
    ``peer_version``, which the peer keeps)."""
    peers = sock._runtime.peers  # type: ignore[union-attr]
    return sum(1 for peer in peers if peer.version == (2, 0))


# -- PUSH / PULL -----------------------------------------------------------------------------


@pytest.mark.parametrize("side", SIDES)
async def test_trizmq_push_to_jeromq_pull(classes: Path, side: str) -> None:
    messages = [[b"one"], [b"multi", b"part", b""], [b"big", b"x" * 70_000], [b""]]
    with trio.fail_after(BOUND):
        async with (
            trizmq.Push(linger=5) as push,
            linked(push, classes, side, "--type", "pull", "--recv", "4") as pull,
        ):
            for message in messages:
                await push.send_multipart(message)
            got = [(await pull.message())["frames"] for _ in messages]
            await pull.done()
    assert got == messages


@pytest.mark.parametrize("side", SIDES)
async def test_jeromq_push_to_trizmq_pull(classes: Path, side: str) -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Pull(linger=0) as pull:
            args = ("--type", "push", "--send", "5", "--body", "job {i}", "--stay")
            async with linked(pull, classes, side, *args) as push:
                got = [await pull.recv() for _ in range(5)]
                assert zmtp2_peers(pull) == 1
                await push.done()
    assert got == [b"job %d" % i for i in range(5)]


# -- PUB / SUB, XPUB -------------------------------------------------------------------------


@pytest.mark.parametrize("side", SIDES)
async def test_trizmq_pub_to_jeromq_sub(classes: Path, side: str) -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Pub(linger=0) as pub:
            args = ("--type", "sub", "--subscribe", "top", "--recv", "3")
            async with linked(pub, classes, side, *args) as sub:
                got: list[bytes] = []
                enough = trio.Event()

                async def read() -> None:
                    for _ in range(3):
                        got.append((await sub.message())["body"])
                    enough.set()

                async def send(i: int) -> None:
                    await pub.send(b"other %d" % i)  # filtered here by its subscription
                    await pub.send(b"top %d" % i)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(read)
                    await keep_sending(send, enough)
                assert pub.stats().subscriptions == 1
                await sub.done()
    assert all(body.startswith(b"top ") for body in got), got


@pytest.mark.parametrize("side", SIDES)
async def test_jeromq_pub_to_trizmq_sub(classes: Path, side: str) -> None:
    # the JeroMQ publisher filters by the subscription trizmq sent it as a data frame
    with trio.fail_after(BOUND):
        async with trizmq.Sub(subscribe=b"top", linger=0) as sub:
            args = ("--type", "pub", "--send", "1", "--forever", "--interval", "5")
            args += ("--body", "skip {i}", "--body", "top {i}")
            async with linked(sub, classes, side, *args) as pub:
                got = [await sub.recv() for _ in range(3)]
                await pub.done()
    assert all(body.startswith(b"top ") for body in got), got


@pytest.mark.parametrize("side", SIDES)
async def test_trizmq_xpub_to_jeromq_sub(classes: Path, side: str) -> None:
    with trio.fail_after(BOUND):
        async with trizmq.XPub(linger=0) as xpub:
            args = ("--type", "sub", "--subscribe", "top", "--recv", "2")
            async with linked(xpub, classes, side, *args) as sub:
                # the subscription, as JeroMQ sent it: a \x01topic message
                assert await xpub.recv() == b"\x01top"
                got: list[bytes] = []
                enough = trio.Event()

                async def read() -> None:
                    for _ in range(2):
                        got.append((await sub.message())["body"])
                    enough.set()

                async def send(i: int) -> None:
                    await xpub.send(b"top %d" % i)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(read)
                    await keep_sending(send, enough)
                await sub.done()
    assert all(body.startswith(b"top ") for body in got), got


# -- REQ / REP, DEALER / ROUTER --------------------------------------------------------------


@pytest.mark.parametrize("side", SIDES)
async def test_trizmq_req_to_jeromq_rep(classes: Path, side: str) -> None:
    with trio.fail_after(BOUND):
        async with (
            trizmq.Req(linger=0) as req,
            linked(req, classes, side, "--type", "rep", "--echo", "3") as rep,
        ):
            replies = []
            for i in range(3):
                await req.send_multipart([b"ask", b"%d" % i])
                replies.append(await req.recv_multipart())
                # the REP saw the request without its envelope
                assert (await rep.message())["frames"] == [b"ask", b"%d" % i]
            await rep.done()
    assert replies == [[b"ask", b"%d" % i] for i in range(3)]


@pytest.mark.parametrize("side", SIDES)
async def test_jeromq_req_to_trizmq_rep(classes: Path, side: str) -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Rep(linger=5) as rep:
            args = ("--type", "req", "--send", "3", "--recv", "3", "--body", "ask {i}")
            async with linked(rep, classes, side, *args) as req:
                for i in range(3):
                    assert await rep.recv() == b"ask %d" % i
                    await rep.send(b"answer %d" % i)
                    assert (await req.message())["frames"] == [b"answer %d" % i]
                await req.done()


@pytest.mark.parametrize("side", SIDES)
async def test_jeromq_dealer_to_trizmq_router(classes: Path, side: str) -> None:
    with trio.fail_after(BOUND):
        async with trizmq.Router(linger=5) as router:
            args = ("--type", "dealer", "--identity", "jeromq-dealer")
            args += ("--send", "3", "--recv", "3", "--body", "ask {i}")
            async with linked(router, classes, side, *args) as dealer:
                for i in range(3):
                    # the identity frame of its ZMTP 2.0 handshake is its routing id
                    request = await router.recv_multipart()
                    assert request == [b"jeromq-dealer", b"", b"ask %d" % i]
                    await router.send_multipart([b"jeromq-dealer", b"", b"answer %d" % i])
                    assert (await dealer.message())["frames"] == [b"", b"answer %d" % i]
                (peer,) = router.stats().peers
                assert peer.routing_id == b"jeromq-dealer"
                await dealer.done()


# -- what a ZMTP 2.0 peer does not get ----------------------------------------------------


async def test_heartbeats_are_not_sent_to_a_zmtp2_peer(classes: Path) -> None:
    """A PING would reach JeroMQ as a message (its decoder ignores the COMMAND bit), and
    an unanswered one would drop the connection: neither happens."""
    ivl = 0.02
    with trio.fail_after(BOUND):
        async with trizmq.Push(heartbeat_ivl=ivl, heartbeat_timeout=ivl, linger=5) as push:
            args = ("--type", "pull", "--recv", "2")
            async with linked(push, classes, "trizmq-binds", *args) as pull:
                await push.send(b"first")
                assert (await pull.message())["body"] == b"first"
                # an absence cannot be awaited: 25 intervals, each of which would
                # have sent a PING and timed it out
                await trio.sleep(25 * ivl)
                await push.send(b"second")
                assert (await pull.message())["body"] == b"second"
                await pull.done()
            stats = push.stats()
    assert stats.connections["heartbeat_timeouts"] == 0
    assert stats.disconnect_causes["heartbeat_timeout"] == 0
    assert stats.messages_sent == 2


@pytest.mark.parametrize("mechanism", ["PLAIN", "CURVE"])
async def test_a_secure_socket_refuses_jeromq(classes: Path, mechanism: str) -> None:
    security: trizmq.Security
    if mechanism == "PLAIN":
        security = trizmq.PlainServer()
    else:
        security = trizmq.CurveServer(secret_key=trizmq.curve_keypair()[1])
    with trio.fail_after(BOUND):
        async with trizmq.Pull(security=security, linger=0) as pull, pull.monitor() as events:
            args = ("--type", "push", "--send", "1", "--stay")
            async with linked(pull, classes, "trizmq-binds", *args):
                async for event in events:
                    if isinstance(event, trizmq.HandshakeFailed):
                        assert "ZMTP 2.0" in event.reason, event
                        break
            stats = pull.stats()
    assert stats.handshake_failure_causes["downgrade"] >= 1
    assert stats.connections["handshake_failures"] >= 1
    assert stats.messages_received == 0
