"""Tests of the PUB/XPUB/SUB/XSUB routing strategies with stand-in peers and pipes.

The strategies only see duck-typed peers (``out_pipe``, ``in_pipe``, ``kind``,
``gone``, ``connected``), so these tests drive them directly: what each peer's
outgoing pipe holds after a send, what ``recv`` hands out. The routing cache of
PUB (kept between messages) and the ``b""`` shortcut of SUB must never change
what is delivered.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from trizmq.patterns.sockets.pubsub import (
    KEY_LIMIT,
    ROUTES_LIMIT,
    PubStrategy,
    SubStrategy,
    XPubStrategy,
    XSubStrategy,
)
from trizmq.patterns.sockets.reqrep import RouterStrategy
from trizmq.patterns.sockets.table import options_for
from trizmq.zmtp.events import Cancel, Subscribe
from trizmq.zmtp.queue_items import Fanout


class FakePipe:
    """The part of ``trizmq.nursery.pipe.Pipe`` a strategy uses."""

    def __init__(self, hwm: int = 0) -> None:
        self.items: deque[Any] = deque()
        self.hwm = hwm
        #: set by the fair queue; called on the empty-to-non-empty transition, as Pipe does
        self.on_input: Any = None
        #: the counters a strategy touches: refusals at the mark, messages passed, and
        #: the messages it read and did not deliver, with their reasons
        self.refused = 0
        self.passed = 0
        self.discards: list[tuple[str, Any]] = []

    def discarded(self, reason: str, item: Any) -> None:
        self.discards.append((reason, item))

    def _input(self, was_empty: bool) -> None:
        if was_empty and self.items and self.on_input is not None:
            self.on_input()

    @property
    def full(self) -> bool:
        return self.hwm > 0 and len(self.items) >= self.hwm

    def put(self, item: Any) -> None:
        was_empty = not self.items
        self.items.append(item)
        self._input(was_empty)

    def offer(self, item: Any) -> bool:
        if self.full:
            return False
        self.put(item)
        return True

    def offer_many(self, batch: list[Any]) -> int:
        room = self.hwm - len(self.items) if self.hwm else len(batch)
        taken = batch[: max(room, 0)]
        self.extend(taken)
        return len(taken)

    @staticmethod
    def offer_many_each(queues: Any, batch: list[Any]) -> int:
        return sum(len(batch) - queue.offer_many(batch) for queue in queues)

    def take(self, limit: int) -> list[Any]:
        return [self.items.popleft() for _ in range(min(limit, len(self.items)))]

    def extend(self, items: Any) -> None:
        was_empty = not self.items
        self.items.extend(items)
        self._input(was_empty)

    def popleft(self) -> Any:
        return self.items.popleft()

    def poll(self) -> Any:
        return self.items.popleft() if self.items else None

    def poll_message(self) -> Any:
        item = self.poll_item()
        return [item] if isinstance(item, bytes) else item

    def poll_item(self) -> Any:
        while self.items:
            item = self.items.popleft()
            if isinstance(item, (list, bytes)):
                return item
        return None

    def drain(self) -> list[Any]:
        batch = list(self.items)
        self.items.clear()
        return batch

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)


class FakePeer:
    def __init__(self, name: str, kind: str = "stream", hwm: int = 0) -> None:
        self.name = name
        self.kind = kind
        self.out_pipe = FakePipe(hwm)
        self.in_pipe = FakePipe()
        self.gone = False
        self.connected = True

    @property
    def shares_wire(self) -> bool:
        return self.kind == "stream"

    @property
    def carries_commands(self) -> bool:
        return self.kind != "datagram"

    def __repr__(self) -> str:
        return f"<FakePeer {self.name}>"


def frames_of(item: Any) -> list[bytes]:
    return item.frames if isinstance(item, Fanout) else item


def queued(peer: FakePeer) -> list[list[bytes]]:
    """What the peer's writer would send, in order (and empty the pipe)."""
    return [frames_of(item) for item in peer.out_pipe.drain() if not isinstance(item, Subscribe)]


def pub(*peers: Any, cls: type[PubStrategy] = PubStrategy, **options: Any) -> Any:
    strategy = cls(options_for(cls.socket_type, options), lambda: None, lambda: None)
    for peer in peers:
        strategy.attach(peer)
        strategy.connected(peer)
    return strategy


# -- PUB ---------------------------------------------------------------------------


