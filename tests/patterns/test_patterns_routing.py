"""Tests of peer rotation: RoundRobin (outgoing) and FairQueue (incoming)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trizmq.patterns import FairQueue, RoundRobin

Rotation = RoundRobin[str] | FairQueue[str]
KINDS = [RoundRobin, FairQueue]


def always(peer: str) -> bool:
    return True


def never(peer: str) -> bool:
    return False


def make(kind: type[Rotation], *peers: str) -> Rotation:
    rotation = kind()
    for peer in peers:
        rotation.add(peer)
    return rotation


def picks(
    rotation: Rotation, count: int, ready: Callable[[str], bool] = always
) -> list[str | None]:
    return [rotation.next_peer(ready) for _ in range(count)]


@pytest.mark.parametrize("kind", KINDS)
def test_empty(kind: type[Rotation]) -> None:
    rotation = kind()
    assert len(rotation) == 0
    assert list(rotation) == []
    assert "a" not in rotation
    assert rotation.next_peer(always) is None


@pytest.mark.parametrize("kind", KINDS)
def test_order_is_round_robin(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c")
    assert picks(rotation, 7) == ["a", "b", "c", "a", "b", "c", "a"]


@pytest.mark.parametrize("kind", KINDS)
def test_add_twice_is_a_no_op(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "a")
    assert len(rotation) == 2
    assert list(rotation) == ["a", "b"]
    assert "a" in rotation and "b" in rotation and "c" not in rotation
    assert picks(rotation, 3) == ["a", "b", "a"]


@pytest.mark.parametrize("kind", KINDS)
def test_peers_not_ready_are_skipped(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c")
    blocked = {"b"}

    def ready(peer: str) -> bool:
        return peer not in blocked

    assert picks(rotation, 4, ready) == ["a", "c", "a", "c"]
    blocked.clear()
    # the last choice was c: a, then b gets its turn
    assert picks(rotation, 3, ready) == ["a", "b", "c"]


@pytest.mark.parametrize("kind", KINDS)
def test_none_ready_leaves_the_cursor_alone(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c")
    assert rotation.next_peer(always) == "a"
    assert rotation.next_peer(never) is None
    assert rotation.next_peer(never) is None
    assert rotation.next_peer(always) == "b"


@pytest.mark.parametrize("kind", KINDS)
def test_ready_is_asked_in_order_and_at_most_once_each(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c", "d")
    assert rotation.next_peer(always) == "a"
    asked: list[str] = []

    def ready(peer: str) -> bool:
        asked.append(peer)
        return False

    assert rotation.next_peer(ready) is None
    assert asked == ["b", "c", "d", "a"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_peer_that_becomes_ready_gets_the_next_turn_in_order(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c")
    ready_now = {"a", "b", "c"}

    def ready(peer: str) -> bool:
        return peer in ready_now

    assert rotation.next_peer(ready) == "a"
    ready_now.discard("b")
    assert rotation.next_peer(ready) == "c"
    ready_now.add("b")
    assert rotation.next_peer(ready) == "a"
    assert rotation.next_peer(ready) == "b"


@pytest.mark.parametrize("kind", KINDS)
def test_new_peers_join_at_the_end(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b")
    assert rotation.next_peer(always) == "a"
    rotation.add("c")
    assert list(rotation) == ["a", "b", "c"]
    assert picks(rotation, 4) == ["b", "c", "a", "b"]


@pytest.mark.parametrize("kind", KINDS)
def test_remove_the_next_peer_passes_the_turn_to_its_follower(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c", "d")
    assert picks(rotation, 2) == ["a", "b"]
    rotation.remove("c")  # c was next
    assert picks(rotation, 4) == ["d", "a", "b", "d"]


@pytest.mark.parametrize("kind", KINDS)
def test_remove_the_peer_just_chosen(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c", "d")
    assert picks(rotation, 2) == ["a", "b"]
    rotation.remove("b")
    assert picks(rotation, 3) == ["c", "d", "a"]


@pytest.mark.parametrize("kind", KINDS)
def test_remove_the_last_peer_while_it_is_next_wraps(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c", "d")
    assert picks(rotation, 3) == ["a", "b", "c"]
    rotation.remove("d")  # d was next and last in order
    assert picks(rotation, 4) == ["a", "b", "c", "a"]


@pytest.mark.parametrize("kind", KINDS)
def test_remove_the_last_peer_just_chosen(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c")
    assert picks(rotation, 3) == ["a", "b", "c"]
    rotation.remove("c")
    assert picks(rotation, 3) == ["a", "b", "a"]


@pytest.mark.parametrize("kind", KINDS)
def test_remove_before_and_after_the_cursor(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c", "d", "e")
    assert picks(rotation, 2) == ["a", "b"]
    rotation.remove("a")  # before the cursor
    rotation.remove("e")  # after it
    assert picks(rotation, 4) == ["c", "d", "b", "c"]


@pytest.mark.parametrize("kind", KINDS)
def test_remove_absent_and_remove_all(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b")
    rotation.remove("zzz")
    assert len(rotation) == 2
    assert rotation.next_peer(always) == "a"
    rotation.remove("a")
    rotation.remove("b")
    rotation.remove("b")
    assert len(rotation) == 0
    assert "a" not in rotation
    assert rotation.next_peer(always) is None
    rotation.add("c")
    assert picks(rotation, 2) == ["c", "c"]


@pytest.mark.parametrize("kind", KINDS)
def test_clear(kind: type[Rotation]) -> None:
    rotation = make(kind, "a", "b", "c")
    rotation.next_peer(always)
    rotation.clear()
    assert len(rotation) == 0 and rotation.next_peer(always) is None
    rotation.add("x")
    assert rotation.next_peer(always) == "x"


def test_round_robin_spreads_over_peers_whose_pipes_are_not_full() -> None:
    """PUSH: a full peer is passed over, and the others share the load evenly."""
    capacity = {"a": 100, "b": 2, "c": 100}
    queued = {peer: 0 for peer in capacity}
    rotation = make(RoundRobin, "a", "b", "c")

    def can_take(peer: str) -> bool:
        return queued[peer] < capacity[peer]

    for _ in range(30):
        peer = rotation.next_peer(can_take)
        assert peer is not None
        queued[peer] += 1
    assert queued == {"a": 14, "b": 2, "c": 14}


def test_fair_queue_never_starves_a_peer() -> None:
    """PULL: one peer that always has data does not starve the others."""
    pipes = {"flood": deque(range(1000)), "slow": deque(range(3)), "rare": deque(range(1))}
    queue = make(FairQueue, "flood", "slow", "rare")

    def has_data(peer: str) -> bool:
        return bool(pipes[peer])

    order = []
    for _ in range(8):
        peer = queue.next_peer(has_data)
        assert peer is not None
        pipes[peer].popleft()
        order.append(peer)
    assert order == ["flood", "slow", "rare", "flood", "slow", "flood", "slow", "flood"]
    # data arriving later on a quiet peer is read at its next turn, before flood's
    pipes["rare"].append(1)
    assert queue.next_peer(has_data) == "rare"
    assert queue.next_peer(has_data) == "flood"


class Model:
    """Reference rotation kept by peer identity rather than by index."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.start: str | None = None  # the first peer to try next

    def add(self, peer: str) -> None:
        if peer not in self.order:
            self.order.append(peer)
            if self.start is None:
                self.start = peer

    def remove(self, peer: str) -> None:
        if peer not in self.order:
            return
        index = self.order.index(peer)
        if self.start == peer:
            self.start = self.order[(index + 1) % len(self.order)] if len(self.order) > 1 else None
        self.order.remove(peer)

    def next_peer(self, ready: Callable[[str], bool]) -> str | None:
        if self.start is None:
            return None
        first = self.order.index(self.start)
        count = len(self.order)
        for step in range(count):
            peer = self.order[(first + step) % count]
            if ready(peer):
                self.start = self.order[(first + step + 1) % count]
                return peer
        return None


