"""Command bodies: the ``name-len | name | data`` layout, the command names and the
traffic commands.

Rules (37/ZMTP-3.1, libzmq-wire-notes §4-6):

* A command body is a 1-byte name length, a non-empty name, then data. An empty
  body or a name running past the body is a :class:`ProtocolError`.
* :data:`COMMAND_EVENTS` is the table of commands understood after the handshake,
  each mapped to the function building its event from the data. Names not in the
  table become :class:`UnknownCommand` (the Connection decides that).
* PING data is a 2-byte TTL (tenths of a second) and an optional context; fewer
  than 2 bytes is an error. A context longer than the 16 bytes the RFC allows is
  cut to 16, as libzmq does when it echoes it, so the event can always be echoed.
* ERROR data is ``reason-len | reason``; a reason whose length byte disagrees
  with the body is still reported (raw), since it only serves for logging.
* JOIN/LEAVE data is the group itself, with no length byte (wire notes §6.1).
* SUBSCRIBE/CANCEL data is the topic itself.
* HELLO, WELCOME, INITIATE and READY are the security handshakes' commands: PLAIN
  and CURVE use the same names (24/ZMTP-PLAIN, 25/ZMTP-CURVE), each with data of
  its own (their mechanisms read it).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from types import MappingProxyType

from .errors import ProtocolError
from .events import Cancel, Event, Join, Leave, PeerError, Ping, Pong, Subscribe

__all__ = [
    "CANCEL",
    "COMMAND_EVENTS",
    "ERROR",
    "HELLO",
    "INITIATE",
    "JOIN",
    "LEAVE",
    "MAX_PING_CONTEXT",
    "PING",
    "PONG",
    "READY",
    "SUBSCRIBE",
    "WELCOME",
    "command_body",
    "error_data",
    "parse_error",
    "ping_data",
    "split_command",
]

HELLO = b"HELLO"
WELCOME = b"WELCOME"
INITIATE = b"INITIATE"
READY = b"READY"
ERROR = b"ERROR"
SUBSCRIBE = b"SUBSCRIBE"
CANCEL = b"CANCEL"
PING = b"PING"
PONG = b"PONG"
JOIN = b"JOIN"
LEAVE = b"LEAVE"

MAX_PING_CONTEXT = 16
_MAX_TTL = 0xFFFF
_U16 = struct.Struct(">H")


def command_body(name: bytes, data: bytes | bytearray | memoryview = b"") -> bytes:
    """``name-len | name | data``."""
    return bytes((len(name),)) + name + data


def split_command(body: bytes) -> tuple[bytes, bytes]:
    """(name, data) of a command body; :class:`ProtocolError` if it has no valid name."""
    if not body:
        raise ProtocolError("empty command frame")
    end = 1 + body[0]
    if body[0] == 0 or end > len(body):
        raise ProtocolError("malformed command name")
    return body[1:end], body[end:]


def ping_data(ttl: float, context: bytes = b"") -> bytes:
    """PING data: TTL in seconds turned into tenths (clamped to 0..65535), then context."""
    if len(context) > MAX_PING_CONTEXT:
        raise ValueError(f"PING context is at most {MAX_PING_CONTEXT} bytes")
    tenths = min(max(round(ttl * 10), 0), _MAX_TTL)
    return _U16.pack(tenths) + context


def error_data(reason: str) -> bytes:
    """ERROR data: the UTF-8 reason cut to 255 bytes, behind its length byte."""
    # cut on a character boundary so the peer's log line stays valid UTF-8
    raw = reason.encode("utf-8", "replace")[:255].decode("utf-8", "ignore").encode("utf-8")
    return bytes((len(raw),)) + raw


def _ping(data: bytes) -> Ping:
    if len(data) < 2:
        raise ProtocolError("PING command without its 2-byte TTL")
    (tenths,) = _U16.unpack_from(data)
    return Ping(tenths / 10, data[2 : 2 + MAX_PING_CONTEXT])


def parse_error(data: bytes) -> PeerError:
    """The PeerError for ERROR data (lenient: it only serves for logging)."""
    if data and data[0] == len(data) - 1:
        data = data[1:]
    return PeerError(data.decode("utf-8", "replace"))


#: commands understood after the handshake -> their event builder
COMMAND_EVENTS: Mapping[bytes, Callable[[bytes], Event]] = MappingProxyType(
    {
        SUBSCRIBE: Subscribe,
        CANCEL: Cancel,
        PING: _ping,
        PONG: Pong,
        JOIN: Join,
        LEAVE: Leave,
        ERROR: parse_error,
    }
)
