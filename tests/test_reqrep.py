"""Request-reply between trizmq sockets (28/REQREP): REQ, REP, DEALER and ROUTER.

Every behaviour runs over inproc (whole messages through shared pipes) and tcp
(the full ZMTP path). Over tcp the tests wait for handshakes on a socket monitor
rather than sleeping; over inproc a link is made synchronously by ``connect()``.
"""

from __future__ import annotations

import itertools
import logging
import struct
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

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


async def bind(sock: trizmq.Socket, transport: str) -> str:
    """Bind ``sock`` on a fresh endpoint of ``transport``; return the resolved endpoint."""
    if transport == "inproc":
        return await sock.bind(f"inproc://reqrep-{next(_NAMES)}")
    if transport == "memory":
        return await sock.bind(f"memory://reqrep-{next(_NAMES)}")
    if transport == "ws":
        return await sock.bind("ws://127.0.0.1:0/reqrep")
    return await sock.bind("tcp://127.0.0.1:0")


async def handshakes(events: trizmq.Monitor, n: int, transport: str) -> None:
    """Wait until ``n`` handshakes succeeded (inproc links need no wait)."""
    if transport == "inproc":
        await trio.lowlevel.checkpoint()
        return
    seen = 0
    async for event in events:
        if isinstance(event, trizmq.HandshakeSucceeded):
            seen += 1
            if seen == n:
                return
    raise AssertionError("monitor ended before the handshakes")


async def next_of(events: trizmq.Monitor, kind: type[trizmq.MonitorEvent]) -> trizmq.MonitorEvent:
    async for event in events:
        if isinstance(event, kind):
            return event
    raise AssertionError(f"monitor ended before a {kind.__name__} event")


async def rep_server(rep: trizmq.Rep, name: bytes) -> None:
    """Answer every request with ``[name, *request]``."""
    while True:
        request = await rep.recv_multipart()
        await rep.send_multipart([name, *request])


@asynccontextmanager
async def rep_servers(n: int, transport: str) -> AsyncIterator[list[str]]:
    """``n`` bound REP echo servers named b"rep0"…; yields their endpoints."""
    async with trio.open_nursery() as nursery:
        endpoints = []
        for i in range(n):
            rep = await nursery.start(_serve_rep, transport, f"rep{i}".encode())
            endpoints.append(rep)
        yield endpoints
        nursery.cancel_scope.cancel()


async def _serve_rep(
    transport: str, name: bytes, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED
) -> None:
    async with trizmq.Rep() as rep:
        task_status.started(await bind(rep, transport))
        await rep_server(rep, name)


# -- REQ ----------------------------------------------------------------------------------


