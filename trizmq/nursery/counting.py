"""A socket's counters, who keeps each, and the snapshot ``sock.stats()`` makes of them.

Every figure is counted by the one actor or strategy where its event happens, as an
integer addition on a path that runs anyway, once per batch where messages move in
batches; this module keeps the socket's own counts (:class:`SocketCounts`, the
socket actor's) and adds everything up into a :class:`~trizmq._stats.SocketStats`.

=========================  ===============================================================
figure                     owner (where it is kept)
=========================  ===============================================================
wire bytes                 a compressed connection's codec (``Codec.part_counts``: what
                           its parts weighed, as payload and on the wire), its pipes
                           once it ended (the connection actor notes ``wire_extra``,
                           ``wire_in``, ``payload_in``); elsewhere the payload bytes
messages, bytes sent       a stream's writer and its write-through, the udp sender, as
                           messages leave the outgoing pipe (``Pipe.passed``/``octets``,
                           plus what waits there); an inproc link's pipe, as they enter
received                   the reader, as a read's messages enter the incoming pipe (the
                           codec's ``received_bytes``); the udp receiver; a link's pipe;
                           less what waits, what was filtered and what was replaced; an
                           XPUB's own queue (its notifications, as the application takes
                           them; its peers' messages, as they leave it)
drops ``hwm``              the pipe that refused at its mark (``Pipe.refused``), counted a
                           drop where the type drops (its row's ``drops_at_hwm``); a ROUTER's
                           send; a DISH's udp receiver
drops ``no_route``         the ROUTER, SERVER, PEER or STREAM strategy
drops ``conflate``         the conflating pipe (``ConflatePipe``)
drops ``disconnect``       the peer table (a departed peer's queue), the writer (a message
                           half written), the connection actor (one half received)
``malformed``/``oversize`` the udp transport (the runtime's ``counters``)
filtered                   the strategy that reads and does not deliver (per peer, on its
                           incoming pipe), or that sends to no one (PUB, XPUB)
connections                the acceptor, the connecter, the connection actor, the heartbeat
PINGs, round trips         the writer (a PING written), the connection actor (its PONG)
subscriptions              the PUB or XPUB strategy (RADIO: the groups joined)
=========================  ===============================================================

Rules:

* A snapshot is one synchronous call on the socket's own thread: consistent as of
  that moment. It queues a publisher's gathered messages first (they are counted,
  sent or dropped, as they are queued).
* A departed peer's figures join the socket's totals when it leaves, or, when it
  leaves unread input behind (which stays readable), once that input is read.
* Queue peaks are per queue (the deepest a peer's queue has been, seen where its
  messages are counted and wherever they leave it); a socket's peak is its deepest
  queue's, departed peers included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._stats import (
    CONNECTION_EVENTS,
    DISCONNECT_CAUSES,
    DROP_REASONS,
    HANDSHAKE_FAILURE_CAUSES,
    PeerStats,
    SocketStats,
)
from .pipe import LinkPipe

if TYPE_CHECKING:
    from ..patterns.sockets import SocketStrategy
    from .parents import CountsParent
    from .peers import Peer

__all__ = ["SocketCounts", "peer_stats"]

#: the runtime's transport counters that are drops, and their reasons
_TRANSPORT_DROPS = {
    "datagrams_malformed": "malformed",
    "datagrams_oversized": "oversized",
    "datagrams_unsent": "unsent",
}


def _wire_bytes(peer: Peer, bytes_sent: int, bytes_received: int) -> tuple[int, int]:
    """The wire bytes of what ``peer`` sent and received: the payload's, and what its
    connections' parts weighed beside it (compression: less). Messages received and
    still queued are taken at the ratio of wire to payload bytes received."""
    out, inp = peer.out_pipe, peer.in_pipe
    reading = peer.reading
    live = reading.part_counts if reading is not None else None
    extra = out.counted("wire_extra")
    wire_in, payload_in = inp.counted("wire_in"), inp.counted("payload_in")
    if live is not None:
        extra += live.wire_sent - live.payload_sent
        wire_in += live.wire_received
        payload_in += live.payload_received
    if wire_in == payload_in:
        return bytes_sent + extra, bytes_received
    received = bytes_received * wire_in // payload_in if payload_in else wire_in
    return max(0, bytes_sent + extra), received


def peer_stats(peer: Peer, drops_at_hwm: bool, strategy: SocketStrategy) -> PeerStats:
    """One peer's figures, from its pipes' counters and what they hold now;
    ``drops_at_hwm``: the socket's type drops what a full queue refuses."""
    out, inp = peer.out_pipe, peer.in_pipe
    queued_out, waiting_bytes = out.queued()
    if out.exits:
        # counted as they left: what was handed to the queue is that and what waits
        sent, bytes_sent = out.passed + queued_out, out.octets + waiting_bytes
    else:
        sent, bytes_sent = out.passed, out.octets
    queued_in, waiting_bytes = inp.queued()
    received = inp.passed - queued_in - inp.counted("filtered") - inp.counted("conflate")
    if isinstance(inp, LinkPipe):
        bytes_received = 0  # an inproc link counts messages, not their bytes
    else:
        # a live connection's codec counts the bytes it parsed; its pipe, those before
        reading = peer.reading
        bytes_received = (
            inp.octets
            + (reading.received_bytes if reading is not None else 0)
            - waiting_bytes
            - inp.counted("filtered_bytes")
            - inp.counted("conflate_bytes")
        )
    wire_sent, wire_received = _wire_bytes(peer, bytes_sent, bytes_received)
    drops = dict.fromkeys(DROP_REASONS, 0)
    drops["hwm"] = (out.refused if drops_at_hwm else 0) + inp.counted("hwm")
    drops["conflate"] = out.counted("conflate") + inp.counted("conflate")
    drops["disconnect"] = out.counted("disconnect") + inp.counted("disconnect")
    return PeerStats(
        endpoint=peer.endpoint,
        remote=peer.remote_address or None,
        routing_id=strategy.shown_routing_id(peer),
        messages_sent=sent,
        messages_received=received,
        bytes_sent=bytes_sent,
        bytes_received=bytes_received,
        wire_bytes_sent=wire_sent,
        wire_bytes_received=wire_received,
        queued_out=queued_out,
        queued_in=queued_in,
        queued_out_peak=max(out.peak, len(out)),
        queued_in_peak=max(inp.peak, len(inp)),
        drops=drops,
        pings_sent=peer.pings,
        rtt=peer.rtt,
        rtt_mean=peer.rtt_mean,
        subscriptions=strategy.subscriptions_of(peer),
        filtered=inp.counted("filtered"),
    )


