"""How one ZMTP connection gets from greeting to traffic: the handshake half.

Part of :class:`~trizmq.zmtp.connection.Connection` (which inherits it): our greeting
goes out in stages as the peer's arrives (:mod:`trizmq.zmtp.greeting`), the peer's
is checked, its handshake commands go to the security :class:`Mechanism` (pausing for
ZAP when it asks), and the handshake's end sets what traffic may follow. A revision-1
peer is answered in ZMTP 2.0 instead (:mod:`trizmq.zmtp.zmtp2`): a socket-type byte,
an identity frame each way, then traffic without commands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._errors import StateError
from .commands import COMMAND_EVENTS, ERROR, parse_error, split_command
from .encoding import State, TrafficEncoder
from .errors import ProtocolError
from .events import Event, HandshakeComplete, PeerError, Received
from .frames import COMMAND
from .greeting import (
    GREETING_SIZE,
    MAJOR,
    SIGNATURE,
    ZMTP2_REVISION,
    build_greeting,
    check_greeting_prefix,
    greeting_rest,
    parse_greeting,
)
from .mechanism import Mechanism, ZapReply, ZapRequest
from .zmtp2 import GREETING_SIZE as ZMTP2_GREETING_SIZE
from .zmtp2 import HEADER_SIZE as ZMTP2_HEADER_SIZE
from .zmtp2 import MAX_IDENTITY as MAX_IDENTITY  # one limit for both handshakes
from .zmtp2 import (
    ZMTP2_VERSION,
    identity_frame,
    parse_identity,
    peer_socket_type,
    refuse_security,
    socket_type_byte,
)
from .zmtp2 import flags_error as zmtp2_flags_error

__all__ = ["HANDSHAKE_FRAME_LIMIT", "Handshaking"]

#: the largest command accepted before the handshake is complete (unauthenticated peers)
HANDSHAKE_FRAME_LIMIT = 64 * 1024
# libzmq 4.3's PLAIN server writes ERROR as "\x05ERROR" in C, where the greedy hex
# escape makes 0x5E ('^'): its refusals arrive as "^RROR" + reason (no name length)
_LIBZMQ_PLAIN_ERROR = b"^RROR"


def _late_handshake_command(name: bytes, data: bytes) -> Event:
    shown = name.decode("ascii", "replace")
    raise ProtocolError(f"unexpected {shown} command after the handshake")


class Handshaking(TrafficEncoder):
    """The handshake half of a :class:`~trizmq.zmtp.connection.Connection`."""

    # set by Connection.__init__
    _socket_type: str
    _local_metadata: dict[str, bytes]
    _peers: frozenset[str] | None
    _started: bool
    #: how much of our greeting is sent or queued (its stages: see greeting.py); set
    #: by start(), before which nothing is received
    _greeting_sent: int
    _zmtp2: bool
    _header_sizes: dict[int, int]
    _flags_error: Callable[[int], str]
    _need: int
    _commands: dict[bytes, Callable[[bytes], Event]]
    _traffic: bool
    _handshake_complete: bool
    _handshake_commands: int
    _peer_version: tuple[int, int]
    _peer_socket_type: str
    _peer_identity: bytes
    _peer_metadata: dict[str, bytes]

    if TYPE_CHECKING:  # the parsing half, in Connection

        def receive_data(self, data: bytes) -> list[Received]: ...
        def _die(self, reason: str) -> None: ...
        def _header(self, src: bytes, pos: int) -> tuple[int, int, int] | None: ...

    @property
    def mechanism(self) -> Mechanism:
        """The security mechanism of this connection."""
        return self._mechanism

    @property
    def shares_encoding(self) -> bool:
        """True unless the mechanism encrypts: plain ZMTP is the same bytes on every
        connection."""
        return not self._mechanism.encrypts

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
    def peer_version(self) -> tuple[int, int]:
        """The (major, minor) from the peer's greeting; (0, 0) before it is parsed, and
        (2, 0) for a ZMTP 2.0 (revision 1) peer."""
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
    def pending_zap(self) -> ZapRequest | None:
        """An authentication request the driver must answer with :meth:`zap_reply`."""
        return self._mechanism.pending_zap

    def start(self, *, staged: bool = True) -> bytes:
        """The first stage of our greeting, its 10-byte signature: send it before
        waiting for anything. The later stages follow in :meth:`data_to_send` as the
        peer's greeting decides them (see :mod:`trizmq.zmtp.greeting`).

        ``staged=False`` returns the whole 64-byte ZMTP 3.1 greeting instead, for a
        caller that knows the peer speaks ZMTP 3 (ZWS, which sends none of it); a
        revision-1 peer is then refused.
        """
        if self._started:
            raise StateError("Connection.start() was already called")
        self._started = True
        if not staged:
            self._greeting_sent = GREETING_SIZE
            return build_greeting(self._mechanism.name, self._mechanism.as_server)
        self._greeting_sent = len(SIGNATURE)
        return SIGNATURE

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

    def _parse_greeting(self, src: bytes, events: list[Received]) -> int:
        """The peer's greeting so far, ``src`` from its first byte: queue the stages
        of ours that its bytes decide, and take it once whole; return where it ends
        (0 while it is not whole)."""
        check_greeting_prefix(src)
        n = len(src)
        sent = self._greeting_sent
        if sent == len(SIGNATURE) and n >= len(SIGNATURE):
            # a versioned peer (check_greeting_prefix refused the others)
            self._outbox += MAJOR
            sent += 1
        if n > len(SIGNATURE):
            zmtp2 = src[len(SIGNATURE)] == ZMTP2_REVISION
            if sent == len(SIGNATURE) + 1:
                if zmtp2:
                    refuse_security(self._mechanism.name)
                    self._outbox += socket_type_byte(self._socket_type)
                    self._zmtp2 = True
                    sent = ZMTP2_GREETING_SIZE
                else:
                    mechanism = self._mechanism
                    self._outbox += greeting_rest(mechanism.name, mechanism.as_server)
                    sent = GREETING_SIZE
            elif zmtp2 and not self._zmtp2:
                raise ProtocolError("peer speaks ZMTP 2.0, and our whole ZMTP 3 greeting is sent")
        self._greeting_sent = sent
        if self._zmtp2:
            if n < ZMTP2_GREETING_SIZE:
                return 0
            self._on_zmtp2_greeting(src[ZMTP2_GREETING_SIZE - 1])
            return ZMTP2_GREETING_SIZE
        if n < GREETING_SIZE:
            return 0
        self._on_greeting(src[:GREETING_SIZE], events)
        return GREETING_SIZE

    def _on_zmtp2_greeting(self, socket_type: int) -> None:
        """A revision-1 peer's 12 bytes are in: its type checked, our identity queued."""
        self._peer_socket_type = peer_socket_type(
            socket_type, self._socket_type, self._peers
        )
        self._peer_version = ZMTP2_VERSION
        self._mechanism.peer_version = ZMTP2_VERSION
        self._outbox += identity_frame(self._local_metadata.get("Identity", b""))
        self._state = State.HANDSHAKE

    def _parse_zmtp2_identity(self, src: bytes, pos: int, events: list[Received]) -> int:
        """The identity frame that ends a ZMTP 2.0 handshake, at ``src[pos:]``."""
        found = parse_identity(src, pos)
        if isinstance(found, int):
            self._need = found
            return pos
        identity, end = found
        self._commands = {}  # ZMTP 2.0 has none
        self._header_sizes = ZMTP2_HEADER_SIZE
        self._flags_error = zmtp2_flags_error
        self._peer_identity = identity
        self._peer_metadata = {}
        self._handshake_complete = True
        self._state = State.TRAFFIC
        self._traffic = True
        events.append(HandshakeComplete(self._peer_socket_type, identity, {}, ZMTP2_VERSION))
        return end

    def _on_greeting(self, greeting_bytes: bytes, events: list[Received]) -> None:
        mechanism = self._mechanism
        greeting = parse_greeting(greeting_bytes, mechanism.name)
        self._peer_version = greeting.version
        self._peer_v31 = greeting.version >= (3, 1)
        mechanism.peer_version = greeting.version
        self._state = State.HANDSHAKE
        self._send_commands(mechanism.start(self._local_metadata))
        if mechanism.complete:
            events.append(self._finish_handshake())

    def _parse_handshake(self, src: bytes, pos: int, events: list[Received]) -> int:
        if self._zmtp2:
            return self._parse_zmtp2_identity(src, pos, events)
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
            peers = self._peers
            if peers is not None and socket_type not in peers:
                raise ProtocolError(
                    f"incompatible socket type: {self._socket_type} cannot talk to {socket_type}",
                    cause="socket_type",
                )
        identity = metadata.get("Identity", b"")
        if len(identity) > MAX_IDENTITY:
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
        self._state = State.TRAFFIC
        self._traffic = True
        return HandshakeComplete(socket_type, identity, dict(metadata), self._peer_version)
