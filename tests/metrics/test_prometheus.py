"""The Prometheus collector (``trizmq.metrics``) on snapshots made by hand.

The exposition is checked as text, exactly: names, labels, order and values are the
interface Prometheus users write queries against.
"""
# ruff: noqa: E501  (the exposition's HELP lines are as long as they are)

from __future__ import annotations

import errno
import socket
import threading
import urllib.request

import attrs
import pytest
import trio
from prometheus_client import CollectorRegistry, generate_latest

import trizmq.metrics
from trizmq._stats import PeerStats, SocketStats

from .fakes import PUB_STATS, FakeSocket, drops

#: the exposition of PUB_STATS registered as "ticks" (Prometheus text format 0.0.4)
EXPECTED = """\
# HELP trizmq_messages_sent_total Whole messages handed to a peer's queue (a message that reaches K peers counts K).
# TYPE trizmq_messages_sent_total counter
trizmq_messages_sent_total{socket="ticks",type="PUB"} 120.0
# HELP trizmq_messages_received_total Whole messages handed to the application.
# TYPE trizmq_messages_received_total counter
trizmq_messages_received_total{socket="ticks",type="PUB"} 0.0
# HELP trizmq_bytes_sent_total Payload bytes (frames' bodies) of the messages sent.
# TYPE trizmq_bytes_sent_total counter
trizmq_bytes_sent_total{socket="ticks",type="PUB"} 4800.0
# HELP trizmq_bytes_received_total Payload bytes (frames' bodies) of the messages received.
# TYPE trizmq_bytes_received_total counter
trizmq_bytes_received_total{socket="ticks",type="PUB"} 0.0
# HELP trizmq_wire_bytes_sent_total The sent messages' parts as they went on the wire, after compression (lz4+tcp, zstd+tcp); bytes_sent elsewhere.
# TYPE trizmq_wire_bytes_sent_total counter
trizmq_wire_bytes_sent_total{socket="ticks",type="PUB"} 1200.0
# HELP trizmq_wire_bytes_received_total The received messages' parts as they came on the wire, before decompression (lz4+tcp, zstd+tcp); bytes_received elsewhere.
# TYPE trizmq_wire_bytes_received_total counter
trizmq_wire_bytes_received_total{socket="ticks",type="PUB"} 0.0
# HELP trizmq_messages_dropped_total Whole messages discarded, by reason.
# TYPE trizmq_messages_dropped_total counter
trizmq_messages_dropped_total{reason="hwm",socket="ticks",type="PUB"} 7.0
trizmq_messages_dropped_total{reason="no_route",socket="ticks",type="PUB"} 0.0
trizmq_messages_dropped_total{reason="conflate",socket="ticks",type="PUB"} 0.0
trizmq_messages_dropped_total{reason="disconnect",socket="ticks",type="PUB"} 2.0
trizmq_messages_dropped_total{reason="malformed",socket="ticks",type="PUB"} 0.0
trizmq_messages_dropped_total{reason="oversized",socket="ticks",type="PUB"} 0.0
trizmq_messages_dropped_total{reason="unsent",socket="ticks",type="PUB"} 0.0
# HELP trizmq_messages_filtered_total Messages a pattern did not deliver by design (a SUB or DISH filter): not drops.
# TYPE trizmq_messages_filtered_total counter
trizmq_messages_filtered_total{socket="ticks",type="PUB"} 0.0
# HELP trizmq_queue_depth Messages waiting now: out, to be written to peers; in, to be read by the application.
# TYPE trizmq_queue_depth gauge
trizmq_queue_depth{direction="out",socket="ticks",type="PUB"} 5.0
trizmq_queue_depth{direction="in",socket="ticks",type="PUB"} 0.0
# HELP trizmq_queue_depth_peak The most queue_depth has been since the socket opened.
# TYPE trizmq_queue_depth_peak gauge
trizmq_queue_depth_peak{direction="out",socket="ticks",type="PUB"} 64.0
trizmq_queue_depth_peak{direction="in",socket="ticks",type="PUB"} 0.0
# HELP trizmq_peers Current peers.
# TYPE trizmq_peers gauge
trizmq_peers{socket="ticks",type="PUB"} 2.0
# HELP trizmq_connection_events_total Connection events (accepted, connected, reconnects, disconnects, handshake_failures, heartbeat_timeouts).
# TYPE trizmq_connection_events_total counter
trizmq_connection_events_total{event="accepted",socket="ticks",type="PUB"} 3.0
trizmq_connection_events_total{event="connected",socket="ticks",type="PUB"} 0.0
trizmq_connection_events_total{event="reconnects",socket="ticks",type="PUB"} 0.0
trizmq_connection_events_total{event="disconnects",socket="ticks",type="PUB"} 1.0
trizmq_connection_events_total{event="handshake_failures",socket="ticks",type="PUB"} 2.0
trizmq_connection_events_total{event="heartbeat_timeouts",socket="ticks",type="PUB"} 1.0
# HELP trizmq_disconnects_total Handshaken connections that ended, by cause.
# TYPE trizmq_disconnects_total counter
trizmq_disconnects_total{cause="peer_closed",socket="ticks",type="PUB"} 0.0
trizmq_disconnects_total{cause="heartbeat_timeout",socket="ticks",type="PUB"} 1.0
trizmq_disconnects_total{cause="protocol_error",socket="ticks",type="PUB"} 0.0
trizmq_disconnects_total{cause="limit",socket="ticks",type="PUB"} 0.0
trizmq_disconnects_total{cause="local",socket="ticks",type="PUB"} 0.0
# HELP trizmq_handshake_failures_total Handshakes that failed, by cause.
# TYPE trizmq_handshake_failures_total counter
trizmq_handshake_failures_total{cause="mechanism",socket="ticks",type="PUB"} 1.0
trizmq_handshake_failures_total{cause="zap",socket="ticks",type="PUB"} 1.0
trizmq_handshake_failures_total{cause="timeout",socket="ticks",type="PUB"} 0.0
trizmq_handshake_failures_total{cause="socket_type",socket="ticks",type="PUB"} 0.0
trizmq_handshake_failures_total{cause="protocol_error",socket="ticks",type="PUB"} 0.0
trizmq_handshake_failures_total{cause="peer_closed",socket="ticks",type="PUB"} 0.0
# HELP trizmq_zap_refusals_total Handshakes refused by ZAP, by status code (also in handshake_failures, cause zap).
# TYPE trizmq_zap_refusals_total counter
trizmq_zap_refusals_total{socket="ticks",status="400",type="PUB"} 1.0
# HELP trizmq_subscriptions Subscriptions held now, over all peers (PUB, XPUB).
# TYPE trizmq_subscriptions gauge
trizmq_subscriptions{socket="ticks",type="PUB"} 3.0
# HELP trizmq_subscriptions_refused_total Subscriptions refused by a limit.
# TYPE trizmq_subscriptions_refused_total counter
trizmq_subscriptions_refused_total{socket="ticks",type="PUB"} 4.0
# HELP trizmq_rtt_seconds Heartbeat round trip (PING to PONG), smoothed per peer, averaged over the peers that measured one.
# TYPE trizmq_rtt_seconds gauge
trizmq_rtt_seconds{socket="ticks",type="PUB"} 0.002
# HELP trizmq_rtt_max_seconds The longest last heartbeat round trip among the peers.
# TYPE trizmq_rtt_max_seconds gauge
trizmq_rtt_max_seconds{socket="ticks",type="PUB"} 0.004
"""


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def test_the_exposition_of_a_snapshot_exactly() -> None:
    registry = CollectorRegistry()
    sock = FakeSocket(PUB_STATS)
    assert trizmq.metrics.register(sock, registry, name="ticks") == "ticks"
    assert exposition(registry) == EXPECTED


