"""``sock.stats()``: every counter, exact, between trizmq sockets (libzmq peers:
``tests/interop/test_interop_stats.py``).

The figures are compared with what the test itself sent, received and queued:
messages and payload bytes per socket and per peer, queue depths, drops by reason,
what was filtered, connection events and their causes, heartbeats. The suite runs
with and without ``TRIZMQ_FASTPATH=0``: the fast path's write-through, held batches and
read-through move messages by other routes, which must count the same.
"""

from __future__ import annotations

import socket as stdsocket
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
import trio

import trizmq
from trizmq import PeerStats, SocketStats
from trizmq._stats import CONNECTION_EVENTS, DROP_REASONS

ENDPOINTS = {
    "tcp": lambda tmp: "tcp://127.0.0.1:0",
    "ws": lambda tmp: "ws://127.0.0.1:0/stats",
    "ipc": lambda tmp: f"ipc://{tmp}/stats.ipc",
    "inproc": lambda tmp: f"inproc://stats-{id(tmp)}",
}


@pytest.fixture(params=sorted(ENDPOINTS))
def endpoint(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return ENDPOINTS[request.param](tmp_path)


async def until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition()`` holds: a figure that other tasks (or another
    process) change, which nothing can be awaited for; bounded by the test's deadline."""
    while not condition():
        await trio.sleep(0.005)


def payload(messages: list[list[bytes]]) -> int:
    return sum(len(frame) for msg in messages for frame in msg)


def curve_pair() -> tuple[trizmq.CurveServer, trizmq.CurveClient]:
    """A CURVE server's security and a client's that trusts it, fresh keys each."""
    server_public, server_secret = trizmq.curve_keypair()
    public, secret = trizmq.curve_keypair()
    client = trizmq.CurveClient(server_key=server_public, public_key=public, secret_key=secret)
    return trizmq.CurveServer(secret_key=server_secret), client


def only_peer(stats: SocketStats) -> PeerStats:
    assert len(stats.peers) == 1, stats.peers
    return stats.peers[0]


def nonzero(mapping: object) -> dict[str, int]:
    assert isinstance(mapping, dict)
    return {key: value for key, value in mapping.items() if value}


def test_the_snapshot_is_frozen_and_every_reason_is_there() -> None:
    stats = SocketStats("PUB")
    assert list(stats.drops) == list(DROP_REASONS) and not any(stats.drops.values())
    assert list(stats.connections) == list(CONNECTION_EVENTS)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        stats.messages_sent = 1  # type: ignore[misc]
    assert trizmq.SocketStats is SocketStats and trizmq.PeerStats is PeerStats


def test_whose_figures_first_then_the_counters_by_keyword() -> None:
    stats = SocketStats("PUB", messages_sent=3, subscriptions=2)
    assert repr(stats).startswith("SocketStats(socket_type='PUB', messages_sent=3, ")
    peer = PeerStats("inproc://a", None, b"id", queued_in=1, rtt=0.5)
    assert (peer.endpoint, peer.remote, peer.routing_id) == ("inproc://a", None, b"id")
    assert repr(peer).startswith("PeerStats(endpoint='inproc://a', remote=None, ")
    # the counters a peer and a socket share are the same fields, of the same defaults
    shared = {f.name for f in attrs.fields(PeerStats)} & {f.name for f in attrs.fields(SocketStats)}
    assert shared == {
        "messages_sent", "messages_received", "bytes_sent", "bytes_received",
        "wire_bytes_sent", "wire_bytes_received", "drops", "filtered", "queued_out",
        "queued_in", "queued_out_peak", "queued_in_peak", "subscriptions",
    }  # fmt: skip
    assert attrs.evolve(stats, peers=(peer,)).peers == (peer,)


async def test_messages_and_bytes_exact_both_ways(endpoint: str) -> None:
    messages = [[b"x" * (i % 300)] for i in range(3000)]
    messages += [[b"one", b"two", b"three"], [b""], [b"y" * 70_000, b"z"]]
    with trio.fail_after(30):
        async with trizmq.Pull() as pull, trizmq.Push() as push:
            await push.connect(await pull.bind(endpoint))

            async def send() -> None:
                for msg in messages[:1000]:
                    await push.send_multipart(msg)
                await push.send_many(messages[1000:])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(send)
                got = [await pull.recv_multipart() for _ in range(len(messages))]
            assert got == messages
            sent, received = push.stats(), pull.stats()
    inproc = endpoint.startswith("inproc")
    size = 0 if inproc else payload(messages)  # an inproc link counts no bytes
    assert (sent.messages_sent, sent.bytes_sent) == (len(messages), size)
    assert (received.messages_received, received.bytes_received) == (len(messages), size)
    assert (sent.messages_received, received.messages_sent) == (0, 0)
    peer = only_peer(sent)
    assert (peer.messages_sent, peer.bytes_sent, peer.queued_out) == (len(messages), size, 0)
    peer = only_peer(received)
    assert (peer.messages_received, peer.bytes_received, peer.queued_in) == (
        len(messages),
        size,
        0,
    )
    for stats in (sent, received):
        assert not nonzero(stats.drops) and stats.filtered == 0
        assert stats.queued_out == stats.queued_in == 0
    # the deepest a queue was: some, at most what a read or a batch may overshoot by
    assert 0 < received.queued_in_peak <= len(messages)
    assert received.queued_in_peak == only_peer(received).queued_in_peak


async def test_queue_depths_are_what_is_queued(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with trizmq.Push(sndhwm=100) as push:
            # nobody listens yet: the kept peer queues up to its mark
            endpoint = f"ipc://{tmp_path}/later.ipc"
            await push.connect(endpoint)
            for i in range(60):
                push.send_nowait(b"%d" % i)
            stats = push.stats()
            peer = only_peer(stats)
            assert (stats.queued_out, peer.queued_out, peer.queued_out_peak) == (60, 60, 60)
            # handed to the peer's queue: sent, though not written yet
            queued = [[b"%d" % i] for i in range(60)]
            assert (stats.messages_sent, stats.bytes_sent) == (60, payload(queued))
            assert peer.endpoint == endpoint and peer.remote is None
            async with trizmq.Pull(bind=endpoint) as pull:
                for i in range(60):
                    assert await pull.recv() == b"%d" % i
                await until(lambda: push.stats().queued_out == 0)
                stats = push.stats()
                assert stats.messages_sent == 60 and stats.queued_out_peak == 60
        async with trizmq.Pull(rcvhwm=1000) as pull, trizmq.Push() as push:
            await push.connect(await pull.bind("inproc://depth"))
            for _ in range(25):
                await push.send(b"m")
            # an inproc link's queue is the receiver's at once: no task moves it
            stats = pull.stats()
            assert (stats.queued_in, only_peer(stats).queued_in) == (25, 25)
            assert (stats.messages_received, stats.queued_in_peak) == (0, 25)
            for _ in range(10):
                await pull.recv()
            stats = pull.stats()
            assert (stats.queued_in, stats.messages_received, stats.queued_in_peak) == (15, 10, 25)
            assert push.stats().queued_out == 15


async def test_conflate_replacements_are_drops() -> None:
    with trio.fail_after(30):
        async with trizmq.Push(conflate=True) as push:
            await push.connect("tcp://127.0.0.1:9")  # never answers: the peer keeps its queue
            for i in range(5):
                await push.send(b"%d" % i)
            stats = push.stats()
            assert stats.messages_sent == 5 and stats.queued_out == 1
            assert nonzero(stats.drops) == {"conflate": 4}
            assert only_peer(stats).drops["conflate"] == 4
        # on inproc the conflating queue is both sockets': each counts its side
        async with trizmq.Pull() as pull, trizmq.Push(conflate=True) as push:
            await push.connect(await pull.bind("inproc://conflated"))
            for i in range(5):
                await push.send(b"%d" % i)
            assert await pull.recv() == b"4"
            sent, received = push.stats(), pull.stats()
            assert (sent.messages_sent, received.messages_received) == (5, 1)
            assert nonzero(sent.drops) == nonzero(received.drops) == {"conflate": 4}
            assert sent.queued_out == received.queued_in == 0


async def test_a_departed_peers_queue_is_dropped_at_disconnect() -> None:
    with trio.fail_after(30):
        async with trizmq.Push() as push:
            await push.connect("tcp://127.0.0.1:9")
            for _ in range(7):
                await push.send(b"queued")
            await push.disconnect("tcp://127.0.0.1:9")
            stats = push.stats()
            assert stats.peers == ()
            assert stats.messages_sent == 7 and stats.bytes_sent == 7 * 6
            assert nonzero(stats.drops) == {"disconnect": 7}
            assert stats.queued_out == 0 and stats.queued_out_peak == 7


async def test_a_router_counts_every_message_for_an_unknown_id(endpoint: str) -> None:
    with trio.fail_after(30):
        async with trizmq.Router() as router, trizmq.Dealer(routing_id=b"known") as dealer:
            await dealer.connect(await router.bind(endpoint))
            await dealer.send(b"hello")
            assert await router.recv_multipart() == [b"known", b"hello"]
            for i in range(13):
                await router.send_multipart([b"nobody-%d" % (i % 3), b"lost"])
            await router.send_multipart([b"known", b"found"])
            assert await dealer.recv() == b"found"
            stats = router.stats()
    assert nonzero(stats.drops) == {"no_route": 13}
    assert stats.messages_sent == 1 and stats.messages_received == 1
    peer = only_peer(stats)
    assert peer.routing_id == b"known" and not nonzero(peer.drops)


async def test_a_pub_counts_what_no_one_subscribed_as_filtered_and_a_full_queue_as_drops() -> None:
    with trio.fail_after(30):
        # an inproc link holds the connecting side's sndhwm + rcvhwm: 10 here
        async with trizmq.Pub() as pub, trizmq.Sub(subscribe=b"a", sndhwm=5, rcvhwm=5) as sub:
            await sub.connect(await pub.bind("inproc://filtered"))
            await until(lambda: pub.stats().subscriptions == 1)
            for _ in range(4):
                await pub.send(b"b: nobody")
            for _ in range(25):
                await pub.send(b"a: to the sub")
            stats = pub.stats()
            assert stats.filtered == 4 and stats.subscriptions == 1
            assert stats.messages_sent == 10 and nonzero(stats.drops) == {"hwm": 15}
            peer = only_peer(stats)
            assert (peer.messages_sent, peer.drops["hwm"], peer.subscriptions) == (10, 15, 1)
            # a subscription cancelled while messages wait: the SUB filters them
            sub.unsubscribe(b"a")
            sub.subscribe(b"a: to")
            for _ in range(10):
                await sub.recv()
            stats = sub.stats()
            assert stats.messages_received == 10 and stats.filtered == 0


async def test_a_sub_filters_what_it_no_longer_subscribes_to() -> None:
    with trio.fail_after(30):
        async with trizmq.Pub() as pub, trizmq.Sub(subscribe=b"a") as sub:
            await sub.connect(await pub.bind("inproc://sub-filter"))
            await until(lambda: pub.stats().subscriptions == 1)
            for _ in range(3):
                await pub.send(b"a1")
            sub.unsubscribe(b"a")
            sub.subscribe(b"zz")
            with pytest.raises(trio.WouldBlock):
                sub.recv_nowait()
            stats = sub.stats()
            assert (stats.filtered, stats.messages_received, stats.queued_in) == (3, 0, 0)
            assert only_peer(stats).filtered == 3 and not nonzero(stats.drops)


async def test_connection_events_and_handshake_failures_by_cause() -> None:
    with trio.fail_after(30):
        async with trizmq.Pull() as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with trizmq.Push() as push, push.monitor() as events:
                await push.connect(endpoint)
                async for event in events:
                    if isinstance(event, trizmq.HandshakeSucceeded):
                        break
                assert nonzero(push.stats().connections) == {"connected": 1}
            await until(lambda: pull.stats().connections["disconnects"] == 1)
            stats = pull.stats()
            assert nonzero(stats.connections) == {"accepted": 1, "disconnects": 1}
            assert nonzero(stats.disconnect_causes) == {"peer_closed": 1}
        # a PUSH cannot talk to a PUSH; NULL cannot talk to CURVE (one attempt each:
        # the connecters wait 30 s before the next)
        _, server_secret = trizmq.curve_keypair()
        async with (
            trizmq.Push() as target,
            trizmq.Pull(security=trizmq.CurveServer(secret_key=server_secret)) as curve,
        ):
            typed = await target.bind("tcp://127.0.0.1:0")
            secured = await curve.bind("tcp://127.0.0.1:0")
            async with (
                trizmq.Push(connect=typed, reconnect_ivl=30) as same_type,
                trizmq.Push(connect=secured, reconnect_ivl=30) as null_client,
            ):
                for sock in (target, curve, same_type, null_client):
                    await until(lambda s=sock: s.stats().connections["handshake_failures"] == 1)  # type: ignore[misc]
                # each pair: the side that judges first refuses and closes; the other
                # may meet the close (a reset) before it reads what it would judge
                pairs = (((target, same_type), "socket_type"), ((curve, null_client), "mechanism"))
                for pair, cause in pairs:
                    causes = [nonzero(sock.stats().handshake_failure_causes) for sock in pair]
                    assert cause in {key for seen in causes for key in seen}
                    for seen in causes:
                        assert seen in ({cause: 1}, {"peer_closed": 1})
                assert nonzero(null_client.stats().connections) == {
                    "connected": 1,
                    "handshake_failures": 1,
                }
                assert nonzero(curve.stats().connections) == {
                    "accepted": 1,
                    "handshake_failures": 1,
                }


async def test_a_hostile_limit_is_a_disconnect_cause() -> None:
    with trio.fail_after(30):
        async with trizmq.Pull(maxmsgsize=100) as pull, trizmq.Push() as push:
            await push.connect(await pull.bind("tcp://127.0.0.1:0"))
            await push.send(b"small")
            assert await pull.recv() == b"small"
            await push.send(b"x" * 1000)
            await until(lambda: pull.stats().connections["disconnects"] == 1)
            stats = pull.stats()
            assert nonzero(stats.disconnect_causes) == {"limit": 1}
            assert stats.messages_received == 1 and stats.bytes_received == 5


async def test_heartbeats_measure_the_round_trip() -> None:
    with trio.fail_after(30):
        async with (
            trizmq.Dealer(heartbeat_ivl=0.02) as dealer,
            trizmq.Router() as router,
        ):
            await dealer.connect(await router.bind("tcp://127.0.0.1:0"))
            await until(lambda: only_peer(dealer.stats()).pings_sent >= 3)
            await until(lambda: only_peer(dealer.stats()).rtt is not None)
            peer = only_peer(dealer.stats())
            assert peer.rtt is not None and peer.rtt_mean is not None
            assert 0 <= peer.rtt < 1 and 0 <= peer.rtt_mean < 1
            # the ROUTER sends none: it only answers
            assert only_peer(router.stats()).pings_sent == 0
            assert only_peer(router.stats()).rtt is None


async def test_the_monitor_carries_the_same_numbers_on_request() -> None:
    with trio.fail_after(30):
        async with trizmq.Pull() as pull, trizmq.Push() as push:
            await push.connect(await pull.bind("inproc://monitored"))
            for _ in range(3):
                await push.send(b"abc")
            async with pull.monitor() as events:
                events.request_stats()
                event = await events.next_event()
            assert isinstance(event, trizmq.Stats) and event.endpoint == ""
            assert event.stats == pull.stats()
            assert event.stats.queued_in == 3


async def test_before_entering_every_figure_is_zero_and_a_closed_socket_keeps_its_own() -> None:
    with trio.fail_after(30):
        push = trizmq.Push()
        assert push.stats() == SocketStats("PUSH")
        async with trizmq.Pull() as pull, push:
            await push.connect(await pull.bind("inproc://closed"))
            await push.send(b"one")
            assert await pull.recv() == b"one"
        stats = push.stats()
        assert stats.messages_sent == 1 and stats.peers == ()


async def test_udp_datagrams_malformed_and_oversized_are_drops() -> None:
    from trizmq.zmtp.datagram import MAX_DATAGRAM, encode_datagram

    with trio.fail_after(30):
        async with trizmq.Dish() as dish, trizmq.Radio() as radio:
            endpoint = await dish.bind("udp://127.0.0.1:0")
            host, port = endpoint.removeprefix("udp://").rsplit(":", 1)
            dish.join(b"g")
            with stdsocket.socket(stdsocket.AF_INET, stdsocket.SOCK_DGRAM) as raw:
                for data in (b"\xff", b"\x05abc"):
                    raw.sendto(data, (host, int(port)))
                await until(lambda: dish.stats().drops["malformed"] == 2)
                raw.sendto(encode_datagram(b"other", b"not joined"), (host, int(port)))
                raw.sendto(encode_datagram(b"g", b"joined"), (host, int(port)))
                msg = await dish.recv_message()
            assert (msg.group, msg.data) == (b"g", b"joined")
            stats = dish.stats()
            assert nonzero(stats.drops) == {"malformed": 2}
            assert (stats.filtered, stats.messages_received, stats.bytes_received) == (1, 1, 7)
            await radio.connect(endpoint)
            await radio.send(b"x" * MAX_DATAGRAM, group=b"g")  # too big for one datagram
            await radio.send(b"fits", group=b"g")
            msg = await dish.recv_message()
            assert msg.data == b"fits"
            stats = radio.stats()
            assert nonzero(stats.drops) == {"oversized": 1}
            assert (stats.messages_sent, stats.bytes_sent) == (2, 1 + MAX_DATAGRAM + 1 + 4)


async def test_a_udp_datagram_the_os_refuses_to_send_is_an_unsent_drop() -> None:
    """Linux refuses a datagram to the broadcast address from a socket without
    SO_BROADCAST (EACCES): each message is lost, as libzmq's, and counted."""
    with trio.fail_after(30):
        async with trizmq.Radio(connect="udp://255.255.255.255:5999") as radio:
            for _ in range(3):
                await radio.send(b"hello", group=b"g")
            await until(lambda: radio.stats().drops["unsent"] == 3)
            stats = radio.stats()
            assert nonzero(stats.drops) == {"unsent": 3}
            assert stats.messages_sent == 3  # handed to the peer's queue, then lost
            assert radio.statistics()["datagrams_dropped"] == 3


async def test_an_xpub_counts_what_its_application_reads_from_its_own_queue() -> None:
    """An XPUB's application reads subscription notifications and its peers' messages
    from the socket's own queue: they are queued_in while they wait there, and
    received (with their bytes) once read."""
    with trio.fail_after(30):
        async with (
            trizmq.XPub(bind="tcp://127.0.0.1:0") as xpub,
            trizmq.XSub(connect=xpub.statistics()["bound"][0]) as xsub,
        ):
            await xsub.send(b"\x01news")  # a subscription: a notification
            await xsub.send(b"\x01sport")
            await until(lambda: xpub.stats().queued_in == 2)  # connected both ways
            await xsub.send_multipart([b"up", b"stream"])  # a message for the XPUB
            await until(lambda: xpub.stats().queued_in == 3)
            stats = xpub.stats()
            assert (stats.messages_received, stats.bytes_received) == (0, 0)
            assert await xpub.recv() == b"\x01news"
            stats = xpub.stats()
            assert (stats.queued_in, stats.messages_received, stats.bytes_received) == (
                2,
                1,
                5,
            )
            assert await xpub.recv() == b"\x01sport"
            assert await xpub.recv_multipart() == [b"up", b"stream"]
            stats = xpub.stats()
            assert (stats.queued_in, stats.messages_received, stats.bytes_received) == (
                0,
                3,
                5 + 6 + 8,
            )
            assert stats.subscriptions == 2


async def test_curve_counts_the_payload_not_the_boxes() -> None:
    server, client = curve_pair()
    messages = [[b"c" * (i % 250)] for i in range(2000)] + [[b"multi", b"part"], [b"y" * 5000]]
    with trio.fail_after(30):
        async with (
            trizmq.Pull(security=server) as pull,
            trizmq.Push(security=client) as push,
        ):
            await push.connect(await pull.bind("tcp://127.0.0.1:0"))

            async def send() -> None:
                await push.send_many(messages[:1000])
                for msg in messages[1000:]:
                    await push.send_multipart(msg)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(send)
                got = [await pull.recv_multipart() for _ in messages]
            assert got == messages
            sent, received = push.stats(), pull.stats()
    assert (sent.messages_sent, sent.bytes_sent) == (len(messages), payload(messages))
    assert (received.messages_received, received.bytes_received) == (
        len(messages),
        payload(messages),
    )


async def test_a_pub_counts_each_subscriber_it_reaches() -> None:
    messages = [[b"t" * (i % 100)] for i in range(3000)]
    with trio.fail_after(30):
        async with trizmq.Pub(sndhwm=100_000) as pub:
            endpoint = await pub.bind("tcp://127.0.0.1:0")
            async with (
                trizmq.Sub(connect=endpoint, subscribe=b"", rcvhwm=100_000) as first,
                trizmq.Sub(connect=endpoint, subscribe=b"", rcvhwm=100_000) as second,
                trizmq.Sub(connect=endpoint, subscribe=b"t", rcvhwm=100_000) as third,
            ):
                await until(lambda: pub.stats().subscriptions == 3)
                for msg in messages[:1000]:
                    await pub.send_multipart(msg)
                await pub.send_many(messages[1000:2000])
                for msg in messages[2000:]:
                    await pub.send_multipart(msg)
                for sub in (first, second):
                    assert [await sub.recv_multipart() for _ in messages] == messages
                # the empty message does not start with "t": the PUB never sends those
                wanted = [msg for msg in messages if msg[0]]
                assert [await third.recv_multipart() for _ in wanted] == wanted
                stats = pub.stats()
    size = payload(messages)
    assert stats.messages_sent == 2 * len(messages) + len(wanted)
    assert stats.bytes_sent == 3 * size  # the empty ones weigh nothing
    assert sorted(peer.messages_sent for peer in stats.peers) == sorted(
        [len(messages), len(messages), len(wanted)]
    )
    assert not nonzero(stats.drops) and stats.filtered == 0


async def test_a_silent_client_is_a_handshake_timeout() -> None:
    with trio.fail_after(30):
        async with trizmq.Pull(handshake_ivl=0.2) as pull, pull.monitor() as events:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
            stream = await trio.open_tcp_stream(host, int(port))
            async with stream:
                async for event in events:
                    if isinstance(event, trizmq.HandshakeFailed):
                        break
            stats = pull.stats()
            assert nonzero(stats.connections) == {"accepted": 1, "handshake_failures": 1}
            assert nonzero(stats.handshake_failure_causes) == {"timeout": 1}
            assert stats.peers == ()


async def test_a_departed_peers_unread_input_counts_once_read() -> None:
    with trio.fail_after(30):
        async with trizmq.Pull() as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            for round_ in range(40):  # more departures than the fold's first threshold
                async with trizmq.Push(connect=endpoint) as push:
                    await push.send(b"%d" % round_)
                    await until(lambda n=round_: pull.stats().queued_in == n + 1)  # type: ignore[misc]
                await until(lambda n=round_: pull.stats().connections["disconnects"] == n + 1)  # type: ignore[misc]
            stats = pull.stats()
            assert (stats.queued_in, stats.messages_received, stats.peers) == (40, 0, ())
            assert len(pull._runtime.counts._draining) <= 40  # type: ignore[union-attr]
            received = sorted([await pull.recv() for _ in range(40)], key=int)
            assert received == [b"%d" % n for n in range(40)]
            stats = pull.stats()
            assert (stats.queued_in, stats.messages_received) == (0, 40)
            assert not pull._runtime.counts._draining  # type: ignore[union-attr]


async def test_request_reply_envelopes_count_their_frames(endpoint: str) -> None:
    bodies = [b"q" * (i * 7 % 600) for i in range(200)]
    with trio.fail_after(30):
        async with trizmq.Rep() as rep, trizmq.Req() as req:
            await req.connect(await rep.bind(endpoint))

            async def serve() -> None:
                for _ in bodies:
                    await rep.send_multipart([b"re:", *await rep.recv_multipart()])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve)
                for body in bodies:
                    await req.send_multipart([body, b"tail"])
                    assert await req.recv_multipart() == [b"re:", body, b"tail"]
            asked, answered = req.stats(), rep.stats()
    inproc = endpoint.startswith("inproc")
    # the empty delimiter REQ puts in front weighs nothing
    request = 0 if inproc else sum(len(body) + 4 for body in bodies)
    reply = 0 if inproc else request + 3 * len(bodies)
    assert (asked.messages_sent, asked.bytes_sent) == (len(bodies), request)
    assert (answered.messages_received, answered.bytes_received) == (len(bodies), request)
    assert (answered.messages_sent, answered.bytes_sent) == (len(bodies), reply)
    assert (asked.messages_received, asked.bytes_received) == (len(bodies), reply)


async def test_curve_request_reply_counts_each_lone_message_exactly() -> None:
    """A round trip writes each message through on its own (the sending task's
    write-through): its payload is worked out from its boxed wire form, exact on both
    sides of the size where a CURVE frame's header grows (a box of 256 bytes, a
    payload of 223), and a queue that only ever held one message peaks at 1."""
    server, client = curve_pair()
    bodies = [b"b" * size for size in (0, 1, 100, 190, 221, 222, 223, 224, 230, 300, 5000)]
    with trio.fail_after(30):
        async with (
            trizmq.Rep(security=server) as rep,
            trizmq.Req(security=client) as req,
        ):
            await req.connect(await rep.bind("tcp://127.0.0.1:0"))

            async def serve() -> None:
                for _ in bodies:
                    await rep.send_multipart([b"re:", *await rep.recv_multipart()])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve)
                for body in bodies:
                    await req.send(body)
                    assert await req.recv_multipart() == [b"re:", body]
            asked, answered = req.stats(), rep.stats()
    request = sum(len(body) for body in bodies)  # REQ's empty delimiter weighs nothing
    reply = request + 3 * len(bodies)
    assert (asked.messages_sent, asked.bytes_sent) == (len(bodies), request)
    assert (answered.messages_received, answered.bytes_received) == (len(bodies), request)
    assert (answered.messages_sent, answered.bytes_sent) == (len(bodies), reply)
    assert (asked.messages_received, asked.bytes_received) == (len(bodies), reply)
    assert asked.queued_out_peak == answered.queued_out_peak == 1
