"""One ZMTP 3.x connection as a sans-I/O state machine: bytes in, events and bytes out.

The driver feeds received bytes to :meth:`Connection.receive_data`, sends whatever
:meth:`Connection.data_to_send` returns (handshake traffic), and encodes its own
traffic with the ``encode_*`` methods. Nothing here does I/O, keeps time or knows
about trio.

States: GREETING (64 bytes, checked byte by byte as they arrive) -> HANDSHAKE
(command frames only, handled by the :class:`Mechanism`) -> TRAFFIC (messages and
commands) -> FINISHED (the peer sent ERROR, or it broke the protocol). Any
:class:`ProtocolError` kills the Connection; every later call to ``receive_data``
raises one again.

Strategy for the decoder:

* Never trust a declared length. A frame's size is checked as soon as its header is
  complete, before any of its body is kept: a message's *wire size* so far (every
  frame's header and body, so millions of empty frames count too) against
  ``maxmsgsize``, its number of frames against ``max_frames``, a command's size
  against ``maxmsgsize`` (64 KiB per command during the handshake; message frames
  are refused before the handshake ends). Bodies accumulate as they arrive;
  nothing is pre-allocated. For CURVE the count is of the plaintext frames with
  the headers they would have unencrypted.
* ``_need`` records how many buffered bytes the next step requires, so the
  pieces of a frame are only appended to one ``bytearray`` until it is whole,
  then parsed once.
* A large message frame (``_BIG_FRAME`` bytes or more) whose body is incomplete
  skips that buffer: the input ``bytes`` objects holding its body are kept as
  they are and joined once (through views cutting the first and last) when the
  last one arrives, so its bytes are copied once instead of three times (append,
  freeze, slice). Small pieces are still gathered in a ``bytearray``, so that a
  peer trickling bytes cannot make each one cost an object.
* All complete frames in hand are parsed in one tight loop over an immutable
  ``bytes`` (slicing it yields each frame directly); when the buffer is empty and
  the input is ``bytes``, the input itself is parsed without a copy.
* A message (``list[bytes]``) is emitted only when its last frame arrives.
  Commands between the frames of a message are reported as they come (libzmq may
  slip a PING in between).

Rules for traffic commands live in :data:`~trizmq.zmtp.commands.COMMAND_EVENTS`;
after the handshake the mechanism's own handshake commands (READY for NULL) are
errors. PINGs are reported, not answered: the driver replies with
:meth:`Connection.encode_pong` when and where it wants.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeAlias

from .._errors import StateError
from .commands import (
    CANCEL,
    COMMAND_EVENTS,
    ERROR,
    JOIN,
    LEAVE,
    PING,
    PONG,
    SUBSCRIBE,
    command_body,
    error_data,
    parse_error,
    ping_data,
    split_command,
)
from .errors import ProtocolError
from .events import Event, HandshakeComplete, PeerError, UnknownCommand
from .frames import (
    COMMAND,
    HEADER_SIZE,
    LONG_HEADER,
    MAX_FRAME_SIZE,
    MORE,
    SHORT_HEADERS,
    encode_frame,
    flags_error,
)
from .greeting import GREETING_SIZE, build_greeting, check_greeting_prefix, parse_greeting
from .mechanism import Command, Mechanism, ZapReply, ZapRequest
from .metadata import encode_metadata
from .null import NullMechanism
from .socket_types import SENDS_IDENTITY, SOCKET_TYPES, is_compatible

__all__ = ["HANDSHAKE_FRAME_LIMIT", "Connection", "Received"]

#: the largest command accepted before the handshake is complete (unauthenticated peers)
HANDSHAKE_FRAME_LIMIT = 64 * 1024
#: message frames at least this large collect their body as separate pieces, joined once
_BIG_FRAME = 64 * 1024
#: HEADER_SIZE as a plain dict: a lookup in it is faster than in the read-only proxy
_HEADER_SIZE = dict(HEADER_SIZE)
#: pieces of such a body shorter than this are copied together rather than kept apart
#: (a kept piece costs an object and a list slot: at most ~1% more than its bytes)
_BIG_PIECE = 4 * 1024

Buffer: TypeAlias = bytes | bytearray | memoryview
#: one item returned by :meth:`Connection.receive_data`: an event or a message's frames
Received: TypeAlias = Event | list[bytes]

_SUBSCRIBE_BODY = command_body(SUBSCRIBE)
_CANCEL_BODY = command_body(CANCEL)
_JOIN_BODY = command_body(JOIN)
_LEAVE_BODY = command_body(LEAVE)
_MAX_GROUP = 255
_MAX_IDENTITY = 255
_INNER_FLAGS = MORE | COMMAND
# libzmq 4.3's PLAIN server writes ERROR as "\x05ERROR" in C, where the greedy hex
# escape makes 0x5E ('^'): its refusals arrive as "^RROR" + reason (no name length)
_LIBZMQ_PLAIN_ERROR = b"^RROR"


class _State(enum.Enum):
    GREETING = "greeting"
    HANDSHAKE = "handshake"
    TRAFFIC = "traffic"
    FINISHED = "finished"


def _late_handshake_command(name: bytes, data: bytes) -> Event:
    shown = name.decode("ascii", "replace")
    raise ProtocolError(f"unexpected {shown} command after the handshake")


def _collect(pieces: list[bytes | bytearray], piece: bytes) -> None:
    """Keep one more piece of a large frame's body."""
    if len(piece) >= _BIG_PIECE:
        pieces.append(piece)  # kept as is (bytes never change): copied only by the join
        return
    last = pieces[-1] if pieces else None
    if isinstance(last, bytearray):  # only ever one of ours, never the caller's
        last += piece
    else:
        pieces.append(bytearray(piece))


