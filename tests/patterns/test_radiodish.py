"""RADIO and DISH routing strategies with fake peers (no I/O, no runtime)."""

from __future__ import annotations

from typing import Any

import pytest

from trizmq.nursery.pipe import Pipe
from trizmq.patterns.sockets.radiodish import (
    DishStrategy,
    RadioStrategy,
    check_group,
    is_datagram,
)
from trizmq.patterns.sockets.table import options_for
from trizmq.zmtp.events import Join, Leave, Ping, Subscribe


class FakePeer:
    def __init__(self, hwm: int = 0, kind: str = "stream", connected: bool = True) -> None:
        self.out_pipe = Pipe(hwm)
        self.in_pipe = Pipe(hwm)
        self.gone = False
        self.connected = connected
        self.attached = False
        self.kind = kind

    @property
    def shares_wire(self) -> bool:
        return self.kind == "stream"

    @property
    def carries_commands(self) -> bool:
        return self.kind != "datagram"

    def sent(self) -> list[Any]:
        return self.out_pipe.drain()


class Wakes:
    def __init__(self) -> None:
        self.readable = 0
        self.writable = 0

    def on_readable(self) -> None:
        self.readable += 1

    def on_writable(self) -> None:
        self.writable += 1


def radio(**options: Any) -> RadioStrategy:
    wakes = Wakes()
    return RadioStrategy(
        options_for("RADIO", options), wakes.on_readable, wakes.on_writable
    )


def dish(**options: Any) -> DishStrategy:
    wakes = Wakes()
    return DishStrategy(options_for("DISH", options), wakes.on_readable, wakes.on_writable)


def joined(strategy: RadioStrategy, peer: FakePeer, *items: Any) -> None:
    for item in items:
        peer.in_pipe.put(item)
    strategy.incoming(peer)


# -- groups -------------------------------------------------------------------------


def test_check_group() -> None:
    assert check_group(b"") == b""
    assert check_group("caf\u00e9") == "caf\u00e9".encode()
    assert check_group(bytearray(b"g")) == b"g"
    assert check_group(memoryview(b"g" * 255)) == b"g" * 255
    with pytest.raises(ValueError, match="255"):
        check_group(b"g" * 256)
    with pytest.raises(ValueError, match="NUL"):
        check_group(b"a\x00b")
    with pytest.raises(TypeError):
        check_group(5)  # type: ignore[arg-type]


def test_is_datagram() -> None:
    assert is_datagram(FakePeer(kind="datagram"))
    assert not is_datagram(FakePeer())
    assert not is_datagram(object())


# -- RADIO --------------------------------------------------------------------------


def test_radio_flags() -> None:
    assert RadioStrategy.can_send and not RadioStrategy.can_recv
    assert RadioStrategy.eager and RadioStrategy.wants_commands
    with pytest.raises(NotImplementedError):
        radio().recv()


def test_radio_sends_only_to_joined_peers() -> None:
    r = radio()
    a, b, c = FakePeer(), FakePeer(), FakePeer()
    for peer in (a, b, c):
        r.attach(peer)
    joined(r, a, Join(b"news"))
    joined(r, b, Join(b"news"), Join(b"sport"))
    assert r.send([b"news", b"n1"]) is True
    assert r.send([b"sport", b"s1"]) is True
    assert r.send([b"weather", b"w1"]) is True
    assert r.send([b"new", b"prefix is not a match"]) is True
    assert a.sent() == [[b"news", b"n1"]]
    assert b.sent() == [[b"news", b"n1"], [b"sport", b"s1"]]
    assert c.sent() == []
    assert r.groups_of(b) == {b"news", b"sport"}


def test_radio_empty_group() -> None:
    r = radio()
    a = FakePeer()
    r.attach(a)
    joined(r, a, Join(b""))
    r.send([b"", b"x"])
    r.send([b"g", b"y"])
    assert a.sent() == [[b"", b"x"]]


def test_radio_leave() -> None:
    r = radio()
    a = FakePeer()
    r.attach(a)
    joined(r, a, Join(b"g"), Leave(b"g"))
    r.send([b"g", b"x"])
    assert a.sent() == []
    assert r.statistics()["groups"] == 0


def test_radio_joins_are_counted_like_libzmq_multimap() -> None:
    r = radio()
    a = FakePeer()
    r.attach(a)
    joined(r, a, Join(b"g"), Join(b"g"), Leave(b"g"))
    r.send([b"g", b"1"])
    joined(r, a, Leave(b"g"))
    r.send([b"g", b"2"])
    assert a.sent() == [[b"g", b"1"]]


