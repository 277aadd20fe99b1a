"""The draft family end to end over inproc and tcp: CLIENT/SERVER, SCATTER/GATHER,
CHANNEL and PEER (RFCs 41, 49, 51, 52), trizmq talking to trizmq.

Handshakes over tcp are awaited on socket monitors; inproc links are made at once.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
import trio
from memory_transport import registered
from trio.testing import wait_all_tasks_blocked

import trizmq

_NAMES = itertools.count()


@pytest.fixture(params=["inproc", "tcp", "memory", "ws"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    # memory:// is a test-only transport registered through the public seam
    with registered(str(request.param)) as name:
        yield name


def fresh(transport: str) -> str:
    if transport == "inproc":
        return f"inproc://draft-{next(_NAMES)}"
    if transport == "memory":
        return f"memory://draft-{next(_NAMES)}"
    if transport == "ws":
        return "ws://127.0.0.1:0/draft"
    return "tcp://127.0.0.1:0"


async def handshakes(events: trizmq.Monitor, n: int) -> None:
    seen = 0
    async for event in events:
        if isinstance(event, trizmq.HandshakeSucceeded):
            seen += 1
            if seen == n:
                return
    raise AssertionError("the monitor ended before the handshakes")


@asynccontextmanager
async def linked(
    binders: Sequence[trizmq.Socket], connecters: Sequence[trizmq.Socket], transport: str
) -> AsyncIterator[list[str]]:
    """Enter every socket; each connecter connects to every binder; handshakes awaited.

    On both sides: a connecter may finish its handshake before the binder has read
    its READY, and a binder routes only to peers whose handshake it finished.
    """
    async with AsyncExitStack() as stack:
        for sock in (*binders, *connecters):
            await stack.enter_async_context(sock)
        monitors = [sock.monitor() for sock in connecters]
        binder_monitors = [sock.monitor() for sock in binders]
        endpoints = [await sock.bind(fresh(transport)) for sock in binders]
        for sock in connecters:
            for endpoint in endpoints:
                await sock.connect(endpoint)
        if transport != "inproc":
            for events in monitors:
                await handshakes(events, len(binders))
            for events in binder_monitors:
                await handshakes(events, len(connecters))
        for events in (*monitors, *binder_monitors):
            events.close()
        yield endpoints


async def nothing_more(sock: trizmq.Socket) -> None:
    await wait_all_tasks_blocked()
    with pytest.raises(trio.WouldBlock):
        sock.recv_nowait()


async def queued_in(sock: trizmq.Socket, n: int) -> None:
    """Wait until ``n`` messages sit in ``sock``'s input queues (not awaitable: polled)."""
    while sock.statistics()["queued_in"] < n:
        await trio.sleep(0.002)


# -- CLIENT / SERVER ---------------------------------------------------------------------


async def test_server_replies_to_the_right_client(transport: str) -> None:
    with trio.fail_after(10):
        server = trizmq.Server()
        clients = [trizmq.Client() for _ in range(4)]
        async with linked([server], clients, transport):
            ids: dict[int, bytes] = {}
            for n, client in enumerate(clients):
                await client.send(b"hello from %d" % n)
                msg = await server.recv_message()
                assert msg.data == b"hello from %d" % n
                assert msg.group is None
                assert isinstance(msg.routing_id, int) and 0 < msg.routing_id < 2**32
                ids[msg.routing_id] = msg.data
            assert len(ids) == 4  # one id per client
            # a client keeps its id
            await clients[2].send(b"again")
            msg = await server.recv_message()
            assert ids[msg.routing_id] == b"hello from 2"
            # replies in reverse order each reach their own client
            for rid, data in reversed(list(ids.items())):
                await server.send(b"reply to " + data, routing_id=rid)
            for n, client in enumerate(clients):
                assert await client.recv() == b"reply to hello from %d" % n
            for client in clients:
                await nothing_more(client)
            # recv() on a server gives the body only
            await clients[0].send(b"body")
            assert await server.recv() == b"body"
            assert not server.rcvmore


