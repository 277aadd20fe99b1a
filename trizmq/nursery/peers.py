"""Peers and the socket's table of them: where each one stands, as data.

A :class:`Peer` is the socket's view of one peer: two pipes, what the peer
announced, and its :class:`PeerState`. Strategies (``trizmq.patterns.sockets``)
see it through ``PeerLike``; the runtime moves it from state to state only
through :meth:`PeerTable.move`, along :data:`TRANSITIONS`.

States:

* ``NEW``: made, not routed yet (an accepted connection, or an ``immediate``
  connecter's, during its handshake). Nothing queues for it.
* ``WAITING``: routed, with no connection: messages queue for it (a connecter
  between connections keeps its queue; an inproc connect waits for its binder).
* ``LIVE``: routed, and a connection or link carries it.
* ``GONE``: left the strategy for good. Its unread input stays readable until
  drained; nothing comes back from here.

Rules: a binding side's peer lives as long as its connection (``NEW -> LIVE ->
GONE``); a connecting side keeps its peer across reconnects (``WAITING <-> LIVE``)
unless ``immediate`` is set, which gives every connection a fresh peer, as libzmq
gives it fresh pipes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import trio

from .pipe import Pipe

if TYPE_CHECKING:
    from ..patterns.sockets.base import SocketStrategy
    from ..transport.base import Codec

__all__ = ["TRANSITIONS", "Peer", "PeerState", "PeerTable"]


class PeerState(enum.Enum):
    """Where a peer stands (see the module docstring)."""

    NEW = "new"
    WAITING = "waiting"
    LIVE = "live"
    GONE = "gone"


NEW, WAITING, LIVE, GONE = PeerState.NEW, PeerState.WAITING, PeerState.LIVE, PeerState.GONE

#: state -> the states it may move to
TRANSITIONS: dict[PeerState, frozenset[PeerState]] = {
    NEW: frozenset({WAITING, LIVE, GONE}),
    WAITING: frozenset({LIVE, GONE}),
    LIVE: frozenset({WAITING, GONE}),
    GONE: frozenset(),
}


class Peer:
    """One peer: its queues, what it announced, and where it stands."""

    __slots__ = (
        "attached",
        "closer",
        "connected",
        "datagram",
        "endpoint",
        "gone",
        "identity",
        "in_pipe",
        "out_pipe",
        "peer_type",
        "pings",
        "reading",
        "remote_address",
        "routing_id",
        "rtt",
        "rtt_mean",
        "shared_queue",
        "state",
        "version",
        "writing",
    )

    def __init__(
        self,
        endpoint: str,
        out_pipe: Pipe,
        in_pipe: Pipe,
        *,
        datagram: bool = False,
        shared_queue: bool = False,
    ) -> None:
        #: the local endpoint this peer came through (bound or connected)
        self.endpoint = endpoint
        self.out_pipe = out_pipe
        self.in_pipe = in_pipe
        #: where the peer stands; change it with :meth:`PeerTable.move` only
        self.state = NEW
        # derived from ``state`` (plain attributes: the hot paths read them)
        self.attached = False
        self.connected = False
        self.gone = False
        #: the peer's Socket-Type, Identity and ZMTP version once known
        self.peer_type = ""
        self.identity = b""
        self.version = (3, 1)
        #: the id a ROUTER routes it by (set by the strategy)
        self.routing_id: bytes | None = None
        #: the remote address of its connection ("" for ipc and links)
        self.remote_address = ""
        #: a udp peer: no ZMTP under it, so no subscriptions, joins or other commands
        self.datagram = datagram
        #: an inproc link: ``out_pipe`` is the other socket's ``in_pipe``
        self.shared_queue = shared_queue
        #: True while a writer has taken messages it has not finished writing
        self.writing = False
        #: ends the live connection or link carrying the peer (kick, disconnect)
        self.closer: Callable[[], None] | None = None
        #: the codec of the connection reading this peer now, whose count of payload
        #: bytes received is the peer's too until the connection ends (then its
        #: incoming pipe keeps it); None between connections
        self.reading: Codec | None = None
        #: heartbeat PINGs written to the peer, over all its connections
        self.pings = 0
        #: seconds from the last PING answered to its PONG, and their smoothed mean
        self.rtt: float | None = None
        self.rtt_mean: float | None = None

    @property
    def shares_wire(self) -> bool:
        """One encoding of a message serves every such peer (a byte-stream peer)."""
        return not self.shared_queue

    @property
    def carries_commands(self) -> bool:
        """A peer with ZMTP under it (not udp) can subscribe and join."""
        return not self.datagram

    @property
    def flushed(self) -> bool:
        """Nothing of ours left to deliver: the out_pipe is empty and no write is
        under way, or it is a live inproc link's (the other socket's queue)."""
        if self.shared_queue and self.connected:
            return True
        return not self.out_pipe and not self.writing

    def __repr__(self) -> str:
        shown = f"{self.endpoint} {self.remote_address}".rstrip()
        return f"<Peer {self.peer_type or '?'} via {shown} {self.state.value}>"


class PeerTable:
    """Every peer of one socket that has not left, and the socket's wake-ups.

    The one place that moves peers between states and tells the strategy: routing
    starts with :meth:`attach`, a connection with :meth:`live`, ends with
    :meth:`lost` (the peer is kept) or :meth:`leave` (for good).
    """

    def __init__(
        self,
        strategy: SocketStrategy,
        wake_receivers: Callable[[], None],
        wake_senders: Callable[[], None],
    ) -> None:
        self.strategy = strategy
        self.wake_receivers = wake_receivers
        self.wake_senders = wake_senders
        self._peers: set[Peer] = set()
        #: closing waits here for queues to drain (see :meth:`all_flushed`)
        self.flush_lot = trio.lowlevel.ParkingLot()
        #: told of every routed peer that leaves, once its queue is dropped (the
        #: runtime counts its figures into the socket's)
        self.retired: Callable[[Peer], None] = lambda peer: None

    def __len__(self) -> int:
        return len(self._peers)

    def __iter__(self) -> Iterator[Peer]:
        return iter(list(self._peers))

    @staticmethod
    def move(peer: Peer, state: PeerState) -> None:
        """Move ``peer`` to ``state`` along :data:`TRANSITIONS`; ``RuntimeError`` if
        that is not a transition (a bug in the runtime, never the peer's doing)."""
        if state is peer.state:
            return
        if state not in TRANSITIONS[peer.state]:
            raise RuntimeError(f"{peer!r} cannot move from {peer.state.value} to {state.value}")
        peer.state = state
        peer.attached = state is WAITING or state is LIVE
        peer.connected = state is LIVE
        peer.gone = state is GONE

    def add(self, peer: Peer) -> Peer:
        """Keep the NEW ``peer`` (made by whoever has its pipes), its pipes waking this
        socket's senders and receivers; ``peer`` again."""
        peer.out_pipe.on_writable = self.wake_senders
        strategy = self.strategy
        if strategy.eager:
            peer.in_pipe.on_readable = lambda: strategy.incoming(peer)
        else:
            peer.in_pipe.on_readable = self.wake_receivers
        self._peers.add(peer)
        return peer

    def attach(self, peer: Peer) -> bool:
        """Hand ``peer`` to the strategy (it is WAITING then); False when the strategy
        refuses it (a PAIR's second peer). Wakes waiting senders."""
        if not self.strategy.attach(peer):
            return False
        self.move(peer, WAITING)
        self.wake_senders()
        if peer.in_pipe and peer.in_pipe.on_readable is not None:
            peer.in_pipe.on_readable()
        return True

    def live(self, peer: Peer) -> None:
        """A connection (or link) carries the attached ``peer`` now."""
        self.move(peer, LIVE)
        self.strategy.connected(peer)
        self.wake_senders()

    def lost(self, peer: Peer) -> None:
        """The connection under a kept ``peer`` ended; it waits for the next one."""
        peer.closer = None
        peer.writing = False
        if peer.state is LIVE:
            self.move(peer, WAITING)
            self.strategy.disconnected(peer)
        self.flush_lot.unpark_all()

    def leave(self, peer: Peer, *, drop_queue: bool = True) -> None:
        """``peer`` leaves for good; with ``drop_queue`` its unsent messages go too."""
        if peer.gone:
            return
        peer.closer = None
        if drop_queue and not peer.shared_queue:
            peer.out_pipe.clear()
        was_attached = peer.attached
        self.move(peer, GONE)
        if was_attached:
            self.strategy.detach(peer)
        self._peers.discard(peer)
        if was_attached:
            self.retired(peer)
        self.wake_senders()
        self.wake_receivers()
        self.flush_lot.unpark_all()

    def all_flushed(self) -> bool:
        """Every peer's outgoing queue is delivered (or is a live inproc link's)."""
        return all(peer.flushed for peer in self._peers)

    def live_count(self) -> int:
        """Peers a connection or link carries now."""
        return sum(1 for peer in self._peers if peer.connected)

    def queued(self) -> tuple[int, int]:
        """Messages waiting (outgoing, incoming) in the peers' queues."""
        return (
            sum(len(peer.out_pipe) for peer in self._peers),
            sum(len(peer.in_pipe) for peer in self._peers),
        )