def test_radio_leave_of_unknown_group_is_ignored() -> None:
    r = radio()
    a = FakePeer()
    r.attach(a)
    joined(r, a, Leave(b"never"), Join(b"g"))
    r.send([b"g", b"x"])
    assert a.sent() == [[b"g", b"x"]]


def test_radio_discards_dish_messages_and_other_commands() -> None:
    r = radio()
    a = FakePeer()
    r.attach(a)
    joined(r, a, [b"data"], Subscribe(b"g"), Ping(0.0, b""), [b"\x01g"])
    assert not a.in_pipe
    r.send([b"g", b"x"])
    assert a.sent() == []


def test_radio_handles_commands_queued_before_attach() -> None:
    r = radio()
    a = FakePeer()
    a.in_pipe.put(Join(b"g"))
    r.attach(a)
    r.send([b"g", b"x"])
    assert a.sent() == [[b"g", b"x"]]


def test_radio_drops_for_a_full_peer_never_blocks() -> None:
    r = radio()
    slow, fast = FakePeer(hwm=1), FakePeer(hwm=10)
    for peer in (slow, fast):
        r.attach(peer)
        joined(r, peer, Join(b"g"))
    for i in range(3):
        assert r.send([b"g", b"%d" % i]) is True
    assert slow.sent() == [[b"g", b"0"]]
    assert len(fast.sent()) == 3
    assert r.statistics()["dropped"] == 2


def test_radio_send_with_no_peer_succeeds() -> None:
    assert radio().send([b"g", b"x"]) is True


def test_radio_rejects_malformed_internal_message() -> None:
    with pytest.raises(ValueError):
        radio().send([b"just a body"])


def test_radio_disconnect_forgets_groups_until_rejoin() -> None:
    r = radio()
    a = FakePeer()
    r.attach(a)
    joined(r, a, Join(b"g"))
    r.disconnected(a)
    r.send([b"g", b"lost"])
    assert a.sent() == []
    r.connected(a)
    joined(r, a, Join(b"g"))  # the DISH replays
    r.send([b"g", b"x"])
    assert a.sent() == [[b"g", b"x"]]


def test_radio_detach() -> None:
    r = radio()
    a, b = FakePeer(), FakePeer()
    r.attach(a)
    r.attach(b)
    joined(r, a, Join(b"g"))
    joined(r, b, Join(b"g"))
    r.detach(a)
    joined(r, a, Join(b"h"))  # late commands from a detached peer are ignored
    r.send([b"g", b"x"])
    r.send([b"h", b"y"])
    assert a.sent() == []
    assert b.sent() == [[b"g", b"x"]]
    assert r.statistics() == {
        "peers": 1,
        "groups": 1,
        "dropped": 0,
        "joins": 1,
        "joins_refused": 0,
    }
    r.detach(b)
    assert r.statistics() == {
        "peers": 0,
        "groups": 0,
        "dropped": 0,
        "joins": 0,
        "joins_refused": 0,
    }


def test_radio_datagram_peer_gets_every_message() -> None:
    r = radio()
    udp, dish_peer = FakePeer(kind="datagram"), FakePeer()
    r.attach(udp)
    r.attach(dish_peer)
    joined(r, dish_peer, Join(b"a"))
    r.send([b"a", b"1"])
    r.send([b"b", b"2"])
    assert udp.sent() == [[b"a", b"1"], [b"b", b"2"]]
    assert dish_peer.sent() == [[b"a", b"1"]]
    r.detach(udp)
    r.send([b"a", b"3"])
    assert udp.sent() == []


def test_radio_datagram_peer_full_drops() -> None:
    r = radio()
    udp = FakePeer(hwm=1, kind="datagram")
    r.attach(udp)
    r.send([b"a", b"1"])
    r.send([b"a", b"2"])
    assert udp.sent() == [[b"a", b"1"]]
    assert r.statistics()["dropped"] == 1


# -- DISH ---------------------------------------------------------------------------


def test_dish_flags() -> None:
    assert DishStrategy.can_recv and not DishStrategy.can_send
    assert not DishStrategy.eager and not DishStrategy.wants_commands
    with pytest.raises(NotImplementedError):
        dish().send([b"g", b"x"])


def test_dish_join_and_leave_send_commands_to_connected_peers() -> None:
    d = dish()
    a, b, pending = FakePeer(), FakePeer(), FakePeer(connected=False)
    for peer in (a, b, pending):
        d.attach(peer)
    d.join(b"g")
    d.join("h")
    d.leave(b"g")
    expected = [Join(b"g"), Join(b"h"), Leave(b"g")]
    assert a.sent() == expected
    assert b.sent() == expected
    assert pending.sent() == []
    # the pending peer connects: it gets the current set only
    pending.connected = True
    d.connected(pending)
    assert pending.sent() == [Join(b"h")]