async def test_server_unknown_routing_id(transport: str) -> None:
    with trio.fail_after(10):
        server = trizmq.Server()
        async with linked([server], [client := trizmq.Client()], transport):
            await client.send(b"hi")
            rid = (await server.recv_message()).routing_id
            assert rid is not None
            unknown = rid % (2**32 - 1) + 1
            with pytest.raises(trizmq.HostUnreachable):
                await server.send(b"x", routing_id=unknown)
            with pytest.raises(trizmq.HostUnreachable):
                server.send_nowait(b"x", routing_id=unknown)
            assert issubclass(trizmq.HostUnreachable, trizmq.ZMQError)
            for bad in (0, -1, 2**32):
                with pytest.raises(ValueError):
                    await server.send(b"x", routing_id=bad)
            with pytest.raises((TypeError, ValueError)):
                await server.send(b"x", routing_id=True)
            with pytest.raises(TypeError):
                await server.send(b"x")  # type: ignore[call-arg]
            # the known id still works
            await server.send(b"ok", routing_id=rid)
            assert await client.recv() == b"ok"
            # once the client is gone, its id is unreachable
            events = server.monitor()
            await client.aclose()
            if transport != "inproc":
                async for event in events:
                    if isinstance(event, trizmq.Disconnected):
                        break
            events.close()
            while True:
                try:
                    server.send_nowait(b"late", routing_id=rid)
                except trizmq.HostUnreachable:
                    break
                await trio.sleep(0.005)  # the detach follows the disconnection


async def test_client_round_robins_and_fair_queues(transport: str) -> None:
    with trio.fail_after(10):
        servers = [trizmq.Server(), trizmq.Server()]
        client = trizmq.Client()
        async with linked(servers, [client], transport):
            for i in range(6):
                await client.send(b"%d" % i)
            # a loop, not nested comprehensions: Python 3.10 refuses an await in a
            # comprehension inside another
            got = []
            for s in servers:
                got.append(sorted([(await s.recv_message()).data for _ in range(3)]))
            assert sorted(got) == [[b"0", b"2", b"4"], [b"1", b"3", b"5"]]
            for s in servers:
                await nothing_more(s)
            # replies come back fair-queued from both servers
            await client.send(b"a")
            await client.send(b"b")
            for s in servers:
                msg = await s.recv_message()
                assert msg.routing_id is not None
                await s.send(b"re " + msg.data, routing_id=msg.routing_id)
            assert sorted([await client.recv(), await client.recv()]) == [b"re a", b"re b"]


async def test_client_waits_without_a_server() -> None:
    with trio.fail_after(5):
        async with trizmq.Client() as client:
            with pytest.raises(trio.WouldBlock):
                client.send_nowait(b"x")
            with trio.move_on_after(0.05) as scope:
                await client.send(b"x")
            assert scope.cancelled_caught
            async with trizmq.Server(bind=f"inproc://draft-{next(_NAMES)}") as server:
                endpoint = server.statistics()["bound"][0]
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.send, b"after")
                    await wait_all_tasks_blocked()
                    await client.connect(endpoint)
                assert (await server.recv_message()).data == b"after"


# -- SCATTER / GATHER --------------------------------------------------------------------


async def test_scatter_round_robins_to_gathers(transport: str) -> None:
    with trio.fail_after(10):
        scatter = trizmq.Scatter()
        gathers = [trizmq.Gather() for _ in range(3)]
        async with linked([scatter], gathers, transport):
            for i in range(9):
                await scatter.send(b"%d" % i)
            got = []  # a loop: Python 3.10 refuses an await in a nested comprehension
            for g in gathers:
                got.append(sorted([await g.recv() for _ in range(3)]))
            assert sorted(got) == [
                [b"0", b"3", b"6"],
                [b"1", b"4", b"7"],
                [b"2", b"5", b"8"],
            ]
            for g in gathers:
                await nothing_more(g)


