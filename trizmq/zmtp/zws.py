"""ZWS 2.0 (RFC 45): ZeroMQ over WebSocket, sans I/O.

A :class:`ZwsConnection` is the codec of one ``ws://``/``wss://`` connection. It
speaks RFC 6455 in two parts: ``wsproto`` does the HTTP upgrade (the request, the
response, the ``Sec-WebSocket-*`` checks) and the closing handshake (a CLOSE read
and answered), and the data frames go through trizmq's own frame codec,
:mod:`trizmq.zmtp.rfc6455` (masking at C speed). ZMTP is spoken through an inner
:class:`~trizmq.zmtp.connection.Connection`, which keeps doing what it does on tcp:
the mechanism handshake (NULL, PLAIN, CURVE), ZAP, the socket-type check, every
limit on frames and messages, and encryption.

The mapping, as libzmq 4.3's ws engine does it:

* ``Sec-WebSocket-Protocol`` chooses the mechanism: a client offers
  ``ZWS2.0/NULL,ZWS2.0`` (NULL), ``ZWS2.0/PLAIN`` or ``ZWS2.0/CURVE``; a server takes
  the first offer that fits its own mechanism, in the client's order, and refuses
  the upgrade (400) when none does.
* There is no ZMTP greeting: once the upgrade is done, the inner connection is
  given the greeting it would have read, and the handshake commands follow.
* Each ZMTP frame is one binary WebSocket message: a flag byte (0x00 last, 0x01
  more, 0x02 command) and the frame's body.
* With ``ZWS2.0`` (no mechanism, what browsers' small clients offer) each side's
  first message is its routing id and nothing else is exchanged: the peer is
  taken as a NULL peer of no declared socket type.
* Subscriptions travel as the messages ``\\x01topic`` / ``\\x00topic`` (libzmq's ws
  engine has no SUBSCRIBE command), and heartbeats are WebSocket PING and PONG
  control frames, which libzmq answers and sends: a PING arrives as a
  :class:`~trizmq.zmtp.events.Ping` event (TTL 0) to be answered with
  :meth:`ZwsConnection.encode_pong`.

Strategy: wsproto is handed the HTTP head only (the bytes up to its blank line);
what follows it in the same read is already frames, and goes to the frame codec.
Every binary message of a read is turned back into a ZMTP frame (its header, then
its body) and the inner connection parses them all with one call, as it parses a
read on tcp.

Hostile input: a text message, a client frame that is not masked, a frame that
breaks RFC 6455 (see :mod:`~trizmq.zmtp.rfc6455`) or an oversized message ends the
connection with a :class:`ProtocolError` naming it; no message is buffered past
``maxmsgsize`` (or, before the handshake is complete, past
:data:`HANDSHAKE_FRAME_LIMIT`): a frame declaring more is refused at its header; the
HTTP request or response is bounded by h11 (:data:`MAX_HTTP_HEAD`). On a PUB or
XPUB, a subscription message (``\\x01topic``, or a SUBSCRIBE command) whose topic is
over ``max_subscription`` is refused as soon as its first bytes and its size (the
WebSocket frame's declared length, or what arrived) tell it: the rest is counted
off, not kept, and its end reported as one
:class:`~trizmq.zmtp.events.SubscriptionRefused`, as the inner connection does on tcp.
A cancel of such a topic (``\\x00topic``, or a CANCEL command) is dropped the same
way, unreported: it could cancel nothing held.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    RejectConnection,
    Request,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from .commands import READY, command_body
from .connection import Connection, Received
from .encoding import Buffer
from .errors import ProtocolError
from .events import HandshakeComplete, Ping, SubscriptionRefused
from .frames import COMMAND, LONG, MAX_FRAME_SIZE, MORE, SHORT_HEADERS, frame_header
from .greeting import build_greeting
from .handshake import HANDSHAKE_FRAME_LIMIT, MAX_IDENTITY
from .mechanism import ZapReply
from .metadata import encode_metadata
from .rfc6455 import BINARY, CLOSE, MAX_CONTROL, PING, PONG, TEXT, FrameDecoder, FrameEncoder
from .wrapping import InnerConnectionFacts

__all__ = ["MAX_HTTP_HEAD", "NO_MECHANISM", "ZwsConnection", "offered_protocols"]

#: the subprotocol of ZWS 2.0 with no mechanism (routing ids only)
NO_MECHANISM = "ZWS2.0"
#: the most bytes an HTTP request or response head may take (h11's default bound,
#: which wsproto keeps): a longer one is refused before it is buffered further
MAX_HTTP_HEAD = 16 * 1024

_MORE_FLAG = 0x01
_COMMAND_FLAG = 0x02
_ZWS_FLAGS = {0: b"\x00", MORE: b"\x01", COMMAND: b"\x02", COMMAND | MORE: b"\x03"}
#: the end of an HTTP head, as h11 finds it (a blank line, CRLF or LF)
_HEAD_END = re.compile(b"\n\r?\n")
#: how a binary message starts if it is a subscription (a last frame ``\x01topic``, a
#: SUBSCRIBE command) or a cancel (a last frame ``\x00topic``, a CANCEL command)
_TOPIC_HEADS = (b"\x00\x01", b"\x02\x09SUBSCRIBE", b"\x00\x00", b"\x02\x06CANCEL")
#: the heads of subscriptions: a refused one is reported, a dropped cancel is not
_SUBSCRIBE_HEADS = frozenset(_TOPIC_HEADS[:2])
_LONGEST_HEAD = max(map(len, _TOPIC_HEADS))
# normal endings of a WebSocket: going away, closed, closed with no status
_NORMAL_CLOSE = frozenset({1000, 1001, 1005})
#: the ZMTP header of a last (0) or more (1) frame of a short body, by body size
_SHORT_ZMTP = (SHORT_HEADERS[0], SHORT_HEADERS[MORE])


def offered_protocols(mechanism: bytes) -> list[str]:
    """What a client offers in ``Sec-WebSocket-Protocol``, as libzmq does."""
    name = mechanism.decode("ascii")
    if name == "NULL":
        return [f"{NO_MECHANISM}/NULL", NO_MECHANISM]
    return [f"{NO_MECHANISM}/{name}"]


def _accepted(offers: Sequence[str], mechanism: bytes) -> str | None:
    """The first offer a server of ``mechanism`` takes, in the client's order."""
    ours = f"{NO_MECHANISM}/{mechanism.decode('ascii')}"
    for offer in offers:
        offer = offer.strip()
        if offer == ours or (offer == NO_MECHANISM and mechanism == b"NULL"):
            return offer
    return None


