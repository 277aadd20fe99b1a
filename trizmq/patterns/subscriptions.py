"""Prefix subscriptions: which messages a subscriber wants, and which peers a publisher sends to.

One job: the subscription bookkeeping of 29/PUBSUB, on both sides.

* :class:`SubscriptionTrie`, the subscriber side (SUB/XSUB, libzmq's ``trie_t``):
  subscriptions are counted, n subscribes need n cancels. ``add``/``remove`` say
  when a prefix appears or disappears, which is when XSUB must tell its
  publishers (libzmq sends every subscribe upstream but a cancel only on the last
  one).
* :class:`Distribution`, the publisher side (PUB/XPUB, libzmq's ``mtrie_t`` plus
  ``dist_t``): per peer a prefix is held or not (a set, as in libzmq: a peer's
  repeated subscribe is harmless and its one cancel ends it, which is exactly what
  a counting subscriber sends). Totals across peers (how many peers hold a prefix)
  decide what XPUB reports: the first subscribe and the last cancel.

Strategy: no per-byte trie. Prefixes live in a dict keyed by the prefix bytes,
next to the sorted distinct prefix lengths in use, per first byte. Matching
``data`` looks up ``data[:L]`` for each distinct length ``L <= len(data)`` of the
prefixes that start with ``data[0]``: a handful of C level slices and dict
lookups, whatever the number of prefixes and of their lengths (unless many
lengths share one first byte), and no Python loop over bytes. The empty prefix
matches everything and has a fast path; so does "every peer holds the empty
prefix" on the publisher side (it is tried first, and a prefix every peer holds
ends the search). Each prefix's holders
are kept in ``add_peer`` order, so :meth:`Distribution.matching` returns a stable
order without sorting in the usual one-prefix case. :attr:`Distribution.version`
changes with every change that could change a match and :meth:`Distribution.uniform`
says when no match depends on the data, so a publisher can keep the result of
:meth:`Distribution.matching` between messages instead of asking per message.
Synchronous, no I/O. Peers must be hashable (identity hashing is fine).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterator
from typing import Generic, TypeVar

__all__ = ["Distribution", "SubscriptionTrie"]

T = TypeVar("T")


def _length_added(lengths: list[int], refs: dict[int, int], length: int) -> None:
    """Count one more distinct prefix of ``length``; keep ``lengths`` sorted and distinct."""
    held = refs.get(length, 0)
    refs[length] = held + 1
    if not held:
        insort(lengths, length)


def _length_removed(lengths: list[int], refs: dict[int, int], length: int) -> None:
    """Count one distinct prefix of ``length`` less."""
    held = refs[length] - 1
    if held:
        refs[length] = held
    else:
        del refs[length]
        lengths.remove(length)


class _Lengths:
    """The distinct lengths of a set of distinct prefixes: all of them, ascending
    (:attr:`all`), and per first byte those of the prefixes that start with it
    (:attr:`by_first`). A match then tries only the lengths of the prefixes that
    begin as the data does: with prefixes of many lengths but different first
    bytes, a handful of lookups, not one per length."""

    __slots__ = ("_refs", "_refs_by_first", "all", "by_first")

    def __init__(self) -> None:
        self.all: list[int] = []
        self._refs: dict[int, int] = {}
        self.by_first: dict[int, list[int]] = {}
        self._refs_by_first: dict[int, dict[int, int]] = {}

    def added(self, prefix: bytes) -> None:
        """One more distinct prefix."""
        length = len(prefix)
        _length_added(self.all, self._refs, length)
        if length:
            first = prefix[0]
            refs = self._refs_by_first.get(first)
            if refs is None:
                refs = self._refs_by_first[first] = {}
                self.by_first[first] = []
            _length_added(self.by_first[first], refs, length)

    def removed(self, prefix: bytes) -> None:
        """One distinct prefix less."""
        length = len(prefix)
        _length_removed(self.all, self._refs, length)
        if length:
            first = prefix[0]
            refs = self._refs_by_first[first]
            _length_removed(self.by_first[first], refs, length)
            if not refs:
                del self._refs_by_first[first]
                del self.by_first[first]

    def clear(self) -> None:
        """No prefix."""
        self.all.clear()
        self._refs.clear()
        self.by_first.clear()
        self._refs_by_first.clear()


class SubscriptionTrie:
    """One subscriber's (SUB/XSUB side) counted prefix subscriptions.

    n subscribes need n cancels; ``b""`` subscribes to everything.
    """

    __slots__ = ("_counts", "_lengths")

    def __init__(self) -> None:
        #: prefix -> how many times it is subscribed (always >= 1)
        self._counts: dict[bytes, int] = {}
        #: the distinct lengths of the prefixes in ``_counts``
        self._lengths = _Lengths()

    def add(self, prefix: bytes) -> bool:
        """Subscribe to ``prefix`` once more; True when it is a new subscription (0 -> 1)."""
        if not isinstance(prefix, bytes):
            prefix = bytes(prefix)
        counts = self._counts
        held = counts.get(prefix, 0)
        counts[prefix] = held + 1
        if held:
            return False
        self._lengths.added(prefix)
        return True

    def remove(self, prefix: bytes) -> bool:
        """Cancel one subscription to ``prefix``; True when it was the last (1 -> 0).

        Cancelling a prefix that is not subscribed returns False and changes nothing.
        """
        if not isinstance(prefix, bytes):
            prefix = bytes(prefix)
        counts = self._counts
        held = counts.get(prefix, 0)
        if held > 1:
            counts[prefix] = held - 1
            return False
        if not held:
            return False
        del counts[prefix]
        self._lengths.removed(prefix)
        return True

    def matches(self, data: bytes | bytearray | memoryview) -> bool:
        """Whether some subscribed prefix is a prefix of ``data`` (``b""`` matches all)."""
        counts = self._counts
        if not counts:
            return False
        if b"" in counts or not data:
            return b"" in counts
        index = self._lengths
        lengths = index.by_first.get(data[0])
        if lengths is None:
            return False
        if not isinstance(data, bytes):
            data = bytes(data[: lengths[-1]])
        size = len(data)
        for length in lengths:
            if length > size:
                return False
            if data[:length] in counts:
                return True
        return False

    def count(self, prefix: bytes) -> int:
        """How many times ``prefix`` is subscribed."""
        return self._counts.get(bytes(prefix), 0)

    def clear(self) -> None:
        """Drop every subscription."""
        self._counts.clear()
        self._lengths.clear()

    def __contains__(self, prefix: object) -> bool:
        return prefix in self._counts

    def __iter__(self) -> Iterator[bytes]:
        """The distinct live prefixes, oldest first (a snapshot: safe to mutate while iterating)."""
        return iter(list(self._counts))

    def __len__(self) -> int:
        """The number of distinct live prefixes."""
        return len(self._counts)

    def __repr__(self) -> str:
        return f"<SubscriptionTrie {len(self._counts)} prefixes>"


class Distribution(Generic[T]):
    """The publisher side (PUB/XPUB/RADIO-like): which peers want a message.

    Per peer a prefix is held or not; the *total* of a prefix is the number of
    peers holding it, and the boolean results report when a total goes 0 -> 1
    (``subscribe``) or 1 -> 0 (``unsubscribe``, ``remove_peer``, ``clear_peer``).
    """

    __slots__ = (
        "_holders",
        "_lengths",
        "_next_rank",
        "_peak",
        "_prefixes",
        "_rank",
        "_sizes",
        "total",
        "version",
    )

    def __init__(self) -> None:
        #: peer -> its prefixes in subscription order; the dict itself is in add_peer order
        self._prefixes: dict[T, dict[bytes, None]] = {}
        #: peer -> its position in add_peer order (increasing, never reused)
        self._rank: dict[T, int] = {}
        self._next_rank = 0
        #: prefix -> the peers holding it, in add_peer order (never empty)
        self._holders: dict[bytes, list[T]] = {}
        #: the distinct lengths of the prefixes in ``_holders``
        self._lengths = _Lengths()
        #: bumped by every change of peers or subscriptions: a result of
        #: :meth:`matching` stays right for as long as this does not change
        self.version = 0
        #: subscriptions held, all peers together (a peer's prefix counts once)
        self.total = 0
        #: peer -> the bytes of the prefixes it holds
        self._sizes: dict[T, int] = {}
        #: the most distinct prefixes ``_holders`` has held since it was last rebuilt
        self._peak = 0

    # -- peers -------------------------------------------------------------------
    def add_peer(self, peer: T) -> None:
        """Start tracking ``peer`` (with no subscription); adding it twice is a no-op."""
        if peer in self._prefixes:
            return
        self._prefixes[peer] = {}
        self._sizes[peer] = 0
        self._rank[peer] = self._next_rank
        self._next_rank += 1
        self.version += 1

    def remove_peer(self, peer: T) -> list[bytes]:
        """Forget ``peer``; return the prefixes no peer holds any more.

        The result is in the peer's subscription order; [] for an unknown peer.
        """
        own = self._prefixes.pop(peer, None)
        if own is None:
            return []
        self.version += 1
        vanished = [prefix for prefix in own if self._release(peer, prefix)]
        del self._rank[peer]
        del self._sizes[peer]
        self._shrink()
        return vanished

    def clear_peer(self, peer: T) -> list[bytes]:
        """Drop all of ``peer``'s subscriptions but keep the peer (it will resend them).

        Returns the prefixes no peer holds any more.
        """
        own = self._prefixes.get(peer)
        if not own:
            return []
        self.version += 1
        self._prefixes[peer] = {}
        self._sizes[peer] = 0
        vanished = [prefix for prefix in own if self._release(peer, prefix)]
        self._shrink()
        return vanished

    def held_by(self, peer: T) -> int:
        """How many distinct prefixes ``peer`` holds."""
        own = self._prefixes.get(peer)
        return 0 if own is None else len(own)

    def bytes_held_by(self, peer: T) -> int:
        """The bytes of the distinct prefixes ``peer`` holds."""
        return self._sizes.get(peer, 0)

    def peer_prefixes(self, peer: T) -> list[bytes]:
        """The distinct prefixes ``peer`` holds, in subscription order ([] for an unknown peer)."""
        own = self._prefixes.get(peer)
        return [] if own is None else list(own)

    # -- subscriptions -------------------------------------------------------------
    def subscribe(self, peer: T, prefix: bytes) -> bool:
        """``peer`` subscribes to ``prefix``; True when no peer held it before (total 0 -> 1).

        A repeated subscribe from the same peer changes nothing and returns False;
        so does a subscribe from a peer that was never added (or already removed).
        """
        own = self._prefixes.get(peer)
        if own is None:
            return False
        if not isinstance(prefix, bytes):
            prefix = bytes(prefix)
        if prefix in own:
            return False
        self.version += 1
        own[prefix] = None
        self.total += 1
        self._sizes[peer] += len(prefix)
        holders = self._holders.get(prefix)
        if holders is None:
            self._holders[prefix] = [peer]
            if len(self._holders) > self._peak:
                self._peak = len(self._holders)
            self._lengths.added(prefix)
            return True
        rank = self._rank
        if rank[peer] > rank[holders[-1]]:
            holders.append(peer)
        else:
            insort(holders, peer, key=rank.__getitem__)
        return False

    def unsubscribe(self, peer: T, prefix: bytes) -> bool:
        """``peer`` cancels ``prefix``; True when it was the last peer holding it (total 1 -> 0).

        An unknown peer, or a prefix the peer does not hold, returns False.
        """
        own = self._prefixes.get(peer)
        if own is None:
            return False
        if not isinstance(prefix, bytes):
            prefix = bytes(prefix)
        if prefix not in own:
            return False
        self.version += 1
        del own[prefix]
        self._sizes[peer] -= len(prefix)
        vanished = self._release(peer, prefix)
        self._shrink()
        return vanished

    def _shrink(self) -> None:
        """Give memory back: a dict never shrinks by deletion, so once the prefixes
        held fall to a quarter of their peak, the index is rebuilt at its size."""
        if self._peak > 1024 and len(self._holders) * 4 < self._peak:
            self._holders = dict(self._holders)
            self._peak = len(self._holders)

    def _release(self, peer: T, prefix: bytes) -> bool:
        """Take ``peer`` off ``prefix``'s holders; True when none are left."""
        self.total -= 1
        holders = self._holders[prefix]
        if len(holders) == 1:
            del self._holders[prefix]
            self._lengths.removed(prefix)
            return True
        holders.remove(peer)
        return False

    # -- routing -------------------------------------------------------------------
    def matching(self, data: bytes | bytearray | memoryview) -> list[T]:
        """The peers holding a prefix of ``data``, each once, in ``add_peer`` order.

        ``data`` is the first frame of the message. The result is a new list.
        """
        holders = self._holders
        if not holders:
            return []
        everybody = len(self._prefixes)
        # b"" first, so that "every peer holds b''" returns at once; then the
        # prefixes that begin as the data does, by ascending length
        found = holders.get(b"")
        if found is not None and len(found) == everybody:
            return found[:]
        more: list[list[T]] | None = None
        lengths = self._lengths.by_first.get(data[0]) if data else None
        if lengths is not None:
            if data.__class__ is not bytes:
                data = bytes(data[: lengths[-1]])
            size = len(data)
            for length in lengths:
                if length > size:
                    break
                peers = holders.get(data[:length])
                if peers is None:
                    continue
                if len(peers) == everybody:
                    return peers[:]
                if found is None:
                    found = peers
                elif more is None:
                    more = [peers]
                else:
                    more.append(peers)
        if found is None:
            return []
        if more is None:
            return found[:]
        # several prefixes matched: merge, then restore add_peer order
        merged = set(found).union(*more)
        if len(merged) * 2 < everybody:
            return sorted(merged, key=self._rank.__getitem__)
        return [peer for peer in self._prefixes if peer in merged]

    def uniform(self) -> bool:
        """True when :meth:`matching` gives the same peers whatever the data.

        That is when no prefix but ``b""`` is held (or none at all), so every peer
        takes every message or none, and when every peer holds ``b""``.
        """
        lengths = self._lengths.all
        if not lengths or lengths[-1] == 0:
            return True
        everyone = self._holders.get(b"")
        return everyone is not None and len(everyone) == len(self._prefixes)

    def count(self, prefix: bytes) -> int:
        """How many peers hold ``prefix``."""
        holders = self._holders.get(bytes(prefix))
        return 0 if holders is None else len(holders)

    def __contains__(self, peer: object) -> bool:
        return peer in self._prefixes

    def __len__(self) -> int:
        """The number of peers."""
        return len(self._prefixes)

    def __iter__(self) -> Iterator[T]:
        """The peers in ``add_peer`` order (a snapshot: safe to mutate while iterating)."""
        return iter(list(self._prefixes))

    def __repr__(self) -> str:
        return f"<Distribution {len(self._prefixes)} peers, {len(self._holders)} prefixes>"