def test_pub_routes_follow_every_subscription_change() -> None:
    a, b, c = FakePeer("a"), FakePeer("b"), FakePeer("c")
    s = pub(a, b, c)
    s.send([b"news"])
    assert [queued(p) for p in (a, b, c)] == [[], [], []]  # nobody subscribed

    s.subscribed(a, b"", True)
    s.subscribed(b, b"news", True)
    s.send([b"news.1"])
    s.send([b"sport.1"])
    assert queued(a) == [[b"news.1"], [b"sport.1"]]
    assert queued(b) == [[b"news.1"]]
    assert queued(c) == []

    # the same topic frame object again and again: the cached route must still
    # follow each change
    topic = b"news"
    s.send([topic, b"1"])
    s.subscribed(b, b"news", False)
    s.send([topic, b"2"])
    s.subscribed(b, b"", True)
    s.send([topic, b"3"])
    s.subscribed(c, b"ne", True)
    s.send([topic, b"4"])
    s.send([b"sport", b"5"])
    assert queued(a) == [[topic, x] for x in (b"1", b"2", b"3", b"4")] + [[b"sport", b"5"]]
    assert queued(b) == [[topic, b"1"], [topic, b"3"], [topic, b"4"], [b"sport", b"5"]]
    assert queued(c) == [[topic, b"4"]]

    s.detach(b)
    s.send([topic, b"6"])
    s.disconnected(c)  # c resends its subscriptions when it reconnects
    s.send([topic, b"7"])
    assert queued(a) == [[topic, b"6"], [topic, b"7"]]
    assert queued(b) == []
    assert queued(c) == [[topic, b"6"]]

    # a new peer holds nothing until it subscribes
    d = FakePeer("d")
    s.attach(d)
    s.send([b"x"])
    s.subscribed(d, b"x", True)
    s.send([b"x"])
    assert queued(a) == [[b"x"], [b"x"]]
    assert queued(d) == [[b"x"]]


def test_pub_one_subscriber_send_follows_every_change() -> None:
    # one subscriber of everything: the route the socket calls is a shortcut to its
    # pipe, which must give way as soon as the subscriptions or the peers change
    a = FakePeer("a", hwm=2)
    s = pub(a)
    s.subscribed(a, b"", True)
    assert s.route([b"m1"])
    assert s.route != s.send  # the shortcut stands in front
    assert s.route([b"m2"])
    assert s.route([b"m3"])  # over a's mark: dropped, never a wait
    assert queued(a) == [[b"m1"], [b"m2"]]
    assert s.dropped == 1
    s.subscribed(a, b"", False)
    s.subscribed(a, b"x", True)
    s.route([b"m4"])
    s.route([b"x5"])
    assert queued(a) == [[b"x5"]]
    s.subscribed(a, b"", True)
    s.route([b"m6"])
    assert s.route != s.send
    b = FakePeer("b")
    s.attach(b)
    s.connected(b)
    s.subscribed(b, b"", True)
    s.route([b"m7"])
    assert s.route == s.send  # two subscribers: the strategy's own send
    assert [frames for frames in queued(a)] == [[b"m6"], [b"m7"]]
    assert queued(b) == [[b"m7"]]
    s.detach(a)
    s.route([b"m8"])
    assert queued(b) == [[b"m8"]]
    s.disconnected(b)  # its subscriptions are gone until it resends them
    s.route([b"m9"])
    assert queued(b) == []


def test_pub_route_cache_with_changing_first_frames() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b)
    s.subscribed(a, b"a", True)
    s.subscribed(b, b"b", True)
    sequence = (b"a1", b"b1", b"a1", b"c", b"", b"ab", b"ba")
    for data in sequence:
        s.send([data])
        s.send([data, b"payload"])
        s.send([b"%s" % data, b"payload"])  # an equal topic built afresh

    def expected(prefix: bytes) -> list[list[bytes]]:
        return [
            msg
            for data in sequence
            if data.startswith(prefix)
            for msg in ([data], [data, b"payload"], [data, b"payload"])
        ]

    assert queued(a) == expected(b"a")
    assert queued(b) == expected(b"b")
    # long topic frames (over the cache key limit) are routed by their content
    long_a, long_b = b"a" * (KEY_LIMIT + 1), b"b" * (KEY_LIMIT + 1)
    for data in (long_a, long_a, long_b, long_a):
        s.send([data, b"p"])
    assert queued(a) == [[long_a, b"p"]] * 3
    assert queued(b) == [[long_b, b"p"]]