def test_per_peer_series_name_each_peer_once() -> None:
    registry = CollectorRegistry()
    peer = PeerStats("inproc://jobs", messages_sent=4, queued_out=1, rtt=None)
    sock = FakeSocket(SocketStats("PUSH", messages_sent=8, peers=(peer, peer)))
    trizmq.metrics.register(sock, registry, name="jobs", peers=True)
    lines = [
        line for line in exposition(registry).splitlines() if line.startswith("trizmq_peer_")
    ]
    sent = [line for line in lines if line.startswith("trizmq_peer_messages_sent_total")]
    assert sent == [
        'trizmq_peer_messages_sent_total{peer="inproc://jobs",socket="jobs",type="PUSH"} 4.0',
        'trizmq_peer_messages_sent_total{peer="inproc://jobs#2",socket="jobs",type="PUSH"} 4.0',
    ]
    depth = [line for line in lines if line.startswith("trizmq_peer_queue_depth")]
    assert depth == [
        'trizmq_peer_queue_depth{direction="out",peer="inproc://jobs",socket="jobs",type="PUSH"}'
        " 1.0",
        'trizmq_peer_queue_depth{direction="in",peer="inproc://jobs",socket="jobs",type="PUSH"}'
        " 0.0",
        'trizmq_peer_queue_depth{direction="out",peer="inproc://jobs#2",socket="jobs",'
        'type="PUSH"} 1.0',
        'trizmq_peer_queue_depth{direction="in",peer="inproc://jobs#2",socket="jobs",'
        'type="PUSH"} 0.0',
    ]
    # no RTT measured: no RTT series, per peer or per socket
    assert not [line for line in lines if "rtt" in line]
    assert "trizmq_rtt_seconds{" not in exposition(registry)


