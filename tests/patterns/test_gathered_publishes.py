"""A publisher's gathered messages (``PubStrategy.gather``): messages sent one at a
time to stream subscribers of everything (one or several) are held back and queued as one run,
and whatever would change where they go, or needs them queued, queues them first. The
runtime's side (routing them before trio's loop waits) is in
``tests/nursery/test_gathered_publishes.py``."""

from __future__ import annotations

from typing import Any

from trizmq.nursery.peers import Peer
from trizmq.patterns.sockets.pubsub import GATHER_LIMIT, PubStrategy, XPubStrategy
from trizmq.zmtp.events import Cancel, Subscribe
from trizmq.zmtp.queue_items import Fanout

from .test_send_batches import peer, queued, strategy


def subscribed(s: Any, p: Peer, topic: bytes = b"") -> None:
    p.in_pipe.put(Subscribe(topic))
    s.incoming(p)


def gathering(cls: type[PubStrategy] = PubStrategy, count: int = 2, hwm: int = 0) -> Any:
    """A publisher of ``count`` subscribers of everything that gathers, with the
    calls of its ``gather`` hook counted in ``s.calls``."""
    peers = [peer(hwm) for _ in range(count)]
    s = strategy(cls, *peers)
    for p in peers:
        subscribed(s, p)
    s.calls = 0

    def hook() -> None:
        s.calls += 1

    s.gather = hook
    s.peers = peers
    return s


MESSAGES = [[b"m%d" % i] for i in range(5)]


def test_several_subscribers_gather_and_the_hook_is_called_once() -> None:
    s = gathering()
    for msg in MESSAGES:
        assert s.send(msg) is True
    assert s.gathered == MESSAGES
    assert s.calls == 1
    assert all(not p.out_pipe for p in s.peers)
    # handed over for routing as a batch, which queues one run to each
    msgs = s.take_gathered()
    assert msgs == MESSAGES and s.gathered == []
    assert s.send_batch(msgs, 0) == len(MESSAGES)
    for p in s.peers:
        items = list(p.out_pipe._items)
        # a run: the first and last wrapped, the middle the sender's own lists
        assert items[0].__class__ is Fanout and items[0].run is not None
        assert items[-1].__class__ is Fanout and items[-1].index == len(MESSAGES) - 1
        assert items[1:-1] == MESSAGES[1:-1]
        assert queued(p) == MESSAGES
    # the next message gathers afresh, and calls the hook again
    s.send([b"again"])
    assert s.calls == 2


def test_one_subscriber_gathers_too() -> None:
    one = gathering(count=1)
    one.send([b"x"])
    one.send([b"y"])
    assert one.gathered == [[b"x"], [b"y"]] and one.calls == 1
    assert not one.peers[0].out_pipe
    assert one.send_batch(one.take_gathered(), 0) == 2
    items = list(one.peers[0].out_pipe._items)
    assert items[0].__class__ is Fanout and items[0].run is not None
    assert queued(one.peers[0]) == [[b"x"], [b"y"]]


def test_no_hook_queues_at_once() -> None:
    one = gathering(count=1)
    one.gather = None
    one.send([b"x"])
    assert one.gathered == [] and one.calls == 0
    assert queued(one.peers[0]) == [[b"x"]]
    plain = gathering()
    plain.gather = None
    plain.send([b"x"])
    assert plain.gathered == []
    assert [queued(p) for p in plain.peers] == [[[b"x"]], [[b"x"]]]


def test_a_topic_subscription_means_no_gathering() -> None:
    s = gathering()
    # the first peer holds b"t" instead of everything: matched message by message
    s.peers[0].in_pipe.put(Cancel(b""))
    subscribed(s, s.peers[0], b"t")
    s.send([b"tx"])
    s.send([b"ux"])
    assert s.gathered == []
    assert [queued(p) for p in s.peers] == [[[b"tx"]], [[b"tx"], [b"ux"]]]


def test_an_inproc_subscriber_means_no_gathering() -> None:
    stream, inproc = peer(0), peer(0, inproc=True)
    s = strategy(PubStrategy, stream, inproc)
    subscribed(s, stream)
    subscribed(s, inproc)
    s.gather = lambda: None
    s.send([b"x"])
    assert s.gathered == []
    assert [queued(p) for p in (stream, inproc)] == [[[b"x"]], [[b"x"]]]


def test_the_limit_queues_them() -> None:
    s = gathering()
    for i in range(GATHER_LIMIT - 1):
        s.send([b"%d" % i])
    assert len(s.gathered) == GATHER_LIMIT - 1
    s.send([b"last"])
    assert s.gathered == []
    expected = [[b"%d" % i] for i in range(GATHER_LIMIT - 1)] + [[b"last"]]
    assert [queued(p) for p in s.peers] == [expected, expected]


def test_a_batch_queues_them_first() -> None:
    s = gathering()
    s.send([b"one"])
    s.send([b"two"])
    assert s.send_batch([[b"three"], [b"four"]], 0) == 2
    expected = [[b"one"], [b"two"], [b"three"], [b"four"]]
    assert [queued(p) for p in s.peers] == [expected, expected]


def test_the_statistics_count_the_drops_of_gathered_messages() -> None:
    s = gathering(hwm=3)
    for msg in MESSAGES:
        s.send(msg)
    stats = s.statistics()
    assert s.gathered == []
    assert stats["dropped"] == 2 * (len(MESSAGES) - 3)
    assert [queued(p) for p in s.peers] == [MESSAGES[:3], MESSAGES[:3]]


def test_a_subscription_change_queues_them_to_the_peers_they_were_sent_to() -> None:
    s = gathering()
    s.send([b"before"])
    late = peer(0)
    s.attach(late)
    s.connected(late)
    subscribed(s, late)
    # the runtime finds the subscriptions changed: they were queued, not handed over
    assert s.take_gathered() == []
    assert [queued(p) for p in s.peers] == [[[b"before"]], [[b"before"]]]
    assert queued(late) == []
    # and the send after the change reaches all three
    s.send([b"after"])
    s.flush()
    assert [queued(p) for p in [*s.peers, late]] == [[[b"after"]]] * 3


def test_a_cancel_queues_them_before_it_applies() -> None:
    s = gathering()
    s.send([b"before"])
    s.peers[0].in_pipe.put(Cancel(b""))
    s.incoming(s.peers[0])
    s.send([b"after"])  # the send refreshes the routing, queueing what was gathered
    s.flush()
    assert queued(s.peers[0]) == [[b"before"]]
    assert queued(s.peers[1]) == [[b"before"], [b"after"]]


def test_a_departing_peer_gets_what_was_sent_while_it_was_there() -> None:
    s = gathering(count=3)
    s.send([b"x"])
    s.detach(s.peers[0])
    assert s.gathered == []
    assert [queued(p) for p in s.peers] == [[[b"x"]]] * 3


def test_flush_with_nothing_gathered_does_nothing() -> None:
    s = gathering()
    s.flush()
    assert s.take_gathered() == []
    assert all(not p.out_pipe for p in s.peers)


def test_xpub_gathers_too() -> None:
    s = gathering(XPubStrategy)
    s.send([b"x"])
    s.send([b"y"])
    assert s.gathered == [[b"x"], [b"y"]]
    s.flush()
    assert [queued(p) for p in s.peers] == [[[b"x"], [b"y"]]] * 2
