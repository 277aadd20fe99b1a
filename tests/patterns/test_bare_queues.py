"""Which socket types let a connection queue one-frame messages as their bytes
(``SocketStrategy.takes_bare_messages``), as data: exactly those whose input only the
base class's receive reads; and that receive hands every message out as a list."""

from __future__ import annotations

from trizmq.nursery.pipe import Pipe
from trizmq.patterns.sockets import STRATEGIES

BARE = {"CHANNEL", "CLIENT", "DEALER", "DISH", "GATHER", "PAIR", "PULL", "SUB", "XSUB"}


def test_the_types_that_take_bare_messages() -> None:
    # every other type reads its queues itself (envelopes, routing ids, eager
    # subscriptions) or receives nothing
    assert {name for name, cls in STRATEGIES.items() if cls.takes_bare_messages()} == BARE


def test_the_one_peer_shortcut_hands_out_lists() -> None:
    pipe = Pipe(10)
    pipe.extend([b"one", [b"two", b"frames"], b""])
    assert pipe.poll_message() == [b"one"]
    assert pipe.poll_message() == [b"two", b"frames"]
    assert pipe.poll_message() == [b""]
    assert pipe.poll_message() is None
