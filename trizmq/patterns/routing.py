"""Peer rotation: which peer a socket writes to or reads from next.

One job: pick peers in turn, so outgoing messages are load-balanced (libzmq's
``lb_t``: PUSH, DEALER, REQ) and incoming messages are fair-queued (``fq_t``: PULL,
SUB, DEALER, ...). The routing decision is the same in both directions: the next
peer, after the one chosen last, that can take part right now.

Strategy: a plain list of peers plus a cursor (the index of the next candidate)
and a set for membership. Outgoing, readiness is not stored: the caller passes a
predicate (``pipe not full``) evaluated on the fly; the common case, the peer under
the cursor is ready, costs one list index and one call. New peers join at the end
of the list; removing a peer keeps the cursor on the peer that followed it, so
nobody's turn is skipped or repeated. Incoming, the fair queue keeps the peers that
have input in a queue of their own, fed by the pipes' empty-to-non-empty
transitions, so that a receive never looks at a quiet peer. Synchronous, no I/O, no
allocation per pick. Peers must be hashable (identity hashing is fine).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Iterator
from operator import methodcaller
from typing import Generic, Protocol, TypeVar, cast

__all__ = ["FairQueue", "Inbox", "RoundRobin", "Source"]

T = TypeVar("T")

#: ``inbox.poll()``: how :meth:`FairQueue.poll` takes from an inbox
_POLL = methodcaller("poll")


class Inbox(Protocol):
    """What the fair queue needs of a peer's incoming queue: whether it has an item,
    the oldest one, and a hook it calls when it goes from empty to non-empty."""

    on_input: Callable[[], None] | None

    def __bool__(self) -> bool: ...

    def poll(self) -> object:
        """The oldest item, removed; None when there is none."""
        ...

    def take(self, limit: int) -> list[object]:
        """The oldest ``limit`` items (all, if fewer), removed."""
        ...


class Source(Protocol):
    """What the fair queue needs of a peer: its incoming queue, and whether it left."""

    @property
    def in_pipe(self) -> Inbox: ...

    @property
    def gone(self) -> bool: ...


S = TypeVar("S", bound=Source)


class _Rotation(Generic[T]):
    """Peers in a fixed order with a cursor: the shared core of both directions."""

    __slots__ = ("_current", "_members", "_peers", "only")

    def __init__(self) -> None:
        self._peers: list[T] = []
        self._members: set[T] = set()
        #: index in ``_peers`` of the next candidate; 0 when there are no peers
        self._current = 0
        #: the peer when there is exactly one, else None: the hot paths' shortcut,
        #: since one peer is the common case and needs no rotation
        self.only: T | None = None

    def add(self, peer: T) -> None:
        """Append ``peer`` at the end of the rotation; adding it twice is a no-op."""
        if peer in self._members:
            return
        self._members.add(peer)
        self._peers.append(peer)
        self.only = peer if len(self._peers) == 1 else None

    def remove(self, peer: T) -> None:
        """Drop ``peer``; no-op if absent. The peer after it keeps its turn."""
        members = self._members
        if peer not in members:
            return
        members.discard(peer)
        peers = self._peers
        index = peers.index(peer)
        del peers[index]
        current = self._current
        if index < current:
            current -= 1
        # index == current: the follower slid into the cursor's slot
        if current >= len(peers):
            current = 0
        self._current = current
        self.only = peers[0] if len(peers) == 1 else None

    def clear(self) -> None:
        """Forget every peer."""
        self._peers.clear()
        self._members.clear()
        self._current = 0
        self.only = None

    def next_peer(self, ready: Callable[[T], bool]) -> T | None:
        """The next peer, after the last one chosen, for which ``ready(peer)`` is true.

        The cursor moves past the peer returned. None when no peer is ready (the
        cursor does not move). ``ready`` must not add or remove peers.
        """
        peers = self._peers
        count = len(peers)
        if not count:
            return None
        start = index = self._current
        while True:
            peer = peers[index]
            index += 1
            if index == count:
                index = 0
            if ready(peer):
                self._current = index
                return peer
            if index == start:
                return None

    def __len__(self) -> int:
        return len(self._peers)

    def __contains__(self, peer: object) -> bool:
        return peer in self._members

    def __iter__(self) -> Iterator[T]:
        """The peers in rotation order, starting at index 0 (not at the cursor)."""
        return iter(self._peers)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {len(self._peers)} peers, next={self._current}>"


class RoundRobin(_Rotation[T]):
    """Outgoing load balancing over peers (PUSH, DEALER, REQ): each message goes to
    the next peer that can take it.

    Typical call: ``rr.next_peer(lambda p: not p.out_pipe.full)``; None means no
    peer can take a message and the sender waits (30/PIPELINE).
    """

    __slots__ = ()


class FairQueue(_Rotation[S]):
    """Incoming fair-queuing (PULL, SUB, DEALER...): read from peers in turn so no
    peer starves the others.

    :meth:`poll` is the one fair-queue loop of every socket type that reads from
    several peers: it takes the next item from the next peer that has one, and
    forgets a peer that left once its input is read to the end.

    Only the peers that have input are ever looked at (libzmq's ``fq_t`` keeps its
    active pipes apart the same way): a peer whose input goes from empty to
    non-empty is announced with :meth:`readable` (its inbox's ``on_input`` hook,
    which :meth:`add` sets) and joins the back of a queue of ready peers; a receive
    takes one item from the peer at the front and sends it to the back if it has
    more. A quiet peer costs a receive nothing, however many there are (once: a
    peer added is ready until a receive finds it empty), and several busy peers take
    turns one item each. An entry whose input was drained elsewhere (a one-peer
    shortcut) is dropped when it comes up.
    """

    __slots__ = ("_queued", "_ready", "source")

    #: the peer the last item returned by :meth:`poll` came from (unset before one)
    source: S

    def __init__(self) -> None:
        super().__init__()
        #: peers that (may) have input, in the order they take their turns
        self._ready: deque[S] = deque()
        #: the peers in ``_ready``: each is there at most once
        self._queued: set[S] = set()

    def recent(self) -> S | None:
        """The peer the last item came from while it is still in the queue (else
        None): the one a receiving task that finds no peer ready may wait on."""
        peer: S | None = getattr(self, "source", None)
        return peer if peer is not None and peer in self._members else None

    def readable(self, peer: S) -> None:
        """``peer``'s input went from empty to non-empty: it joins the ready peers.

        Called by the peer's inbox (its ``on_input`` hook, set by :meth:`add`);
        ignored for a peer not in the queue."""
        queued = self._queued
        if peer not in queued and peer in self._members:
            queued.add(peer)
            self._ready.append(peer)

    def add(self, peer: S) -> None:
        """Append ``peer``, ready (as libzmq activates a pipe it attaches: the first
        receive looks at it once); its inbox tells the queue when it has input from
        then on."""
        if peer in self._members:
            return
        super().add(peer)
        try:
            inbox = peer.in_pipe
        except AttributeError:  # a bare rotation member (the rotation's own tests)
            return
        inbox.on_input = functools.partial(self.readable, peer)
        self.readable(peer)

    def remove(self, peer: S) -> None:
        """Drop ``peer`` and its turn; its inbox stops telling this queue."""
        if peer not in self._members:
            return
        super().remove(peer)
        queued = self._queued
        if peer in queued:
            queued.discard(peer)
            self._ready.remove(peer)
        inbox = getattr(peer, "in_pipe", None)
        if inbox is not None:
            inbox.on_input = None

    def clear(self) -> None:
        """Forget every peer."""
        for peer in self._peers:
            inbox = getattr(peer, "in_pipe", None)
            if inbox is not None:
                inbox.on_input = None
        super().clear()
        self._ready.clear()
        self._queued.clear()

    def share(self, room: int) -> int:
        """Each ready peer's slice of a batch with ``room`` places left: ``room``
        divided among them, rounded up (``room`` when at most one is ready)."""
        ready = len(self._ready)
        return -(-room // ready) if ready > 1 else room

    @property
    def ready_count(self) -> int:
        """How many peers are queued as having input (diagnostics and tests)."""
        return len(self._ready)

    def poll_chunk(self, limit: int) -> list[object]:
        """Up to ``limit`` items in a row from the next peer that has input, in its
        order; [] when none has any. :attr:`source` is then the peer they came from.

        The batch form of :meth:`poll`, one slice per call: a peer with more input
        goes to the back of the ready peers, as after a single item. A batch of
        ``n`` items shares itself among the ready peers with slices of
        ``n / ready_count`` (see :meth:`share`): several busy peers then cost one
        queue operation per slice, not per item, and a batch draws on every ready
        peer before any peer's second slice.
        """
        chunk = cast("list[object] | None", self.poll(lambda inbox: inbox.take(limit) or None))
        return chunk if chunk is not None else []

    def poll(self, take: Callable[[Inbox], object] = _POLL) -> object:
        """The next incoming item, fair-queued over the peers; None when none has one.

        :attr:`source` is then the peer it came from. A peer that is gone leaves
        the rotation with its last item.

        The one fair-queue loop: ``take`` (by default, one item) from the inbox of
        the next peer that has input (None means it has none: its stale turn is
        dropped), then send the peer to the back of the ready peers if it has more,
        or let it leave if it is gone and drained. The default ``take`` makes a
        receive one call (a request's turnaround is a chain of such calls).
        """
        peer = self.only
        if peer is not None:
            pipe = peer.in_pipe
            got = pipe.poll() if take is _POLL else take(pipe)
            if got is None:
                return None  # the only peer has nothing waiting
            if peer.gone and not pipe:
                self.remove(peer)
            self.source = peer
            return got
        ready = self._ready
        while ready:
            peer = ready.popleft()
            pipe = peer.in_pipe
            got = take(pipe)
            if got is None:
                self._queued.discard(peer)  # drained elsewhere since it was queued
                continue
            if pipe:
                ready.append(peer)  # more to come: its next turn is after the others'
            else:
                self._queued.discard(peer)
                if peer.gone:
                    self.remove(peer)
            self.source = peer
            return got
        return None
