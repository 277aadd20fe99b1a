"""The socket figures both exporters export: one row each, its meaning stated once.

Prometheus (``_prometheus``) and OpenTelemetry (``_otel``) export the same counters
of ``sock.stats()``. A row of :data:`FIGURES` says what one figure is (counter or
gauge, its unit, what it counts, how to read it from a snapshot) and what each
exporter calls it; :data:`trizmq.metrics.SOCKET_METRICS` and
:data:`trizmq.metrics.INSTRUMENTS` are made from these rows, in their order.

Rules:

* ``name`` is the Prometheus metric without ``trizmq_`` and ``_total``; ``otel`` the
  OpenTelemetry instrument (the messaging semantic conventions' name where one fits).
* A description that names another figure writes it ``{name}`` (``{queue_depth}``):
  each exporter puts its own name for that figure there.
* ``unit`` is UCUM, as OpenTelemetry takes it. Prometheus states a unit for seconds
  alone (those metrics' names end in ``_seconds``); the byte counters' names, fixed
  before, carry none.
* ``by`` is, for a figure whose value is a mapping, the Prometheus label and the
  OpenTelemetry attribute that tell its values apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from .._stats import SocketStats
from ._snapshot import failure_causes, max_rtt, mean_rtt, zap_statuses

__all__ = ["FIGURES", "Figure", "Value"]

#: what a figure reads from a snapshot: one number, a number by label, or None (no sample)
Value = float | int | None | Mapping[str, float | int]


@attrs.frozen
class Figure:
    """One socket figure, as both exporters export it."""

    name: str
    otel: str
    kind: str  # "counter" (monotonic) or "gauge"
    unit: str
    description: str
    value: Callable[[SocketStats], Value]
    #: (Prometheus label, OpenTelemetry attribute) of a mapping's keys, or None
    by: tuple[str, str] | None = None
    #: the messaging operation it counts, "send" or "receive", or "" for neither
    operation: str = ""

    def describe(self, names: Mapping[str, str]) -> str:
        """The description, other figures named as ``names`` (figure name -> exporter's)."""
        return self.description.format_map(names)


#: every socket figure, in the order the exporters list them
FIGURES: tuple[Figure, ...] = (
    Figure(
        "messages_sent", "messaging.client.sent.messages", "counter", "{message}",
        "Whole messages handed to a peer's queue (a message that reaches K peers counts K).",
        lambda s: s.messages_sent, operation="send",
    ),
    Figure(
        "messages_received", "messaging.client.consumed.messages", "counter", "{message}",
        "Whole messages handed to the application.",
        lambda s: s.messages_received, operation="receive",
    ),
    Figure(
        "bytes_sent", "trizmq.bytes.sent", "counter", "By",
        "Payload bytes (frames' bodies) of the messages sent.",
        lambda s: s.bytes_sent, operation="send",
    ),
    Figure(
        "bytes_received", "trizmq.bytes.received", "counter", "By",
        "Payload bytes (frames' bodies) of the messages received.",
        lambda s: s.bytes_received, operation="receive",
    ),
    Figure(
        "wire_bytes_sent", "trizmq.wire_bytes.sent", "counter", "By",
        "The sent messages' parts as they went on the wire, after compression (lz4+tcp, "
        "zstd+tcp); {bytes_sent} elsewhere.",
        lambda s: s.wire_bytes_sent, operation="send",
    ),
    Figure(
        "wire_bytes_received", "trizmq.wire_bytes.received", "counter", "By",
        "The received messages' parts as they came on the wire, before decompression "
        "(lz4+tcp, zstd+tcp); {bytes_received} elsewhere.",
        lambda s: s.wire_bytes_received, operation="receive",
    ),
    Figure(
        "messages_dropped", "trizmq.messages.dropped", "counter", "{message}",
        "Whole messages discarded, by reason.",
        lambda s: s.drops, by=("reason", "trizmq.drop.reason"),
    ),
    Figure(
        "messages_filtered", "trizmq.messages.filtered", "counter", "{message}",
        "Messages a pattern did not deliver by design (a SUB or DISH filter): not drops.",
        lambda s: s.filtered,
    ),
    Figure(
        "queue_depth", "trizmq.queue.depth", "gauge", "{message}",
        "Messages waiting now: out, to be written to peers; in, to be read by the application.",
        lambda s: {"out": s.queued_out, "in": s.queued_in},
        by=("direction", "trizmq.queue.direction"),
    ),
    Figure(
        "queue_depth_peak", "trizmq.queue.depth.peak", "gauge", "{message}",
        "The most {queue_depth} has been since the socket opened.",
        lambda s: {"out": s.queued_out_peak, "in": s.queued_in_peak},
        by=("direction", "trizmq.queue.direction"),
    ),
    Figure("peers", "trizmq.peers", "gauge", "{peer}", "Current peers.", lambda s: len(s.peers)),
    Figure(
        "connection_events", "trizmq.connection.events", "counter", "{event}",
        "Connection events (accepted, connected, reconnects, disconnects, handshake_failures, "
        "heartbeat_timeouts).",
        lambda s: s.connections, by=("event", "trizmq.connection.event"),
    ),
    Figure(
        "disconnects", "trizmq.disconnects", "counter", "{connection}",
        "Handshaken connections that ended, by cause.",
        lambda s: s.disconnect_causes, by=("cause", "trizmq.disconnect.cause"),
    ),
    Figure(
        "handshake_failures", "trizmq.handshake.failures", "counter", "{handshake}",
        "Handshakes that failed, by cause.",
        lambda s: failure_causes(s.handshake_failure_causes), by=("cause", "error.type"),
    ),
    Figure(
        "zap_refusals", "trizmq.zap.refusals", "counter", "{handshake}",
        "Handshakes refused by ZAP, by status code (also in {handshake_failures}, cause zap).",
        lambda s: zap_statuses(s.handshake_failure_causes), by=("status", "trizmq.zap.status"),
    ),
    Figure(
        "subscriptions", "trizmq.subscriptions", "gauge", "{subscription}",
        "Subscriptions held now, over all peers (PUB, XPUB).",
        lambda s: s.subscriptions,
    ),
    Figure(
        "subscriptions_refused", "trizmq.subscriptions.refused", "counter", "{subscription}",
        "Subscriptions refused by a limit.",
        lambda s: s.subscriptions_refused,
    ),
    Figure(
        "rtt_seconds", "trizmq.rtt", "gauge", "s",
        "Heartbeat round trip (PING to PONG), smoothed per peer, averaged over the peers "
        "that measured one.",
        mean_rtt,
    ),
    Figure(
        "rtt_max_seconds", "trizmq.rtt.max", "gauge", "s",
        "The longest last heartbeat round trip among the peers.",
        max_rtt,
    ),
)
