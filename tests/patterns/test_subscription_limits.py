"""What a publisher keeps of its peers' subscriptions is bounded, and given back."""

from __future__ import annotations

import logging
import tracemalloc
from typing import Any

import pytest

from trizmq.nursery.pipe import Pipe
from trizmq.patterns.sockets.pubsub import PubStrategy, XPubStrategy
from trizmq.patterns.sockets.radiodish import RadioStrategy
from trizmq.patterns.sockets.table import options_for
from trizmq.patterns.subscriptions import Distribution
from trizmq.zmtp.events import Join, Subscribe, SubscriptionRefused


class FakePeer:
    def __init__(self) -> None:
        self.out_pipe = Pipe(0)
        self.in_pipe = Pipe(0)
        self.gone = False
        self.connected = True
        self.attached = True
        self.shares_wire = True
        self.carries_commands = True


def strategy(cls: type[Any], **options: Any) -> Any:
    made = cls(options_for(cls.socket_type, options), lambda: None, lambda: None)
    return made


def test_per_peer_count() -> None:
    pub = strategy(PubStrategy, max_subscriptions=3)
    a, b = FakePeer(), FakePeer()
    pub.attach(a)
    pub.attach(b)
    for topic in (b"1", b"2", b"3", b"4", b"5"):
        pub.subscribed(a, topic, True)
    pub.subscribed(b, b"1", True)  # another peer has its own count
    stats = pub.statistics()
    assert stats["subscriptions"] == 4 and stats["subscriptions_refused"] == 2
    pub.subscribed(a, b"1", False)
    pub.subscribed(a, b"6", True)  # room again
    assert pub.subscribers.peer_prefixes(a) == [b"2", b"3", b"6"]


def test_per_peer_bytes_refuse_a_huge_topic() -> None:
    pub = strategy(PubStrategy, max_subscription_bytes=1024)
    peer = FakePeer()
    pub.attach(peer)
    pub.subscribed(peer, b"t" * (10 * 1024 * 1024), True)
    pub.subscribed(peer, b"x" * 1000, True)
    pub.subscribed(peer, b"y" * 100, True)  # 1100 > 1024
    assert pub.subscribers.peer_prefixes(peer) == [b"x" * 1000]
    assert pub.statistics()["subscriptions_refused"] == 2


def test_total_over_all_peers() -> None:
    pub = strategy(PubStrategy, max_subscriptions_total=2)
    a, b = FakePeer(), FakePeer()
    pub.attach(a)
    pub.attach(b)
    pub.subscribed(a, b"1", True)
    pub.subscribed(b, b"1", True)
    pub.subscribed(b, b"2", True)
    assert pub.statistics()["subscriptions"] == 2
    pub.detach(a)
    pub.subscribed(b, b"2", True)
    assert pub.subscribers.peer_prefixes(b) == [b"1", b"2"]


def test_xpub_reports_no_refused_subscription() -> None:
    xpub = strategy(XPubStrategy, max_subscriptions=1)
    peer = FakePeer()
    xpub.attach(peer)
    xpub.subscribed(peer, b"a", True)
    xpub.subscribed(peer, b"b", True)
    assert [xpub.recv(), xpub.recv()] == [[b"\x01a"], None]


@pytest.mark.parametrize("cls", [PubStrategy, XPubStrategy])
def test_a_subscription_refused_at_its_header_counts_as_any_refusal(
    caplog: pytest.LogCaptureFixture, cls: type[Any]
) -> None:
    """The connection refused a topic over max_subscription_bytes unread: the strategy
    counts and logs it as it would the topic, keeps the peer, and (XPUB) reports
    nothing of it."""
    caplog.set_level(logging.WARNING, logger="trizmq")
    pub = strategy(cls)
    peer = FakePeer()
    pub.attach(peer)
    peer.in_pipe.put(SubscriptionRefused(10 * 1024 * 1024))
    peer.in_pipe.put(Subscribe(b"ok"))
    peer.in_pipe.put(SubscriptionRefused(100 * 1024 * 1024))
    pub.incoming(peer)
    stats = pub.statistics()
    assert stats["subscriptions"] == 1 and stats["subscriptions_refused"] == 2
    assert stats["peers"] == 1
    [line] = [r.getMessage() for r in caplog.records if "subscriptions refused" in r.getMessage()]
    assert "max_subscription_bytes (4194304)" in line
    if cls is XPubStrategy:
        assert [pub.recv(), pub.recv()] == [[b"\x01ok"], None]


def test_a_refusal_from_a_departed_peer_is_not_counted() -> None:
    pub = strategy(PubStrategy)
    peer = FakePeer()
    pub.attach(peer)
    pub.detach(peer)
    pub.refused_at_header(peer, 10 * 1024 * 1024)
    assert pub.statistics()["subscriptions_refused"] == 0


def test_radio_joins_are_bounded() -> None:
    radio = strategy(RadioStrategy, max_subscriptions=2)
    peer = FakePeer()
    radio.attach(peer)
    for group in (b"g1", b"g1", b"g2", b"g3"):
        peer.in_pipe.put(Join(group))
    radio.incoming(peer)
    assert radio.groups_of(peer) == {b"g1", b"g2"}
    assert radio.statistics()["joins"] == 2 and radio.statistics()["joins_refused"] == 1
    radio.detach(peer)
    assert radio.statistics()["joins"] == 0


@pytest.mark.parametrize("how", ["remove_peer", "clear_peer"])
def test_memory_is_given_back_when_a_peer_goes(how: str) -> None:
    dist: Distribution[str] = Distribution()
    dist.add_peer("stays")
    dist.add_peer("floods")
    dist.subscribe("stays", b"kept")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(100_000):
            dist.subscribe("floods", b"%016d" % n)
        grown = tracemalloc.get_traced_memory()[0] - before
        getattr(dist, how)("floods")
        left = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown > 10_000_000
    assert left < grown // 20  # the index is rebuilt at its new size
    assert dist.matching(b"kept!") == ["stays"]
    assert dist.total == 1
