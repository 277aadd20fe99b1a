"""``sock.stats()`` against libzmq peers (through pyzmq): exact counts.

* a PUB whose libzmq SUB stalls (a small RCVHWM, nothing read): what the PUB counts
  as sent plus what it drops at the mark is what it published, and the SUB reads
  exactly what it counted as sent once it drains (TCP's buffers absorb some: those
  were handed on, so they are sent);
* a ROUTER counts every message for an unknown routing id as ``no_route``;
* a PLAIN and a CURVE server count a libzmq client the authenticator refused under
  its ZAP status;
* a libzmq peer frozen with SIGSTOP: one heartbeat timeout, one reconnect;
* messages and payload bytes both ways, and the heartbeat round trip to libzmq.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest
import trio
import zmq

import trizmq

from .libzmq import Endpoints, LibzmqSocket
from .test_libzmq_frozen import echo, next_event, start_peer

LibzmqFactory = Callable[[int], LibzmqSocket]


async def until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition()`` holds (a figure another process drives, which
    nothing can be awaited for); bounded by the test's deadline."""
    while not condition():
        await trio.sleep(0.005)


def nonzero(mapping: object) -> dict[str, int]:
    assert isinstance(mapping, dict)
    return {key: value for key, value in mapping.items() if value}


async def test_a_pub_with_a_stalled_libzmq_sub_counts_sent_plus_dropped_as_published(
    endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    published = 20_000
    body = b"x" * 1000
    with trio.fail_after(60):
        async with trizmq.Pub(sndhwm=50) as pub:
            endpoint = await pub.bind(endpoints.for_trizmq())
            sub = libzmq(zmq.SUB)
            sub.sock.setsockopt(zmq.RCVHWM, 10)
            sub.subscribe(b"")
            await sub.connect(endpoint)
            await until(lambda: pub.stats().subscriptions == 1)
            for i in range(published):
                await pub.send(b"%08d" % i + body)
                if i % 200 == 199:
                    # let the writer write: the SUB's buffers and TCP's fill, then stall
                    await trio.sleep(0.001)
            stats = pub.stats()
            (peer,) = stats.peers
            assert peer.messages_sent + peer.drops["hwm"] == published
            assert stats.messages_sent + stats.drops["hwm"] == published
            assert peer.drops["hwm"] > 0, "the SUB never stalled: nothing was dropped"
            print(f"sent {peer.messages_sent}, dropped {peer.drops['hwm']} of {published}")
            assert stats.bytes_sent == peer.messages_sent * (8 + len(body))
            # the SUB drains: it reads exactly what was counted as sent, in order
            got = await sub.recv_many(peer.messages_sent)
            numbers = [int(msg[0][:8]) for msg in got]
            assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
            assert await sub.poll_recv(300) is None
            stats = pub.stats()
            assert stats.queued_out == 0 and stats.messages_sent == peer.messages_sent
            assert stats.queued_out_peak > 0


async def test_a_router_counts_every_message_for_an_unknown_id(
    endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    with trio.fail_after(30):
        async with trizmq.Router() as router:
            endpoint = await router.bind(endpoints.for_trizmq())
            dealer = libzmq(zmq.DEALER)
            dealer.sock.setsockopt(zmq.ROUTING_ID, b"libzmq")
            await dealer.connect(endpoint)
            await dealer.send_multipart([b"hi"])
            assert await router.recv_multipart() == [b"libzmq", b"hi"]
            for i in range(25):
                await router.send_multipart([b"gone-%d" % i, b"lost"])
            await router.send_multipart([b"libzmq", b"there"])
            assert await dealer.recv_multipart() == [b"there"]
            stats = router.stats()
    assert nonzero(stats.drops) == {"no_route": 25}
    assert (stats.messages_sent, stats.messages_received) == (1, 1)
    assert (stats.bytes_sent, stats.bytes_received) == (5, 2)
    (peer,) = stats.peers
    assert peer.routing_id == b"libzmq" and not nonzero(peer.drops)


@pytest.mark.parametrize("mechanism", ["plain", "curve"])
async def test_a_server_counts_a_refused_libzmq_client_under_its_zap_status(
    endpoints: Endpoints, libzmq: LibzmqFactory, mechanism: str
) -> None:
    if mechanism == "curve" and not zmq.has("curve"):
        pytest.skip("libzmq built without CURVE")
    server_public, server_secret = trizmq.curve_keypair()
    good = zmq.curve_keypair()
    security: trizmq.PlainServer | trizmq.CurveServer = (
        trizmq.PlainServer()
        if mechanism == "plain"
        else trizmq.CurveServer(secret_key=server_secret)
    )

    def client(password: bytes, keys: tuple[bytes, bytes]) -> LibzmqSocket:
        push = libzmq(zmq.PUSH)
        push.sock.setsockopt(zmq.RECONNECT_IVL, 60_000)  # one attempt in this test
        if mechanism == "plain":
            push.sock.plain_username = b"admin"
            push.sock.plain_password = password
        else:
            push.sock.curve_serverkey = server_public
            push.sock.curve_publickey, push.sock.curve_secretkey = keys
        return push

    with trio.fail_after(30):
        async with (
            trizmq.Authenticator(passwords={b"admin": b"secret"}, curve_keys=[good[0]]),
            trizmq.Pull(security=security) as pull,
            pull.monitor() as events,
        ):
            endpoint = await pull.bind(endpoints.for_trizmq())
            await client(b"wrong", zmq.curve_keypair()).connect(endpoint)
            await next_event(events, trizmq.HandshakeFailed)
            stats = pull.stats()
            assert nonzero(stats.connections) == {"accepted": 1, "handshake_failures": 1}
            assert nonzero(stats.handshake_failure_causes) == {"zap": 1, "zap_400": 1}
            # a client the authenticator admits is counted as any other
            admitted = client(b"secret", good)
            await admitted.connect(endpoint)
            await admitted.send_multipart([b"let", b"in"])
            assert await pull.recv_multipart() == [b"let", b"in"]
            stats = pull.stats()
            assert stats.connections["accepted"] == 2
            assert stats.connections["handshake_failures"] == 1
            assert (stats.messages_received, stats.bytes_received) == (1, 5)


async def test_a_frozen_libzmq_peer_is_one_heartbeat_timeout_and_one_reconnect() -> None:
    options = {"heartbeat_ivl": 0.2, "heartbeat_timeout": 0.4, "reconnect_ivl": 0.05}
    proc: trio.Process | None = None
    with trio.fail_after(30):
        try:
            async with trizmq.Dealer(linger=0, **options) as dealer, dealer.monitor() as events:
                proc, endpoint = await start_peer("bind")
                await dealer.connect(endpoint)
                await next_event(events, trizmq.HandshakeSucceeded)
                await echo(dealer, b"before")
                await until(lambda: dealer.stats().peers[0].rtt is not None)
                proc.send_signal(signal.SIGSTOP)
                await next_event(events, trizmq.Disconnected)
                proc.send_signal(signal.SIGCONT)
                await next_event(events, trizmq.HandshakeSucceeded)
                await echo(dealer, b"after")
                stats = dealer.stats()
        finally:
            if proc is not None:
                proc.kill()
                with trio.move_on_after(5):
                    await proc.wait()
    assert nonzero(stats.connections) == {
        "connected": 2,
        "reconnects": 1,
        "disconnects": 1,
        "heartbeat_timeouts": 1,
    }
    assert nonzero(stats.disconnect_causes) == {"heartbeat_timeout": 1}
    (peer,) = stats.peers  # the connecting side keeps its peer across the reconnect
    assert (peer.messages_sent, peer.messages_received) == (2, 2)
    assert peer.pings_sent >= 1 and peer.rtt is not None and peer.rtt_mean is not None


async def test_bytes_are_the_payload_both_ways(
    endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    messages = [[b"a" * (i % 400), b"b" * (i % 7)] for i in range(500)] + [[b"z" * 300_000]]
    size = sum(len(frame) for msg in messages for frame in msg)
    with trio.fail_after(30):
        async with trizmq.Push() as push, trizmq.Pull() as pull:
            into_libzmq = libzmq(zmq.PULL)
            await push.connect(await into_libzmq.bind(endpoints.for_libzmq()))
            from_libzmq = libzmq(zmq.PUSH)
            await from_libzmq.connect(await pull.bind(endpoints.for_trizmq()))
            await push.send_many(messages)
            assert await into_libzmq.recv_many(len(messages)) == messages
            await from_libzmq.send_many(messages)
            got = [await pull.recv_multipart() for _ in messages]
            assert got == messages
            sent, received = push.stats(), pull.stats()
    assert (sent.messages_sent, sent.bytes_sent) == (len(messages), size)
    assert (received.messages_received, received.bytes_received) == (len(messages), size)
    assert sent.peers[0].bytes_sent == received.peers[0].bytes_received == size
