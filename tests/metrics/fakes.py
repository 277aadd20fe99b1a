"""Stand-ins for sockets in the exporter tests: a snapshot given, not counted."""

from __future__ import annotations

from typing import Any

import attrs

from trizmq._stats import DROP_REASONS, PeerStats, SocketStats


@attrs.define(eq=False)
class FakeSocket:
    """What an exporter reads of a socket: ``closed`` and ``stats()`` (hashed by identity)."""

    snapshot: SocketStats
    closed: bool = False
    calls: int = 0
    #: the trio run the socket lives in (a real socket's ``_trio_token``), or None
    _trio_token: Any = None

    @property
    def socket_type(self) -> str:
        return self.snapshot.socket_type

    def stats(self) -> SocketStats:
        self.calls += 1
        return self.snapshot


def drops(**counts: int) -> dict[str, int]:
    """Every drop reason, 0 but for ``counts``."""
    return {reason: counts.get(reason, 0) for reason in DROP_REASONS}


#: a PUB with every kind of figure set, for the exposition and OpenTelemetry tests
PUB_STATS = SocketStats(
    "PUB",
    messages_sent=120,
    messages_received=0,
    bytes_sent=4800,
    bytes_received=0,
    wire_bytes_sent=1200,
    drops=drops(hwm=7, disconnect=2),
    filtered=0,
    queued_out=5,
    queued_in=0,
    queued_out_peak=64,
    queued_in_peak=0,
    peers=(
        PeerStats(
            "tcp://127.0.0.1:5556",
            remote="127.0.0.1:40001",
            messages_sent=60,
            queued_out=5,
            drops=drops(hwm=7),
            pings_sent=3,
            rtt=0.004,
            rtt_mean=0.003,
            subscriptions=2,
        ),
        PeerStats(
            "tcp://127.0.0.1:5556",
            remote="127.0.0.1:40002",
            messages_sent=60,
            pings_sent=3,
            rtt=0.002,
            rtt_mean=0.001,
            subscriptions=1,
        ),
    ),
    connections={
        "accepted": 3,
        "connected": 0,
        "reconnects": 0,
        "disconnects": 1,
        "handshake_failures": 2,
        "heartbeat_timeouts": 1,
    },
    disconnect_causes={
        "peer_closed": 0,
        "heartbeat_timeout": 1,
        "protocol_error": 0,
        "limit": 0,
        "local": 0,
    },
    handshake_failure_causes={
        "mechanism": 1,
        "zap": 1,
        "timeout": 0,
        "socket_type": 0,
        "protocol_error": 0,
        "peer_closed": 0,
        "zap_400": 1,
    },
    subscriptions=3,
    subscriptions_refused=4,
)
