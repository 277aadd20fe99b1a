"""Which socket types let a connection queue one-frame messages as their bytes
(``SocketStrategy.takes_bare_messages``), as data: exactly those whose input only the
base class's receive reads, and ROUTER (with STREAM, which receives as it does), whose
own receive makes a bare message ``[routing id, frame]``; the base receive hands
every message out as a list, and its
single-frame form (``recv_item``, what ``Socket.recv`` takes) hands a bare message out
as its bytes, with the same fair queue and the same filter."""

from __future__ import annotations

from trizmq.nursery.pipe import Pipe
from trizmq.patterns.sockets import SOCKET_TYPES
from trizmq.zmtp.events import Subscribe

from .test_pubsub_strategies import FakePeer, sub

BARE = {
    "CHANNEL",
    "CLIENT",
    "DEALER",
    "DISH",
    "GATHER",
    "PAIR",
    "PULL",
    "ROUTER",
    "STREAM",
    "SUB",
    "XSUB",
}


def test_the_types_that_take_bare_messages() -> None:
    # every other type reads its queues itself (envelopes, eager subscriptions) or
    # receives nothing
    bare = {name for name, row in SOCKET_TYPES.items() if row.strategy.takes_bare_messages()}
    assert bare == BARE


def test_the_one_peer_shortcut_hands_out_lists() -> None:
    pipe = Pipe(10)
    pipe.extend([b"one", [b"two", b"frames"], b""])
    assert pipe.poll_message() == [b"one"]
    assert pipe.poll_message() == [b"two", b"frames"]
    assert pipe.poll_message() == [b""]
    assert pipe.poll_message() is None


def test_the_one_peer_shortcut_of_a_single_frame_receive_keeps_bytes() -> None:
    pipe = Pipe(10)
    pipe.extend([b"one", Subscribe(b"x"), [b"two", b"frames"], b""])
    assert pipe.poll_item() == b"one"
    assert pipe.poll_item() == [b"two", b"frames"]  # the command before it dropped
    assert pipe.poll_item() == b""
    assert pipe.poll_item() is None


def test_a_single_frame_receive_takes_bare_messages_as_they_are() -> None:
    # two peers: no one-peer shortcut, the fair queue alternates between them
    a, b = FakePeer("a"), FakePeer("b")
    s = sub(a, b)
    s.subscribe(b"")
    a.in_pipe.extend([b"a1", [b"a2", b"more"]])
    b.in_pipe.extend([b"b1", b"b2"])
    got = []
    while (item := s.recv_item()) is not None:
        got.append(item)
    assert got == [b"a1", b"b1", [b"a2", b"more"], b"b2"]
    # and recv, from the same queues, still hands out lists
    a.in_pipe.extend([b"a3"])
    assert s.recv() == [b"a3"]
    assert s.recv() is None


def test_a_single_frame_receive_filters_bare_messages_by_subscription() -> None:
    p = FakePeer("p")
    s = sub(p)
    s.subscribe(b"a")
    assert not s.accepts_all  # every message goes through accept
    p.in_pipe.extend([b"a1", b"b1", [b"b2", b"x"], [b"a2", b"x"], b"a3"])
    got = []
    while (item := s.recv_item()) is not None:
        got.append(item)
    assert got == [b"a1", [b"a2", b"x"], b"a3"]
    # everything subscribed, one peer: the shortcut takes over, bytes still as they are
    s.subscribe(b"")
    assert s.take_item == p.in_pipe.poll_item
    p.in_pipe.extend([b"b3", [b"b4", b"y"]])
    assert s.take_item() == b"b3"
    assert s.take_item() == [b"b4", b"y"]