async def test_gather_fair_queues_scatters(transport: str) -> None:
    with trio.fail_after(10):
        gather = trizmq.Gather()
        scatters = [trizmq.Scatter() for _ in range(3)]
        async with linked([gather], scatters, transport):
            for name, scatter in zip(b"abc", scatters, strict=True):
                for i in range(4):
                    scatter.send_nowait(b"%c%d" % (name, i))
            await queued_in(gather, 12)
            got = [await gather.recv() for _ in range(12)]
            # every message once, each sender's in order, the senders taking turns
            assert sorted(got) == sorted(b"%c%d" % (c, i) for c in b"abc" for i in range(4))
            for c in b"abc":
                assert [m for m in got if m[0] == c] == [b"%c%d" % (c, i) for i in range(4)]
            for turn in range(4):
                assert sorted(m[0] for m in got[3 * turn : 3 * turn + 3]) == list(b"abc")


async def test_scatter_gather_directions() -> None:
    with trio.fail_after(5):
        async with trizmq.Scatter() as scatter, trizmq.Gather() as gather:
            with pytest.raises(trizmq.NotSupportedError):
                await scatter.recv()
            with pytest.raises(trizmq.NotSupportedError):
                await gather.send(b"x")


# -- CHANNEL -------------------------------------------------------------------------------


async def test_channel_both_ways_with_one_peer(transport: str) -> None:
    with trio.fail_after(10):
        a, b = trizmq.Channel(), trizmq.Channel()
        async with linked([a], [b], transport) as (endpoint,):
            await a.send(b"ping")
            assert await b.recv() == b"ping"
            await b.send(memoryview(b"pong"))
            msg = await a.recv_message()
            assert msg.data == b"pong" and msg.routing_id is None and msg.group is None
            # a third channel is not paired: only b is heard, only b hears
            async with trizmq.Channel(connect=endpoint, linger=0) as intruder:
                await wait_all_tasks_blocked()
                with contextlib.suppress(trio.WouldBlock):
                    intruder.send_nowait(b"intruder")  # queued for a link never made
                await wait_all_tasks_blocked()
                await b.send(b"friend")
                assert await a.recv() == b"friend"
                await a.send(b"for b")
                assert await b.recv() == b"for b"
                await nothing_more(a)
                with pytest.raises(trio.WouldBlock):
                    intruder.recv_nowait()


async def test_channel_waits_without_a_peer() -> None:
    with trio.fail_after(5):
        async with trizmq.Channel() as channel:
            with pytest.raises(trio.WouldBlock):
                channel.send_nowait(b"x")


# -- PEER ----------------------------------------------------------------------------------