PEERS = st.sampled_from("abcdef")
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), PEERS),
        st.tuples(st.just("remove"), PEERS),
        st.tuples(st.just("next"), st.frozensets(PEERS)),
    ),
    max_size=60,
)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=300)
@given(ops=OPS)
def test_rotation_matches_reference_model(
    kind: type[Rotation], ops: list[tuple[str, object]]
) -> None:
    rotation = kind()
    model = Model()
    for op, arg in ops:
        if op == "add":
            assert isinstance(arg, str)
            rotation.add(arg)
            model.add(arg)
        elif op == "remove":
            assert isinstance(arg, str)
            rotation.remove(arg)
            model.remove(arg)
        else:
            assert isinstance(arg, frozenset)
            ready = arg.__contains__
            chosen = rotation.next_peer(ready)
            assert chosen == model.next_peer(ready)
            if chosen is None:
                assert not any(ready(peer) for peer in rotation)
            else:
                assert chosen in rotation and ready(chosen)
        assert list(rotation) == model.order
        assert len(rotation) == len(model.order)


@pytest.mark.parametrize("kind", KINDS)
@given(peers=st.lists(PEERS, min_size=1, unique=True), ready=st.frozensets(PEERS, min_size=1))
def test_every_ready_peer_gets_a_turn_within_one_round(
    kind: type[Rotation], peers: list[str], ready: frozenset[str]
) -> None:
    rotation = make(kind, *peers)
    eligible = [peer for peer in peers if peer in ready]
    chosen = picks(rotation, max(len(eligible), 1) * 3, ready.__contains__)
    if not eligible:
        assert set(chosen) == {None}
        return
    for start in range(len(chosen) - len(eligible) + 1):
        window = chosen[start : start + len(eligible)]
        assert None not in window
        assert sorted(map(str, window)) == sorted(eligible)


