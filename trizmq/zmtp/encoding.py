"""What one ZMTP connection sends: its traffic encoders and the handshake outbox.

Part of :class:`~trizmq.zmtp.connection.Connection` (which inherits it): the
connection's state decides whether a frame goes out plain or wrapped by the security
mechanism, and whether the peer speaks ZMTP 3.1 commands or the 3.0 forms. A ZMTP 2.0
peer takes the 3.0 forms of subscriptions and no command at all: a PING, PONG, JOIN
or LEAVE for it is a local error, and an ERROR is nothing (a refusal only closes).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from typing import TypeAlias

from .._errors import StateError
from .commands import (
    CANCEL,
    ERROR,
    JOIN,
    LEAVE,
    PING,
    PONG,
    SUBSCRIBE,
    command_body,
    error_data,
    ping_data,
)
from .frames import COMMAND, LONG_HEADER, MORE, SHORT_HEADERS, encode_frame
from .mechanism import Command, Mechanism

__all__ = ["Buffer", "State", "TrafficEncoder", "encode_plain_into"]

Buffer: TypeAlias = bytes | bytearray | memoryview

_SUBSCRIBE_BODY = command_body(SUBSCRIBE)
_CANCEL_BODY = command_body(CANCEL)
_JOIN_BODY = command_body(JOIN)
_LEAVE_BODY = command_body(LEAVE)
_MAX_GROUP = 255


class State(enum.Enum):
    """Where a connection is: GREETING -> HANDSHAKE -> TRAFFIC -> FINISHED."""

    GREETING = "greeting"
    HANDSHAKE = "handshake"
    TRAFFIC = "traffic"
    FINISHED = "finished"


def encode_plain_into(
    out: bytearray,
    frames: Sequence[Buffer],
    more_short: tuple[bytes, ...] = SHORT_HEADERS[MORE],
    last_short: tuple[bytes, ...] = SHORT_HEADERS[0],
    pack_long: Callable[[int, int], bytes] = LONG_HEADER.pack,
) -> None:
    """Append one unencrypted message (at least one frame) to ``out``."""
    # headers come from a table (or one struct.pack for long frames), and the
    # defaults bind them as fast locals: nothing else is allocated per frame
    last = len(frames) - 1
    i = 0
    while i < last:
        frame = frames[i]
        size = len(frame)
        out += more_short[size] if size < 256 else pack_long(0x03, size)
        out += frame
        i += 1
    frame = frames[last]
    size = len(frame)
    out += last_short[size] if size < 256 else pack_long(0x02, size)
    out += frame


class TrafficEncoder:
    """The sending half of a :class:`~trizmq.zmtp.connection.Connection`."""

    # set by Connection.__init__ and its handshake
    _state: State
    _wrapped: bool
    _mechanism: Mechanism
    _peer_v31: bool
    _zmtp2: bool
    _outbox: bytearray

    def refusal(self) -> bytes:
        """Nothing: a ZMTP peer that broke the handshake is simply closed."""
        return b""

    def data_to_send(self) -> bytes:
        """Drain the bytes the protocol itself wants sent (handshake commands)."""
        if not self._outbox:
            return b""
        out = bytes(self._outbox)
        self._outbox.clear()
        return out

    def _send_commands(self, commands: list[Command]) -> None:
        for name, data in commands:
            self._outbox += encode_frame(COMMAND, command_body(name, data))

    def _require_traffic(self) -> None:
        if self._state is not State.TRAFFIC:
            raise StateError("the ZMTP handshake is not complete")

    def _require_commands(self) -> None:
        self._require_traffic()
        if self._zmtp2:
            raise StateError("a ZMTP 2.0 peer takes no commands")

    def _frame(self, flags: int, body: bytes) -> bytes:
        if self._wrapped:
            return self._mechanism.encode_frame(flags, body)
        return encode_frame(flags, body)

    def encode_message(self, frames: Sequence[Buffer]) -> bytes:
        """One message: MORE on every frame but the last; short or long headers."""
        if not frames:
            raise ValueError("a message has at least one frame")
        out = bytearray()
        self.encode_message_into(out, frames)
        return bytes(out)

    def encode_message_into(self, out: bytearray, frames: Sequence[Buffer]) -> None:
        """Append one message (at least one frame) to ``out``: the writer's hot path."""
        if self._state is not State.TRAFFIC:  # inline: this runs once per message
            raise StateError("the ZMTP handshake is not complete")
        if self._wrapped:
            self._encode_wrapped_into(out, (frames,))
        else:
            encode_plain_into(out, frames)

    def message_encoder(self) -> Callable[[bytearray, Sequence[Buffer]], None]:
        """The fastest form of :meth:`encode_message_into` for this connection.

        Taken once the handshake is complete, the plain encoder (or, for a mechanism
        that wraps frames, the mechanism's) skips the per-call state check (the
        writer's hot path calls it for every message); otherwise it is
        :meth:`encode_message_into` itself.
        """
        if self._state is State.TRAFFIC:
            if self._wrapped:  # the mechanism's own (CURVE's boxes a message in one call)
                return self._mechanism.encode_message_into
            return encode_plain_into
        return self.encode_message_into

    def short_frame_overhead(self) -> int | None:
        """What each frame of a message adds around its payload on the wire when every
        frame is short (then, and only then, the message's wire form is under 265
        bytes): its 2-byte header, and what the mechanism wraps around the frame
        (CURVE's MESSAGE head, nonce and MAC, and the inner flags: 33). None before
        the handshake is complete. A frame whose wire body reaches 256 bytes has a
        9-byte header, so a message holding one is 265 bytes or more."""
        if self._state is not State.TRAFFIC:
            return None
        return 2 + self._mechanism.overhead if self._wrapped else 2

    def encode_messages_into(self, out: bytearray, messages: Iterable[Sequence[Buffer]]) -> None:
        """Append the wire form of every message to ``out`` (each must have a frame)."""
        self._require_traffic()
        if self._wrapped:
            self._encode_wrapped_into(out, messages)
            return
        for frames in messages:
            encode_plain_into(out, frames)

    def _encode_wrapped_into(self, out: bytearray, messages: Iterable[Sequence[Buffer]]) -> None:
        self._mechanism.encode_messages_into(out, messages)

    def encode_subscribe(self, topic: bytes) -> bytes:
        """SUBSCRIBE command to a 3.1+ peer, else the legacy message ``\\x01topic``."""
        self._require_traffic()
        if self._peer_v31:
            return self._frame(COMMAND, _SUBSCRIBE_BODY + topic)
        return self._frame(0, b"\x01" + topic)

    def encode_cancel(self, topic: bytes) -> bytes:
        """CANCEL command to a 3.1+ peer, else the legacy message ``\\x00topic``."""
        self._require_traffic()
        if self._peer_v31:
            return self._frame(COMMAND, _CANCEL_BODY + topic)
        return self._frame(0, b"\x00" + topic)

    def encode_ping(self, ttl: float, context: bytes = b"") -> bytes:
        """PING with its 2-byte TTL always present (libzmq reads it unchecked)."""
        self._require_commands()
        return self._frame(COMMAND, command_body(PING, ping_data(ttl, context)))

    def encode_pong(self, context: bytes) -> bytes:
        """PONG echoing a PING's context (at most 16 bytes)."""
        self._require_commands()
        if len(context) > 16:
            raise ValueError("PONG context is at most 16 bytes")
        return self._frame(COMMAND, command_body(PONG, context))

    def encode_join(self, group: bytes) -> bytes:
        """JOIN: the group follows the name with no length byte."""
        self._require_commands()
        if len(group) > _MAX_GROUP:
            raise ValueError(f"group is at most {_MAX_GROUP} bytes")
        return self._frame(COMMAND, _JOIN_BODY + group)

    def encode_leave(self, group: bytes) -> bytes:
        """LEAVE: the group follows the name with no length byte."""
        self._require_commands()
        if len(group) > _MAX_GROUP:
            raise ValueError(f"group is at most {_MAX_GROUP} bytes")
        return self._frame(COMMAND, _LEAVE_BODY + group)

    def encode_error(self, reason: str) -> bytes:
        """ERROR with ``reason`` cut to 255 bytes; usable during the handshake too.
        Nothing for a ZMTP 2.0 peer, which has no ERROR: the refusal only closes."""
        if self._zmtp2:
            return b""
        return self._frame(COMMAND, command_body(ERROR, error_data(reason)))