async def test_peer_connect_peer_and_both_directions(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Peer() as p1, trizmq.Peer() as p2, trizmq.Peer() as p3:
            endpoint = await p1.bind(fresh(transport))
            rid2 = await p2.connect_peer(endpoint)
            rid3 = await p3.connect_peer(endpoint)
            assert isinstance(rid2, int) and 0 < rid2 < 2**32
            # the id is usable at once, before the connection is up
            await p2.send(b"from p2", routing_id=rid2)
            await p3.send(b"from p3", routing_id=rid3)
            back = {}
            for _ in range(2):
                msg = await p1.recv_message()
                assert msg.routing_id is not None
                back[msg.data] = msg.routing_id
            assert back[b"from p2"] != back[b"from p3"]
            await p1.send(b"to p3", routing_id=back[b"from p3"])
            await p1.send(b"to p2", routing_id=back[b"from p2"])
            msg = await p2.recv_message()
            assert (msg.data, msg.routing_id) == (b"to p2", rid2)
            msg = await p3.recv_message()
            assert (msg.data, msg.routing_id) == (b"to p3", rid3)
            with pytest.raises(trizmq.HostUnreachable):
                await p2.send(b"x", routing_id=rid2 % (2**32 - 1) + 1)


async def test_connect_peer_before_the_peer_binds() -> None:
    with trio.fail_after(10):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            endpoint = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
        async with trizmq.Peer(reconnect_ivl=0.02) as early:
            rid = await early.connect_peer(endpoint)
            await early.send(b"queued before the bind", routing_id=rid)
            async with trizmq.Peer(bind=endpoint) as late:
                msg = await late.recv_message()
                assert msg.data == b"queued before the bind"
                assert msg.routing_id is not None
                await late.send(b"answer", routing_id=msg.routing_id)
                msg = await early.recv_message()
                assert (msg.data, msg.routing_id) == (b"answer", rid)


async def test_peer_talks_to_several_peers() -> None:
    with trio.fail_after(10):
        async with trizmq.Peer() as hub, trizmq.Peer() as x, trizmq.Peer() as y:
            ex = await x.bind("tcp://127.0.0.1:0")
            ey = await y.bind(f"inproc://draft-{next(_NAMES)}")
            to_x = await hub.connect_peer(ex)
            to_y = await hub.connect_peer(ey)
            assert to_x != to_y
            await hub.send(b"x?", routing_id=to_x)
            await hub.send(b"y?", routing_id=to_y)
            for sock, want in ((x, b"x?"), (y, b"y?")):
                msg = await sock.recv_message()
                assert msg.data == want and msg.routing_id is not None
                await sock.send(want.upper(), routing_id=msg.routing_id)
            replies = {}
            for _ in range(2):
                msg = await hub.recv_message()
                replies[msg.routing_id] = msg.data
            assert replies == {to_x: b"X?", to_y: b"Y?"}


async def test_connect_peer_needs_immediate_off() -> None:
    with trio.fail_after(5):
        async with trizmq.Peer(immediate=True) as peer:
            with pytest.raises(ValueError):
                await peer.connect_peer("tcp://127.0.0.1:5555")


# -- the single-part rule ------------------------------------------------------------------


def _senders() -> list[tuple[type[Any], dict[str, Any]]]:
    return [
        (trizmq.Client, {}),
        (trizmq.Scatter, {}),
        (trizmq.Channel, {}),
        (trizmq.Server, {"routing_id": 1}),
        (trizmq.Peer, {"routing_id": 1}),
        (trizmq.Radio, {"group": b"g"}),
    ]


@pytest.mark.parametrize(("cls", "address"), _senders(), ids=lambda v: getattr(v, "__name__", ""))
async def test_single_part_rule(cls: type[Any], address: dict[str, Any]) -> None:
    with trio.fail_after(5):
        async with cls() as sock:
            with pytest.raises(ValueError):
                await sock.send(b"a", more=True, **address)
            with pytest.raises(ValueError):
                sock.send_nowait(b"a", more=True, **address)
            # nothing was left half-sent
            assert sock.statistics()["queued_out"] == 0
            if address:
                # an addressed type has no multipart form at all
                with pytest.raises(TypeError):
                    await sock.send_multipart([b"a"])
                with pytest.raises(TypeError):
                    sock.send_multipart_nowait([b"a"])
            else:
                for frames in ([b"a", b"b"], [], [b"a", b"b", b"c"]):
                    with pytest.raises(ValueError):
                        await sock.send_multipart(frames)
                    with pytest.raises(ValueError):
                        sock.send_multipart_nowait(frames)
            with pytest.raises(TypeError):
                await sock.send("text", **address)


async def test_one_frame_lists_are_whole_messages(transport: str) -> None:
    with trio.fail_after(10):
        gather, scatter = trizmq.Gather(), trizmq.Scatter()
        async with linked([gather], [scatter], transport):
            await scatter.send_multipart([b"one"])
            scatter.send_multipart_nowait([bytearray(b"two")])
            assert await gather.recv_multipart() == [b"one"]
            assert await gather.recv_multipart() == [b"two"]
            await scatter.send(b"")
            msg = await gather.recv_message()
            assert msg.frames == [b""] and msg.data == b""
