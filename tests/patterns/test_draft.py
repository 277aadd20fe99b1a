"""CLIENT/SERVER, SCATTER/GATHER, CHANNEL and PEER strategies with fake peers."""

from __future__ import annotations

from typing import Any

import pytest

from trizmq._errors import HostUnreachable
from trizmq.nursery.pipe import Pipe
from trizmq.patterns.sockets.base import SocketStrategy
from trizmq.patterns.sockets.draft import (
    ChannelStrategy,
    ClientStrategy,
    GatherStrategy,
    PeerStrategy,
    ScatterStrategy,
    ServerStrategy,
    check_single_part,
    pack_routing_id,
    unpack_routing_id,
)
from trizmq.patterns.sockets.table import options_for
from trizmq.zmtp.events import Ping


class FakePeer:
    def __init__(self, hwm: int = 0) -> None:
        self.out_pipe = Pipe(hwm)
        self.in_pipe = Pipe(hwm)
        self.gone = False
        self.connected = True
        self.attached = False
        self.kind = "stream"

    def sent(self) -> list[Any]:
        return self.out_pipe.drain()


def make(cls: type[SocketStrategy], **options: Any) -> Any:
    return cls(options_for(cls.socket_type, options), lambda: None, lambda: None)


# -- helpers ------------------------------------------------------------------------


def test_check_single_part() -> None:
    check_single_part([b"x"])
    with pytest.raises(ValueError, match="CLIENT does not allow multipart"):
        check_single_part([b"a", b"b"], "CLIENT")
    with pytest.raises(ValueError):
        check_single_part([])


def test_routing_id_packing() -> None:
    assert pack_routing_id(1) == b"\x00\x00\x00\x01"
    assert pack_routing_id(0xFFFFFFFF) == b"\xff\xff\xff\xff"
    assert unpack_routing_id(pack_routing_id(123456)) == 123456
    for bad in (0, -1, 2**32):
        with pytest.raises(ValueError):
            pack_routing_id(bad)
    for wrong in (b"\x01", 1.0, True):
        with pytest.raises(TypeError):
            pack_routing_id(wrong)  # type: ignore[arg-type]


def test_flags() -> None:
    assert ClientStrategy.can_send and ClientStrategy.can_recv
    assert ScatterStrategy.can_send and not ScatterStrategy.can_recv
    assert GatherStrategy.can_recv and not GatherStrategy.can_send
    assert ChannelStrategy.can_send and ChannelStrategy.can_recv
    assert ServerStrategy.can_send and ServerStrategy.can_recv
    assert PeerStrategy.can_send and PeerStrategy.can_recv
    types = [
        cls.socket_type
        for cls in (
            ClientStrategy,
            ScatterStrategy,
            GatherStrategy,
            ChannelStrategy,
            ServerStrategy,
            PeerStrategy,
        )
    ]
    assert types == ["CLIENT", "SCATTER", "GATHER", "CHANNEL", "SERVER", "PEER"]
    with pytest.raises(NotImplementedError):
        make(ScatterStrategy).recv()
    with pytest.raises(NotImplementedError):
        make(GatherStrategy).send([b"x"])


# -- CLIENT / SCATTER ---------------------------------------------------------------


@pytest.mark.parametrize("cls", [ClientStrategy, ScatterStrategy])
def test_round_robin_out_and_wait(cls: type[SocketStrategy]) -> None:
    s = make(cls)
    assert s.send([b"x"]) is False  # no peer: wait
    a, b = FakePeer(hwm=2), FakePeer(hwm=2)
    s.attach(a)
    s.attach(b)
    for i in range(4):
        assert s.send([b"%d" % i]) is True
    assert s.send([b"full"]) is False
    assert a.sent() == [[b"0"], [b"2"]]
    assert b.sent() == [[b"1"], [b"3"]]
    s.detach(a)
    assert s.send([b"4"]) is True
    assert b.sent() == [[b"4"]]


@pytest.mark.parametrize("cls", [ClientStrategy, ScatterStrategy, ChannelStrategy])
def test_multipart_send_refused(cls: type[SocketStrategy]) -> None:
    s = make(cls)
    peer = FakePeer()
    s.attach(peer)
    with pytest.raises(ValueError, match="multipart"):
        s.send([b"a", b"b"])
    assert peer.sent() == []


@pytest.mark.parametrize("cls", [ClientStrategy, GatherStrategy, ChannelStrategy])
def test_fair_queue_in_drops_multipart(cls: type[SocketStrategy]) -> None:
    s = make(cls)
    a = FakePeer()
    s.attach(a)
    if cls is not ChannelStrategy:
        b = FakePeer()
        s.attach(b)
        b.in_pipe.put([b"b0"])
    for item in ([b"a0"], [b"x", b"y"], Ping(0.0, b""), [b"a1"], [b""]):
        a.in_pipe.put(item)
    got = []
    while (msg := s.recv()) is not None:
        got.append(msg)
    if cls is ChannelStrategy:
        assert got == [[b"a0"], [b"a1"], [b""]]
    else:
        assert got == [[b"a0"], [b"b0"], [b"a1"], [b""]]


def test_gather_reads_gone_peer_to_the_end() -> None:
    g = make(GatherStrategy)
    a = FakePeer()
    g.attach(a)
    a.in_pipe.put([b"last"])
    a.gone = True
    g.detach(a)
    assert g.recv() == [b"last"]
    assert g.recv() is None
    assert g.statistics()["peers"] == 0


# -- CHANNEL ------------------------------------------------------------------------