class _Totals:
    """Figures added up over peers."""

    __slots__ = (
        "bytes_received",
        "bytes_sent",
        "drops",
        "filtered",
        "messages_received",
        "messages_sent",
        "queued_in_peak",
        "queued_out_peak",
        "wire_bytes_received",
        "wire_bytes_sent",
    )

    def __init__(self) -> None:
        self.messages_sent = self.messages_received = 0
        self.bytes_sent = self.bytes_received = 0
        self.wire_bytes_sent = self.wire_bytes_received = 0
        self.filtered = 0
        self.queued_out_peak = self.queued_in_peak = 0
        self.drops = dict.fromkeys(DROP_REASONS, 0)

    def copy(self) -> _Totals:
        totals = _Totals()
        for name in _Totals.__slots__:
            setattr(totals, name, getattr(self, name))
        totals.drops = dict(self.drops)
        return totals

    def add(self, stats: PeerStats) -> None:
        self.messages_sent += stats.messages_sent
        self.messages_received += stats.messages_received
        self.bytes_sent += stats.bytes_sent
        self.bytes_received += stats.bytes_received
        self.wire_bytes_sent += stats.wire_bytes_sent
        self.wire_bytes_received += stats.wire_bytes_received
        self.filtered += stats.filtered
        self.queued_out_peak = max(self.queued_out_peak, stats.queued_out_peak)
        self.queued_in_peak = max(self.queued_in_peak, stats.queued_in_peak)
        drops = self.drops
        for reason, count in stats.drops.items():
            drops[reason] += count


