"""The sans-I/O ZMTP 3.x protocol core: bytes in, events and bytes out.

Rules: no I/O, no clocks and no trio in this package (it imports nothing from
trizmq except :mod:`trizmq._errors`), so it can be tested with byte strings alone.
:class:`Connection` is the entry point; events are small frozen classes, and a data
message is a plain ``list[bytes]`` (see :mod:`trizmq.zmtp.events`).
"""

from __future__ import annotations

from .commands import COMMAND_EVENTS
from .connection import HANDSHAKE_FRAME_LIMIT, Connection, Received
from .curve import (
    CookieKeys,
    CurveClientMechanism,
    CurveServerMechanism,
    curve_keypair,
    curve_public,
)
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
    SubscriptionRefused,
    UnknownCommand,
)
from .greeting import GREETING_SIZE, build_greeting
from .mechanism import Command, Mechanism, ZapReply, ZapRequest
from .metadata import decode_metadata, encode_metadata
from .null import NullMechanism
from .plain import PlainClientMechanism, PlainServerMechanism
from .z85 import decode_key, z85_decode, z85_encode

__all__ = [
    "COMMAND_EVENTS",
    "GREETING_SIZE",
    "HANDSHAKE_FRAME_LIMIT",
    "Cancel",
    "Command",
    "Connection",
    "CookieKeys",
    "CurveClientMechanism",
    "CurveServerMechanism",
    "Event",
    "HandshakeComplete",
    "Join",
    "Leave",
    "Mechanism",
    "NullMechanism",
    "PeerError",
    "PlainClientMechanism",
    "PlainServerMechanism",
    "Ping",
    "Pong",
    "ProtocolError",
    "Received",
    "Subscribe",
    "SubscriptionRefused",
    "UnknownCommand",
    "ZapReply",
    "ZapRequest",
    "build_greeting",
    "curve_keypair",
    "curve_public",
    "decode_key",
    "decode_metadata",
    "encode_metadata",
    "z85_decode",
    "z85_encode",
]