def test_channel_exclusive_peer() -> None:
    c = make(ChannelStrategy)
    assert c.send([b"x"]) is False
    a, b = FakePeer(hwm=1), FakePeer()
    assert c.attach(a) is True
    assert c.attach(b) is False
    assert c.attach(a) is True  # re-attaching the same peer is fine
    assert c.send([b"1"]) is True
    assert c.send([b"2"]) is False  # full: wait
    assert a.sent() == [[b"1"]]
    c.detach(a)
    assert c.send([b"3"]) is False
    assert c.attach(b) is True
    assert c.send([b"3"]) is True
    assert b.sent() == [[b"3"]]


# -- SERVER / PEER ------------------------------------------------------------------


@pytest.mark.parametrize("cls", [ServerStrategy, PeerStrategy])
def test_routing_ids_are_assigned_on_attach(cls: type[ServerStrategy]) -> None:
    s = make(cls)
    peers = [FakePeer() for _ in range(5)]
    for peer in peers:
        s.attach(peer)
    ids = [s.routing_id_of(peer) for peer in peers]
    assert len(set(ids)) == 5
    assert all(0 < rid <= 0xFFFFFFFF for rid in ids)
    for peer, rid in zip(peers, ids, strict=True):
        assert s.peer_of(rid) is peer
    # kept across a reconnect of the same queue
    s.disconnected(peers[0])
    s.connected(peers[0])
    assert s.routing_id_of(peers[0]) == ids[0]
    with pytest.raises(ValueError):
        s.routing_id_of(FakePeer())


def test_routing_id_skips_zero_and_ids_in_use() -> None:
    s = make(ServerStrategy)
    s.next_id = 0xFFFFFFFF
    a, b, c = FakePeer(), FakePeer(), FakePeer()
    s.attach(a)
    assert s.routing_id_of(a) == 0xFFFFFFFF
    s.attach(b)
    assert s.routing_id_of(b) == 1  # 0 is skipped after the wrap
    s.next_id = 0xFFFFFFFF  # a's id is in use
    s.attach(c)
    assert s.routing_id_of(c) == 2


@pytest.mark.parametrize("cls", [ServerStrategy, PeerStrategy])
def test_recv_gives_routing_id_and_drops_multipart(cls: type[ServerStrategy]) -> None:
    s = make(cls)
    a, b = FakePeer(), FakePeer()
    s.attach(a)
    s.attach(b)
    ra, rb = s.routing_id_of(a), s.routing_id_of(b)
    a.in_pipe.put([b"x", b"y"])
    a.in_pipe.put([b"from a"])
    b.in_pipe.put(Ping(0.0, b""))
    b.in_pipe.put([b"from b"])
    got = [s.recv(), s.recv(), s.recv()]
    assert got == [[pack_routing_id(ra), b"from a"], [pack_routing_id(rb), b"from b"], None]
    assert s.statistics()["dropped"] == 1


@pytest.mark.parametrize("cls", [ServerStrategy, PeerStrategy])
def test_send_routes_by_id(cls: type[ServerStrategy]) -> None:
    s = make(cls)
    a, b = FakePeer(hwm=1), FakePeer()
    s.attach(a)
    s.attach(b)
    ra, rb = s.routing_id_of(a), s.routing_id_of(b)
    assert s.send([pack_routing_id(rb), b"to b"]) is True
    assert s.send([pack_routing_id(ra), b"to a"]) is True
    assert s.send([pack_routing_id(ra), b"again"]) is False  # full: wait, never drop
    assert a.sent() == [[b"to a"]]
    assert b.sent() == [[b"to b"]]
    unknown = next(i for i in range(1, 10) if i not in (ra, rb))
    with pytest.raises(HostUnreachable, match=str(unknown)):
        s.send([pack_routing_id(unknown), b"nobody"])
    with pytest.raises(ValueError):
        s.send([b"only one frame"])


def test_server_reply_round_trip() -> None:
    s = make(ServerStrategy)
    client = FakePeer()
    s.attach(client)
    client.in_pipe.put([b"request"])
    rid_frame, body = s.recv()
    assert body == b"request"
    assert s.send([rid_frame, b"reply"]) is True
    assert client.sent() == [[b"reply"]]


def test_server_detached_peer_is_unroutable_but_read_to_the_end() -> None:
    s = make(ServerStrategy)
    a = FakePeer()
    s.attach(a)
    rid = s.routing_id_of(a)
    a.in_pipe.put([b"last words"])
    a.gone = True
    s.detach(a)
    with pytest.raises(HostUnreachable):
        s.send([pack_routing_id(rid), b"too late"])
    assert s.recv() == [pack_routing_id(rid), b"last words"]
    assert s.recv() is None
    assert s.statistics() == {"peers": 0, "routes": 0, "dropped": 0}
    with pytest.raises(ValueError):
        s.routing_id_of(a)


def test_server_detach_empty_peer_forgets_it() -> None:
    s = make(ServerStrategy)
    a = FakePeer()
    s.attach(a)
    rid = s.routing_id_of(a)
    a.gone = True
    s.detach(a)
    assert s.peer_of(rid) is None
    assert s.statistics() == {"peers": 0, "routes": 0, "dropped": 0}


def test_peer_connect_peer_hook() -> None:
    """The runtime attaches the connecting peer, then asks for its id at once."""
    p = make(PeerStrategy)
    pending = FakePeer()
    pending.connected = False
    p.attach(pending)
    rid = p.routing_id_of(pending)
    assert p.send([pack_routing_id(rid), b"queued before the connection"]) is True
    assert pending.sent() == [[b"queued before the connection"]]
