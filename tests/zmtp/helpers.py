"""Test helpers: raw byte builders written independently of the code under test,
and :class:`ConnectionPair`, which wires two Connections together in memory."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from trizmq.zmtp import Connection, Received

__all__ = [
    "ConnectionPair",
    "connection",
    "feed",
    "handshaken",
    "past_greeting",
    "raw_command",
    "raw_frame",
    "raw_greeting",
    "raw_ready",
]


def raw_greeting(
    major: int = 3,
    minor: int = 1,
    mechanism: bytes = b"NULL",
    as_server: int = 0,
    padding: bytes = b"\x00" * 7 + b"\x01",
) -> bytes:
    """A peer greeting, field by field."""
    return (
        b"\xff"
        + padding
        + b"\x7f"
        + bytes((major, minor))
        + mechanism.ljust(20, b"\x00")
        + bytes((as_server,))
        + bytes(31)
    )


def past_greeting(conn: Connection, sent: bytes) -> bytes:
    """What ``conn`` sent (``sent``) once a peer's whole ZMTP 3 greeting was in, less the
    last stages of its own greeting (major and minor version, mechanism, as-server,
    filler), which must come first."""
    mechanism = conn.mechanism
    rest = raw_greeting(mechanism=mechanism.name, as_server=int(mechanism.as_server))[10:]
    assert sent[: len(rest)] == rest, sent[: len(rest)]
    return sent[len(rest) :]


def raw_frame(flags: int, body: bytes, *, long: bool | None = None) -> bytes:
    """A frame; the LONG bit and size field follow ``long`` (default: body > 255)."""
    if long is None:
        long = len(body) > 255
    if long:
        return bytes((flags | 0x02,)) + struct.pack(">Q", len(body)) + body
    return bytes((flags, len(body))) + body


def raw_command(name: bytes, data: bytes = b"", *, long: bool | None = None) -> bytes:
    """A command frame ``name-len | name | data``."""
    return raw_frame(0x04, bytes((len(name),)) + name + data, long=long)


def raw_ready(*properties: tuple[bytes, bytes]) -> bytes:
    """A READY command frame with the given (name, value) properties, in order."""
    body = b"".join(
        bytes((len(name),)) + name + struct.pack(">I", len(value)) + value
        for name, value in properties
    )
    return raw_command(b"READY", body)


def feed(conn: Connection, data: bytes, chunk: int | None = None) -> list[Received]:
    """Feed ``data`` in pieces of ``chunk`` bytes (all at once if None); collect the output."""
    if chunk is None:
        return conn.receive_data(data)
    out: list[Received] = []
    for i in range(0, len(data), chunk):
        out += conn.receive_data(data[i : i + chunk])
    return out


def handshaken(
    socket_type: str = "DEALER",
    peer_type: bytes = b"ROUTER",
    version: tuple[int, int] = (3, 1),
    **kwargs: Any,
) -> Connection:
    """A Connection whose handshake with a synthetic peer is complete, outbox drained."""
    conn = connection(socket_type, **kwargs)
    conn.start()
    events = conn.receive_data(raw_greeting(*version) + raw_ready((b"Socket-Type", peer_type)))
    assert conn.handshake_complete, events
    conn.data_to_send()
    return conn


class ConnectionPair:
    """Two Connections joined by in-memory pipes; :meth:`pump` moves bytes until quiet.

    ``chunk`` cuts every delivery into pieces of that many bytes, to exercise
    partial reads. Events each side produced accumulate in ``a_events``/``b_events``.
    """

    def __init__(self, a: Connection, b: Connection, chunk: int | None = None) -> None:
        self.a = a
        self.b = b
        self.chunk = chunk
        self.a_events: list[Received] = []
        self.b_events: list[Received] = []
        self._to_a = bytearray(b.start())
        self._to_b = bytearray(a.start())

    def a_sends(self, data: bytes) -> None:
        """Queue raw bytes from a to b."""
        self._to_b += data

    def b_sends(self, data: bytes) -> None:
        """Queue raw bytes from b to a."""
        self._to_a += data

    def pump(self) -> tuple[list[Received], list[Received]]:
        """Deliver everything both ways (including replies); return the new events."""
        a_new: list[Received] = []
        b_new: list[Received] = []
        while self._to_a or self._to_b:
            to_a, to_b = bytes(self._to_a), bytes(self._to_b)
            self._to_a.clear()
            self._to_b.clear()
            if to_b:
                b_new += feed(self.b, to_b, self.chunk)
            if to_a:
                a_new += feed(self.a, to_a, self.chunk)
            self._to_b += self.a.data_to_send()
            self._to_a += self.b.data_to_send()
        self.a_events += a_new
        self.b_events += b_new
        return a_new, b_new

    def handshake(self) -> ConnectionPair:
        """Pump until both sides report the handshake complete."""
        self.pump()
        assert self.a.handshake_complete, self.a_events
        assert self.b.handshake_complete, self.b_events
        return self

    @staticmethod
    def messages(events: Iterable[Received]) -> list[list[bytes]]:
        """Only the data messages among ``events``."""
        return [e for e in events if isinstance(e, list)]


def connection(socket_type: str, **kwargs: Any) -> Connection:
    """A :class:`Connection` of ``socket_type`` told what its row of the socket-type
    table says (the peer types it accepts, whether it sends an Identity, whether its
    peers subscribe to it), as the runtime tells it."""
    from trizmq.patterns.sockets import socket_type as row_of

    return Connection(socket_type, **{**row_of(socket_type).handshake_facts(), **kwargs})


def zws_connection(socket_type: str, **kwargs: Any) -> Any:
    """A :class:`~trizmq.zmtp.zws.ZwsConnection` told its row's facts, as
    :func:`connection` tells a ZMTP one."""
    from trizmq.zmtp.zws import ZwsConnection

    outer = {key: kwargs.pop(key) for key in ("client", "host", "path")}
    return ZwsConnection(connection(socket_type, **kwargs), **outer)