def _encode_plain_into(
    out: bytearray,
    frames: Sequence[Buffer],
    more_short: tuple[bytes, ...] = SHORT_HEADERS[MORE],
    last_short: tuple[bytes, ...] = SHORT_HEADERS[0],
    pack_long: Callable[[int, int], bytes] = LONG_HEADER.pack,
) -> None:
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


class Connection:
    """The protocol state of one connection, from greeting to traffic."""

    def __init__(
        self,
        socket_type: str,
        *,
        mechanism: Mechanism | None = None,
        identity: bytes = b"",
        maxmsgsize: int = -1,
        max_frames: int = -1,
        metadata: Mapping[str, bytes] | None = None,
        check_socket_type: bool = True,
    ) -> None:
        if socket_type not in SOCKET_TYPES:
            raise ValueError(f"unknown socket type {socket_type!r}")
        if len(identity) > _MAX_IDENTITY:
            raise ValueError(f"identity is at most {_MAX_IDENTITY} bytes")
        if maxmsgsize < -1:
            raise ValueError("maxmsgsize must be -1 (no limit) or >= 0")
        if max_frames < -1 or max_frames == 0:
            raise ValueError("max_frames must be -1 (no limit) or >= 1")
        local: dict[str, bytes] = {"Socket-Type": socket_type.encode("ascii")}
        if socket_type in SENDS_IDENTITY:
            local["Identity"] = bytes(identity)
        for name, value in (metadata or {}).items():
            if not name.startswith("X-") or len(name) < 3:
                raise ValueError(f"application metadata names must start with 'X-': {name!r}")
            local[name] = bytes(value)
        encode_metadata(local)  # fail here, not in the middle of a handshake

        self._socket_type = socket_type
        self._mechanism = mechanism if mechanism is not None else NullMechanism()
        self._local_metadata = local
        self._maxmsgsize = maxmsgsize
        # a single comparison per frame covers both the option and the grammar's cap
        self._limit = maxmsgsize if maxmsgsize >= 0 else MAX_FRAME_SIZE
        self._max_frames = max_frames if max_frames > 0 else MAX_FRAME_SIZE
        #: the wire size of the message in progress (its frames so far)
        self._used = 0
        self._check_socket_type = check_socket_type

        self._started = False
        self._state = _State.GREETING
        self._dead: str | None = None
        self._buf = bytearray()
        self._need = 0
        self._outbox = bytearray()
        self._frames: list[bytes] = []
        # a large message frame whose body is arriving (see _parse_traffic): the
        # pieces received so far (None when there is none), where the body starts
        # in the first one, the frame's flags and how many body bytes are missing.
        # No memoryview is kept between calls: a Connection stays deep-copyable.
        self._big: list[bytes | bytearray] | None = None
        self._big_skip = 0
        self._big_flags = 0
        self._big_missing = 0
        self._commands: dict[bytes, Callable[[bytes], Event]] = {}
        self._wrapped = False
        #: in plain (unencrypted) traffic and alive: receive_data's fast path applies
        self._plain_traffic = False

        self._handshake_complete = False
        self._handshake_commands = 0
        self._peer_version = (0, 0)
        self._peer_v31 = False
        self._peer_socket_type = ""
        self._peer_identity = b""
        self._peer_metadata: dict[str, bytes] = {}

    # ------------------------------------------------------------------ state

    @property
    def socket_type(self) -> str:
        """Our own socket type."""
        return self._socket_type

    @property
    def mechanism(self) -> Mechanism:
        """The security mechanism of this connection."""
        return self._mechanism

    @property
    def handshake_complete(self) -> bool:
        """True once HandshakeComplete was reported (stays True after the end)."""
        return self._handshake_complete

    @property
    def handshake_commands_received(self) -> int:
        """Handshake commands parsed from the peer so far (its greeting not counted).

        With :attr:`peer_version` it tells how far a peer has got: a server that
        wants the greeting and the first command soon (``greeting_ivl``) reads it.
        """
        return self._handshake_commands

    @property
    def closed(self) -> bool:
        """True once the Connection is finished (peer ERROR or protocol error)."""
        return self._state is _State.FINISHED

    @property
    def peer_version(self) -> tuple[int, int]:
        """The (major, minor) from the peer's greeting; (0, 0) before it is parsed."""
        return self._peer_version

    @property
    def peer_socket_type(self) -> str:
        """The peer's Socket-Type ("" if it sent none); valid after the handshake."""
        return self._peer_socket_type

    @property
    def peer_identity(self) -> bytes:
        """The peer's Identity (b"" if none); valid after the handshake."""
        return self._peer_identity

    @property
    def peer_metadata(self) -> dict[str, bytes]:
        """Every property the peer sent; valid after the handshake."""
        return self._peer_metadata

    @property
    def in_message(self) -> bool:
        """True while part of a message (or frame) received so far is held, unfinished.

        A peer that hangs up now loses that message; the driver may say so.
        """
        return bool(self._buf) or bool(self._frames) or self._big is not None

    @property
    def pending_zap(self) -> ZapRequest | None:
        """An authentication request the driver must answer with :meth:`zap_reply`."""
        return self._mechanism.pending_zap

    # ------------------------------------------------------------------ input

    def start(self) -> bytes:
        """Our whole 64-byte greeting; send it before waiting for anything."""
        if self._started:
            raise StateError("Connection.start() was already called")
        self._started = True
        return build_greeting(self._mechanism.name, self._mechanism.as_server)

    def data_to_send(self) -> bytes:
        """Drain the bytes the protocol itself wants sent (handshake commands)."""
        if not self._outbox:
            return b""
        out = bytes(self._outbox)
        self._outbox.clear()
        return out

    def receive_data(self, data: Buffer) -> list[Received]:
        """Consume ``data``; return every event and message it completed, in order."""
        if self._plain_traffic and not self._buf and self._big is None and type(data) is bytes:
            # the hot path: plain traffic, nothing held back from the last call
            events: list[Received] = []
            self._parse_keeping_rest(data, 0, events)
            return events
        if self._dead is not None:
            raise ProtocolError(self._dead)
        if not self._started:
            raise StateError("call Connection.start() before receive_data()")
        big = self._big
        if big is not None:
            return self._receive_big(big, data)
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                return []
            src = bytes(buf)
            buf.clear()
        else:
            src = data if type(data) is bytes else bytes(data)
        try:
            events, pos = self._parse(src)
        except ProtocolError as exc:
            self._die(exc.reason)
            raise
        if pos < len(src) and self._dead is None:
            buf += memoryview(src)[pos:]
        return events

    def _start_big(self, src: bytes, start: int, flags: int, missing: int) -> None:
        """Collect the body of a large message frame from ``src[start:]`` on."""
        pieces: list[bytes | bytearray] = []
        skip = 0
        tail = len(src) - start
        if tail >= _BIG_PIECE and tail >= start:
            # mostly body: keep src whole and cut it with a view at the join. Keeping
            # it when it is mostly other frames would hold more than twice the body.
            pieces.append(src)
            skip = start
        elif tail:
            pieces.append(bytearray(memoryview(src)[start:]))
        self._big = pieces
        self._big_skip = skip
        self._big_flags = flags
        self._big_missing = missing
        self._need = 0  # nothing is buffered

    def _receive_big(self, pieces: list[bytes | bytearray], data: Buffer) -> list[Received]:
        """Add ``data`` to the ``pieces`` of the large frame in progress; once it is
        whole, finish that frame as :meth:`_parse_traffic` would and parse what follows."""
        # the caller may reuse a bytearray or a view's memory: keep only bytes
        src = data if type(data) is bytes else bytes(data)
        missing = self._big_missing
        if len(src) < missing:
            _collect(pieces, src)
            self._big_missing = missing - len(src)
            return []
        # views copy nothing: the join is the only copy of the body's bytes
        parts: list[Buffer] = list(pieces)
        if self._big_skip:
            parts[0] = memoryview(parts[0])[self._big_skip :]
        parts.append(memoryview(src)[:missing])
        body = b"".join(parts)
        self._big = None
        self._big_skip = 0
        self._big_missing = 0
        events: list[Received] = []
        frames = self._frames
        frames.append(body)
        if not self._big_flags & MORE:
            events.append(frames)
            self._frames = []
            self._used = 0
        self._parse_keeping_rest(src, missing, events)
        return events

    def _parse_keeping_rest(self, src: bytes, pos: int, events: list[Received]) -> None:
        """Parse plain traffic from ``pos`` into ``events``; keep an unfinished frame's
        bytes for the next call; a violation kills the connection."""
        try:
            pos = self._parse_traffic(src, pos, events)
        except ProtocolError as exc:
            self._die(exc.reason)
            raise
        if pos < len(src) and self._dead is None:
            self._buf += memoryview(src)[pos:]

    def zap_reply(self, reply: ZapReply) -> list[Received]:
        """Hand the ZAP answer to the mechanism and resume parsing (ZAP seam).

        A refusal raises :class:`ProtocolError` after queuing the mechanism's ERROR
        (if it sends one): flush :meth:`data_to_send` before closing.
        """
        mechanism = self._mechanism
        if mechanism.pending_zap is None:
            raise StateError("no ZAP request is pending")
        events: list[Received] = []
        try:
            self._send_commands(mechanism.on_zap_reply(reply))
            if mechanism.refused is not None:
                # the ERROR stays in the outbox for the driver to flush before closing
                raise ProtocolError(mechanism.refused)
            if mechanism.complete:
                events.append(self._finish_handshake())
        except ProtocolError as exc:
            self._die(exc.reason)
            raise
        return events + self.receive_data(b"")

    def _die(self, reason: str) -> None:
        self._dead = reason
        self._plain_traffic = False
        self._state = _State.FINISHED
        self._buf.clear()
        self._frames = []
        self._used = 0
        self._big = None
        self._big_skip = 0
        self._big_missing = 0

    def _parse(self, src: bytes) -> tuple[list[Received], int]:
        events: list[Received] = []
        pos = 0
        if self._state is _State.GREETING:
            if len(src) < GREETING_SIZE:
                check_greeting_prefix(src)
                return events, 0
            self._on_greeting(src[:GREETING_SIZE], events)
            pos = GREETING_SIZE
        if self._state is _State.HANDSHAKE:
            pos = self._parse_handshake(src, pos, events)
        if self._state is _State.TRAFFIC:
            if self._wrapped:
                pos = self._parse_wrapped(src, pos, events)
            else:
                pos = self._parse_traffic(src, pos, events)
        return events, pos

    def _on_greeting(self, greeting_bytes: bytes, events: list[Received]) -> None:
        mechanism = self._mechanism
        greeting = parse_greeting(greeting_bytes, mechanism.name)
        self._peer_version = greeting.version
        self._peer_v31 = greeting.version >= (3, 1)
        mechanism.peer_version = greeting.version
        self._state = _State.HANDSHAKE
        self._send_commands(mechanism.start(self._local_metadata))
        if mechanism.complete:
            events.append(self._finish_handshake())

    def _header(self, src: bytes, pos: int) -> tuple[int, int, int] | None:
        """(flags, body start, size) of the frame at ``pos``, or None if incomplete."""
        n = len(src)
        if pos >= n:
            self._need = 0
            return None
        flags = src[pos]
        header_size = HEADER_SIZE.get(flags)
        if header_size is None:
            raise ProtocolError(flags_error(flags))
        if n - pos < header_size:
            self._need = header_size
            return None
        size = src[pos + 1] if header_size == 2 else LONG_HEADER.unpack_from(src, pos)[1]
        return flags, pos + header_size, size

    def _parse_handshake(self, src: bytes, pos: int, events: list[Received]) -> int:
        mechanism = self._mechanism
        while mechanism.pending_zap is None:
            header = self._header(src, pos)
            if header is None:
                return pos
            flags, start, size = header
            if not flags & COMMAND:
                raise ProtocolError("message frame before the handshake completed")
            if size > HANDSHAKE_FRAME_LIMIT:
                raise ProtocolError(
                    f"handshake command of {size} bytes exceeds the "
                    f"{HANDSHAKE_FRAME_LIMIT}-byte limit"
                )
            end = start + size
            if end > len(src):
                self._need = end - pos
                return pos
            body = src[start:end]
            if body.startswith(_LIBZMQ_PLAIN_ERROR):
                name, data = ERROR, body[len(_LIBZMQ_PLAIN_ERROR) :]
            else:
                name, data = split_command(body)
            pos = end
            self._handshake_commands += 1
            if name == ERROR:
                events.append(self._peer_error(data))
                return pos
            self._send_commands(mechanism.on_command(name, data))
            if mechanism.complete:
                events.append(self._finish_handshake())
                return pos
        # paused for ZAP: keep the input, but not without bound
        if len(src) - pos > HANDSHAKE_FRAME_LIMIT:
            raise ProtocolError("too much data sent while authentication was pending")
        self._need = 0
        return pos

    def _peer_error(self, data: bytes) -> PeerError:
        event = parse_error(data)
        self._die(f"connection finished: the peer sent ERROR {event.reason!r}")
        return event

    def _finish_handshake(self) -> HandshakeComplete:
        mechanism = self._mechanism
        metadata = dict(mechanism.peer_metadata)
        socket_type = ""
        raw_type = metadata.get("Socket-Type")
        if raw_type is not None:
            socket_type = raw_type.decode("latin-1")
            if self._check_socket_type and not is_compatible(self._socket_type, socket_type):
                raise ProtocolError(
                    f"incompatible socket type: {self._socket_type} cannot talk to {socket_type}"
                )
        identity = metadata.get("Identity", b"")
        if len(identity) > _MAX_IDENTITY:
            raise ProtocolError(f"peer identity of {len(identity)} bytes exceeds 255")
        commands = dict(COMMAND_EVENTS)
        for name in mechanism.handshake_commands:
            commands[name] = functools.partial(_late_handshake_command, name)
        self._commands = commands
        self._peer_socket_type = socket_type
        self._peer_identity = identity
        self._peer_metadata = metadata
        self._wrapped = mechanism.encrypts
        self._handshake_complete = True
        self._state = _State.TRAFFIC
        self._plain_traffic = not self._wrapped
        return HandshakeComplete(socket_type, identity, dict(metadata), self._peer_version)

    def _command(self, body: bytes) -> Event:
        name, data = split_command(body)
        build = self._commands.get(name)
        if build is None:
            return UnknownCommand(name, data)
        if name == ERROR:
            return self._peer_error(data)
        return build(data)

    def _oversize(self, size: int) -> ProtocolError:
        if size > MAX_FRAME_SIZE:
            return ProtocolError(f"frame size {size} exceeds 2^63-1")
        return ProtocolError(f"frame of {size} bytes exceeds maxmsgsize {self._maxmsgsize}")

    def _overlong(self, used: int, frames: int) -> ProtocolError:
        """The message in progress broke a limit: its wire size or its frame count."""
        if used > self._limit:
            return ProtocolError(
                f"message of {used} bytes on the wire so far exceeds maxmsgsize {self._maxmsgsize}"
            )
        return ProtocolError(f"message of more than {frames} frames exceeds max_frames")

    def _parse_traffic(self, src: bytes, pos: int, events: list[Received]) -> int:
        # the hot path: locals only, one slice per frame and, but for a short last
        # frame, one dict lookup
        n = len(src)
        frames = self._frames
        limit = self._limit
        max_frames = self._max_frames
        used = self._used
        header_sizes = _HEADER_SIZE
        unpack_long = LONG_HEADER.unpack_from
        append = events.append
        while pos < n:
            flags = src[pos]
            if not flags and pos + 1 < n:
                # a short last frame, the commonest by far: no table lookup
                size = src[pos + 1]
                end = pos + 2 + size
                if end <= n:
                    if not frames:
                        if end - pos <= limit:
                            append([src[pos + 2 : end]])
                            pos = end
                            continue
                    elif used + end - pos <= limit and len(frames) < max_frames:
                        frames.append(src[pos + 2 : end])
                        append(frames)
                        frames = []
                        used = 0
                        pos = end
                        continue
            header_size = header_sizes.get(flags)
            if header_size is None:
                raise ProtocolError(flags_error(flags))
            if n - pos < header_size:
                self._need = header_size
                break
            size = src[pos + 1] if header_size == 2 else unpack_long(src, pos)[1]
            if size > limit:
                raise self._oversize(size)
            if not flags & COMMAND:
                # the message so far, this frame included, on the wire
                used += header_size + size
                if used > limit or len(frames) >= max_frames:
                    raise self._overlong(used, len(frames))
            start = pos + header_size
            end = start + size
            if end > n:
                if size >= _BIG_FRAME and not flags & COMMAND:
                    # keep what came of the body as it is; the rest goes to
                    # _receive_big, which joins it all once (commands stay small)
                    self._start_big(src, start, flags, end - n)
                    pos = n
                    break
                if not flags & COMMAND:
                    used -= header_size + size  # counted again when it is whole
                self._need = end - pos
                break
            if flags & COMMAND:
                append(self._command(src[start:end]))
                if self._dead is not None:
                    return end
            elif flags & MORE:
                frames.append(src[start:end])
            else:
                frames.append(src[start:end])
                append(frames)
                frames = []
                used = 0
            pos = end
        else:
            self._need = 0
        self._frames = frames
        self._used = used
        return pos

    def _parse_wrapped(self, src: bytes, pos: int, events: list[Received]) -> int:
        # every outer frame carries one inner frame (CURVE MESSAGE); outer flags are
        # not interpreted beyond their validity, as libzmq accepts any
        mechanism = self._mechanism
        limit = self._limit
        overhead = mechanism.overhead
        while True:
            header = self._header(src, pos)
            if header is None:
                break
            _, start, size = header
            # the inner frame has size - overhead bytes and a header of 2 at least
            if size - overhead + 2 > limit:
                raise self._oversize(size - overhead)
            end = start + size
            if end > len(src):
                self._need = end - pos
                break
            flags, body = mechanism.decode_frame(src[start:end])
            pos = end
            if flags & ~_INNER_FLAGS or flags == _INNER_FLAGS:
                raise ProtocolError(f"invalid inner frame flags 0x{flags:02X}")
            if len(body) > limit:
                raise self._oversize(len(body))
            if flags & COMMAND:
                events.append(self._command(body))
                if self._dead is not None:
                    break
            else:
                frames = self._frames
                self._used += len(body) + (2 if len(body) < 256 else 9)
                if self._used > limit or len(frames) >= self._max_frames:
                    raise self._overlong(self._used, len(frames))
                frames.append(body)
                if not flags & MORE:
                    events.append(frames)
                    self._frames = []
                    self._used = 0
        return pos

    # ------------------------------------------------------------------ output

    def _send_commands(self, commands: list[Command]) -> None:
        for name, data in commands:
            self._outbox += encode_frame(COMMAND, command_body(name, data))

    def _require_traffic(self) -> None:
        if self._state is not _State.TRAFFIC:
            raise StateError("the ZMTP handshake is not complete")

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
        if self._state is not _State.TRAFFIC:  # inline: this runs once per message
            raise StateError("the ZMTP handshake is not complete")
        if self._wrapped:
            self._encode_wrapped_into(out, (frames,))
        else:
            _encode_plain_into(out, frames)

    def message_encoder(self) -> Callable[[bytearray, Sequence[Buffer]], None]:
        """The fastest form of :meth:`encode_message_into` for this connection.

        Taken once the handshake is complete, the plain encoder skips the per-call
        state check (the writer's hot path calls it for every message); otherwise
        it is :meth:`encode_message_into` itself.
        """
        if self._state is _State.TRAFFIC and not self._wrapped:
            return _encode_plain_into
        return self.encode_message_into

    def encode_messages_into(self, out: bytearray, messages: Iterable[Sequence[Buffer]]) -> None:
        """Append the wire form of every message to ``out`` (each must have a frame)."""
        self._require_traffic()
        if self._wrapped:
            self._encode_wrapped_into(out, messages)
            return
        for frames in messages:
            _encode_plain_into(out, frames)

    def _encode_wrapped_into(self, out: bytearray, messages: Iterable[Sequence[Buffer]]) -> None:
        encode = self._mechanism.encode_frame
        for frames in messages:
            last = len(frames) - 1
            for i, frame in enumerate(frames):
                out += encode(MORE if i < last else 0, frame)

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
        self._require_traffic()
        return self._frame(COMMAND, command_body(PING, ping_data(ttl, context)))

    def encode_pong(self, context: bytes) -> bytes:
        """PONG echoing a PING's context (at most 16 bytes)."""
        self._require_traffic()
        if len(context) > 16:
            raise ValueError("PONG context is at most 16 bytes")
        return self._frame(COMMAND, command_body(PONG, context))

    def encode_join(self, group: bytes) -> bytes:
        """JOIN: the group follows the name with no length byte."""
        self._require_traffic()
        if len(group) > _MAX_GROUP:
            raise ValueError(f"group is at most {_MAX_GROUP} bytes")
        return self._frame(COMMAND, _JOIN_BODY + group)

    def encode_leave(self, group: bytes) -> bytes:
        """LEAVE: the group follows the name with no length byte."""
        self._require_traffic()
        if len(group) > _MAX_GROUP:
            raise ValueError(f"group is at most {_MAX_GROUP} bytes")
        return self._frame(COMMAND, _LEAVE_BODY + group)

    def encode_error(self, reason: str) -> bytes:
        """ERROR with ``reason`` cut to 255 bytes; usable during the handshake too."""
        return self._frame(COMMAND, command_body(ERROR, error_data(reason)))