def test_pub_route_cache_is_bounded_and_follows_changes() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b)
    s.subscribed(a, b"t", True)
    topics = [b"t%d" % i for i in range(ROUTES_LIMIT * 2 + 3)] + [b"x%d" % i for i in range(9)]
    for topic in topics:
        s.send([topic, b"p"])
    assert len(s._routes) <= ROUTES_LIMIT
    assert [m[0] for m in queued(a)] == [t for t in topics if t.startswith(b"t")]
    assert queued(b) == []
    s.subscribed(b, b"x1", True)
    s.subscribed(a, b"t", False)
    for topic in topics:
        s.send([topic, b"p"])
    assert queued(a) == []
    assert [m[0] for m in queued(b)] == [b"x1"]


def test_pub_everyone_holding_everything_is_uniform() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b)
    s.subscribed(a, b"", True)
    s.subscribed(b, b"", True)
    s.subscribed(b, b"x", True)  # changes nothing: b takes everything anyway
    for data in (b"x", b"y", b""):
        s.send([data])
    assert queued(a) == queued(b) == [[b"x"], [b"y"], [b""]]
    s.subscribed(a, b"", False)
    for data in (b"x", b"y", b""):
        s.send([data])
    assert queued(a) == []
    assert queued(b) == [[b"x"], [b"y"], [b""]]
    s.subscribed(b, b"", False)
    for data in (b"x", b"y", b""):
        s.send([data])
    assert queued(b) == [[b"x"]]


def test_pub_mutable_first_frame_is_routed_by_content() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b)
    s.subscribed(a, b"a", True)
    s.subscribed(b, b"b", True)
    for rest in ([], [b"payload"]):
        frame = bytearray(b"a1")
        s.send([frame, *rest])
        frame[0:1] = b"b"
        s.send([frame, *rest])
        assert len(queued(a)) == 1
        assert len(queued(b)) == 1


def test_pub_shares_one_fanout_per_message() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b)
    s.subscribed(a, b"", True)
    s.subscribed(b, b"", True)
    payload = b"x" * 64
    s.send([payload])
    s.send([payload])
    s.send([payload, b"more"])
    first = list(a.out_pipe.items)
    assert list(b.out_pipe.items) == first  # one object for all stream peers
    assert all(isinstance(item, Fanout) for item in first)
    # a message is a message: sending the same bytes again is encoded again
    assert first[0] is not first[1]
    assert [item.frames for item in first] == [[payload], [payload], [payload, b"more"]]


def test_pub_inproc_subscribers_get_their_own_lists() -> None:
    a, b, c = FakePeer("a"), FakePeer("b", "inproc"), FakePeer("c", "inproc")
    s = pub(a, b, c)
    for peer in (a, b, c):
        s.subscribed(peer, b"", True)
    msg = [b"t", b"data"]
    s.send(msg)
    s.send(msg)
    sent_a = list(a.out_pipe.items)
    sent_b, sent_c = list(b.out_pipe.items), list(c.out_pipe.items)
    assert all(isinstance(item, Fanout) for item in sent_a)
    assert sent_b == sent_c == [msg, msg]
    assert all(item is not msg for item in sent_b + sent_c)
    assert sent_b[0] is not sent_c[0] and sent_b[0] is not sent_b[1]
    # a single subscriber gets the message itself
    s.detach(a)
    s.detach(c)
    s.send(msg)
    assert b.out_pipe.items[-1] is msg


def test_pub_drops_for_a_full_subscriber_only() -> None:
    a, b, c = FakePeer("a", hwm=2), FakePeer("b"), FakePeer("c", "inproc", hwm=1)
    s = pub(a, b, c)
    for peer in (a, b, c):
        s.subscribed(peer, b"", True)
    payload = b"p"
    for _ in range(5):
        assert s.send([payload]) is True
    assert (len(a.out_pipe), len(b.out_pipe), len(c.out_pipe)) == (2, 5, 1)
    assert s.dropped == 3 + 4
    assert s.statistics() == {
        "peers": 3,
        "dropped": 7,
        "subscriptions": 3,
        "subscriptions_refused": 0,
    }
    # a single full subscriber
    s.detach(b)
    s.detach(c)
    s.send([payload])
    assert s.dropped == 8


def test_pub_takes_subscriptions_from_its_peers_pipes() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b)
    a.in_pipe.extend([Subscribe(b"x"), [b"\x01y"], [b"not a subscription", b"2"]])
    s.incoming(a)
    b.in_pipe.put(Subscribe(b""))
    s.incoming(b)
    for data in (b"x1", b"y1", b"z1"):
        s.send([data])
    assert queued(a) == [[b"x1"], [b"y1"]]
    assert queued(b) == [[b"x1"], [b"y1"], [b"z1"]]
    a.in_pipe.extend([Cancel(b"x"), [b"\x00y"]])
    s.incoming(a)
    s.send([b"x2"])
    assert queued(a) == []
    assert queued(b) == [[b"x2"]]