# -- the fair queue looks only at peers with input ------------------------------------------


class CountingInbox:
    """A peer's input that counts how often a receive looks at it."""

    def __init__(self) -> None:
        self.items: deque[object] = deque()
        self.looks = 0
        self.on_input: Callable[[], None] | None = None

    def __bool__(self) -> bool:
        self.looks += 1
        return bool(self.items)

    def poll(self) -> object:
        self.looks += 1
        return self.items.popleft() if self.items else None

    def take(self, limit: int) -> list[object]:
        self.looks += 1
        items = self.items
        return [items.popleft() for _ in range(min(limit, len(items)))]


class Inboxed:
    def __init__(self, name: str) -> None:
        self.name = name
        self.in_pipe = CountingInbox()
        self.gone = False

    def put(self, queue: FairQueue[Inboxed], item: object) -> None:
        inbox = self.in_pipe
        was_empty = not inbox.items
        inbox.items.append(item)
        if was_empty and inbox.on_input is not None:
            inbox.on_input()  # as a Pipe does on its empty-to-non-empty transition


def looks(peers: list[Inboxed]) -> int:
    return sum(peer.in_pipe.looks for peer in peers)


@pytest.mark.parametrize("idle", [0, 1, 1000, 10_000])
def test_a_receive_looks_at_no_quiet_peer(idle: int) -> None:
    """The count of peers a receive examines is the same with 10,000 idle peers as
    with none: one look at the busy peer's queue, plus one to see whether it has more."""
    queue: FairQueue[Inboxed] = FairQueue()
    quiet = [Inboxed(f"quiet{i}") for i in range(idle)]
    busy, other = Inboxed("busy"), Inboxed("other")
    for peer in [*quiet, busy, other]:
        queue.add(peer)
    everyone = [*quiet, busy, other]
    # a peer added is ready until a receive finds it empty (as libzmq activates the
    # pipes it attaches): the first receive looks at each once, and never again
    assert queue.poll() is None
    assert looks(everyone) == len(everyone)
    for peer in everyone:
        peer.in_pipe.looks = 0
    for i in range(100):
        busy.put(queue, i)
    for i in range(100):
        assert queue.poll() == i and queue.source is busy
    assert looks(quiet) == 0
    assert looks(everyone) == 200  # poll and "more?" per message, nothing else
    assert queue.poll() is None
    assert looks(quiet) == 0


def test_busy_peers_take_turns_one_item_each() -> None:
    queue: FairQueue[Inboxed] = FairQueue()
    a, b, c = Inboxed("a"), Inboxed("b"), Inboxed("c")
    for peer in (a, b, c):
        queue.add(peer)
    for i in range(3):
        a.put(queue, f"a{i}")
    b.put(queue, "b0")
    c.put(queue, "c0")
    c.put(queue, "c1")
    got = []
    while (item := queue.poll()) is not None:
        got.append(item)
    assert got == ["a0", "b0", "c0", "a1", "c1", "a2"]


def test_input_drained_elsewhere_leaves_no_stale_turn() -> None:
    queue: FairQueue[Inboxed] = FairQueue()
    a, b = Inboxed("a"), Inboxed("b")
    queue.add(a)
    queue.add(b)
    a.put(queue, 1)
    a.in_pipe.items.clear()  # read by a one-peer shortcut, say
    b.put(queue, 2)
    assert queue.poll() == 2 and queue.source is b
    assert queue.poll() is None and queue.ready_count == 0
    a.put(queue, 3)  # ready again: announced again
    assert queue.poll() == 3 and queue.source is a


