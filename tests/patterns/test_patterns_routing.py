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
