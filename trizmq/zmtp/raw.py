"""The codec of a STREAM socket's connections: raw bytes, no ZMTP at all.

libzmq's ``ZMQ_STREAM`` talks to peers that are not ZeroMQ (an HTTP client, a
telnet session): there is no greeting and no handshake, every read becomes one
message, and what is sent is written as it is. :class:`RawConnection` is that, in
the shape of the :class:`~trizmq.transport.base.Codec` the runtime drives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._errors import StateError
from .connection import Received
from .encoding import Buffer
from .mechanism import Mechanism, ZapReply, ZapRequest
from .null import NullMechanism

__all__ = ["RawConnection"]


def _encode_raw(out: bytearray, frames: Sequence[Buffer]) -> None:
    for frame in frames:
        out += frame


class RawConnection:
    """One raw TCP connection: complete from the start, a message per read."""

    def __init__(self) -> None:
        self._mechanism = NullMechanism()
        #: the bytes of every read so far (each read is a message)
        self.received_bytes = 0

    handshake_complete = True
    closed = False
    in_message = False
    pending_zap: ZapRequest | None = None
    peer_socket_type = ""
    peer_identity = b""
    peer_version = (0, 0)
    commands_parsed = 0
    #: every read goes on as it is (``Codec.part_counts``)
    part_counts = None
    #: ignored: a read is one message whose one frame is already in its list
    bare_messages = False
    handshake_commands_received = 0
    #: no ZMTP frames: nothing written around a big frame as plain ZMTP would be (a
    #: STREAM has no fan-out to share an encoding with anyway)
    shares_encoding = False

    @property
    def mechanism(self) -> Mechanism:
        return self._mechanism

    def start(self) -> bytes:
        return b""

    def data_to_send(self) -> bytes:
        return b""

    def refusal(self) -> bytes:
        return b""

    def receive_data(self, data: Buffer) -> list[Received]:
        """One message of what was read, as it is."""
        self.received_bytes += len(data)
        return [[bytes(data)]] if data else []

    def zap_reply(self, reply: ZapReply) -> list[Received]:
        raise StateError("a raw connection has no handshake")

    def message_encoder(self) -> Callable[[bytearray, Sequence[Buffer]], None]:
        return _encode_raw

    def short_frame_overhead(self) -> int | None:
        return None  # no ZMTP frames: the payload is summed

    # no commands on a raw connection: what would carry them is nothing but bytes
    def encode_subscribe(self, topic: bytes) -> bytes:
        return b""

    def encode_cancel(self, topic: bytes) -> bytes:
        return b""

    def encode_join(self, group: bytes) -> bytes:
        return b""

    def encode_leave(self, group: bytes) -> bytes:
        return b""

    def encode_ping(self, ttl: float, context: bytes = b"") -> bytes:
        return b""

    def encode_pong(self, context: bytes) -> bytes:
        return b""

    def encode_error(self, reason: str) -> bytes:
        return b""