async def test_req_rep_round_trip(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Rep() as rep:
            endpoint = await bind(rep, transport)
            async with trizmq.Req(connect=endpoint) as req:
                for i in range(3):
                    await req.send_multipart([b"hello", str(i).encode()])
                    assert await rep.recv_multipart() == [b"hello", str(i).encode()]
                    await rep.send_multipart([b"world", str(i).encode()])
                    assert await req.recv_multipart() == [b"world", str(i).encode()]


async def test_req_rep_strict_alternation(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Rep() as rep:
            endpoint = await bind(rep, transport)
            async with trizmq.Req(connect=endpoint) as req:
                with pytest.raises(trizmq.StateError):
                    await req.recv()
                with pytest.raises(trizmq.StateError):
                    req.recv_nowait()
                with pytest.raises(trizmq.StateError):
                    await rep.send(b"unasked")
                await req.send(b"one")
                with pytest.raises(trizmq.StateError) as info:
                    await req.send(b"two")
                assert isinstance(info.value, trizmq.ZMQError)
                with pytest.raises(trizmq.StateError):
                    req.send_nowait(b"two")
                assert await rep.recv() == b"one"
                with pytest.raises(trizmq.StateError):
                    rep.recv_nowait()
                await rep.send(b"ONE")
                with pytest.raises(trizmq.StateError):
                    await rep.send(b"again")
                assert await req.recv() == b"ONE"
                # the refused calls changed nothing: the next round trip works
                await req.send(b"three")
                assert await rep.recv() == b"three"
                await rep.send(b"THREE")
                assert await req.recv() == b"THREE"


async def test_req_round_robin_over_reps(transport: str) -> None:
    with trio.fail_after(10):
        async with rep_servers(3, transport) as endpoints, trizmq.Req() as req:
            for endpoint in endpoints:
                await req.connect(endpoint)
            names = []
            for i in range(9):
                await req.send(str(i).encode())
                name, echoed = await req.recv_multipart()
                assert echoed == str(i).encode()
                names.append(name)
            assert names == [b"rep0", b"rep1", b"rep2"] * 3


async def test_req_waits_for_a_peer() -> None:
    with trio.fail_after(10):
        async with trizmq.Req() as req:
            with pytest.raises(trio.WouldBlock):
                req.send_nowait(b"nobody")
            with trio.move_on_after(0.05) as scope:
                await req.send(b"nobody")
            assert scope.cancelled_caught
            # the refused send left no request pending
            with pytest.raises(trizmq.StateError):
                req.recv_nowait()


async def recv_after_quiet(
    sock: trizmq.Socket, answer: trizmq.Socket, reply: list[bytes]
) -> list[bytes]:
    """Start ``sock.recv_multipart()``, let it read (and drop) everything already sent,
    then have ``answer`` send ``reply``; return what ``sock`` received."""
    got: list[list[bytes]] = []

    async def receive() -> None:
        got.append(await sock.recv_multipart())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receive)
        # every task idle and no I/O pending: whatever was in flight has been read
        await wait_all_tasks_blocked()
        assert not got, f"received {got} before the real reply was sent"
        await answer.send_multipart(reply)
    return got[0]


async def test_req_drops_reply_from_a_peer_it_did_not_ask(transport: str) -> None:
    with trio.fail_after(10):
        async with (
            trizmq.Router() as x,
            trizmq.Router() as y,
            x.monitor() as x_events,
            y.monitor() as y_events,
        ):
            ex, ey = await bind(x, transport), await bind(y, transport)
            async with trizmq.Req(routing_id=b"client", connect=[ex, ey]) as req:
                await handshakes(x_events, 1, transport)
                await handshakes(y_events, 1, transport)
                # y answers a request it never got
                await y.send_multipart([b"client", b"", b"bogus from y"])
                await req.send(b"question")  # round-robin: the first peer, x
                assert await x.recv_multipart() == [b"client", b"", b"question"]
                reply = await recv_after_quiet(req, x, [b"client", b"", b"answer from x"])
                assert reply == [b"answer from x"]
                # the bogus reply is gone for good: y's real answer is the next reply
                await req.send(b"second")  # round-robin: y
                assert await y.recv_multipart() == [b"client", b"", b"second"]
                await y.send_multipart([b"client", b"", b"answer from y"])
                assert await req.recv_multipart() == [b"answer from y"]


async def test_req_drops_malformed_replies(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router:
            endpoint = await bind(router, transport)
            async with trizmq.Req(connect=endpoint) as req:
                await req.send(b"q")
                rid, delimiter, body = await router.recv_multipart()
                assert (delimiter, body) == (b"", b"q")
                await router.send_multipart([rid, b"no delimiter"])
                await router.send_multipart([rid, b""])  # a delimiter and no body
                await router.send_multipart([rid, b"not empty", b"body"])
                await router.send_multipart([rid, b"", b"good"])
                assert await req.recv_multipart() == [b"good"]


async def test_req_relaxed_resends_and_ignores_the_stale_reply(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as x, trizmq.Router() as y:
            ex, ey = await bind(x, transport), await bind(y, transport)
            async with trizmq.Req(req_relaxed=True, connect=[ex, ey]) as req:
                await req.send(b"first")
                rid_x, _, body = await x.recv_multipart()
                assert body == b"first"
                await req.send(b"second")  # relaxed: no StateError; round-robin to y
                rid_y, _, body = await y.recv_multipart()
                assert body == b"second"
                # x's answer comes too late: the client has moved on to y
                await x.send_multipart([rid_x, b"", b"stale"])
                reply = await recv_after_quiet(req, y, [rid_y, b"", b"fresh"])
                assert reply == [b"fresh"]


async def test_req_relaxed_and_correlate_with_one_peer(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router:
            endpoint = await bind(router, transport)
            async with trizmq.Req(req_relaxed=True, req_correlate=True, connect=endpoint) as req:
                await req.send(b"first")
                rid, id1, empty, body = await router.recv_multipart()
                assert (empty, body) == (b"", b"first")
                await req.send(b"second")
                rid2, id2, empty, body = await router.recv_multipart()
                assert (rid2, empty, body) == (rid, b"", b"second")
                assert id1 != id2
                # one connection keeps order: the stale reply arrives first and is dropped
                await router.send_multipart([rid, id1, b"", b"reply to first"])
                await router.send_multipart([rid, id2, b"", b"reply to second"])
                assert await req.recv_multipart() == [b"reply to second"]


async def test_req_correlate_puts_a_request_id_before_the_delimiter(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router:
            endpoint = await bind(router, transport)
            async with trizmq.Req(req_correlate=True, connect=endpoint) as req:
                ids = []
                for i in range(3):
                    await req.send_multipart([b"q", str(i).encode()])
                    rid, request_id, empty, *body = await router.recv_multipart()
                    assert len(request_id) == 4
                    assert empty == b""
                    assert body == [b"q", str(i).encode()]
                    ids.append(struct.unpack("!I", request_id)[0])
                    wrong = struct.pack("!I", (ids[-1] + 1) & 0xFFFFFFFF)
                    await router.send_multipart([rid, wrong, b"", b"wrong id"])
                    await router.send_multipart([rid, b"", b"no id"])
                    await router.send_multipart([rid, request_id, b"", b"right id"])
                    assert await req.recv_multipart() == [b"right id"]
                assert len(set(ids)) == 3


async def test_req_probe_router(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router:
            endpoint = await bind(router, transport)
            async with trizmq.Req(probe_router=True, routing_id=b"req", connect=endpoint) as req:
                assert await router.recv_multipart() == [b"req", b""]
                await req.send(b"q")
                assert await router.recv_multipart() == [b"req", b"", b"q"]


# -- REP ----------------------------------------------------------------------------------


async def test_rep_keeps_a_multi_frame_envelope(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Rep() as rep:
            endpoint = await bind(rep, transport)
            async with trizmq.Dealer(connect=endpoint) as dealer:
                await dealer.send_multipart([b"a", b"b", b"", b"req", b"more"])
                assert await rep.recv_multipart() == [b"req", b"more"]
                await rep.send_multipart([b"rep"])
                assert await dealer.recv_multipart() == [b"a", b"b", b"", b"rep"]


async def test_rep_drops_requests_without_a_delimiter(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Rep() as rep:
            endpoint = await bind(rep, transport)
            async with trizmq.Dealer(connect=endpoint) as dealer:
                await dealer.send_multipart([b"no", b"delimiter"])
                await dealer.send_multipart([b"", b"good"])
                assert await rep.recv_multipart() == [b"good"]
                await rep.send(b"ok")
                assert await dealer.recv_multipart() == [b"", b"ok"]


async def test_rep_fair_queues_and_answers_each_requester(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Rep() as rep, rep.monitor() as events:
            endpoint = await bind(rep, transport)
            async with trio.open_nursery() as nursery:
                replies: dict[int, list[bytes]] = {}

                async def client(i: int) -> None:
                    async with trizmq.Req(connect=endpoint) as req:
                        got = []
                        for j in range(3):
                            await req.send(f"{i}.{j}".encode())
                            got.append(await req.recv())
                        replies[i] = got

                for i in range(3):
                    nursery.start_soon(client, i)
                for _ in range(9):
                    request = await rep.recv()
                    await rep.send(request.upper() + b"!")
            assert replies == {i: [f"{i}.{j}!".encode() for j in range(3)] for i in range(3)}
            del events


async def test_rep_reply_to_a_departed_peer_is_dropped(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Rep() as rep, rep.monitor() as events:
            endpoint = await bind(rep, transport)
            async with trizmq.Req(connect=endpoint) as req:
                await req.send(b"ask and leave")
                assert await rep.recv() == b"ask and leave"
            if transport != "inproc":
                await next_of(events, trizmq.Disconnected)
            with trio.fail_after(1):  # REP never blocks on a reply
                await rep.send(b"nobody listens")
            # and it is ready for the next requester
            async with trizmq.Req(connect=endpoint) as req:
                await req.send(b"next")
                assert await rep.recv() == b"next"
                await rep.send(b"answered")
                assert await req.recv() == b"answered"


# -- DEALER -------------------------------------------------------------------------------


async def test_dealer_round_robin_to_reps(transport: str) -> None:
    with trio.fail_after(10):
        async with rep_servers(3, transport) as endpoints, trizmq.Dealer() as dealer:
            for endpoint in endpoints:
                await dealer.connect(endpoint)
            for i in range(6):
                await dealer.send_multipart([b"", str(i).encode()])
            replies = [await dealer.recv_multipart() for _ in range(6)]
            by_rep: dict[bytes, list[bytes]] = {}
            for empty, name, body in replies:
                assert empty == b""
                by_rep.setdefault(name, []).append(body)
            assert by_rep == {b"rep0": [b"0", b"3"], b"rep1": [b"1", b"4"], b"rep2": [b"2", b"5"]}


async def test_dealer_fair_queues_in(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Dealer() as sink, sink.monitor() as events:
            endpoint = await bind(sink, transport)
            async with (
                trizmq.Dealer(connect=endpoint) as a,
                trizmq.Dealer(connect=endpoint) as b,
                trizmq.Dealer(connect=endpoint) as c,
            ):
                await handshakes(events, 3, transport)
                for name, dealer in ((b"a", a), (b"b", b), (b"c", c)):
                    for i in range(3):
                        await dealer.send_multipart([name, str(i).encode()])
                got = [await sink.recv_multipart() for _ in range(9)]
                for name in (b"a", b"b", b"c"):
                    mine = [body for sender, body in got if sender == name]
                    assert mine == [b"0", b"1", b"2"]  # each sender's order is kept
                if transport == "inproc":
                    # every message was queued before the first read: strict rotation
                    assert [sender for sender, _ in got[:3]] == [b"a", b"b", b"c"]
                    assert [sender for sender, _ in got[3:6]] == [b"a", b"b", b"c"]


async def test_dealer_to_dealer(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Dealer() as one:
            endpoint = await bind(one, transport)
            async with trizmq.Dealer(connect=endpoint) as two:
                await two.send_multipart([b"any", b"frames"])
                assert await one.recv_multipart() == [b"any", b"frames"]
                await one.send(b"back")
                assert await two.recv() == b"back"


# -- ROUTER -------------------------------------------------------------------------------


async def test_router_generated_and_explicit_ids(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router:
            endpoint = await bind(router, transport)
            async with (
                trizmq.Dealer(connect=endpoint) as anon1,
                trizmq.Dealer(connect=endpoint) as anon2,
                trizmq.Dealer(routing_id=b"alice", connect=endpoint) as alice,
            ):
                ids = {}
                for name, dealer in ((b"anon1", anon1), (b"anon2", anon2), (b"alice", alice)):
                    await dealer.send(name)
                    rid, body = await router.recv_multipart()
                    assert body == name
                    ids[name] = rid
                for name in (b"anon1", b"anon2"):
                    assert len(ids[name]) == 5
                    assert ids[name][:1] == b"\x00"
                assert ids[b"anon1"] != ids[b"anon2"]
                assert ids[b"alice"] == b"alice"
                # replies reach the right peer, whichever order they are sent in
                for name in (b"alice", b"anon2", b"anon1"):
                    await router.send_multipart([ids[name], b"for " + name])
                for name, dealer in ((b"anon1", anon1), (b"anon2", anon2), (b"alice", alice)):
                    assert await dealer.recv_multipart() == [b"for " + name]


async def test_router_serves_req_clients(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router:
            endpoint = await bind(router, transport)
            async with (
                trizmq.Req(routing_id=b"c1", connect=endpoint) as c1,
                trizmq.Req(routing_id=b"c2", connect=endpoint) as c2,
            ):
                await c1.send(b"from c1")
                await c2.send(b"from c2")
                requests = {}
                for _ in range(2):
                    rid, empty, body = await router.recv_multipart()
                    assert empty == b""
                    requests[rid] = body
                assert requests == {b"c1": b"from c1", b"c2": b"from c2"}
                await router.send_multipart([b"c2", b"", b"to c2"])
                await router.send_multipart([b"c1", b"", b"to c1"])
                assert await c1.recv() == b"to c1"
                assert await c2.recv() == b"to c2"


async def test_router_mandatory_raises_for_an_unknown_id(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router(router_mandatory=True) as router:
            endpoint = await bind(router, transport)
            with pytest.raises(trizmq.HostUnreachable) as info:
                await router.send_multipart([b"nobody", b"x"])
            assert isinstance(info.value, trizmq.ZMQError)
            with pytest.raises(trizmq.HostUnreachable):
                router.send_multipart_nowait([b"nobody", b"x"])
            async with trizmq.Dealer(routing_id=b"known", connect=endpoint) as dealer:
                await dealer.send(b"hello")
                assert await router.recv_multipart() == [b"known", b"hello"]
                await router.send_multipart([b"known", b"reachable"])
                assert await dealer.recv() == b"reachable"
                with pytest.raises(trizmq.HostUnreachable):
                    await router.send_multipart([b"unknown", b"x"])


async def test_router_drops_unknown_ids_silently_by_default(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router:
            endpoint = await bind(router, transport)
            await router.send_multipart([b"nobody", b"dropped"])
            router.send_multipart_nowait([b"nobody", b"dropped"])
            async with trizmq.Dealer(routing_id=b"d", connect=endpoint) as dealer:
                await dealer.send(b"hi")
                assert await router.recv_multipart() == [b"d", b"hi"]
                await router.send_multipart([b"nobody", b"dropped"])
                await router.send_multipart([b"d", b"delivered"])
                assert await dealer.recv() == b"delivered"
            assert router.statistics()["dropped"] >= 3


async def test_router_duplicate_id_without_handover_keeps_the_first(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router, router.monitor() as events:
            endpoint = await bind(router, transport)
            async with trizmq.Dealer(routing_id=b"same", connect=endpoint) as first:
                await first.send(b"from first")
                assert await router.recv_multipart() == [b"same", b"from first"]
                async with trizmq.Dealer(routing_id=b"same", connect=endpoint) as second:
                    await handshakes(events, 2, transport)
                    await second.send(b"from second")  # unrouted: dropped by the ROUTER
                    await first.send(b"first again")
                    assert await router.recv_multipart() == [b"same", b"first again"]
                    await router.send_multipart([b"same", b"to the holder"])
                    assert await first.recv() == b"to the holder"
                    with pytest.raises(trio.WouldBlock):
                        second.recv_nowait()


async def test_router_handover_gives_the_id_to_the_newcomer(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router(router_handover=True) as router, router.monitor() as events:
            endpoint = await bind(router, transport)
            # a long reconnect interval keeps the displaced peer from taking the id back
            async with trizmq.Dealer(
                routing_id=b"same", reconnect_ivl=30.0, connect=endpoint
            ) as old:
                await old.send(b"from old")
                assert await router.recv_multipart() == [b"same", b"from old"]
                async with trizmq.Dealer(routing_id=b"same", connect=endpoint) as new:
                    await handshakes(events, 2, transport)
                    if transport != "inproc":
                        await next_of(events, trizmq.Disconnected)  # the old one, kicked
                    await new.send(b"from new")
                    assert await router.recv_multipart() == [b"same", b"from new"]
                    await router.send_multipart([b"same", b"to new"])
                    assert await new.recv() == b"to new"
                    assert router.statistics()["routes"] == 1
                    with pytest.raises(trio.WouldBlock):
                        old.recv_nowait()


async def test_router_probe_router_on_connect(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router() as router:
            endpoint = await bind(router, transport)
            async with (
                trizmq.Dealer(probe_router=True, routing_id=b"dealer", connect=endpoint),
                trizmq.Router(probe_router=True, routing_id=b"router", connect=endpoint),
                trizmq.Dealer(probe_router=True, connect=endpoint),
            ):
                probes = [await router.recv_multipart() for _ in range(3)]
                assert all(body == [b""] for _rid, *body in probes)
                rids = {rid for rid, *_ in probes}
                assert {b"dealer", b"router"} <= rids
                (generated,) = rids - {b"dealer", b"router"}
                assert generated[:1] == b"\x00" and len(generated) == 5


async def test_router_to_router_with_explicit_ids(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router(routing_id=b"server") as server:
            endpoint = await bind(server, transport)
            async with trizmq.Router(
                routing_id=b"client", router_mandatory=True, connect=endpoint
            ) as client:
                # the connecting ROUTER can route only once the handshake told it the id
                while True:
                    try:
                        await client.send_multipart([b"server", b"hello"])
                        break
                    except trizmq.HostUnreachable:
                        await trio.sleep(0.005)
                assert await server.recv_multipart() == [b"client", b"hello"]
                await server.send_multipart([b"client", b"welcome"])
                assert await client.recv_multipart() == [b"server", b"welcome"]


async def test_broker_envelopes_hop_by_hop(transport: str) -> None:
    """REQ → ROUTER | DEALER → REP, forwarding by hand and checking every hop."""
    with trio.fail_after(10):
        async with trizmq.Router() as frontend, trizmq.Dealer() as backend:
            front = await bind(frontend, transport)
            back = await bind(backend, transport)
            async with (
                trizmq.Req(routing_id=b"client", connect=front) as req,
                trizmq.Rep(connect=back) as rep,
            ):
                await req.send(b"work")
                hop1 = await frontend.recv_multipart()
                assert hop1 == [b"client", b"", b"work"]
                await backend.send_multipart(hop1)
                assert await rep.recv_multipart() == [b"work"]
                await rep.send(b"done")
                hop2 = await backend.recv_multipart()
                assert hop2 == [b"client", b"", b"done"]
                await frontend.send_multipart(hop2)
                assert await req.recv_multipart() == [b"done"]


# -- incompatible peers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("binder", "connecter"),
    [(trizmq.Req, trizmq.Req), (trizmq.Router, trizmq.Push), (trizmq.Rep, trizmq.Router)],
    ids=["REQ-REQ", "ROUTER-PUSH", "REP-ROUTER"],
)
async def test_incompatible_peers_are_refused_over_tcp(
    binder: type[trizmq.Socket], connecter: type[trizmq.Socket], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(10):
        async with binder() as server, server.monitor() as events:
            endpoint = await server.bind("tcp://127.0.0.1:0")
            async with connecter(connect=endpoint) as client:
                await next_of(events, trizmq.HandshakeFailed)
                assert "incompatible socket type" in caplog.text
                # the binder never attached the peer: nothing to send to, nothing received
                assert server.statistics()["peers"] == 0
                if binder is trizmq.Req:
                    with pytest.raises(trio.WouldBlock):
                        server.send_multipart_nowait([b"x"])
                else:
                    with pytest.raises(trio.WouldBlock):
                        server.recv_multipart_nowait()
                del client


@pytest.mark.parametrize("bind_first", [True, False], ids=["bind-first", "connect-first"])
@pytest.mark.parametrize(
    ("binder", "connecter"),
    [(trizmq.Req, trizmq.Req), (trizmq.Router, trizmq.Push), (trizmq.Rep, trizmq.Rep)],
    ids=["REQ-REQ", "ROUTER-PUSH", "REP-REP"],
)
async def test_incompatible_peers_are_refused_over_inproc(
    binder: type[trizmq.Socket],
    connecter: type[trizmq.Socket],
    bind_first: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    endpoint = f"inproc://refused-{next(_NAMES)}"
    with trio.fail_after(10):
        async with binder() as server, connecter() as client:
            if bind_first:
                await server.bind(endpoint)
                await client.connect(endpoint)
            else:
                await client.connect(endpoint)
                await server.bind(endpoint)
            assert "cannot talk to" in caplog.text
            assert server.statistics()["peers"] == 0
            assert client.statistics()["peers"] == 0
            if connecter is not trizmq.Rep:
                with pytest.raises(trio.WouldBlock):
                    client.send_multipart_nowait([b"", b"x"])


# -- cancellation -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [trizmq.Req, trizmq.Rep, trizmq.Dealer, trizmq.Router])
async def test_entering_a_socket_under_a_cancelled_scope_unwinds_cleanly(
    kind: type[trizmq.Socket],
) -> None:
    # found by the lbbroker example: a worker cancelled while it entered its REQ left
    # the socket's nursery open and corrupted trio's nursery stack
    with trio.fail_after(10):
        for _ in range(3):
            with trio.CancelScope() as scope:
                scope.cancel()
                async with kind(connect="tcp://127.0.0.1:9"):
                    await trio.sleep_forever()
            assert scope.cancelled_caught
        async with (
            trizmq.Rep(bind="inproc://after-cancel") as rep,
            trizmq.Req(connect="inproc://after-cancel") as req,
        ):
            await req.send(b"still fine")
            assert await rep.recv() == b"still fine"