class _EndedByPeer(ConnectionResetError):
    """The peer closed the WebSocket normally (a stream error, not a violation)."""


class ZwsConnection(InnerConnectionFacts):
    """The codec of one ZWS 2.0 connection; see the module docstring.

    ``inner`` is the ZMTP connection it speaks through, made as for tcp (its socket
    type, mechanism, identity and limits are the socket's; ``maxmsgsize`` bounds a
    WebSocket message too). ``client`` is the connecting side, which sends the
    upgrade request for ``path`` on ``host`` (``host:port``); a server checks that a
    request asks for ``path``.
    """

    def __init__(self, inner: Connection, *, client: bool, host: str, path: str) -> None:
        self._inner = inner
        self._client = client
        self._host = host
        self._path = path or "/"
        self._identity = inner.identity
        maxmsgsize = inner.maxmsgsize
        self._ws = WSConnection(ConnectionType.CLIENT if client else ConnectionType.SERVER)
        self._decoder = FrameDecoder(client=client)
        self._encoder = FrameEncoder(client=client)
        #: the largest body of one WebSocket message in traffic (its flag byte aside)
        self._limit = maxmsgsize if maxmsgsize >= 0 else MAX_FRAME_SIZE
        #: the upgrade is done and the ZMTP side has started
        self._open = False
        #: the last bytes handed to wsproto in the upgrade (where a blank line may begin)
        self._head_tail = b""
        #: ZWS2.0 with no mechanism: the peer's routing id is still to come
        self._awaiting_identity = False
        self._protocol = ""
        #: the binary message arriving in pieces, and its size so far
        self._partial: list[bytes | bytearray] = []
        self._partial_size = 0
        #: the longest topic a subscription may carry (None: no bound, not a PUB or XPUB)
        self._max_subscription = inner.subscription_bound
        #: the last ZMTP frame was a message's with more to follow: the next one is not
        #: a subscription
        self._more = False
        #: the subscription or cancel head of the message arriving: b"" when it is
        #: neither, None while too little of it came to tell
        self._head: bytes | None = None
        #: the rest of the message arriving is a dropped subscription's or cancel's:
        #: counted, not kept
        self._discarding = False
        #: subscriptions refused here, reported among the events (see commands_parsed)
        self._refused = 0
        #: WebSocket PINGs received, reported among the events as ZMTP PINGs are
        self._pings = 0
        self._outbox = bytearray()
        #: a normal close the peer sent after messages still to be handed on
        self._peer_closed: str | None = None
        #: the peer's CLOSE came: nothing more is sent but the answer
        self._closing = False
        self._started = False
        #: a server has looked at the first byte of the request
        self._request_seen = False

    # -- what the runtime reads ---------------------------------------------------------
    @property
    def protocol(self) -> str:
        """The subprotocol agreed (``"ZWS2.0/NULL"``), ``""`` before the upgrade."""
        return self._protocol

    @property
    def closed(self) -> bool:
        """True once the ZMTP side failed or the WebSocket is closing (a CLOSE came)."""
        return self._inner.closed or self._peer_closed is not None

    @property
    def in_message(self) -> bool:
        return bool(self._partial) or self._inner.in_message

    @property
    def commands_parsed(self) -> int:
        """Events other than messages made so far (a caller that sees the count
        unchanged across :meth:`receive_data` knows it returned messages only): the
        inner connection's commands, refused subscriptions and WebSocket PINGs."""
        return self._inner.commands_parsed + self._refused + self._pings

    @property
    def received_bytes(self) -> int:
        """As :attr:`Connection.received_bytes <trizmq.zmtp.Connection.received_bytes>`:
        the inner connection parses the messages."""
        return self._inner.received_bytes

    @property
    def bare_messages(self) -> bool:
        """As :attr:`Connection.bare_messages <trizmq.zmtp.Connection.bare_messages>`:
        the inner connection parses the messages."""
        return self._inner.bare_messages

    @bare_messages.setter
    def bare_messages(self, value: bool) -> None:
        self._inner.bare_messages = value

    #: parts are framed as they are, not transformed (``Codec.part_counts``)
    part_counts = None

    @property
    def shares_encoding(self) -> bool:
        """False: a WebSocket frame is not a ZMTP frame (and a client's is masked),
        so no encoding is shared with other connections, and none is written
        around a big frame."""
        return False

    # -- the handshake ------------------------------------------------------------------
    def start(self) -> bytes:
        """The client's upgrade request; nothing for a server, which waits for one."""
        if self._started:
            raise ProtocolError("ZwsConnection.start() was already called")
        self._started = True
        if not self._client:
            return b""
        return self._ws.send(
            Request(
                host=self._host,
                target=self._path,
                subprotocols=offered_protocols(self._inner.mechanism.name),
            )
        )

    def data_to_send(self) -> bytes:
        out = bytes(self._outbox)
        self._outbox.clear()
        inner = self._inner.data_to_send()
        if self._protocol == NO_MECHANISM and not self._inner.handshake_complete:
            inner = b""  # its READY: ZWS2.0 exchanges routing ids instead
        if inner and self._open:
            out += self._frames_of(inner)
        return out

    def refusal(self) -> bytes:
        """The HTTP refusal (400, 404) of an upgrade the server turned down."""
        out = bytes(self._outbox)
        self._outbox.clear()
        return out

    def zap_reply(self, reply: ZapReply) -> list[Received]:
        return self._inner.zap_reply(reply)

    def receive_data(self, data: Buffer) -> list[Received]:
        """Consume ``data``: every event and message it completed, in order."""
        if self._peer_closed is not None:
            raise _EndedByPeer(self._peer_closed)
        zmtp = bytearray()
        if not self._open:
            data = self._upgrade(bytes(data), zmtp)
        events: list[Received] = []
        if data:
            self._read_frames(data, zmtp, events)
        if zmtp:
            self._flush_into(zmtp, events)
        if self._peer_closed is not None and not events:
            raise _EndedByPeer(self._peer_closed)
        return events

    def _upgrade(self, data: bytes, zmtp: bytearray) -> bytes:
        """Hand wsproto the HTTP head in ``data``; what follows the upgrade (frames)
        is returned, b"" while the upgrade is not done."""
        if not self._client and data and not self._request_seen:
            self._request_seen = True
            if not data[:1].isalpha():
                raise ProtocolError("bad WebSocket upgrade: not an HTTP request")
        while data and not self._open:
            tail = self._head_tail
            found = _HEAD_END.search(tail + data)
            if found is None:
                head, data = data, b""
                self._head_tail = (tail + head)[-2:]
            else:
                cut = found.end() - len(tail)
                head, data = data[:cut], data[cut:]
                self._head_tail = b""
            try:
                self._ws.receive_data(head)
                self._upgrade_events(zmtp)
            except RemoteProtocolError as exc:
                raise ProtocolError(f"bad WebSocket upgrade: {exc}") from None
            except LocalProtocolError as exc:
                raise ProtocolError(f"WebSocket: {exc}") from None
        return data

    def _upgrade_events(self, zmtp: bytearray) -> None:
        for event in self._ws.events():
            cls = event.__class__
            if cls is Request:
                self._on_request(event)  # type: ignore[arg-type]
                self._begin(zmtp)
            elif cls is AcceptConnection:
                self._protocol = event.subprotocol or ""  # type: ignore[attr-defined]
                self._begin(zmtp)
            elif cls is RejectConnection:
                code = event.status_code  # type: ignore[attr-defined]
                raise ProtocolError(f"the server refused the WebSocket upgrade ({code})")
            # RejectData (a refusal's body) needs nothing

    def _on_request(self, request: Request) -> None:
        offers = list(request.subprotocols)
        chosen = _accepted(offers, self._inner.mechanism.name)
        target = request.target.partition("?")[0] or "/"
        if target != self._path:
            self._outbox += self._ws.send(RejectConnection(status_code=404))
            raise ProtocolError(f"WebSocket upgrade for {target!r}, bound to {self._path!r}")
        if chosen is None:
            self._outbox += self._ws.send(RejectConnection(status_code=400))
            shown = ",".join(offers) or "none"
            raise ProtocolError(
                f"no ZWS 2.0 protocol fits this socket's mechanism (offered: {shown})"
            )
        self._protocol = chosen
        self._outbox += self._ws.send(AcceptConnection(subprotocol=chosen))

    def _begin(self, zmtp: bytearray) -> None:
        """The upgrade is done: start ZMTP with the greeting the peer would have sent."""
        inner = self._inner
        mechanism = inner.mechanism
        self._open = True
        inner.start(staged=False)  # our greeting, whole: not sent over ZWS
        zmtp += build_greeting(mechanism.name, not mechanism.as_server)
        if self._protocol == NO_MECHANISM:
            # routing ids only: our READY is never sent, the peer's is made up from
            # its first message; ours is the routing id
            self._awaiting_identity = True
            self._encoder.binary_into(self._outbox, b"\x00", self._identity)
        elif self._protocol.partition("/")[2].encode("ascii") != mechanism.name:
            raise ProtocolError(f"the server chose {self._protocol!r}, not our mechanism")

    def _on_close(self, frame: bytes, zmtp: bytearray, events: list[Received]) -> None:
        """The peer's CLOSE frame, as it came: wsproto reads it and answers it."""
        self._closing = True
        self._ws.receive_data(frame)
        for event in self._ws.events():
            if not isinstance(event, CloseConnection):
                continue
            code, reason = event.code, event.reason
            if code in _NORMAL_CLOSE:
                self._flush_into(zmtp, events)
                self._peer_closed = f"the peer closed the WebSocket ({code})"
                if self._ws.state is ConnectionState.REMOTE_CLOSING:
                    self._outbox += self._ws.send(event.response())
                return
            shown = f": {reason}" if reason else ""
            raise ProtocolError(f"WebSocket closed with code {code}{shown}")

    # -- messages in --------------------------------------------------------------------
    def _read_frames(self, data: Buffer, zmtp: bytearray, events: list[Received]) -> None:
        """Every frame ``data`` carries: binary messages into ``zmtp`` as ZMTP frames,
        PINGs as events, a CLOSE to wsproto."""
        pieces = self._decoder.receive_data(data)
        # in traffic, with no message arriving in pieces, whole one-frame messages of
        # a last or a MORE frame are translated inline (the commonest by far)
        fast = self._traffic()
        limit = self._limit
        short = _SHORT_ZMTP
        more = self._more
        for opcode, payload, remaining, fin in pieces:
            if fast and opcode == BINARY and fin and not remaining:
                size = len(payload) - 1
                if 0 <= size <= limit:
                    flags = payload[0]
                    if flags <= _MORE_FLAG:
                        more = flags == _MORE_FLAG
                        if size < 256:
                            zmtp += short[flags][size]
                            zmtp += payload[1:]
                        else:
                            zmtp += frame_header(flags, size)
                            zmtp += memoryview(payload)[1:]
                        continue
            self._more = more
            if opcode <= BINARY:
                if opcode == TEXT:
                    raise ProtocolError("a WebSocket text message (ZWS carries binary ones)")
                self._take_binary(payload, remaining, fin, zmtp, events)
                if not self._inner.handshake_complete:
                    # the handshake's commands are read one at a time: its limits
                    # and its end apply from the next message on
                    self._flush_into(zmtp, events)
                fast = self._traffic()
            elif opcode == PING:
                # answered through the runtime, as a ZMTP PING would be
                self._flush_into(zmtp, events)
                events.append(Ping(0.0, payload))
                self._pings += 1
            elif opcode == CLOSE:
                self._on_close(payload, zmtp, events)
            # a PONG: the bytes read were the answer the heartbeat waits for
            more = self._more
        self._more = more

    def _traffic(self) -> bool:
        """In traffic with no message arriving in pieces (nor one being dropped)."""
        return (
            self._inner.handshake_complete
            and not self._awaiting_identity
            and not self._partial_size
            and not self._discarding
        )

    def _take_binary(
        self,
        data: bytes,
        remaining: int,
        fin: bool,
        zmtp: bytearray,
        events: list[Received],
    ) -> None:
        """One piece of a binary message, ``remaining`` bytes of its frame still to
        come: checked against the limit (the frame's declared length included) before
        it is kept."""
        limit = self._limit if self._inner.handshake_complete else HANDSHAKE_FRAME_LIMIT
        size = self._partial_size + len(data)
        if size + remaining > limit + 1:
            declared = len(data) + remaining
            before = self._partial_size
            also = f" after {before} bytes of its message" if before else ""
            raise ProtocolError(
                f"a WebSocket frame declaring {declared} bytes{also} exceeds the "
                f"{limit}-byte limit",
                cause="limit",
            )
        finished = fin and not remaining
        if self._discarding:
            self._partial_size = size
            if finished:
                self._refuse(size, zmtp, events)
            return
        if not finished:
            if data:
                self._partial.append(data)
            self._partial_size = size
            if self._max_subscription is not None and size and self._refuses(size, remaining):
                self._partial.clear()
                self._discarding = True
            return
        self._head = None
        if self._partial:
            self._partial.append(data)
            data = b"".join(self._partial)
            self._partial.clear()
        self._partial_size = 0
        if not data:
            raise ProtocolError("an empty WebSocket message (no ZWS flag byte)")
        flags = data[0]
        if flags & ~(_MORE_FLAG | _COMMAND_FLAG):
            raise ProtocolError(f"ZWS flags 0x{flags:02x} have reserved bits set")
        body = memoryview(data)[1:]
        if self._awaiting_identity:
            self._identity_message(flags, body, zmtp)
            return
        if flags == _MORE_FLAG | _COMMAND_FLAG:
            raise ProtocolError("a ZWS command frame with the MORE flag set")
        if not flags & _COMMAND_FLAG:
            self._more = bool(flags & _MORE_FLAG)
        zmtp += frame_header(COMMAND if flags & _COMMAND_FLAG else MORE if flags else 0, len(body))
        zmtp += body

    def _refuses(self, size: int, remaining: int) -> bool:
        """Whether the binary message arriving, ``size`` bytes so far and ``remaining``
        more declared by its frame, is a subscription or a cancel whose topic is over
        the bound (PUB and XPUB only): told by its first bytes and its size."""
        if self._head is None:
            if self._more or self._awaiting_identity or not self._inner.handshake_complete:
                self._head = b""
            else:
                self._head = self._topic_head()
                if self._head is None:
                    return False
        if not self._head:
            return False
        assert self._max_subscription is not None
        return size + remaining - len(self._head) > self._max_subscription

    def _topic_head(self) -> bytes | None:
        """The subscription or cancel head the message arriving starts with; b"" when
        it is neither, None while too little of it came to tell."""
        start = b""
        for piece in self._partial:
            start += piece[: _LONGEST_HEAD - len(start)]
            if len(start) == _LONGEST_HEAD:
                break
        told = True
        for head in _TOPIC_HEADS:
            if start.startswith(head):
                return head
            if head.startswith(start):
                told = False
        return b"" if told else None

    def _refuse(self, size: int, zmtp: bytearray, events: list[Received]) -> None:
        """The dropped subscription's or cancel's message, ``size`` bytes, is over: a
        subscription's refusal is reported in its place among the events."""
        head = self._head
        assert head is not None
        if head in _SUBSCRIBE_HEADS:
            self._flush_into(zmtp, events)
            events.append(SubscriptionRefused(size - len(head)))
            self._refused += 1
        self._discarding = False
        self._head = None
        self._partial_size = 0

    def _identity_message(self, flags: int, body: memoryview, zmtp: bytearray) -> None:
        """ZWS2.0 with no mechanism: the peer's first message is its routing id."""
        if flags:
            raise ProtocolError("the first ZWS2.0 message must be one routing-id frame")
        if len(body) > MAX_IDENTITY:
            raise ProtocolError(f"peer routing id of {len(body)} bytes exceeds 255")
        self._awaiting_identity = False
        self._inner.data_to_send()  # our READY: ZWS2.0 sends none
        properties = {"Identity": bytes(body)} if body else {}
        ready = command_body(READY, encode_metadata(properties))
        zmtp += frame_header(COMMAND, len(ready))
        zmtp += ready

    def _flush_into(self, zmtp: bytearray, events: list[Received]) -> None:
        """Hand the ZMTP bytes gathered so far to the inner connection."""
        if zmtp:
            data = bytes(zmtp)
            zmtp.clear()
            inner = self._inner
            if inner.handshake_complete or self._protocol != NO_MECHANISM:
                events += inner.receive_data(data)
                return
            for event in inner.receive_data(data):
                if event.__class__ is HandshakeComplete:
                    inner.data_to_send()  # our READY: ZWS2.0 sends none
                events.append(event)

    # -- messages out -------------------------------------------------------------------
    def _frames_of(self, zmtp: Buffer) -> bytes:
        """Our own ZMTP bytes (well formed: we made them), one WebSocket message a frame."""
        if self._closing:
            return b""
        src = memoryview(zmtp)
        out = bytearray()
        binary = self._encoder.binary_into
        pos, end = 0, len(src)
        while pos < end:
            flags = src[pos]
            if flags & LONG:
                size = int.from_bytes(src[pos + 1 : pos + 9], "big")
                pos += 9
            else:
                size = src[pos + 1]
                pos += 2
            binary(out, _ZWS_FLAGS[flags & (MORE | COMMAND)], src[pos : pos + size])
            pos += size
        return bytes(out)

    def message_encoder(self) -> Callable[[bytearray, Sequence[Buffer]], None]:
        """Append one message as WebSocket messages, one a frame (encrypted first
        when the mechanism encrypts)."""
        if self._inner.mechanism.encrypts:
            return self._encode_wrapped_into
        return self._encode_plain_into

    def short_frame_overhead(self) -> int | None:
        """None: a WebSocket frame's header depends on the payload's length and on
        the side (a client masks), so the payload is summed."""
        return None

    def _encode_plain_into(self, out: bytearray, frames: Sequence[Buffer]) -> None:
        if self._closing:
            return
        binary = self._encoder.binary_into
        last = len(frames) - 1
        if not last:
            binary(out, b"\x00", frames[0])
            return
        for i, frame in enumerate(frames):
            binary(out, b"\x01" if i < last else b"\x00", frame)

    def _encode_wrapped_into(self, out: bytearray, frames: Sequence[Buffer]) -> None:
        zmtp = bytearray()
        self._inner.encode_message_into(zmtp, frames)
        out += self._frames_of(zmtp)

    def encode_subscribe(self, topic: bytes) -> bytes:
        """The message ``\\x01topic``: what libzmq's ws engine sends and reads."""
        return self._message([b"\x01" + topic])

    def encode_cancel(self, topic: bytes) -> bytes:
        """The message ``\\x00topic``."""
        return self._message([b"\x00" + topic])

    def _message(self, frames: list[bytes]) -> bytes:
        out = bytearray()
        self.message_encoder()(out, frames)
        return bytes(out)

    def encode_join(self, group: bytes) -> bytes:
        return self._frames_of(self._inner.encode_join(group))

    def encode_leave(self, group: bytes) -> bytes:
        return self._frames_of(self._inner.encode_leave(group))

    def encode_ping(self, ttl: float, context: bytes = b"") -> bytes:
        """A WebSocket PING (its payload the context): libzmq answers it with a PONG."""
        return self._control(PING, context)

    def encode_pong(self, context: bytes) -> bytes:
        """A WebSocket PONG echoing a PING's payload."""
        return self._control(PONG, context)

    def _control(self, opcode: int, payload: bytes) -> bytes:
        """A PING or PONG; nothing once the WebSocket is closing (the peer sent a
        CLOSE: what is still queued for it is lost with the connection, as on tcp)."""
        if self._closing or not self._open:
            return b""
        return self._encoder.frame(opcode, payload[:MAX_CONTROL])

    def encode_error(self, reason: str) -> bytes:
        if not self._open:
            return b""
        return self._frames_of(self._inner.encode_error(reason))