def test_without_peers_no_peer_family_is_served() -> None:
    registry = CollectorRegistry()
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.register(sock, registry)
    assert "trizmq_peer_" not in exposition(registry)


def test_the_default_name_is_the_type_and_a_number() -> None:
    registry = CollectorRegistry()
    sock = FakeSocket(PUB_STATS)
    name = trizmq.metrics.register(sock, registry)
    assert name.startswith("pub-") and name[4:].isdigit()
    assert f'trizmq_peers{{socket="{name}",type="PUB"}} 2.0' in exposition(registry)


def test_registering_twice_is_an_error_and_adds_no_series() -> None:
    registry = CollectorRegistry()
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.register(sock, registry, name="a")
    with pytest.raises(ValueError, match="already registered in this registry as 'a'"):
        trizmq.metrics.register(sock, registry, name="b")
    text = exposition(registry)
    assert text.count("trizmq_peers{") == 1
    assert 'socket="b"' not in text


def test_a_name_in_use_is_an_error() -> None:
    registry = CollectorRegistry()
    one, two = FakeSocket(PUB_STATS), FakeSocket(PUB_STATS)
    trizmq.metrics.register(one, registry, name="feed")
    with pytest.raises(ValueError, match="already named 'feed'"):
        trizmq.metrics.register(two, registry, name="feed")
    one.closed = True  # a closed socket's name is free again
    trizmq.metrics.register(two, registry, name="feed")
    assert exposition(registry).count("trizmq_peers{") == 1


def test_a_closed_socket_cannot_be_registered() -> None:
    sock = FakeSocket(PUB_STATS, closed=True)
    with pytest.raises(ValueError, match="is closed"):
        trizmq.metrics.register(sock, CollectorRegistry())


def test_a_closed_socket_leaves_the_next_scrape() -> None:
    registry = CollectorRegistry()
    stays, goes = FakeSocket(PUB_STATS), FakeSocket(PUB_STATS)
    trizmq.metrics.register(stays, registry, name="stays")
    trizmq.metrics.register(goes, registry, name="goes")
    assert 'socket="goes"' in exposition(registry)
    goes.closed = True
    text = exposition(registry)
    assert 'socket="goes"' not in text
    assert 'socket="stays"' in text
    assert goes.calls == 1  # a closed socket is not even asked


def test_a_socket_that_refuses_its_snapshot_is_left_out() -> None:
    class Closing(FakeSocket):
        def stats(self) -> SocketStats:
            raise trio.ClosedResourceError("closed meanwhile")

    registry = CollectorRegistry()
    sock = Closing(PUB_STATS)
    trizmq.metrics.register(sock, registry, name="closing")
    assert 'socket="closing"' not in exposition(registry)


def test_unregister() -> None:
    registry = CollectorRegistry()
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.register(sock, registry, name="x")
    assert trizmq.metrics.unregister(sock, registry) is True
    assert trizmq.metrics.unregister(sock, registry) is False
    assert 'socket="x"' not in exposition(registry)


