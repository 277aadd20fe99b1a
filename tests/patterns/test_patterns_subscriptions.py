"""Tests of prefix subscriptions: SubscriptionTrie (subscriber) and Distribution (publisher)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trizmq.patterns import Distribution, SubscriptionTrie

# -- SubscriptionTrie ------------------------------------------------------------


def test_trie_empty_matches_nothing() -> None:
    trie = SubscriptionTrie()
    assert len(trie) == 0
    assert list(trie) == []
    assert not trie.matches(b"")
    assert not trie.matches(b"anything")


def test_trie_subscriptions_are_counted() -> None:
    trie = SubscriptionTrie()
    assert trie.add(b"weather") is True
    assert trie.add(b"weather") is False
    assert trie.count(b"weather") == 2
    assert trie.remove(b"weather") is False  # one cancel of two: still subscribed
    assert trie.matches(b"weather.paris")
    assert list(trie) == [b"weather"]
    assert trie.remove(b"weather") is True  # the second cancel ends it
    assert not trie.matches(b"weather.paris")
    assert len(trie) == 0
    assert trie.add(b"weather") is True  # and it can come back


def test_trie_remove_absent_is_harmless() -> None:
    trie = SubscriptionTrie()
    assert trie.remove(b"nope") is False
    trie.add(b"a")
    assert trie.remove(b"ab") is False
    assert trie.remove(b"") is False
    assert trie.matches(b"abc")
    assert len(trie) == 1


def test_trie_prefix_matching() -> None:
    trie = SubscriptionTrie()
    trie.add(b"ab")
    trie.add(b"xyz")
    assert trie.matches(b"ab")  # equal to the prefix
    assert trie.matches(b"abc")
    assert trie.matches(b"xyz\x00\xff")
    assert not trie.matches(b"a")  # the prefix is longer than the data
    assert not trie.matches(b"xy")
    assert not trie.matches(b"")
    assert not trie.matches(b"ba")
    assert not trie.matches(b"xab")


def test_trie_empty_prefix_matches_everything() -> None:
    trie = SubscriptionTrie()
    trie.add(b"x")
    assert not trie.matches(b"y")
    trie.add(b"")
    assert trie.matches(b"")
    assert trie.matches(b"y")
    assert trie.matches(b"\x00" * 1000)
    assert trie.remove(b"") is True
    assert not trie.matches(b"y")
    assert trie.matches(b"x")


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, lambda b: memoryview(bytearray(b))])
def test_trie_matches_any_bytes_like(wrap: type) -> None:
    trie = SubscriptionTrie()
    trie.add(b"ab")
    trie.add(b"abcd")
    assert trie.matches(wrap(b"abzzz"))
    assert trie.matches(wrap(b"ab"))
    assert not trie.matches(wrap(b"a"))
    assert not trie.matches(wrap(b"xbcd"))


def test_trie_iter_is_distinct_and_a_snapshot() -> None:
    trie = SubscriptionTrie()
    for prefix in (b"a", b"b", b"a", b"", b"b"):
        trie.add(prefix)
    assert list(trie) == [b"a", b"b", b""]
    assert len(trie) == 3
    assert b"a" in trie and b"c" not in trie
    for prefix in trie:  # mutating while replaying is allowed
        trie.remove(prefix)
    assert sorted(trie) == [b"a", b"b"]


def test_trie_clear() -> None:
    trie = SubscriptionTrie()
    trie.add(b"a")
    trie.add(b"")
    trie.clear()
    assert len(trie) == 0 and not trie.matches(b"a")
    assert trie.add(b"a") is True
    assert trie.matches(b"abc") and not trie.matches(b"b")


def test_trie_accepts_bytes_like_prefixes() -> None:
    trie = SubscriptionTrie()
    assert trie.add(bytearray(b"ab")) is True  # type: ignore[arg-type]
    assert trie.add(b"ab") is False
    assert list(trie) == [b"ab"]
    assert trie.remove(memoryview(b"ab")) is False  # type: ignore[arg-type]
    assert trie.remove(b"ab") is True


# -- Distribution ------------------------------------------------------------------


def dist(*peers: str) -> Distribution[str]:
    distribution: Distribution[str] = Distribution()
    for peer in peers:
        distribution.add_peer(peer)
    return distribution


def test_distribution_peers() -> None:
    d = dist("a", "b", "a")
    assert len(d) == 2
    assert "a" in d and "b" in d and "c" not in d
    assert list(d) == ["a", "b"]
    assert d.peer_prefixes("a") == []
    assert d.peer_prefixes("c") == []
    assert d.matching(b"x") == []
    assert d.remove_peer("c") == []
    assert d.remove_peer("a") == []
    assert len(d) == 1 and "a" not in d


def test_distribution_totals_across_peers() -> None:
    d = dist("a", "b")
    assert d.subscribe("a", b"t") is True  # total 0 -> 1
    assert d.subscribe("b", b"t") is False  # 1 -> 2
    assert d.count(b"t") == 2
    assert d.unsubscribe("a", b"t") is False  # 2 -> 1
    assert d.matching(b"topic") == ["b"]
    assert d.unsubscribe("b", b"t") is True  # 1 -> 0
    assert d.matching(b"topic") == []
    assert d.subscribe("b", b"t") is True  # 0 -> 1 again


def test_distribution_per_peer_subscription_is_held_or_not() -> None:
    """libzmq's mtrie: a peer's repeated subscribe is harmless and one cancel ends it.

    A counting subscriber (libzmq SUB) sends every subscribe but only its last cancel.
    """
    d = dist("a")
    assert d.subscribe("a", b"t") is True
    assert d.subscribe("a", b"t") is False
    assert d.count(b"t") == 1
    assert d.peer_prefixes("a") == [b"t"]
    assert d.unsubscribe("a", b"t") is True
    assert d.matching(b"t") == []
    assert d.unsubscribe("a", b"t") is False


def test_distribution_unknown_peer_or_prefix_is_harmless() -> None:
    d = dist("a")
    assert d.unsubscribe("zzz", b"t") is False
    assert d.unsubscribe("a", b"t") is False
    d.subscribe("a", b"t")
    assert d.unsubscribe("a", b"u") is False
    assert d.unsubscribe("a", b"") is False
    assert d.subscribe("zzz", b"t") is False  # not a peer: ignored
    assert "zzz" not in d
    assert d.matching(b"t") == ["a"]
    assert d.count(b"t") == 1


def test_distribution_remove_peer_returns_exactly_the_vanished_prefixes() -> None:
    d = dist("a", "b", "c")
    for prefix in (b"only-a", b"shared", b"", b"only-a-2"):
        d.subscribe("a", prefix)
    d.subscribe("b", b"shared")
    d.subscribe("c", b"")
    d.subscribe("c", b"only-c")
    assert d.remove_peer("a") == [b"only-a", b"only-a-2"]  # in a's subscription order
    assert "a" not in d
    assert d.matching(b"only-a...") == ["c"]  # via c's b""
    assert d.remove_peer("c") == [b"", b"only-c"]
    assert d.matching(b"only-a") == []
    assert d.matching(b"shared!") == ["b"]
    assert d.remove_peer("b") == [b"shared"]
    assert d.remove_peer("b") == []
    assert len(d) == 0 and d.matching(b"") == []


def test_distribution_clear_peer_keeps_the_peer() -> None:
    d = dist("a", "b")
    d.subscribe("a", b"x")
    d.subscribe("a", b"y")
    d.subscribe("b", b"y")
    assert d.clear_peer("a") == [b"x"]
    assert "a" in d and d.peer_prefixes("a") == []
    assert d.matching(b"x") == []
    assert d.matching(b"y") == ["b"]
    assert d.clear_peer("a") == []
    assert d.clear_peer("zzz") == []
    # the peer resubscribes and keeps its place in the order
    assert d.subscribe("a", b"y") is False
    assert d.matching(b"y") == ["a", "b"]


def test_distribution_matching_returns_each_peer_once() -> None:
    d = dist("a", "b")
    for prefix in (b"", b"w", b"we", b"weather"):
        d.subscribe("a", prefix)
    d.subscribe("b", b"we")
    d.subscribe("b", b"weather")
    assert d.matching(b"weather.paris") == ["a", "b"]
    assert d.matching(b"we") == ["a", "b"]
    assert d.matching(b"w") == ["a"]
    assert d.matching(b"") == ["a"]


def test_distribution_matching_order_is_add_peer_order() -> None:
    d = dist("p1", "p2", "p3", "p4")
    # subscribe in an order unrelated to add_peer order
    for peer in ("p3", "p1", "p4", "p2"):
        d.subscribe(peer, b"t")
    assert d.matching(b"t") == ["p1", "p2", "p3", "p4"]
    d.subscribe("p4", b"")
    d.subscribe("p2", b"tt")
    assert d.matching(b"tt") == ["p1", "p2", "p3", "p4"]
    # several matching prefixes held by different peers
    d2 = dist("p1", "p2", "p3", "p4")
    d2.subscribe("p4", b"a")
    d2.subscribe("p3", b"ab")
    d2.subscribe("p2", b"abc")
    d2.subscribe("p1", b"abcd")
    assert d2.matching(b"abcde") == ["p1", "p2", "p3", "p4"]
    assert d2.matching(b"abc") == ["p2", "p3", "p4"]
    # a peer removed and added again goes to the end
    d2.remove_peer("p1")
    d2.add_peer("p1")
    d2.subscribe("p1", b"a")
    assert d2.matching(b"abcde") == ["p2", "p3", "p4", "p1"]


def test_distribution_everyone_fast_path_and_its_edges() -> None:
    d = dist("a", "b", "c")
    for peer in ("c", "a", "b"):
        d.subscribe(peer, b"")
    result = d.matching(b"anything")
    assert result == ["a", "b", "c"]
    result.append("mutated")  # the result is the caller's own list
    assert d.matching(b"") == ["a", "b", "c"]
    d.add_peer("d")  # d holds nothing: no longer everyone
    assert d.matching(b"x") == ["a", "b", "c"]
    d.subscribe("d", b"x")
    assert d.matching(b"x") == ["a", "b", "c", "d"]
    assert d.matching(b"y") == ["a", "b", "c"]


def test_distribution_version_changes_with_every_change_and_only_then() -> None:
    d: Distribution[str] = Distribution()
    steps = [
        (lambda: d.add_peer("a"), True),
        (lambda: d.add_peer("a"), False),  # already there
        (lambda: d.subscribe("a", b"x"), True),
        (lambda: d.subscribe("a", b"x"), False),  # held already
        (lambda: d.subscribe("ghost", b"x"), False),
        (lambda: d.unsubscribe("a", b"y"), False),  # not held
        (lambda: d.unsubscribe("a", b"x"), True),
        (lambda: d.clear_peer("a"), False),  # nothing to clear
        (lambda: d.subscribe("a", b""), True),
        (lambda: d.clear_peer("a"), True),
        (lambda: d.remove_peer("ghost"), False),
        (lambda: d.remove_peer("a"), True),
    ]
    for step, changes in steps:
        before = d.version
        step()
        assert (d.version != before) is changes


def test_distribution_uniform() -> None:
    d = dist("a", "b")
    assert d.uniform()  # nobody subscribed: nothing matches whatever the data
    d.subscribe("a", b"")
    assert d.uniform()  # a takes everything, b nothing
    d.subscribe("b", b"t")
    assert not d.uniform()
    d.unsubscribe("b", b"t")
    assert d.uniform()
    d.remove_peer("a")
    assert d.uniform()


def test_distribution_prefix_longer_than_the_data() -> None:
    d = dist("a")
    d.subscribe("a", b"long-prefix")
    assert d.matching(b"long") == []
    assert d.matching(b"") == []
    assert d.matching(b"long-prefix") == ["a"]


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, lambda b: memoryview(bytearray(b))])
def test_distribution_matches_any_bytes_like(wrap: type) -> None:
    d = dist("a", "b")
    d.subscribe("a", b"ab")
    d.subscribe("b", b"abcd")
    assert d.matching(wrap(b"abcdef")) == ["a", "b"]
    assert d.matching(wrap(b"abc")) == ["a"]
    assert d.matching(wrap(b"xbcd")) == []


# -- property tests against naive models -----------------------------------------

PREFIXES = st.binary(max_size=4).map(lambda b: bytes(x % 3 for x in b))  # small alphabet: overlaps
DATA = st.binary(max_size=6).map(lambda b: bytes(x % 3 for x in b))
PEERS = st.sampled_from(["p0", "p1", "p2", "p3", "p4"])


def naive_matches(prefixes: Counter[bytes], data: bytes) -> bool:
    return any(count > 0 and data.startswith(prefix) for prefix, count in prefixes.items())


@settings(max_examples=300)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["add", "remove", "match", "clear"]), PREFIXES, DATA),
        max_size=60,
    )
)
def test_trie_matches_reference_model(ops: list[tuple[str, bytes, bytes]]) -> None:
    trie = SubscriptionTrie()
    model: Counter[bytes] = Counter()
    for op, prefix, data in ops:
        if op == "add":
            assert trie.add(prefix) is (model[prefix] == 0)
            model[prefix] += 1
        elif op == "remove":
            assert trie.remove(prefix) is (model[prefix] == 1)
            if model[prefix]:
                model[prefix] -= 1
        elif op == "clear":
            trie.clear()
            model.clear()
        assert trie.matches(data) is naive_matches(model, data)
        assert trie.matches(memoryview(data)) is naive_matches(model, data)
        assert sorted(trie) == sorted(p for p, n in model.items() if n > 0)
        assert len(trie) == sum(1 for n in model.values() if n > 0)


class NaiveDistribution:
    """Reference publisher: an ordered list of peers, each with a set of prefixes."""

    def __init__(self) -> None:
        self.peers: list[str] = []
        self.held: dict[str, set[bytes]] = {}

    def total(self, prefix: bytes) -> int:
        return sum(prefix in self.held[peer] for peer in self.peers)

    def matching(self, data: bytes) -> list[str]:
        return [p for p in self.peers if any(data.startswith(x) for x in self.held[p])]


@settings(max_examples=400)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(
                ["add_peer", "remove_peer", "clear_peer", "subscribe", "subscribe", "unsubscribe"]
            ),
            PEERS,
            PREFIXES,
            DATA,
        ),
        max_size=80,
    )
)
def test_distribution_matches_reference_model(ops: list[tuple[str, str, bytes, bytes]]) -> None:
    d: Distribution[str] = Distribution()
    model = NaiveDistribution()
    probes = sorted({data for _, _, _, data in ops} | {prefix for _, _, prefix, _ in ops})
    seen_version, seen = d.version, [d.matching(x) for x in probes]
    for op, peer, prefix, data in ops:
        if op == "add_peer":
            d.add_peer(peer)
            if peer not in model.held:
                model.peers.append(peer)
                model.held[peer] = set()
        elif op in ("remove_peer", "clear_peer"):
            before = {x for p in model.peers for x in model.held[p]}
            if peer in model.held:
                own = model.held[peer]
                model.held[peer] = set()
                if op == "remove_peer":
                    model.peers.remove(peer)
                    del model.held[peer]
            else:
                own = set()
            after = {x for p in model.peers for x in model.held[p]}
            vanished = d.remove_peer(peer) if op == "remove_peer" else d.clear_peer(peer)
            assert len(vanished) == len(set(vanished))
            assert set(vanished) == (before - after) & own
        elif op == "subscribe":
            known = peer in model.held
            fresh = known and prefix not in model.held[peer]
            assert d.subscribe(peer, prefix) is (fresh and model.total(prefix) == 0)
            if known:
                model.held[peer].add(prefix)
        else:
            held = peer in model.held and prefix in model.held[peer]
            assert d.unsubscribe(peer, prefix) is (held and model.total(prefix) == 1)
            if held:
                model.held[peer].discard(prefix)
        expected = model.matching(data)
        assert d.matching(data) == expected
        assert d.matching(bytearray(data)) == expected
        assert list(d) == model.peers
        assert len(d) == len(model.peers)
        for p in model.peers:
            assert sorted(d.peer_prefixes(p)) == sorted(model.held[p])
        assert d.count(prefix) == model.total(prefix)
        # a publisher may keep matching() results while the version stays the same
        results = [d.matching(x) for x in probes]
        if d.version == seen_version:
            assert results == seen
        seen_version, seen = d.version, results
        if d.uniform():
            assert all(r == results[0] for r in results)


# -- matching looks only at the lengths of prefixes that begin as the data does ------------


def test_prefixes_of_many_lengths_cost_a_match_one_lookup_each_first_byte() -> None:
    """64 prefixes of 64 distinct lengths, each with its own first byte: a match
    tries only the lengths of the prefixes that begin as the data does (one here),
    on both sides, and still finds the longest."""
    prefixes = [bytes([0x80 + i]) * (i + 1) for i in range(63)] + [b"x" * 64]
    trie = SubscriptionTrie()
    dist: Distribution[str] = Distribution()
    dist.add_peer("p")
    dist.add_peer("q")
    for prefix in prefixes:
        trie.add(prefix)
        dist.subscribe("p", prefix)
    dist.subscribe("q", b"\x80")
    assert {len(lengths) for lengths in trie._lengths.by_first.values()} == {1}
    assert trie._lengths.all == list(range(1, 65))
    data = b"x" * 64 + b"payload"
    assert trie.matches(data) and dist.matching(data) == ["p"]
    assert not trie.matches(b"x" * 63) and dist.matching(b"x" * 63) == []
    assert trie.matches(b"\x80tail") and dist.matching(b"\x80tail") == ["p", "q"]
    assert not trie.matches(b"") and dist.matching(b"") == []
    # the index shrinks with the prefixes
    for prefix in prefixes:
        trie.remove(prefix)
        dist.unsubscribe("p", prefix)
    assert trie._lengths.by_first == {} and trie._lengths.all == []
    assert dist.matching(b"\x80") == ["q"] and dist._lengths.all == [1]