def test_xpub_reports_first_subscribe_and_last_cancel() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b, cls=XPubStrategy)
    s.subscribed(a, b"t", True)
    s.send([b"t1"])
    s.subscribed(b, b"t", True)
    s.subscribed(b, b"", True)
    s.send([b"t2"])
    s.subscribed(a, b"t", False)
    s.send([b"t3"])
    s.detach(b)
    s.send([b"t4"])
    notes = []
    while (msg := s.recv()) is not None:
        notes.append(msg)
    assert notes == [[b"\x01t"], [b"\x01"], [b"\x00t"], [b"\x00"]]
    assert queued(a) == [[b"t1"], [b"t2"]]
    assert queued(b) == [[b"t2"], [b"t3"]]


def test_xpub_verbose_reports_every_subscribe() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b, cls=XPubStrategy, xpub_verbose=True)
    s.subscribed(a, b"t", True)
    s.subscribed(b, b"t", True)
    assert [s.recv(), s.recv(), s.recv()] == [[b"\x01t"], [b"\x01t"], None]


# -- SUB / XSUB ------------------------------------------------------------------------


def sub(*peers: Any, cls: type[XSubStrategy] = SubStrategy) -> Any:
    strategy = cls(options_for(cls.socket_type, {}), lambda: None, lambda: None)
    for peer in peers:
        strategy.attach(peer)
        strategy.connected(peer)
    return strategy


def received(strategy: Any, peer: FakePeer, *messages: bytes) -> list[bytes]:
    peer.in_pipe.extend([[m] for m in messages])
    out = []
    while (msg := strategy.recv()) is not None:
        out.append(msg[0])
    assert not peer.in_pipe
    return out


def test_sub_filters_by_counted_subscriptions_and_everything_shortcut() -> None:
    p = FakePeer("p")
    s = sub(p)
    assert received(s, p, b"a1", b"b1") == []  # no subscription: nothing
    s.subscribe(b"a")
    assert received(s, p, b"a1", b"b1", b"", b"a") == [b"a1", b"a"]
    s.subscribe(b"")
    assert s.accepts_all
    assert received(s, p, b"a2", b"b2", b"") == [b"a2", b"b2", b""]
    s.subscribe(b"")
    s.unsubscribe(b"")  # one cancel of two: still everything
    assert received(s, p, b"b3") == [b"b3"]
    s.unsubscribe(b"")
    assert not s.accepts_all
    assert received(s, p, b"a4", b"b4") == [b"a4"]
    s.unsubscribe(b"a")
    assert received(s, p, b"a5", b"b5") == []
    s.unsubscribe(b"")  # not subscribed: harmless
    assert received(s, p, b"a6") == []
    # subscriptions go upstream: every subscribe, a cancel only on the last
    sent = list(p.out_pipe.items)
    assert sent == [
        Subscribe(b"a"),
        Subscribe(b""),
        Subscribe(b""),
        Cancel(b""),
        Cancel(b"a"),
    ]


def test_xsub_subscription_messages_set_the_filter() -> None:
    p = FakePeer("p")
    s = sub(p, cls=XSubStrategy)
    assert received(s, p, b"x") == []
    s.send([b"\x01"])
    assert received(s, p, b"x", b"y") == [b"x", b"y"]
    s.send([b"\x01x"])
    s.send([b"\x00"])
    assert received(s, p, b"x", b"y") == [b"x"]
    s.send([b"upstream", b"message"])
    assert p.out_pipe.items[-1] == [b"upstream", b"message"]


def test_recv_fair_queues_and_drops_departed_peers() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = sub(a, b)
    s.subscribe(b"")
    assert s.recv() is None
    a.in_pipe.extend([[b"a1"], [b"a2"], [b"a3"]])
    b.in_pipe.extend([[b"b1"]])
    got = [s.recv() for _ in range(5)]
    assert got == [[b"a1"], [b"b1"], [b"a2"], [b"a3"], None]
    # a departed peer's input is still read to the end, then the peer is dropped
    b.in_pipe.put([b"b2"])
    b.gone = True
    s.detach(b)
    assert s.recv() == [b"b2"]
    assert b not in s.inbound
    assert s.inbound.only is a
    assert s.recv() is None
    a.in_pipe.extend([Subscribe(b"x"), [b"a4"]])  # a non-message item is skipped
    assert s.recv() == [b"a4"]
    assert s.recv() is None