def test_dish_join_twice_and_leave_unjoined_are_errors() -> None:
    d = dish()
    a = FakePeer()
    d.attach(a)
    d.join(b"g")
    with pytest.raises(ValueError, match="already joined"):
        d.join(b"g")
    with pytest.raises(ValueError, match="not joined"):
        d.leave(b"other")
    with pytest.raises(ValueError):
        d.join(b"x" * 256)
    with pytest.raises(ValueError):
        d.leave(b"x" * 256)
    assert a.sent() == [Join(b"g")]


def test_dish_replays_joins_on_connection_in_order() -> None:
    d = dish()
    d.join(b"b")
    d.join(b"a")
    d.join(b"c")
    d.leave(b"a")
    peer = FakePeer()
    d.attach(peer)
    d.connected(peer)
    assert peer.sent() == [Join(b"b"), Join(b"c")]


def test_dish_disconnect_drops_queued_commands_then_replays() -> None:
    d = dish()
    peer = FakePeer()
    d.attach(peer)
    d.connected(peer)
    d.join(b"g")
    d.join(b"h")
    d.leave(b"g")
    peer.connected = False
    d.disconnected(peer)
    assert not peer.out_pipe
    d.join(b"k")  # not sent while disconnected
    assert not peer.out_pipe
    peer.connected = True
    d.connected(peer)
    assert peer.sent() == [Join(b"h"), Join(b"k")]


def test_dish_sends_no_commands_to_datagram_peers() -> None:
    d = dish()
    d.join(b"g")
    udp = FakePeer(kind="datagram")
    d.attach(udp)
    d.connected(udp)
    d.join(b"h")
    d.leave(b"g")
    assert udp.sent() == []


def test_dish_filters_by_joined_groups() -> None:
    d = dish()
    a = FakePeer()
    d.attach(a)
    d.join(b"g")
    for msg in ([b"g", b"1"], [b"other", b"2"], [b"g2", b"3"], [b"g", b"4"]):
        a.in_pipe.put(msg)
    assert d.recv() == [b"g", b"1"]
    assert d.recv() == [b"g", b"4"]
    assert d.recv() is None
    d.leave(b"g")
    a.in_pipe.put([b"g", b"5"])
    assert d.recv() is None


def test_dish_discards_malformed_messages_and_commands() -> None:
    d = dish()
    a = FakePeer()
    d.attach(a)
    d.join(b"g")
    for item in ([b"g"], [b"g", b"x", b"y"], Join(b"g"), [b"g", b"ok"]):
        a.in_pipe.put(item)
    assert d.recv() == [b"g", b"ok"]
    assert d.recv() is None


def test_dish_fair_queues() -> None:
    d = dish()
    a, b = FakePeer(), FakePeer()
    d.attach(a)
    d.attach(b)
    d.join(b"g")
    for i in range(3):
        a.in_pipe.put([b"g", b"a%d" % i])
        b.in_pipe.put([b"g", b"b%d" % i])
    got = [d.recv() for _ in range(6)]
    assert [m[1] for m in got if m] == [b"a0", b"b0", b"a1", b"b1", b"a2", b"b2"]


def test_dish_reads_a_gone_peer_to_the_end() -> None:
    d = dish()
    a = FakePeer()
    d.attach(a)
    d.join(b"g")
    a.in_pipe.put([b"g", b"last"])
    a.gone = True
    d.detach(a)
    assert d.recv() == [b"g", b"last"]
    assert d.recv() is None
    assert d.statistics()["peers"] == 0


def test_radio_to_dish_through_shared_pipes() -> None:
    """An inproc link: one side's out_pipe is the other's in_pipe."""
    r, d = radio(), dish()
    to_dish, to_radio = Pipe(0), Pipe(0)
    radio_side, dish_side = FakePeer(), FakePeer()
    radio_side.out_pipe, radio_side.in_pipe = to_dish, to_radio
    dish_side.out_pipe, dish_side.in_pipe = to_radio, to_dish
    r.attach(radio_side)
    d.attach(dish_side)
    d.connected(dish_side)
    d.join(b"g")
    r.incoming(radio_side)
    r.send([b"g", b"hello"])
    r.send([b"x", b"filtered at the radio"])
    assert d.recv() == [b"g", b"hello"]
    assert d.recv() is None
