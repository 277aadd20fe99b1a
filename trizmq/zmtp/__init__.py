"""The sans-I/O ZMTP 3.x protocol core: bytes in, events and bytes out.

Rules: no I/O, no clocks and no trio in this package (it imports nothing from
trizmq except :mod:`trizmq._errors`), so it can be tested with byte strings alone.
:class:`Connection` is the entry point; events are small frozen classes, and a data
message is a plain ``list[bytes]`` (see :mod:`trizmq.zmtp.events`).
"""

from __future__ import annotations

from .commands import COMMAND_EVENTS
from .connection import HANDSHAKE_FRAME_LIMIT, Connection, Received
from .errors import ProtocolError
from .events import (
    Cancel,
    Event,
    HandshakeComplete,
    Join,
    Leave,
    PeerError,
    Ping,
    Pong,
    Subscribe,
    UnknownCommand,
)
from .greeting import GREETING_SIZE, build_greeting
from .mechanism import Command, Mechanism, ZapReply, ZapRequest
from .metadata import decode_metadata, encode_metadata
from .null import NullMechanism
from .socket_types import COMPATIBLE, SENDS_IDENTITY, SOCKET_TYPES, is_compatible

__all__ = [
    "COMMAND_EVENTS",
    "COMPATIBLE",
    "GREETING_SIZE",
    "HANDSHAKE_FRAME_LIMIT",
    "SENDS_IDENTITY",
    "SOCKET_TYPES",
    "Cancel",
    "Command",
    "Connection",
    "Event",
    "HandshakeComplete",
    "Join",
    "Leave",
    "Mechanism",
    "NullMechanism",
    "PeerError",
    "Ping",
    "Pong",
    "ProtocolError",
    "Received",
    "Subscribe",
    "UnknownCommand",
    "ZapReply",
    "ZapRequest",
    "build_greeting",
    "decode_metadata",
    "encode_metadata",
    "is_compatible",
]
