"""A strategy's batch send (``send_batch``, what ``send_many`` routes through) does
what its one-message ``send`` would do message by message: the same messages queued
to the same peers, the same stop at a full pipe, the same drops. The one-peer
shortcuts hand a whole batch to the pipe with one call; these tests hold them to
that, with the runtime's own pipes (their marks and conflation)."""

from __future__ import annotations

from typing import Any

import pytest

from trizmq.nursery.peers import Peer, PeerState, PeerTable
from trizmq.nursery.pipe import ConflatePipe, Pipe
from trizmq.patterns.sockets.base import SocketStrategy
from trizmq.patterns.sockets.pipeline import PushStrategy
from trizmq.patterns.sockets.pubsub import PubStrategy, XPubStrategy
from trizmq.patterns.sockets.reqrep import DealerStrategy
from trizmq.patterns.sockets.table import options_for
from trizmq.zmtp.events import Subscribe
from trizmq.zmtp.queue_items import Fanout


def peer(hwm: int, *, inproc: bool = False, conflate: bool = False) -> Peer:
    out_pipe = ConflatePipe() if conflate else Pipe(hwm)
    made = Peer("tcp://127.0.0.1:1", out_pipe, Pipe(0), shared_queue=inproc)
    PeerTable.move(made, PeerState.WAITING)
    PeerTable.move(made, PeerState.LIVE)
    return made


def strategy(cls: type[SocketStrategy], *peers: Peer) -> Any:
    made = cls(options_for(cls.socket_type, {}), lambda: None, lambda: None)
    for p in peers:
        made.attach(p)
        made.connected(p)
    return made


def queued(p: Peer) -> list[Any]:
    return [item.frames if isinstance(item, Fanout) else item for item in p.out_pipe.drain()]


def one_by_one(s: Any, msgs: list[list[bytes]], start: int) -> int:
    """What ``send_batch`` must match: ``send`` until it refuses."""
    while start < len(msgs) and s.send(msgs[start]):
        start += 1
    return start


MESSAGES = [[b"m%d" % i] for i in range(6)]


@pytest.mark.parametrize("cls", [PushStrategy, DealerStrategy])
@pytest.mark.parametrize("hwm", [0, 1, 3, 6, 7])
@pytest.mark.parametrize("start", [0, 2])
@pytest.mark.parametrize("waiting", [0, 2])
def test_one_peer_batch_is_sends_one_by_one(
    cls: type[SocketStrategy], hwm: int, start: int, waiting: int
) -> None:
    """With one peer, a batch stops where the peer's mark stops a send (the caller
    waits there), counting the messages already waiting in its pipe."""
    results = []
    for batched in (True, False):
        p = peer(hwm)
        for i in range(waiting):
            p.out_pipe.put([b"old%d" % i])
        s = strategy(cls, p)
        msgs = [list(m) for m in MESSAGES]
        end = s.send_batch(msgs, start) if batched else one_by_one(s, msgs, start)
        results.append((end, queued(p)))
    assert results[0] == results[1]
    end, got = results[0]
    assert got[waiting:] == MESSAGES[start:end]


def test_one_peer_batch_to_a_conflating_pipe_keeps_the_newest() -> None:
    p = peer(0, conflate=True)
    s = strategy(PushStrategy, p)
    assert s.send_batch([list(m) for m in MESSAGES], 1) == len(MESSAGES)
    assert queued(p) == [MESSAGES[-1]]


def test_several_peers_batch_round_robins_as_sends_do() -> None:
    results = []
    for batched in (True, False):
        a, b = peer(2), peer(3)
        s = strategy(PushStrategy, a, b)
        msgs = [list(m) for m in MESSAGES]
        end = s.send_batch(msgs, 0) if batched else one_by_one(s, msgs, 0)
        results.append((end, queued(a), queued(b)))
    assert results[0] == results[1]
    assert results[0][0] == 5  # both full after five: the sixth waits


@pytest.mark.parametrize("cls", [PubStrategy, XPubStrategy])
@pytest.mark.parametrize("hwm", [0, 1, 4])
@pytest.mark.parametrize("inproc", [False, True])
@pytest.mark.parametrize("start", [0, 3])
def test_pub_one_subscriber_batch_is_sends_one_by_one(
    cls: type[SocketStrategy], hwm: int, inproc: bool, start: int
) -> None:
    """A publisher's batch to its one subscriber of everything: queued up to the mark,
    the rest dropped and counted, never a wait; as ``send`` would one by one."""
    results = []
    for batched in (True, False):
        p = peer(hwm, inproc=inproc)
        s = strategy(cls, p)
        p.in_pipe.put(Subscribe(b""))
        s.incoming(p)
        msgs = [list(m) for m in MESSAGES]
        end = s.send_batch(msgs, start) if batched else one_by_one(s, msgs, start)
        results.append((end, queued(p), s.dropped))
    assert results[0] == results[1]
    end, got, dropped = results[0]
    assert end == len(MESSAGES)
    assert got == MESSAGES[start : start + (hwm or len(MESSAGES))]
    assert dropped == len(MESSAGES) - start - len(got)


def test_pub_batch_follows_the_subscriptions_between_batches() -> None:
    """The one-subscriber batch gives way when the subscriptions change: a topic
    subscription filters, a second subscriber shares the batch."""
    a = peer(0)
    s = strategy(PubStrategy, a)
    a.in_pipe.put(Subscribe(b""))
    s.incoming(a)
    assert s.send_batch([[b"x1"], [b"y1"]], 0) == 2
    assert queued(a) == [[b"x1"], [b"y1"]]
    s.subscribed(a, b"", False)
    s.subscribed(a, b"x", True)
    assert s.send_batch([[b"x2"], [b"y2"]], 0) == 2
    assert queued(a) == [[b"x2"]]
    s.subscribed(a, b"", True)
    b = peer(0)
    s.attach(b)
    s.connected(b)
    s.subscribed(b, b"", True)
    assert s.send_batch([[b"x3"], [b"y3"]], 0) == 2
    assert queued(a) == queued(b) == [[b"x3"], [b"y3"]]
