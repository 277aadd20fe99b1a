"""The codec of ``lz4+tcp://`` and ``zstd+tcp://``: ZMTP with its message parts
compressed, sans I/O.

A :class:`CompressedConnection` wraps a ZMTP :class:`~trizmq.zmtp.connection.Connection`
the way :class:`~trizmq.zmtp.zws.ZwsConnection` does for WebSocket: the inner
connection keeps doing everything it does on tcp (the greeting, the mechanism's
handshake with NULL, PLAIN or CURVE, ZAP, the socket-type check, commands, the
frame limits, encryption), and between it and the socket every message part goes
through a :class:`~trizmq.zmtp.compression.PartTransform`. Outgoing, a message's
parts are compressed before the inner connection frames (and CURVE encrypts) them;
incoming, the parts of every message the inner connection completes are
decompressed. Commands (READY, SUBSCRIBE, PING, ...) are never compressed.

As omq.rs does, nothing is negotiated: the greeting, the handshake and its
metadata are those of tcp, and both peers use the scheme (a plain ``tcp://`` peer
sees sentinels, a compressed one unknown sentinels, and the connection fails). A
dictionary given to the socket is shipped as the handshake ends, before any
message; one trained from the first messages is shipped in front of the message
after which it was trained.

Rules:

* The peer must speak ZMTP 3.1 (the formats' requirement, and what every omq.rs and
  trizmq peer speaks): a 3.0 peer would send its subscriptions as messages, which
  the formats say nothing of. It is refused at the handshake's end.
* ``maxmsgsize`` (or, where it is unset,
  :data:`~trizmq.zmtp.compression.DEFAULT_LIMIT`) bounds the decompressed bytes of
  each message, checked against every size a part declares before its output is
  allocated; the inner connection bounds the same message on the wire at that
  limit plus :data:`WIRE_SLACK` (a dictionary shipment, the sentinels), and
  ``max_frames`` its frames. A PUB's or XPUB's inner connection refuses no
  subscription at its header (``max_subscription``): every message part starts
  with a sentinel that looks like a cancel's ``\\x00`` to it; the publisher refuses
  an oversized subscription once it is whole, within that wire bound.
* Any violation of the formats is a :class:`ProtocolError` that ends this
  connection (cause ``"limit"`` for a size over the limit), and every later call of
  :meth:`CompressedConnection.receive_data` raises it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .compression import DEFAULT_LIMIT, PartCounts, PartTransform
from .connection import Connection, Received
from .encoding import Buffer
from .errors import ProtocolError
from .events import HandshakeComplete
from .mechanism import ZapReply
from .wrapping import InnerConnectionFacts

__all__ = ["WIRE_SLACK", "CompressedConnection", "wire_limit"]

#: what a message may weigh on the wire beyond its decompressed limit: a dictionary
#: shipment (64 KiB at most), and 4 bytes of sentinel and up to 7 of a longer
#: header per part (some 6 000 parts of a message at its limit)
WIRE_SLACK = 64 * 1024 + 64


def wire_limit(maxmsgsize: int) -> int:
    """The inner connection's ``maxmsgsize`` for a socket's: a message's bound on the
    wire, its decompressed bound (or :data:`~trizmq.zmtp.compression.DEFAULT_LIMIT`)
    plus :data:`WIRE_SLACK`."""
    return (maxmsgsize if maxmsgsize >= 0 else DEFAULT_LIMIT) + WIRE_SLACK


class CompressedConnection(InnerConnectionFacts):
    """The codec of one compressed connection; see the module docstring.

    ``inner`` is the ZMTP connection it speaks through, made as for tcp but bounded
    as the module docstring says: ``maxmsgsize`` :func:`wire_limit` of the socket's
    and no ``max_subscription``. ``scheme`` is ``"lz4+tcp"`` or ``"zstd+tcp"``;
    ``maxmsgsize`` is the socket's (the decompressed bound); ``level``,
    ``dictionary`` and ``auto_train`` are its ``compression_*`` options (see
    :class:`~trizmq.zmtp.compression.PartTransform`).
    """

    def __init__(
        self,
        inner: Connection,
        *,
        scheme: str,
        maxmsgsize: int = -1,
        level: int | None = None,
        dictionary: bytes | None = None,
        auto_train: bool = False,
    ) -> None:
        if inner.maxmsgsize != wire_limit(maxmsgsize):
            raise ValueError(
                f"the inner connection's maxmsgsize must be wire_limit({maxmsgsize}) = "
                f"{wire_limit(maxmsgsize)}, not {inner.maxmsgsize}"
            )
        self._transform = PartTransform(
            scheme,
            level=level,
            dictionary=dictionary,
            auto_train=auto_train,
            limit=maxmsgsize,
            max_frames=inner.max_frames,
        )
        self._inner = inner
        #: why the connection failed, once it did (every later read raises it again)
        self._dead: ProtocolError | None = None
        self._bare = False

    # -- what the runtime reads -----------------------------------------------------------
    @property
    def transform(self) -> PartTransform:
        """The part transform (its dictionaries and counts)."""
        return self._transform

    @property
    def part_counts(self) -> PartCounts:
        """What the parts weighed, as payload and on the wire, each way."""
        return self._transform.counts

    @property
    def closed(self) -> bool:
        return self._dead is not None or self._inner.closed

    @property
    def in_message(self) -> bool:
        return self._inner.in_message

    @property
    def commands_parsed(self) -> int:
        """The inner connection's: a dictionary shipment consumed here is no command
        (the messages a read returned are still all there is)."""
        return self._inner.commands_parsed

    @property
    def received_bytes(self) -> int:
        """Payload bytes (decompressed parts) of the messages returned so far."""
        return self._transform.counts.payload_received

    @property
    def bare_messages(self) -> bool:
        """As :attr:`Connection.bare_messages <trizmq.zmtp.Connection.bare_messages>`."""
        return self._bare

    @bare_messages.setter
    def bare_messages(self, value: bool) -> None:
        self._bare = value
        self._inner.bare_messages = value

    @property
    def shares_encoding(self) -> bool:
        """False: each connection compresses with its own dictionary (and a trained
        one differs on every connection), so no encoding is shared."""
        return False

    def short_frame_overhead(self) -> int | None:
        """None: a compressed part's wire size says nothing of its payload."""
        return None

    # -- the handshake --------------------------------------------------------------------
    def start(self) -> bytes:
        return self._inner.start()

    def data_to_send(self) -> bytes:
        """The inner connection's handshake bytes; once the handshake is complete,
        the shipment of a dictionary given to the socket follows them."""
        out = self._inner.data_to_send()
        if self._inner.handshake_complete and self._dead is None:
            shipment = self._transform.shipment()
            if shipment is not None:
                buf = bytearray(out)
                self._inner.message_encoder()(buf, [shipment])
                return bytes(buf)
        return out

    def refusal(self) -> bytes:
        return self._inner.refusal()

    def zap_reply(self, reply: ZapReply) -> list[Received]:
        return self._translate(self._inner.zap_reply(reply))

    # -- messages in ----------------------------------------------------------------------
    def receive_data(self, data: Buffer) -> list[Received]:
        """Consume ``data``: every event and (decompressed) message it completed."""
        if self._dead is not None:
            raise ProtocolError(self._dead.reason, cause=self._dead.cause)
        return self._translate(self._inner.receive_data(data))

    def _translate(self, events: list[Received]) -> list[Received]:
        """``events`` with every message's parts decoded (a shipment consumed, a batch
        unpacked)."""
        decode = self._transform.decode
        out: list[Received] = []
        try:
            for event in events:
                cls = event.__class__
                if cls is list:
                    messages = decode(event)  # type: ignore[arg-type]
                elif cls is bytes:
                    messages = decode([event])  # type: ignore[list-item]
                else:
                    if cls is HandshakeComplete and event.version < (3, 1):  # type: ignore[union-attr]
                        raise ProtocolError(
                            "a compressed transport needs a ZMTP 3.1 peer, not "
                            f"{event.version[0]}.{event.version[1]}"  # type: ignore[union-attr]
                        )
                    out.append(event)
                    continue
                if self._bare:
                    out += [m[0] if len(m) == 1 else m for m in messages]
                else:
                    out += messages
        except ProtocolError as exc:
            self._dead = exc
            raise
        return out

    # -- messages out ---------------------------------------------------------------------
    def message_encoder(self) -> Callable[[bytearray, Sequence[Buffer]], None]:
        """Append one message: its parts compressed, then framed (and encrypted) by
        the inner connection; a dictionary shipment first, as a message of its own,
        when one is due."""
        inner = self._inner.message_encoder()
        encode = self._transform.encode

        def encode_into(out: bytearray, frames: Sequence[Buffer]) -> None:
            shipment, wire = encode(frames)
            if shipment is not None:
                inner(out, [shipment])
            inner(out, wire)

        return encode_into

    def encode_subscribe(self, topic: bytes) -> bytes:
        return self._inner.encode_subscribe(topic)

    def encode_cancel(self, topic: bytes) -> bytes:
        return self._inner.encode_cancel(topic)

    def encode_join(self, group: bytes) -> bytes:
        return self._inner.encode_join(group)

    def encode_leave(self, group: bytes) -> bytes:
        return self._inner.encode_leave(group)

    def encode_ping(self, ttl: float, context: bytes = b"") -> bytes:
        return self._inner.encode_ping(ttl, context)

    def encode_pong(self, context: bytes) -> bytes:
        return self._inner.encode_pong(context)

    def encode_error(self, reason: str) -> bytes:
        return self._inner.encode_error(reason)