class SocketCounts:
    """The socket actor's own counts (connections, departed peers) and its snapshot.

    The runtime keeps one; the acceptor, the connecter, the connection actor and the
    peer table report to it.
    """

    def __init__(self, socket_type: str, drops_at_hwm: bool) -> None:
        self.socket_type = socket_type
        #: the type drops what a full queue refuses (its row's ``drops_at_hwm``)
        self.drops_at_hwm = drops_at_hwm
        #: counts by event (:data:`~trizmq._stats.CONNECTION_EVENTS`)
        self.connections = dict.fromkeys(CONNECTION_EVENTS, 0)
        self.disconnect_causes = dict.fromkeys(DISCONNECT_CAUSES, 0)
        self.handshake_failure_causes = dict.fromkeys(HANDSHAKE_FAILURE_CAUSES, 0)
        #: what departed peers counted
        self._departed = _Totals()
        #: departed peers whose unread input is still readable (counted once read)
        self._draining: list[tuple[Peer, SocketStrategy]] = []
        #: the length of ``_draining`` at which :meth:`retire` folds the drained ones:
        #: twice what was left after the last time (memory stays bounded, at a cost
        #: that is constant a departure on average)
        self._fold_at = 16

    # -- events ---------------------------------------------------------------------
    def event(self, name: str) -> None:
        """One connection event (``"accepted"``, ``"connected"``, ``"reconnects"``)."""
        self.connections[name] += 1

    def handshake_failed(self, cause: str) -> None:
        """A handshake failed for ``cause`` (a ZAP refusal as ``"zap_<status>"``)."""
        self.connections["handshake_failures"] += 1
        causes = self.handshake_failure_causes
        if cause.startswith("zap_"):
            causes["zap"] += 1
        causes[cause] = causes.get(cause, 0) + 1

    def disconnected(self, cause: str) -> None:
        """A handshaken connection ended, for ``cause``."""
        self.connections["disconnects"] += 1
        if cause == "heartbeat_timeout":
            self.connections["heartbeat_timeouts"] += 1
        causes = self.disconnect_causes
        causes[cause] = causes.get(cause, 0) + 1

    def retire(self, peer: Peer, strategy: SocketStrategy) -> None:
        """``peer`` left for good: its figures join the totals (once its input is read)."""
        if not peer.in_pipe:
            self._departed.add(peer_stats(peer, self.drops_at_hwm, strategy))
            return
        draining = self._draining
        draining.append((peer, strategy))
        if len(draining) >= self._fold_at:
            self._fold_drained()
            self._fold_at = 2 * len(self._draining) + 16

    def _fold_drained(self) -> list[PeerStats]:
        """Fold the departed peers whose input is read into the totals; the figures of
        those whose input still waits."""
        kept: list[tuple[Peer, SocketStrategy]] = []
        waiting: list[PeerStats] = []
        for peer, owner in self._draining:
            stats = peer_stats(peer, self.drops_at_hwm, owner)
            if stats.queued_in:
                kept.append((peer, owner))
                waiting.append(stats)
            else:
                self._departed.add(stats)
        self._draining = kept
        return waiting

    # -- the snapshot ------------------------------------------------------------------
    def snapshot(self, runtime: CountsParent) -> SocketStats:
        """Every figure of the socket now (see the module docstring)."""
        strategy = runtime.strategy
        strategy.flush()  # a publisher's gathered messages are counted as they queue
        drops_at_hwm = self.drops_at_hwm
        peers = tuple(
            peer_stats(peer, drops_at_hwm, strategy) for peer in runtime.peers if peer.attached
        )
        draining = self._fold_drained() if self._draining else []
        totals = self._departed.copy()
        for stats in (*peers, *draining):
            totals.add(stats)
        drops = totals.drops
        drops["no_route"] += strategy.no_route
        for counter, reason in _TRANSPORT_DROPS.items():
            drops[reason] += runtime.counters[counter]
        # what the strategy's own queue adds (an XPUB's), and its subscriptions
        received, received_bytes, queued_in = strategy.own_counts()
        received += totals.messages_received
        received_bytes += totals.bytes_received
        queued_in += sum([stats.queued_in for stats in (*peers, *draining)])
        subscriptions, refused = strategy.subscription_totals()
        return SocketStats(
            socket_type=self.socket_type,
            messages_sent=totals.messages_sent,
            messages_received=received,
            bytes_sent=totals.bytes_sent,
            bytes_received=received_bytes,
            wire_bytes_sent=totals.wire_bytes_sent,
            wire_bytes_received=totals.wire_bytes_received + received_bytes - totals.bytes_received,
            drops=drops,
            filtered=totals.filtered + strategy.filtered,
            queued_out=sum([stats.queued_out for stats in peers]),
            queued_in=queued_in,
            queued_out_peak=totals.queued_out_peak,
            queued_in_peak=totals.queued_in_peak,
            peers=peers,
            connections=dict(self.connections),
            disconnect_causes=dict(self.disconnect_causes),
            handshake_failure_causes=dict(self.handshake_failure_causes),
            subscriptions=subscriptions,
            subscriptions_refused=refused,
        )