def test_recent_is_the_last_source_while_it_stays() -> None:
    # the peer a receiving task that finds no peer ready may read through
    queue: FairQueue[Inboxed] = FairQueue()
    a, b = Inboxed("a"), Inboxed("b")
    queue.add(a)
    queue.add(b)
    assert queue.recent() is None  # nothing received yet
    b.put(queue, 1)
    assert queue.poll() == 1 and queue.recent() is b
    assert queue.poll() is None and queue.recent() is b
    a.put(queue, 2)
    assert queue.poll() == 2 and queue.recent() is a
    queue.remove(a)
    assert queue.recent() is None  # gone from the queue: not waited on


def test_a_departed_peer_leaves_after_its_last_item_and_a_removed_one_at_once() -> None:
    queue: FairQueue[Inboxed] = FairQueue()
    a, b, c = Inboxed("a"), Inboxed("b"), Inboxed("c")
    for peer in (a, b, c):
        queue.add(peer)
    a.put(queue, "a0")
    b.put(queue, "b0")
    c.put(queue, "c0")
    a.gone = True
    queue.remove(b)
    assert queue.poll() == "a0"
    assert a not in queue and b not in queue
    assert queue.poll() == "c0"
    assert queue.poll() is None


# -- batches: slices shared among the ready peers -----------------------------------------


def drain_in_chunks(queue: FairQueue[Inboxed], limit: int) -> list[tuple[str, list[object]]]:
    """Batches of ``limit`` as a batch receive takes them: (peer, slice) pairs."""
    got: list[tuple[str, list[object]]] = []
    room = limit
    share = queue.share(room)
    while room and (chunk := queue.poll_chunk(min(share, room))):
        got.append((queue.source.name, chunk))
        room -= len(chunk)
    return got


def test_a_batch_is_shared_among_the_ready_peers_each_in_order() -> None:
    queue: FairQueue[Inboxed] = FairQueue()
    a, b, c = Inboxed("a"), Inboxed("b"), Inboxed("c")
    for peer in (a, b, c):
        queue.add(peer)
    for i in range(100):
        a.put(queue, f"a{i}")
    for i in range(5):
        b.put(queue, f"b{i}")
    for i in range(100):
        c.put(queue, f"c{i}")
    chunks = drain_in_chunks(queue, 30)
    # 30 among three ready peers: slices of ten, b gives all it has, and what is
    # left goes on in turn
    assert [(name, len(chunk)) for name, chunk in chunks] == [
        ("a", 10),
        ("b", 5),
        ("c", 10),
        ("a", 5),
    ]
    for name in "ac":
        taken = [item for peer, chunk in chunks if peer == name for item in chunk]
        assert taken == [f"{name}{i}" for i in range(len(taken))]
    # the next batch starts with the peer whose turn is next, and b is no longer ready
    assert [name for name, _ in drain_in_chunks(queue, 30)][:2] == ["c", "a"]


def test_a_batch_looks_at_no_quiet_peer() -> None:
    queue: FairQueue[Inboxed] = FairQueue()
    quiet = [Inboxed(f"quiet{i}") for i in range(1000)]
    busy = [Inboxed(f"busy{i}") for i in range(4)]
    for peer in [*quiet, *busy]:
        queue.add(peer)
    assert queue.poll_chunk(10) == []  # the first look at every new peer
    for peer in [*quiet, *busy]:
        peer.in_pipe.looks = 0
    for peer in busy:
        for i in range(64):
            peer.put(queue, i)
    assert sum(len(chunk) for _, chunk in drain_in_chunks(queue, 1024)) == 256
    assert looks(quiet) == 0
    assert looks(busy) <= 3 * 4  # per peer: "any?", a take and "more?"


def test_one_peer_batches_in_one_slice() -> None:
    queue: FairQueue[Inboxed] = FairQueue()
    a = Inboxed("a")
    queue.add(a)
    for i in range(10):
        a.put(queue, i)
    assert queue.share(100) == 100  # one peer: no sharing
    assert queue.poll_chunk(4) == [0, 1, 2, 3] and queue.source is a
    assert queue.poll_chunk(100) == list(range(4, 10))
    assert queue.poll_chunk(100) == []
