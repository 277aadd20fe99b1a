"""The typed snapshot of a socket's counters: :class:`SocketStats` and :class:`PeerStats`.

``sock.stats()`` returns a :class:`SocketStats`; every figure in it is counted by the
one actor or strategy where its event happens (the owner named in each field's
description), always on, as integer additions on paths that already run. A snapshot
is frozen: it is a copy of the counters at the moment of the call, safe to keep,
compare and hand to an exporter (``trizmq.metrics``) without touching the socket.

Rules:

* ``messages_*`` and ``bytes_*`` count whole messages and their payload bytes (the
  frames' bodies, no ZMTP framing), once a message is handed to a peer's queue (sent)
  or to the application (received). A socket's figure is the sum over its peers, those
  gone included; a PUB message that reaches K subscribers counts K. Bytes are counted
  where frames are encoded and decoded; an inproc link passes message objects, and
  counts its messages but not their bytes (0).
* ``drops`` maps every reason in ``DROP_REASONS`` to the number of whole messages
  discarded for it, 0 until it happens. What a pattern never meant to deliver (a SUB
  topic nobody subscribed to, a DISH group not joined) is *filtered*, not dropped, and
  is counted apart (``filtered``).
* ``connections`` maps every event in ``CONNECTION_EVENTS`` to its count;
  ``disconnect_causes`` and ``handshake_failure_causes`` break two of them down.
* Queue peaks are per queue: the deepest one peer's queue has been. A socket's peak
  is its deepest queue's (an exact peak of the sum over every queue would cost each
  message a look at all of them).

The owners, and how to find where messages are lost, are in docs/observability.md;
the counting itself is ``trizmq.nursery.counting``'s.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

__all__ = [
    "CONNECTION_EVENTS",
    "DISCONNECT_CAUSES",
    "DROP_REASONS",
    "HANDSHAKE_FAILURE_CAUSES",
    "PeerStats",
    "SocketStats",
]

#: Why a whole message was discarded. ``hwm``: a full queue where the pattern drops
#: (PUB, XPUB, RADIO); ``no_route``: an unknown routing id (ROUTER without
#: ``router_mandatory``, SERVER, PEER); ``conflate``: a queued message replaced under
#: ``conflate``; ``disconnect``: messages still queued for, or partly received from, a
#: peer whose connection ended and whose queue is not kept; ``malformed`` and
#: ``oversized``: udp datagrams that could not be decoded, or were over ``maxmsgsize``;
#: ``unsent``: udp datagrams the operating system refused to send (lost, as libzmq's).
DROP_REASONS: tuple[str, ...] = (
    "hwm",
    "no_route",
    "conflate",
    "disconnect",
    "malformed",
    "oversized",
    "unsent",
)

#: Connection events counted per socket. ``accepted``: connections a bound endpoint
#: accepted; ``connected``: connections a connected endpoint made (its first and every
#: later one); ``reconnects``: those of them after an endpoint's first; ``disconnects``:
#: handshaken connections that ended (not at the socket's close); ``handshake_failures``:
#: connections whose handshake failed; ``heartbeat_timeouts``: disconnects because the
#: peer went silent (a PING unanswered, or the peer's own TTL passed).
CONNECTION_EVENTS: tuple[str, ...] = (
    "accepted",
    "connected",
    "reconnects",
    "disconnects",
    "handshake_failures",
    "heartbeat_timeouts",
)

#: Why a handshaken connection ended (each also counts in ``disconnects``):
#: ``peer_closed`` (it closed or reset the connection), ``heartbeat_timeout``,
#: ``protocol_error`` (it broke ZMTP, or sent ERROR), ``limit`` (a hostile-input bound:
#: ``maxmsgsize``, ``max_frames``), ``local`` (this side ended it: a disconnect, a
#: ROUTER handover, a STREAM's hang-up).
DISCONNECT_CAUSES: tuple[str, ...] = (
    "peer_closed",
    "heartbeat_timeout",
    "protocol_error",
    "limit",
    "local",
)

#: Why a handshake failed (each also counts in ``handshake_failures``): ``mechanism``
#: (the peer's security mechanism is not ours), ``zap`` (the authenticator refused
#: it; counted under ``"zap_<status>"``, ``zap_400``, ``zap_500``, ... as well),
#: ``timeout`` (``handshake_ivl``, or no greeting within ``greeting_ivl``),
#: ``socket_type`` (a type ours cannot talk to), ``protocol_error``, ``peer_closed``
#: (it left during the handshake), ``peer_error`` (it refused us with an ERROR: a
#: client's view of a refusal), ``evicted`` (a newer connection took its handshake
#: slot, ``max_handshakes``), ``refused`` (the socket took no more peers: a PAIR's
#: second), ``downgrade`` (a ZMTP 2.0 peer, which has no security mechanism, to a
#: PLAIN or CURVE socket).
HANDSHAKE_FAILURE_CAUSES: tuple[str, ...] = (
    "mechanism",
    "zap",
    "timeout",
    "socket_type",
    "protocol_error",
    "peer_closed",
    "peer_error",
    "evicted",
    "refused",
    "downgrade",
)


def _zeroes(names: tuple[str, ...]) -> dict[str, int]:
    return dict.fromkeys(names, 0)


def _identity_first(
    cls: type, fields: list[attrs.Attribute[object]]
) -> list[attrs.Attribute[object]]:
    """A snapshot's positional fields (whose figures these are) before the counters, which
    are keywords: the order of its repr and of ``attrs.asdict``."""
    return [f for f in fields if not f.kw_only] + [f for f in fields if f.kw_only]


@attrs.frozen(kw_only=True)
class _Counters:
    """The counters a peer and a socket both keep, declared once (keywords only).

    What each means for a peer, and for the socket (the sum over its peers, those gone
    included), is in :class:`PeerStats` and :class:`SocketStats`; each adds what is its
    own: whose figures they are (positional, first) and its other counters.
    """

    messages_sent: int = 0
    messages_received: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    wire_bytes_sent: int = 0
    wire_bytes_received: int = 0
    drops: Mapping[str, int] = attrs.field(factory=lambda: _zeroes(DROP_REASONS))
    filtered: int = 0
    queued_out: int = 0
    queued_in: int = 0
    queued_out_peak: int = 0
    queued_in_peak: int = 0
    subscriptions: int = 0


@attrs.frozen(field_transformer=_identity_first)
class PeerStats(_Counters):
    """One current peer's figures, part of :attr:`SocketStats.peers`.

    Attributes:
        endpoint: The bound or connected endpoint the peer came through.
        remote: The peer's address (``"127.0.0.1:5555"``, a path, ...), or None when
            the transport has none (inproc).
        routing_id: The peer's routing id (bytes), or None where the type has none
            (a ROUTER's or STREAM's id; a SERVER's or PEER's as 4 bytes, big-endian).
        messages_sent: Whole messages handed to this peer's outgoing queue (owner: the
            connection's writer, which counts what leaves the queue, plus what waits;
            an inproc link's queue counts as they enter).
        messages_received: Whole messages from this peer handed to the application
            (owner: the reader, which counts what enters the incoming queue, less what
            waits there and what was filtered or replaced).
        bytes_sent: Payload bytes of ``messages_sent`` (0 on inproc).
        bytes_received: Payload bytes of ``messages_received`` (0 on inproc).
        wire_bytes_sent: The bytes ``bytes_sent`` took on the wire as message parts:
            compressed (``lz4+tcp://``, ``zstd+tcp://``: sentinels and dictionary
            shipments included), else equal to ``bytes_sent`` (owner: the codec,
            which counts what it encodes beside the payload).
        wire_bytes_received: The same of ``bytes_received`` (messages still queued
            are taken at the connection's ratio of wire to payload bytes).
        queued_out: Messages waiting now in this peer's outgoing queue (not written).
        queued_in: Messages from this peer waiting now to be read by the application.
        queued_out_peak: The most entries this peer's outgoing queue has held, since
            the peer was made (commands, such as a PING, count too).
        queued_in_peak: The same of its incoming queue.
        drops: Whole messages discarded for this peer, by reason (``DROP_REASONS``;
            ``no_route``, ``malformed`` and ``oversized`` are the socket's alone).
        pings_sent: Heartbeat PINGs written to the peer (owner: the writer).
        rtt: Seconds from the write of the oldest unanswered PING to the next PONG,
            the last measured, or None before the first PONG.
        rtt_mean: A smoothed mean of ``rtt`` (seconds; weight 1/8 per new sample, as
            TCP's SRTT), or None before the first PONG.
        subscriptions: Subscriptions the peer holds here (PUB, XPUB; a RADIO: the
            groups it joined), else 0.
        filtered: Messages read from this peer that the pattern did not deliver by
            its rules (a SUB's or DISH's filter, a REQ's reply from a peer not asked,
            a PUB's message from a subscriber): not drops.
    """

    endpoint: str
    remote: str | None = None
    routing_id: bytes | None = None
    pings_sent: int = attrs.field(default=0, kw_only=True)
    rtt: float | None = attrs.field(default=None, kw_only=True)
    rtt_mean: float | None = attrs.field(default=None, kw_only=True)


@attrs.frozen(field_transformer=_identity_first)
class SocketStats(_Counters):
    """A socket's counters at one moment, returned by ``sock.stats()``.

    Attributes:
        socket_type: The ZeroMQ type name (``"PUB"``, ``"ROUTER"``, ...).
        messages_sent: Whole messages handed to a peer's queue, summed over every
            peer the socket has had (a PUB message that reaches K peers counts K).
        messages_received: Whole messages handed to the application.
        bytes_sent: Payload bytes (frames' bodies) of ``messages_sent``.
        bytes_received: Payload bytes of ``messages_received``.
        wire_bytes_sent: The bytes of ``bytes_sent`` as they went on the wire, after
            compression (its peers' ``wire_bytes_sent``); equal to ``bytes_sent``
            on uncompressed transports, so ``bytes_sent - wire_bytes_sent`` is what
            compression saved.
        wire_bytes_received: The same of ``bytes_received``.
        drops: Whole messages this socket discarded, by reason (every reason of
            ``DROP_REASONS``, 0 until it happens); drops that no peer owns
            (``no_route``, udp's ``malformed`` and ``oversized``) count here alone.
        filtered: Messages a pattern did not deliver by design: its peers'
            ``filtered``, and messages sent to no one (a PUB or XPUB message no
            subscription matches, a RADIO message for a group nobody joined): not drops.
        queued_out: Messages waiting now to be written, over all peers.
        queued_in: Messages waiting now to be read by the application (a departed
            peer's unread input included).
        queued_out_peak: The deepest one peer's outgoing queue has been since the
            socket opened (its peers' ``queued_out_peak``, departed ones included).
        queued_in_peak: The same of the incoming queues.
        peers: One :class:`PeerStats` per current peer.
        connections: Counts by event (``CONNECTION_EVENTS``).
        disconnect_causes: ``disconnects`` by cause (``DISCONNECT_CAUSES``).
        handshake_failure_causes: ``handshake_failures`` by cause
            (``HANDSHAKE_FAILURE_CAUSES``, and ``zap_<status>`` for ZAP refusals).
        subscriptions: Subscriptions held now, over all peers (PUB, XPUB), else 0.
        subscriptions_refused: Subscriptions refused by a limit
            (``max_subscriptions``, ``max_subscription_bytes``, ...).
    """

    socket_type: str
    peers: tuple[PeerStats, ...] = attrs.field(default=(), kw_only=True)
    connections: Mapping[str, int] = attrs.field(
        factory=lambda: _zeroes(CONNECTION_EVENTS), kw_only=True
    )
    disconnect_causes: Mapping[str, int] = attrs.field(
        factory=lambda: _zeroes(DISCONNECT_CAUSES), kw_only=True
    )
    handshake_failure_causes: Mapping[str, int] = attrs.field(
        factory=lambda: _zeroes(HANDSHAKE_FAILURE_CAUSES), kw_only=True
    )
    subscriptions_refused: int = attrs.field(default=0, kw_only=True)