def test_one_collector_per_registry() -> None:
    registry = CollectorRegistry()
    assert trizmq.metrics.collector(registry) is trizmq.metrics.collector(registry)
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.register(sock, registry)
    trizmq.metrics.register_all(registry)
    trizmq.metrics.register_all(registry)  # idempotent
    assert exposition(registry).count("# TYPE trizmq_peers gauge") == 1


def test_the_zap_statuses_are_apart_from_the_causes() -> None:
    stats = attrs.evolve(
        PUB_STATS,
        handshake_failure_causes={"zap": 3, "zap_400": 2, "zap_500": 1, "timeout": 1},
    )
    registry = CollectorRegistry()
    sock = FakeSocket(stats)
    trizmq.metrics.register(sock, registry, name="s")
    text = exposition(registry)
    assert 'trizmq_handshake_failures_total{cause="zap",socket="s",type="PUB"} 3.0' in text
    assert 'cause="zap_400"' not in text
    assert 'trizmq_zap_refusals_total{socket="s",status="400",type="PUB"} 2.0' in text
    assert 'trizmq_zap_refusals_total{socket="s",status="500",type="PUB"} 1.0' in text


# -- snapshots from another thread -------------------------------------------------------
def test_a_scrape_from_another_thread_takes_the_snapshot_in_the_sockets_run() -> None:
    """The socket's trio run takes its snapshot; the scraping thread waits for it."""
    registry = CollectorRegistry()
    seen: list[int] = []

    class InRun(FakeSocket):
        def stats(self) -> SocketStats:
            seen.append(threading.get_ident())
            return super().stats()

    ready = threading.Event()
    stop = trio.Event()
    holder: dict[str, object] = {}

    async def run() -> None:
        token = trio.lowlevel.current_trio_token()
        sock = InRun(attrs.evolve(PUB_STATS, messages_sent=5), trio_token=token)
        holder["sock"], holder["ident"], holder["stop"] = sock, threading.get_ident(), stop
        holder["token"] = token
        ready.set()
        with trio.fail_after(60):
            await stop.wait()

    thread = threading.Thread(target=trio.run, args=(run,))
    thread.start()
    try:
        assert ready.wait(60)
        trizmq.metrics.register(holder["sock"], registry, name="far")  # type: ignore[arg-type]
        text = exposition(registry)
        assert 'trizmq_messages_sent_total{socket="far",type="PUB"} 5.0' in text
        assert seen == [holder["ident"]]
    finally:
        token = holder["token"]
        token.run_sync_soon(stop.set)  # type: ignore[attr-defined]
        thread.join(60)
    # the run has ended: its socket is left out, at once
    assert 'socket="far"' not in exposition(registry)


def test_a_run_too_busy_to_answer_is_left_out_of_that_scrape() -> None:
    from trizmq.metrics import _snapshot

    ready, release = threading.Event(), threading.Event()
    holder: dict[str, object] = {}

    async def run() -> None:
        holder["token"] = trio.lowlevel.current_trio_token()
        ready.set()
        release.wait(60)  # blocks the run: no job of another thread runs meanwhile
        await trio.lowlevel.checkpoint()

    thread = threading.Thread(target=trio.run, args=(run,))
    thread.start()
    try:
        assert ready.wait(60)
        sock = FakeSocket(PUB_STATS, trio_token=holder["token"])
        assert _snapshot.take([sock], timeout=0.2) == [None]
    finally:
        release.set()
        thread.join(60)


# -- serve -------------------------------------------------------------------------------
def test_serve_answers_a_scrape_and_closes() -> None:
    registry = CollectorRegistry()
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.register(sock, registry, name="ticks")
    with trizmq.metrics.serve(0, registry=registry) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(server.url, timeout=30) as response:
            assert response.read().decode() == EXPECTED
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.port), 5):
        pass
    server.close()  # idempotent


def test_serve_on_a_port_in_use_names_the_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError) as info:
            trizmq.metrics.serve(port, registry=CollectorRegistry())
    assert info.value.errno == errno.EADDRINUSE
    assert f"127.0.0.1:{port}" in str(info.value)
    assert "in use" in str(info.value)


def test_drops_helper_is_every_reason() -> None:
    assert drops(hwm=1)["hwm"] == 1 and set(drops()) == set(PUB_STATS.drops)
