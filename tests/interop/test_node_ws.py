"""ws:// against libzmq's WebSocket transport (zeromq.js 6: libzmq 4.3.5, draft build).

Each pair runs both ways: trizmq binds and libzmq connects, libzmq binds and trizmq
connects. libzmq's ws engine is the peer that proves the mapping of RFC 45 (the
subprotocol choice, one WebSocket message per frame with its flag byte, no greeting),
and its quirks: subscriptions as ``\\x01topic`` messages, heartbeats as WebSocket
PING/PONG frames.

A libzmq sender whose messages trizmq only receives runs with ``--stay``: without it
peer.js exits 100 ms after its last send, and what libzmq has not written by then
(a ws handshake on a loaded machine takes longer) is lost with the process.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trizmq

from .node_peer import free_tcp_port, node_peer, requires_node

pytestmark = requires_node


def node_endpoint(path: str = "/zmq") -> str:
    """A ws endpoint for a libzmq bind (its ws transport resolves no port 0)."""
    return f"ws://127.0.0.1:{free_tcp_port()}{path}"


def bodies(messages: list[dict[str, Any]]) -> list[bytes]:
    return [message["body"] for message in messages]


# -- PUSH / PULL -----------------------------------------------------------------------------


async def test_node_push_to_trizmq_pull_over_ws() -> None:
    with trio.fail_after(15):
        async with trizmq.Pull(bind="ws://127.0.0.1:0/zmq") as pull:
            endpoint = pull.statistics()["bound"][0]
            async with node_peer("--type", "push", "--connect", endpoint, "--send", "5", "--stay"):
                got = [await pull.recv() for _ in range(5)]
    assert got == [b"msg %d" % i for i in range(5)]


async def test_trizmq_push_to_node_pull_over_ws() -> None:
    endpoint = node_endpoint()
    with trio.fail_after(15):
        async with node_peer("--type", "pull", "--bind", endpoint, "--recv", "5") as peer:
            await peer.ready()
            async with trizmq.Push(connect=endpoint) as push:
                for i in range(5):
                    await push.send(b"trizmq %d" % i)
                got = [await peer.message() for _ in range(5)]
                await peer.done()
    assert bodies(got) == [b"trizmq %d" % i for i in range(5)]


async def test_multipart_and_large_frames_both_ways_over_ws() -> None:
    """A 100 kB frame (WebSocket's 64-bit length) and a multipart message, through a
    libzmq PAIR that echoes them."""
    endpoint = node_endpoint("/")
    big = bytes(range(256)) * 400
    with trio.fail_after(15):
        async with node_peer("--type", "pair", "--bind", endpoint, "--echo", "2") as peer:
            await peer.ready()
            async with trizmq.Pair(connect=endpoint.rstrip("/")) as pair:
                await pair.send(big)
                await pair.send_multipart([b"a", b"", b"c" * 300])
                assert await pair.recv() == big
                assert await pair.recv_multipart() == [b"a", b"", b"c" * 300]


# -- PUB / SUB with filtering ----------------------------------------------------------------


async def test_node_sub_filters_at_trizmq_pub_over_ws() -> None:
    with trio.fail_after(15):
        async with trizmq.Pub(bind="ws://127.0.0.1:0/feed") as pub:
            endpoint = pub.statistics()["bound"][0]
            args = ("--type", "sub", "--connect", endpoint, "--subscribe", "a", "--recv", "3")
            async with node_peer(*args) as peer:
                await peer.ready()
                # the subscription arrived as libzmq's ws engine sends it ("\x01a")
                while pub.statistics()["subscriptions"] < 1:
                    await trio.sleep(0.01)
                for i in range(3):
                    await pub.send(b"b-not-for-you %d" % i)
                    await pub.send(b"a-wanted %d" % i)
                got = [await peer.message() for _ in range(3)]
    assert bodies(got) == [b"a-wanted %d" % i for i in range(3)]


async def test_trizmq_sub_filters_at_node_pub_over_ws() -> None:
    endpoint = node_endpoint()
    args = ("--type", "pub", "--bind", endpoint, "--forever", "--interval", "2")
    with trio.fail_after(15):
        async with node_peer(*args) as peer:
            await peer.ready()
            async with trizmq.Sub(connect=endpoint, subscribe=[b"msg 1"]) as sub:
                got = [await sub.recv() for _ in range(12)]
    # libzmq filtered at the publisher: only msg 1, msg 10..19, msg 100.. arrive
    assert all(body.startswith(b"msg 1") for body in got), got
    numbers = [int(body[4:]) for body in got]
    assert numbers == sorted(numbers)


# -- REQ / REP and DEALER / ROUTER ---------------------------------------------------------


async def test_trizmq_req_to_node_rep_over_ws() -> None:
    endpoint = node_endpoint()
    with trio.fail_after(15):
        async with node_peer("--type", "rep", "--bind", endpoint, "--echo", "3") as peer:
            await peer.ready()
            async with trizmq.Req(connect=endpoint) as req:
                for i in range(3):
                    await req.send(b"question %d" % i)
                    assert await req.recv() == b"question %d" % i


async def test_node_req_to_trizmq_rep_over_ws() -> None:
    with trio.fail_after(15):
        async with trizmq.Rep(bind="ws://127.0.0.1:0") as rep:
            endpoint = rep.statistics()["bound"][0]
            args = ("--type", "req", "--connect", endpoint, "--send", "1", "--recv", "1")
            async with node_peer(*args, "--body", "ping?") as peer:
                await peer.ready()
                assert await rep.recv() == b"ping?"
                await rep.send(b"pong!")
                assert bodies([await peer.message()]) == [b"pong!"]


async def test_trizmq_dealer_to_node_router_over_ws() -> None:
    endpoint = node_endpoint()
    with trio.fail_after(15):
        async with node_peer("--type", "router", "--bind", endpoint, "--echo", "3") as peer:
            await peer.ready()
            async with trizmq.Dealer(connect=endpoint, routing_id=b"dealer-1") as dealer:
                for i in range(3):
                    await dealer.send(b"job %d" % i)
                replies = [await dealer.recv() for _ in range(3)]
                echoed = [await peer.line() for _ in range(3)]
    assert replies == [b"job %d" % i for i in range(3)]
    # the ROUTER saw our routing id in the READY's Identity
    assert {bytes.fromhex(line["frames"][0]) for line in echoed} == {b"dealer-1"}


async def test_node_dealer_to_trizmq_router_over_ws() -> None:
    with trio.fail_after(15):
        async with trizmq.Router(bind="ws://127.0.0.1:0/r") as router:
            endpoint = router.statistics()["bound"][0]
            args = ("--type", "dealer", "--connect", endpoint, "--identity", "node-d")
            async with node_peer(*args, "--send", "3", "--recv", "3") as peer:
                await peer.ready()
                for _ in range(3):
                    routing_id, body = await router.recv_multipart()
                    assert routing_id == b"node-d"
                    await router.send_multipart([routing_id, body.upper()])
                got = [await peer.message() for _ in range(3)]
    assert bodies(got) == [b"MSG %d" % i for i in range(3)]


# -- PLAIN -----------------------------------------------------------------------------------


async def test_node_plain_client_to_trizmq_plain_server_over_ws() -> None:
    with trio.fail_after(15):
        async with (
            trizmq.Authenticator(passwords={b"admin": b"secret"}),
            trizmq.Pull(security=trizmq.PlainServer(), bind="ws://127.0.0.1:0") as pull,
        ):
            endpoint = pull.statistics()["bound"][0]
            args = ("--type", "push", "--connect", endpoint, "--send", "2", "--stay")
            plain = ("--plain-user", "admin", "--plain-password", "secret")
            async with node_peer(*args, *plain):
                assert [await pull.recv() for _ in range(2)] == [b"msg 0", b"msg 1"]


async def test_trizmq_plain_client_to_node_plain_server_over_ws() -> None:
    endpoint = node_endpoint()
    args = ("--type", "pull", "--bind", endpoint, "--plain-server", "--recv", "2")
    client = trizmq.PlainClient(username="admin", password="secret")
    with trio.fail_after(15):
        async with node_peer(*args) as peer:
            await peer.ready()
            async with trizmq.Push(connect=endpoint, security=client) as push:
                await push.send(b"one")
                await push.send(b"two")
                got = [await peer.message() for _ in range(2)]
    assert bodies(got) == [b"one", b"two"]


async def test_node_curve_client_to_trizmq_curve_server_over_ws() -> None:
    """ZWS2.0/CURVE: libzmq's client offers it, trizmq's CURVE server takes it."""
    server_public, server_secret = trizmq.curve_keypair()
    client_public, client_secret = trizmq.curve_keypair()
    with trio.fail_after(15):
        security = trizmq.CurveServer(secret_key=server_secret)
        async with trizmq.Pull(security=security, bind="ws://127.0.0.1:0/c") as pull:
            endpoint = pull.statistics()["bound"][0]
            curve = ("--curve-server-key", server_public.decode())
            curve += ("--curve-public", client_public.decode())
            curve += ("--curve-secret", client_secret.decode())
            args = ("--type", "push", "--connect", endpoint, "--send", "2", "--stay")
            async with node_peer(*args, *curve):
                assert [await pull.recv() for _ in range(2)] == [b"msg 0", b"msg 1"]


async def test_trizmq_curve_client_to_node_curve_server_over_ws() -> None:
    server_public, server_secret = trizmq.curve_keypair()
    client_public, client_secret = trizmq.curve_keypair()
    endpoint = node_endpoint()
    curve = ("--curve-public", server_public.decode())
    curve += ("--curve-secret", server_secret.decode())
    args = ("--type", "pull", "--bind", endpoint, "--recv", "2", *curve)
    client = trizmq.CurveClient(
        server_key=server_public, public_key=client_public, secret_key=client_secret
    )
    with trio.fail_after(15):
        async with node_peer(*args) as peer:
            await peer.ready()
            async with trizmq.Push(connect=endpoint, security=client) as push:
                await push.send(b"sealed")
                await push.send_multipart([b"two", b"frames"])
                first = await peer.message()
                second = await peer.line()
    assert first["body"] == b"sealed"
    assert [bytes.fromhex(f) for f in second["frames"]] == [b"two", b"frames"]


# -- heartbeats ------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["trizmq-binds", "node-binds"])
async def test_heartbeats_are_websocket_pings_libzmq_answers(side: str) -> None:
    """trizmq's PINGs over ws are WebSocket PING frames; libzmq answers them with PONGs,
    so a short heartbeat timeout never drops a quiet libzmq peer."""
    options = {"heartbeat_ivl": 0.05, "heartbeat_timeout": 0.2}
    with trio.fail_after(15):
        if side == "trizmq-binds":
            async with trizmq.Pull(bind="ws://127.0.0.1:0", **options) as pull:
                endpoint = pull.statistics()["bound"][0]
                args = ("--type", "push", "--connect", endpoint, "--send", "3", "--stay")
                async with node_peer(*args, "--interval", "300"):
                    seen = await receive_watching(pull)
        else:
            endpoint = node_endpoint()
            args = ("--type", "push", "--bind", endpoint, "--send", "3", "--interval", "300")
            args += ("--stay",)
            async with node_peer(*args) as peer:
                await peer.ready()
                async with trizmq.Pull(connect=endpoint, **options) as pull:
                    seen = await receive_watching(pull)
    assert not [e for e in seen if isinstance(e, trizmq.Disconnected)], seen


async def receive_watching(pull: trizmq.Pull) -> list[trizmq.MonitorEvent]:
    """Three messages 300 ms apart (beyond the heartbeat timeout), and every monitor
    event meanwhile."""
    seen: list[trizmq.MonitorEvent] = []
    async with pull.monitor() as events, trio.open_nursery() as nursery:

        async def watch() -> None:
            async for event in events:
                seen.append(event)

        nursery.start_soon(watch)
        assert [await pull.recv() for _ in range(3)] == [b"msg 0", b"msg 1", b"msg 2"]
        nursery.cancel_scope.cancel()
    return seen


@pytest.mark.parametrize("side", ["trizmq-binds", "node-binds"])
async def test_trizmq_answers_the_websocket_pings_of_a_heartbeating_libzmq_peer(
    side: str,
) -> None:
    """libzmq with ZMQ_HEARTBEAT_IVL sends WebSocket PINGs over ws:// and drops a peer
    that leaves them unanswered for ZMQ_HEARTBEAT_TIMEOUT: trizmq (no heartbeats of its
    own) answers each with a PONG, so the quiet connection lives through three
    messages 300 ms apart with a 200 ms timeout."""
    heartbeat = ("--heartbeat", "50,200")
    with trio.fail_after(15):
        if side == "trizmq-binds":
            async with trizmq.Pull(bind="ws://127.0.0.1:0") as pull:
                endpoint = pull.statistics()["bound"][0]
                args = ("--type", "push", "--connect", endpoint, "--send", "3", "--stay")
                async with node_peer(*args, "--interval", "300", *heartbeat):
                    seen = await receive_watching(pull)
        else:
            endpoint = node_endpoint()
            args = ("--type", "push", "--bind", endpoint, "--send", "3", "--interval", "300")
            args += ("--stay",)
            async with node_peer(*args, *heartbeat) as peer:
                await peer.ready()
                async with trizmq.Pull(connect=endpoint) as pull:
                    seen = await receive_watching(pull)
    assert not [e for e in seen if isinstance(e, trizmq.Disconnected)], seen