def test_pub_detach_of_an_unknown_peer_keeps_routing() -> None:
    a, b = FakePeer("a"), FakePeer("b")
    s = pub(a, b)
    s.subscribed(a, b"", True)
    s.subscribed(b, b"", True)
    s.send([b"1"])
    s.detach(FakePeer("stranger"))
    s.detach(b)
    s.detach(b)
    s.send([b"2"])
    assert queued(a) == [[b"1"], [b"2"]]
    assert queued(b) == [[b"1"]]


def test_with_the_runtime_pipes_and_peers() -> None:
    from trizmq.nursery.peers import Peer, PeerState, PeerTable
    from trizmq.nursery.pipe import Pipe

    def peer(kind: str, hwm: int) -> Peer:
        made = Peer("tcp://127.0.0.1:1", Pipe(hwm), Pipe(hwm), shared_queue=kind == "inproc")
        PeerTable.move(made, PeerState.WAITING)
        PeerTable.move(made, PeerState.LIVE)
        return made

    a, b, c = peer("stream", 3), peer("stream", 0), peer("inproc", 2)
    s = pub(a, b, c)
    for p in (a, b, c):
        p.in_pipe.put(Subscribe(b""))
        s.incoming(p)
    payload = b"z" * 64
    for _ in range(4):
        s.send([payload])
    assert (len(a.out_pipe), len(b.out_pipe), len(c.out_pipe)) == (3, 4, 2)
    assert s.dropped == 1 + 2
    r = sub(peer("stream", 0))
    (source,) = list(r.inbound)
    r.subscribe(b"")
    source.in_pipe.extend([[b"m1"], Subscribe(b"x"), [b"m2"]])
    assert [r.recv(), r.recv(), r.recv()] == [[b"m1"], [b"m2"], None]


# -- ROUTER's batch receive ------------------------------------------------------------------


def router_of_a_and_b() -> tuple[Any, FakePeer, FakePeer]:
    """A ROUTER strategy with two connected peers, whose routing ids are A and B."""
    router = RouterStrategy(options_for("ROUTER", {}), lambda: None, lambda: None)
    a, b = FakePeer("a"), FakePeer("b")
    a.identity = b"A"  # type: ignore[attr-defined]
    b.identity = b"B"  # type: ignore[attr-defined]
    for peer in (a, b):
        router.attach(peer)
        router.connected(peer)
    return router, a, b


def test_router_batch_receive_makes_no_list_per_message() -> None:
    """A ROUTER's batch puts each peer's routing id in front of the lists queued,
    rather than building new ones: with a thousand idle peers alive, every extra
    object per message made CPython's cyclic GC traverse the crowd more often (a
    ROUTER with 1,000 idle DEALERs received at 0.55x its speed with none)."""
    router, a, b = router_of_a_and_b()
    queued_a = [[b"a%d" % i] for i in range(3)]
    queued_b = [[b"b0", b"more"]]
    a.in_pipe.extend(queued_a)
    b.in_pipe.extend(queued_b)
    batch: list[list[bytes]] = []
    router.recv_into(batch, 10)
    assert batch == [[b"A", b"a0"], [b"A", b"a1"], [b"A", b"a2"], [b"B", b"b0", b"more"]]
    assert [id(msg) for msg in batch] == [id(msg) for msg in [*queued_a, *queued_b]]


def test_router_takes_one_frame_messages_bare() -> None:
    """A one-frame message waits in a ROUTER's queue as its bytes, which the cyclic
    GC does not track (a ROUTER with 1,000 idle DEALERs ran three or four full
    collections in 3 s instead of ten): its receive and its batch make each one
    ``[routing id, frame]``, and put the id in front of the lists as before."""
    assert RouterStrategy.takes_bare_messages()
    router, a, b = router_of_a_and_b()
    two_frames = [b"a1", b"more"]
    a.in_pipe.extend([b"a0", two_frames, b""])
    b.in_pipe.extend([b"b0"])
    batch: list[list[bytes]] = []
    router.recv_into(batch, 10)
    assert batch == [[b"A", b"a0"], [b"A", b"a1", b"more"], [b"A", b""], [b"B", b"b0"]]
    assert batch[1] is two_frames
    a.in_pipe.extend([b"a2", [b"a3", b"x"]])
    assert router.recv() == [b"A", b"a2"]
    assert router.recv() == [b"A", b"a3", b"x"]
    assert router.recv() is None
